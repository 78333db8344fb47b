"""The JSON Schemas of the plan and of the scenario format: valid 2020-12 documents, committed copies that match
a fresh generation, every shipped plan and scenario valid, and bad input refused at the key that is wrong
(the same input the loaders refuse)."""

from __future__ import annotations

import copy
import json
from collections.abc import Callable
from functools import cache
from pathlib import Path
from typing import Any

import pytest
import yaml
from jsonschema import Draft202012Validator
from jsonschema.exceptions import best_match

from interlock.compiler import compile_path
from interlock.json_schemas import NAMES, render, schema
from interlock.runtime.plan import PLAN_VERSION, PlanError, dump_plan, load_plan, seal_digests
from interlock.runtime.scenario import ScenarioError, parse_scenario

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = ROOT / "examples"
SCENARIOS = EXAMPLES / "scenarios"
COMMITTED = ROOT / "schemas"


@cache
def validator(name: str) -> Draft202012Validator:
    return Draft202012Validator(schema(name), format_checker=Draft202012Validator.FORMAT_CHECKER)


def error_paths(name: str, document: Any) -> set[str]:
    """Where each error points: for an `anyOf` (a nullable field), at its best match inside, as tools report it."""
    return {best_match([err]).json_path for err in validator(name).iter_errors(document)}


@cache
def _office_plan_text() -> str:
    result = compile_path(EXAMPLES / "office_default.wf")
    assert result.plan is not None
    return dump_plan(result.plan)


def office_plan() -> dict[str, Any]:
    data: dict[str, Any] = json.loads(_office_plan_text())
    return data


# ---- the documents ------------------------------------------------------------------------------------
@pytest.mark.parametrize("name", NAMES)
def test_committed_schema_matches_a_fresh_generation(name: str) -> None:
    committed = (COMMITTED / f"{name}.schema.json").read_text(encoding="utf-8")
    assert committed == render(name), (
        f"schemas/{name}.schema.json is out of date with the models: regenerate it with "
        f"`interlock schema {name} -o schemas/{name}.schema.json` and commit it")


@pytest.mark.parametrize("name", NAMES)
def test_schema_is_a_valid_2020_12_schema_with_a_stable_id(name: str) -> None:
    doc = schema(name)
    Draft202012Validator.check_schema(doc)
    assert doc["$schema"] == "https://json-schema.org/draft/2020-12/schema"
    version = PLAN_VERSION if name == "plan" else 1  # the plan format is at version 2 (ADR 0040)
    assert doc["$id"] == f"https://interlock.dev/schemas/{name}-v{version}.json"
    assert render(name) == render(name)  # deterministic
    assert json.loads(render(name)) == doc


def test_plan_schema_pins_the_version_and_the_digest() -> None:
    doc = schema("plan")
    assert doc["properties"]["plan_version"]["const"] == PLAN_VERSION
    assert {"plan_version", "digest"} <= set(doc["required"])
    assert doc["properties"]["digest"]["pattern"] == "^sha256:[0-9a-f]{64}$"
    assert doc["$id"] == f"https://interlock.dev/schemas/plan-v{PLAN_VERSION}.json"


def _nodes(node: Any, path: str = "#") -> list[tuple[str, dict[str, Any]]]:
    found: list[tuple[str, dict[str, Any]]] = []
    if isinstance(node, dict):
        found.append((path, node))
        for key, value in node.items():
            found.extend(_nodes(value, f"{path}/{key}"))
    elif isinstance(node, list):
        for i, value in enumerate(node):
            found.extend(_nodes(value, f"{path}/{i}"))
    return found


@pytest.mark.parametrize("name", NAMES)
def test_every_default_is_valid_where_it_is_declared(name: str) -> None:
    """An editor inserts `default` on completion: it must never be a value the schema (or the loader) refuses."""
    doc = schema(name)
    checked = 0
    for path, node in _nodes(doc):
        if "default" not in node or "/properties/" not in path:
            continue
        sub = {k: v for k, v in node.items() if k != "default"}
        errors = list(Draft202012Validator({**sub, "$defs": doc["$defs"]}).iter_errors(node["default"]))
        assert not errors, f"{path}: default {node['default']!r}: {errors[0].message}"
        checked += 1
    assert checked > 10


@pytest.mark.parametrize("name", NAMES)
def test_models_that_forbid_extra_keys_say_so(name: str) -> None:
    for def_name, node in schema(name)["$defs"].items():
        if node.get("type") == "object" and "properties" in node and def_name not in ("PlanExpr", "SequenceStep"):
            assert node.get("additionalProperties") is False, def_name


# ---- what the repository ships validates -----------------------------------------------------------------
@pytest.mark.parametrize("wf", sorted(p.name for p in EXAMPLES.glob("*.wf")))
def test_every_example_plan_validates(wf: str) -> None:
    result = compile_path(EXAMPLES / wf)
    assert result.plan is not None
    assert error_paths("plan", json.loads(dump_plan(result.plan))) == set()


def test_a_plan_with_timers_and_retry_policies_validates_and_a_bad_timer_is_refused_at_its_key() -> None:
    result = compile_path(EXAMPLES.parent / "tests" / "graph" / "fixtures" / "timers.wf")
    assert result.plan is not None
    data = json.loads(dump_plan(result.plan))
    assert data["workflows"][0]["steps"][0]["timers"] and data["kinds"]
    assert error_paths("plan", data) == set()
    timer = ("workflows", 0, "steps", 0, "timers", 0)
    retried = next(i for i, k in enumerate(data["kinds"]) if k.get("retry"))
    for edit, where in ((_set((*timer, "kind"), "sometimes"), "$.workflows[0].steps[0].timers[0].kind"),
                        (_drop((*timer, "seconds")), "$.workflows[0].steps[0].timers[0]"),
                        (_set(("kinds", retried, "retry", "attempts"), "three"),
                         f"$.kinds[{retried}].retry.attempts")):
        bad = copy.deepcopy(data)
        edit(bad)
        bad.update(seal_digests(bad))
        assert error_paths("plan", bad) == {where}
        with pytest.raises(PlanError):
            load_plan(json.dumps(bad))


@pytest.mark.parametrize("scenario", sorted(p.name for p in SCENARIOS.glob("*.yaml")))
def test_every_example_scenario_validates(scenario: str) -> None:
    text = (SCENARIOS / scenario).read_text(encoding="utf-8")
    parse_scenario(text, scenario, SCENARIOS)  # the reader accepts it (first line included) ...
    assert error_paths("scenario", yaml.safe_load(text)) == set()  # ... and so does the schema


# ---- plans the loader refuses: refused at the same key -------------------------------------------------
def _set(path: tuple[Any, ...], value: Any) -> Callable[[dict[str, Any]], None]:
    def edit(data: dict[str, Any]) -> None:
        node: Any = data
        for part in path[:-1]:
            node = node[part]
        node[path[-1]] = value
    return edit


def _drop(path: tuple[Any, ...]) -> Callable[[dict[str, Any]], None]:
    def edit(data: dict[str, Any]) -> None:
        node: Any = data
        for part in path[:-1]:
            node = node[part]
        del node[path[-1]]
    return edit


STEP = ("workflows", 0, "steps", 0)
WHEN = ("sequences", 0, "steps", 0, "when")
PLAN_CASES = {
    "missing field": (_drop(("compiler",)), "$"),
    "missing nested field": (_drop((*STEP, "title")), "$.workflows[0].steps[0]"),
    "missing version": (_drop(("plan_version",)), "$"),
    "extra key": (_set((*STEP, "colour"), "red"), "$.workflows[0].steps[0]"),
    "extra top-level key": (_set(("comment",), "hand-written"), "$"),
    "wrong version": (_set(("plan_version",), PLAN_VERSION + 1), "$.plan_version"),
    "version as text": (_set(("plan_version",), str(PLAN_VERSION)), "$.plan_version"),
    "wrong type": (_set((*STEP, "position"), "first"), "$.workflows[0].steps[0].position"),
    "list for a mapping": (_set((*STEP, "handlers"), []), "$.workflows[0].steps[0].handlers"),
    "unknown literal": (_set((*STEP, "stage"), "qa"), "$.workflows[0].steps[0].stage"),
    "unknown expression op": (_set((*WHEN, "op"), "xor"), "$.sequences[0].steps[0].when.op"),
    "expression without op": (_drop((*WHEN, "op")), "$.sequences[0].steps[0].when"),
    "unknown sequence step": (_set(("sequences", 0, "steps", 0, "step"), "jump"), "$.sequences[0].steps[0].step"),
}


@pytest.mark.parametrize("case", sorted(PLAN_CASES))
def test_bad_plan_is_refused_at_the_key(case: str) -> None:
    edit, where = PLAN_CASES[case]
    data = office_plan()
    edit(data)
    data.update(seal_digests(data))  # a fresh digest: the loader refuses the content, not the seal
    assert error_paths("plan", data) == {where}
    with pytest.raises(PlanError):
        load_plan(json.dumps(data))


@pytest.mark.parametrize("digest", ["", "sha256:", "sha256:" + "A" * 64, "sha256:" + "0" * 63, "md5:" + "0" * 64,
                                    "sha256:" + "0" * 64 + "\n", "sha256:" + "0" * 65, None])
def test_bad_digest_is_refused(digest: str | None) -> None:
    data = office_plan()
    data["digest"] = digest
    assert error_paths("plan", data) == {"$.digest"}
    with pytest.raises(PlanError):
        load_plan(json.dumps(data))


def test_missing_digest_is_refused() -> None:
    data = office_plan()
    del data["digest"]
    assert error_paths("plan", data) == {"$"}
    with pytest.raises(PlanError):
        load_plan(json.dumps(data))


def test_a_variant_keeps_its_own_keys() -> None:
    """An expression is checked as the variant its `op` names: a `path` expression has no `value`."""
    data = office_plan()
    when = data["sequences"][0]["steps"][0]["when"]
    path = next(n for n in _plan_exprs(when) if n["op"] == "path")
    path["value"] = 1
    data.update(seal_digests(data))
    assert len(error_paths("plan", data)) == 1
    with pytest.raises(PlanError):
        load_plan(json.dumps(data))


def _plan_exprs(node: dict[str, Any]) -> list[dict[str, Any]]:
    found = [node]
    for key in ("arg", "left", "right"):
        if isinstance(node.get(key), dict):
            found.extend(_plan_exprs(node[key]))
    return found


# ---- scenarios the reader refuses: refused at the key ----------------------------------------------------
BASE_SCENARIO = """\
workflow: ../office_default.wf
tasks:
  T1: {workflow: office_default, step: work}
sessions:
  S1: {task: T1}
participants:
  - {step: review, role: reviewer, agent: rev-a}
executors:
  clear_decisions: {fail: 1, error: "down"}
  run_code_review: missing
events:
  - turn_complete: {task: T1, session: S1}
  - redeliver: 1
  - decide: {task: T1, agent: rev-a, role: reviewer, verdict: approved}
  - restart
  - recover: {}
expect:
  tasks: {T1: {step: review}}
"""


def base_scenario() -> dict[str, Any]:
    data: dict[str, Any] = yaml.safe_load(BASE_SCENARIO)
    return data


def _decide(**body: Any) -> Callable[[dict[str, Any]], None]:
    return _set(("events", 2), {"decide": {"task": "T1", "verdict": "approved", **body}})


SCENARIO_CASES = {
    "missing field": (_drop(("tasks", "T1", "workflow")), "$.tasks.T1"),
    "extra key": (_set(("tasks", "T1", "colour"), "red"), "$.tasks.T1"),
    "misspelt top-level key": (_set(("expects",), {}), "$"),
    "wrong type": (_set(("tasks", "T1", "office"), "maybe"), "$.tasks.T1.office"),
    "out of range": (_set(("participants", 0, "position"), -1), "$.participants[0].position"),
    "empty id": (_set(("sessions", "S1", "task"), ""), "$.sessions.S1.task"),
    "unknown event kind": (_set(("events", 0), {"turn_completed": {"task": "T1", "session": "S1"}}), "$.events[0]"),
    "unknown bare event": (_set(("events", 3), "restat"), "$.events[3]"),
    "event with two keys": (_set(("events", 3), {"restart": None, "recover": None}), "$.events[3]"),
    "event as a number": (_set(("events", 3), 4), "$.events[3]"),
    "event field misspelt": (_set(("events", 0, "turn_complete", "sesion"), "S1"), "$.events[0].turn_complete"),
    "event field missing": (_drop(("events", 0, "turn_complete", "session")), "$.events[0].turn_complete"),
    "bare event with fields": (_set(("events", 4, "recover"), {"hard": True}), "$.events[4].recover"),
    "redeliver zero": (_set(("events", 1, "redeliver"), 0), "$.events[1].redeliver"),
    "redeliver text": (_set(("events", 1, "redeliver"), "1"), "$.events[1].redeliver"),
    "unknown route": (_set(("events", 0), {"move": {"task": "T1", "to": "review", "route": "drag"}}),
                      "$.events[0].move.route"),
    "decision by agent and user": (_decide(agent="rev-a", role="reviewer", user="ann"), "$.events[2].decide.user"),
    "decision by nobody": (_decide(), "$.events[2].decide"),
    "agent decision without role": (_decide(agent="rev-a"), "$.events[2].decide"),
    "negative fault count": (_set(("executors", "clear_decisions", "fail"), -1), "$.executors.clear_decisions.fail"),
    "fault setting misspelt": (_set(("executors", "clear_decisions"), {"fails": 1}), "$.executors.clear_decisions"),
    "fault word unknown": (_set(("executors", "run_code_review"), "absent"), "$.executors.run_code_review"),
    "fault as a number": (_set(("executors", "run_code_review"), 1), "$.executors.run_code_review"),
    "hang too long": (_set(("executors", "clear_decisions", "seconds"), 7200), "$.executors.clear_decisions.seconds"),
    "timeout zero": (_set(("executor_timeout",), 0), "$.executor_timeout"),
    "workflow and source": (_set(("source",), "workflow w \"W\" {}"), "$.source"),
    "neither workflow nor source": (_drop(("workflow",)), "$"),
    "events not a list": (_set(("events",), {"restart": None}), "$.events"),
    "expected run missing reason": (_set(("expect", "runs"), [{"task": "T1", "agent": "rev-a"}]), "$.expect.runs[0]"),
}


@pytest.mark.parametrize("case", sorted(SCENARIO_CASES))
def test_bad_scenario_is_refused_at_the_key(case: str) -> None:
    edit, where = SCENARIO_CASES[case]
    data = base_scenario()
    edit(data)
    assert error_paths("scenario", data) == {where}
    with pytest.raises(ScenarioError):
        parse_scenario(yaml.safe_dump(data))


SCENARIO_ACCEPTED = {
    "the base": lambda data: None,
    "bare restart as a mapping": _set(("events", 3), {"restart": None}),
    "missing as a setting": _set(("executors", "run_code_review"), {"missing": True}),
    "decision by a user": _decide(user="ann"),
    "decision by a user, agent null": _decide(user="ann", agent=None),
    "inline source instead of a file": lambda data: data.update(workflow=None, source="workflow w \"W\" {}"),
    "no events": _set(("events",), None),
    "template seat with empty task": _set(("participants", 0, "task"), ""),
    "task on no step": _set(("tasks", "T1", "step"), ""),
    "no timeout": _set(("executor_timeout",), None),
}


@pytest.mark.parametrize("case", sorted(SCENARIO_ACCEPTED))
def test_scenario_the_reader_accepts_is_valid(case: str) -> None:
    data = base_scenario()
    SCENARIO_ACCEPTED[case](data)
    parse_scenario(yaml.safe_dump(data))
    assert error_paths("scenario", copy.deepcopy(data)) == set()


# Keywords draft-7 validators (yaml-language-server's) share with 2020-12, plus `$defs` (reached by JSON pointer).
EDITOR_KEYWORDS = {"$schema", "$id", "$comment", "$defs", "$ref", "title", "description", "default", "type", "enum",
                   "const", "properties", "additionalProperties", "required", "items", "minItems", "maxItems",
                   "minProperties", "maxProperties", "minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum",
                   "minLength", "maxLength", "pattern", "anyOf", "oneOf", "allOf", "not", "if", "then", "else"}


@pytest.mark.parametrize("name", NAMES)
def test_schema_uses_only_keywords_editors_understand(name: str) -> None:
    def keywords(node: Any) -> set[str]:
        if isinstance(node, list):
            return set().union(*(keywords(v) for v in node)) if node else set()
        if not isinstance(node, dict):
            return set()
        found = set(node)
        for key, value in node.items():
            if key in ("properties", "$defs"):
                found |= set().union(*(keywords(v) for v in value.values())) if value else set()
            elif key not in ("enum", "const", "default", "required"):
                found |= keywords(value)
        return found

    assert keywords(schema(name)) - EDITOR_KEYWORDS == set()
