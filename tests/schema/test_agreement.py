"""The schemas agree with the loaders: every shipped plan and scenario is mutated key by key (a value replaced,
a key removed, a key added) and the schema's verdict must be the loader's.

The schemas are the strict form of the formats.  Two differences are known and allowed, each in one direction:

- the loaders coerce like pydantic's lax mode (`true` where a whole number is expected is read as 1), which the
  schema refuses: a tool that writes what the schema accepts is always read;
- `redeliver: N` must name an *earlier* event, which a schema cannot say: the schema accepts any N >= 1.

Mutations are made once per model field (the first place each key of each kind of mapping occurs), so the test
covers every field without trying every node of a plan.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from jsonschema import Draft202012Validator

from interlock.compiler import compile_path
from interlock.json_schemas import schema
from interlock.runtime.plan import PlanError, dump_plan, load_plan, seal_digests
from interlock.runtime.scenario import ScenarioError, parse_scenario

pytestmark = pytest.mark.slow  # every shipped plan and scenario mutated field by field: seconds, not millis

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = ROOT / "examples"
TIMERS = ROOT / "tests" / "graph" / "fixtures" / "timers.wf"
VALUES: tuple[Any, ...] = (None, 7, -1, "x", "", True, [], {}, 1.5)
Mutation = tuple[tuple[Any, ...], str, Any]
SCENARIO_FREE = frozenset({"records", "counters", "host", "payload", "event"})
"""The scenario's free-form mappings (any keys, any values): replaced as a whole, not searched."""


def _nodes(data: Any, free: frozenset[str], path: tuple[Any, ...] = (),
           sig: Any = ("root",)) -> Iterator[tuple[tuple[Any, ...], Any, Any]]:
    """Every node with its path and a signature: the keys of the mapping it is in and its key (a list's items
    share the list's signature), standing in for "the same field of the same model"."""
    yield path, data, sig
    if path and path[-1] in free:
        return
    if isinstance(data, dict):
        for key, value in data.items():
            yield from _nodes(value, free, (*path, key), (tuple(sorted(data)), key))
    elif isinstance(data, list):
        for i, value in enumerate(data):
            yield from _nodes(value, free, (*path, i), (sig, "*"))


def _replace(data: Any, path: tuple[Any, ...], value: Any) -> Any:
    out = copy.deepcopy(data)
    node = out
    for part in path[:-1]:
        node = node[part]
    node[path[-1]] = value
    return out


def mutations(documents: list[Any], values: tuple[Any, ...] = VALUES,
              free: frozenset[str] = frozenset()) -> Iterator[tuple[int, Mutation]]:
    seen: set[Any] = set()
    for index, data in enumerate(documents):
        for path, node, sig in _nodes(data, free):
            if sig in seen:
                continue
            seen.add(sig)
            if path:
                for value in values:
                    yield index, (path, f"= {value!r}", _replace(data, path, copy.deepcopy(value)))
            if isinstance(node, dict):
                extra = {**node, "unexpected_key": 1}
                yield index, (path, "+ unexpected_key", _replace(data, path, extra) if path else extra)
                for key in node:
                    less = {k: v for k, v in node.items() if k != key}
                    yield index, (path, f"- {key}", _replace(data, path, less) if path else less)


def _verdicts(name: str, cases: Iterator[tuple[int, Mutation]], loader_accepts: Any) -> list[tuple[str, str, bool]]:
    """(where, what, schema accepts) for each mutation on which the schema and the loader disagree."""
    validator = Draft202012Validator(schema(name))
    disagree = []
    count = 0
    for _, (path, what, data) in cases:
        count += 1
        by_schema = validator.is_valid(data)
        if by_schema != loader_accepts(data, path):
            disagree.append((".".join(map(str, path)) or "$", what, by_schema))
    assert count > 200, f"only {count} mutations"
    return disagree


def _lax_only(disagree: list[tuple[str, str, bool]]) -> list[tuple[str, str, bool]]:
    """The disagreements that are not the known, allowed ones."""
    return [(where, what, by_schema) for where, what, by_schema in disagree
            if not (not by_schema and what == "= True")  # lax: true read as 1
            and not (by_schema and where.endswith(".redeliver") and what == "= 7")]  # a later event


# ---- plans ---------------------------------------------------------------------------------------------
def _trim(node: Any, keep: bool = False) -> Any:
    """A smaller plan with every kind of node: lists cut to two items, except in the dispatch sequences (whose
    expressions and steps are unions, every variant wanted)."""
    if isinstance(node, dict):
        return {k: _trim(v, keep or k == "sequences") for k, v in node.items()}
    if isinstance(node, list):
        return [_trim(v, keep) for v in (node if keep else node[:2])]
    return node


def _plan_loader_accepts(data: Any, path: tuple[Any, ...]) -> bool:
    """load_plan's verdict on the structure: a fresh digest (unless the digest is the mutation), and a plan whose
    only problem is an unresolved name counts as accepted (names are the loader's business, not the schema's)."""
    if (isinstance(data, dict) and "digest" in data and "layout_digest" in data
            and path[:1] not in (("digest",), ("layout_digest",))):
        data = seal_digests(data)
    try:
        load_plan(json.dumps(data))
    except PlanError as exc:
        return str(exc).startswith("plan references do not resolve")
    return True


def test_plan_schema_agrees_with_the_loader() -> None:
    plans = []
    # the graph fixture has timers (after, every, one that moves the task) and retry policies
    for wf in (EXAMPLES / "office_default.wf", EXAMPLES / "kanban.wf", TIMERS):
        result = compile_path(wf)
        assert result.plan is not None
        plans.append(_trim(json.loads(dump_plan(result.plan))))
    disagree = _verdicts("plan", mutations(plans, (None, 7, "x", "", True, {})), _plan_loader_accepts)
    assert _lax_only(disagree) == []
    assert disagree, "the lax coercion is gone: tighten this test (and ADR 0025)"


# ---- scenarios -----------------------------------------------------------------------------------------
def _scenario_loader_accepts(data: Any, path: tuple[Any, ...]) -> bool:
    try:
        parse_scenario(json.dumps(data))  # JSON is YAML, and faster to write and read
    except ScenarioError:
        return False
    return True


def test_scenario_schema_agrees_with_the_reader() -> None:
    scenarios = [yaml.safe_load(p.read_text(encoding="utf-8")) for p in sorted((EXAMPLES / "scenarios").glob("*.yaml"))]
    disagree = _verdicts("scenario", mutations(scenarios, free=SCENARIO_FREE), _scenario_loader_accepts)
    assert _lax_only(disagree) == []


@pytest.mark.parametrize("event", ["restart", "recover", {"restart": None}, {"recover": {}}, {"redeliver": 1}])
def test_bare_and_mapping_forms_of_the_events_agree(event: Any) -> None:
    data = {"source": "workflow w \"W\" { step a \"A\" { start } }",
            "events": [{"create": {"task": "T1", "workflow": "w"}}, event]}
    parse_scenario(yaml.safe_dump(data))
    assert Draft202012Validator(schema("scenario")).is_valid(data)
