"""The JSON Schemas (2020-12) of the plan and of the scenario format: generated from the pydantic models,
then post-processed into what the loaders really accept (docs/schema.md, ADR 0025).

`render(name)` is the deterministic text `interlock schema NAME` prints and `schemas/NAME.schema.json`
holds.  The models live in `interlock.runtime` and are imported only when a schema is built.

Post-processing, in order:

- pydantic's OpenAPI `discriminator` unions become one shared definition that picks its variant with
  `if`/`then` on the tag (so an error points into the variant), and the tag is required: the loader
  refuses an expression or a sequence step without it;
- the plan's `plan_version` is a required `const`, its `digest` and `layout_digest` required `sha256:` + 64 hex strings;
- the scenario's `events` are described in their YAML shape (one-key mappings, `redeliver: N`, the bare
  words `restart` and `recover`), not as the model's `Any`; an executor fault is a mapping or the word
  `missing`; the checks the models make in validators (exactly one of `workflow`/`source`, a decision by
  `agent` + `role` or by `user`) are spelled out;
- titles pydantic makes up from field names are dropped; model titles and docstrings stay.
"""

from __future__ import annotations

import json
from typing import Any

__all__ = ["NAMES", "DIALECT", "schema_id", "schema", "render", "plan_schema", "scenario_schema"]

NAMES = ("plan", "scenario")
DIALECT = "https://json-schema.org/draft/2020-12/schema"
BASE_ID = "https://interlock.dev/schemas/"
SCENARIO_FORMAT = 1
"""The scenario format's major version (ADR 0009: extensions only add keys); it names the schema's `$id`."""

DIGEST_PATTERN = "^sha256:[0-9a-f]{64}$"

# The discriminated unions of the plan, by their tag: the name of the shared definition.
_UNION_NAMES = {"op": "PlanExpr", "step": "SequenceStep"}

_SCENARIO_KEYS = {
    "workflow": "The .wf file, a path relative to the scenario (exactly one of `workflow` and `source`).",
    "source": "Inline .wf text, usually a `|` block (exactly one of `workflow` and `source`).",
    "tasks": "Tasks that exist before the first event, by id: set-up, not arrivals (no ledger row, no entry).",
    "sessions": "Agent sessions, by id.",
    "participants": "Seats: a `task` of \"\" (or none) makes a template row of the step, for every task.",
    "agents": "The directory: `primary` (the task's runner) and `ceo` (the workspace CEO agent).",
    "host": "Host flags the guards read.",
    "executors": "Faults per action kind: `{fail: N, panic: N, hang: N, seconds: S, error: \"...\"}` or `missing` "
                 "(no executor at all). By default every kind succeeds.",
    "executor_timeout": "Seconds before a hanging host executor is abandoned.",
    "events": "The deliveries, in order, numbered from 1.",
    "expect": "What must come out; without it the scenario is only simulated.",
}

_EVENTS = {
    "create": "Creates a task: an arrival with route `creation` (`step` defaults to the start step).",
    "move": "Moves a task (route default `manual_move`).",
    "turn_complete": "Fires `on_turn_complete`; without `operation` the simulator makes an id tied to the "
                     "event's number.",
    "fire": "Fires any non-entry trigger.",
    "dispatch": "Runs a dispatch sequence on an event record.",
    "decide": "Records a decision: `agent` with its `role`, or `user` (exactly one of the two).",
    "redeliver": "Delivers event N again with the same identity; N names an earlier event (1 .. this event's "
                 "number - 1).",
    "restart": "A new runtime over the same store (no in-process state survives); usually written bare: "
               "`- restart`.",
    "crash_after_commit": "The arrival commits, its entry dispatch is lost (route default `engine_transition`).",
    "recover": "The start-up sweep: dispatches entries that never ran, re-evaluates cut-short decisions; "
               "usually written bare: `- recover`.",
    "advance": "Moves the simulator's clock (it starts at 2026-01-01T00:00:00Z) by a duration such as `4h`, "
               "`90s` or `2d`, then ticks: due timers fire, due retries run.",
    "tick": "Ticks without moving the clock: what is due fires; usually written bare: `- tick`.",
    "redrive": "Redrives every open incident of the task: only what failed runs again.",
}
_BARE_EVENTS = ("restart", "recover", "tick")


def schema_id(name: str) -> str:
    """The stable `$id` of a schema: it names the format's major version; it need not resolve (ADR 0025)."""
    if name == "plan":
        from interlock.runtime.plan import PLAN_VERSION

        return f"{BASE_ID}plan-v{PLAN_VERSION}.json"
    if name == "scenario":
        return f"{BASE_ID}scenario-v{SCENARIO_FORMAT}.json"
    raise ValueError(f"no schema named {name!r} (schemas: {', '.join(NAMES)})")


def schema(name: str) -> dict[str, Any]:
    """The schema `name` (`plan` or `scenario`) as a JSON value."""
    if name == "plan":
        return plan_schema()
    if name == "scenario":
        return scenario_schema()
    raise ValueError(f"no schema named {name!r} (schemas: {', '.join(NAMES)})")


def render(name: str) -> str:
    """The schema as deterministic text: sorted keys, two-space indent, a final newline."""
    return json.dumps(schema(name), indent=2, sort_keys=True, ensure_ascii=False) + "\n"


# ---- the plan -----------------------------------------------------------------------------------------
def plan_schema() -> dict[str, Any]:
    from interlock.runtime.plan import PLAN_VERSION, Plan

    raw = Plan.model_json_schema(mode="validation")
    raw_defs: dict[str, Any] = raw.pop("$defs")
    (root,), defs = _clean_all(raw_defs, raw)
    props = root["properties"]
    props["plan_version"] = {"const": PLAN_VERSION,
                             "description": "The plan format's version: a runtime reads only its own."}
    props["digest"] = {"type": "string", "pattern": DIGEST_PATTERN, "minLength": 71, "maxLength": 71,
                       "description": "The plan's revision: sha256 over the canonical JSON of its meaning (every "
                                      "field but the source positions, `sources`, `compiler` and the two "
                                      "digests); the loader recomputes it and refuses a plan edited after "
                                      "compilation. Reformatting a source never changes it."}
    props["layout_digest"] = {"type": "string", "pattern": DIGEST_PATTERN, "minLength": 71, "maxLength": 71,
                              "description": "sha256 over the plan's layout (the source positions, `sources` and "
                                             "`compiler`), checked on load like `digest`."}
    root["required"] = _required(root, "plan_version", "digest", "layout_digest")
    root["description"] = ("An executable plan as `interlock compile` writes it. The schema checks the shape; "
                           "the loader also checks the digest against the content and that every name the plan "
                           "uses is declared in it.")
    return _document("plan", "interlock plan", root, defs, "interlock.runtime.plan")


# ---- the scenario format ------------------------------------------------------------------------------
def scenario_schema() -> dict[str, Any]:
    from pydantic.json_schema import models_json_schema

    from interlock.runtime import scenario as sc

    bodies: dict[str, Any] = dict(sc._BODIES)  # the mapping-bodied events, by kind, as the reader validates them
    expected = set(sc.EVENT_KINDS) - {"redeliver", "advance", *_BARE_EVENTS}
    if set(_BARE_EVENTS) != set(sc.BARE_EVENTS):
        raise RuntimeError(f"the scenario reader's bare events changed ({sorted(sc.BARE_EVENTS)}): describe them "
                           "in interlock/json_schemas.py")
    if set(bodies) != expected or set(_EVENTS) != set(sc.EVENT_KINDS):
        raise RuntimeError(f"the scenario reader's events changed ({sorted(sc.EVENT_KINDS)}): "
                           "describe the new ones in interlock/json_schemas.py")
    _, raw = models_json_schema([(sc.Scenario, "validation"), *((m, "validation") for m in bodies.values())])
    _, defs = _clean_all(raw["$defs"])
    root = defs.pop("Scenario")
    props = root["properties"]
    if set(props) != set(_SCENARIO_KEYS):
        raise RuntimeError(f"the scenario's keys changed ({sorted(props)}): describe them in interlock/json_schemas.py")
    for key, text in _SCENARIO_KEYS.items():
        props[key]["description"] = text
    host = sc.Scenario.model_fields["host"].get_default(call_default_factory=True)
    props["host"]["default"] = host
    # exactly one of `workflow` and `source` (a null one counts as not given)
    root["if"] = {"required": ["workflow"], "properties": {"workflow": {"type": "string"}}}
    root["then"] = {"properties": {"source": {"type": "null"}}}
    root["else"] = {"required": ["source"], "properties": {"source": {"type": "string"}}}
    # events: read apart from the model, in their YAML shape
    props["events"] = {"type": ["array", "null"], "items": {"$ref": "#/$defs/Event"}, "default": [],
                       "description": _SCENARIO_KEYS["events"]}
    defs["Event"] = {
        "title": "Event",
        "description": "One event: a mapping with exactly one key, the event's kind (`- move: {task: T1, to: "
                       "review}`, `- redeliver: 2`, `- advance: 4h`), or the bare word `restart`, `recover` or "
                       "`tick`.",
        "type": ["object", "string"],
        "if": {"type": "string"},
        "then": {"enum": list(_BARE_EVENTS)},
        "else": {"$ref": "#/$defs/EventMapping"},
    }
    kinds: dict[str, Any] = {}
    for kind in sc.EVENT_KINDS:
        if kind == "redeliver":
            kinds[kind] = {"type": "integer", "minimum": 1}
        elif kind == "advance":
            kinds[kind] = {"type": "string", "pattern": "^[0-9]+[smhd]$"}
        elif kind in _BARE_EVENTS:
            kinds[kind] = {"type": ["null", "object"], "maxProperties": 0}
        else:
            kinds[kind] = {"$ref": f"#/$defs/{bodies[kind].__name__}"}
        kinds[kind]["description"] = _EVENTS[kind]
    defs["EventMapping"] = {"title": "EventMapping", "type": "object", "minProperties": 1, "maxProperties": 1,
                            "properties": kinds, "additionalProperties": False}
    # a decision is by an agent (with its role) or by a user, never both
    decide = defs["Decide"]
    decide["if"] = {"required": ["agent"], "properties": {"agent": {"type": "string"}}}
    decide["then"] = {"required": ["role"], "properties": {"role": {"minLength": 1}, "user": {"type": "null"}}}
    decide["else"] = {"required": ["user"], "properties": {"user": {"type": "string"}}}
    # an executor fault is a mapping of settings or the word `missing`
    defs["ExecutorSettings"] = {**defs.pop("ExecutorFault"), "title": "ExecutorSettings"}
    defs["ExecutorFault"] = {
        "title": "ExecutorFault",
        "description": "Faults of one action kind's executor: settings such as `{fail: 1, error: \"...\"}` "
                       "(calls counted per kind over the whole scenario, in the order fail, panic, hang), or "
                       "`missing`: no executor at all.",
        "type": ["object", "string"],
        "if": {"type": "string"},
        "then": {"const": "missing"},
        "else": {"$ref": "#/$defs/ExecutorSettings"},
    }
    props["executors"]["additionalProperties"] = {"$ref": "#/$defs/ExecutorFault"}
    root["description"] = ("A simulator scenario (docs/scenarios.md) as the scenario reader accepts it. Names "
                           "(workflows, steps, roles, kinds) are checked against the compiled plan when the "
                           "scenario runs; `redeliver: N` must name an earlier event.")
    return _document("scenario", "interlock scenario", root, defs, "interlock.runtime.scenario")


# ---- post-processing ----------------------------------------------------------------------------------
def _document(name: str, title: str, root: dict[str, Any], defs: dict[str, Any], source: str) -> dict[str, Any]:
    used = _refs({"root": root, "defs": defs})
    unused = sorted(set(defs) - used)
    if unused:
        raise RuntimeError(f"unused schema definitions: {', '.join(unused)}")
    return {
        "$schema": DIALECT,
        "$id": schema_id(name),
        "$comment": f"Generated from {source} by `interlock schema {name}`; do not edit (docs/schema.md).",
        **{k: v for k, v in root.items() if k != "title"},
        "title": title,
        "$defs": defs,
    }


def _required(node: dict[str, Any], *names: str) -> list[str]:
    have: list[str] = list(node.get("required", ()))
    return [*names, *(n for n in have if n not in names)]


def _refs(node: Any) -> set[str]:
    found: set[str] = set()
    if isinstance(node, dict):
        ref = node.get("$ref")
        if isinstance(ref, str) and ref.startswith("#/$defs/"):
            found.add(ref.removeprefix("#/$defs/"))
        for value in node.values():
            found |= _refs(value)
    elif isinstance(node, list):
        for value in node:
            found |= _refs(value)
    return found


_SCHEMA_MAPS = ("properties", "$defs", "patternProperties", "dependentSchemas")
_SCHEMA_LISTS = ("anyOf", "oneOf", "allOf", "prefixItems")
_SCHEMA_ONE = ("items", "additionalProperties", "not", "if", "then", "else", "contains", "propertyNames")


def _clean(node: Any, unions: dict[str, dict[str, str]], *, top: bool = True) -> Any:
    """A copy of one pydantic schema node: made-up titles dropped, each discriminated union replaced by a
    reference to its shared definition (noted in `unions`, tag -> mapping, for `_add_unions`)."""
    if not isinstance(node, dict):
        return node
    if "discriminator" in node:
        tag = node["discriminator"]["propertyName"]
        name = _UNION_NAMES.get(tag)
        if name is None:
            raise RuntimeError(f"a discriminated union on `{tag}` has no schema name: add it to _UNION_NAMES")
        unions[tag] = node["discriminator"]["mapping"]
        return {"$ref": f"#/$defs/{name}"}
    out: dict[str, Any] = {}
    for key, value in node.items():
        if key == "title" and not top:
            continue
        if key in _SCHEMA_MAPS:
            out[key] = {k: _clean(v, unions, top=False) for k, v in value.items()}
        elif key in _SCHEMA_LISTS:
            out[key] = [_clean(v, unions, top=False) for v in value]
        elif key in _SCHEMA_ONE:
            out[key] = _clean(value, unions, top=False)
        else:
            out[key] = value
    return out


def _clean_all(raw_defs: dict[str, Any], *roots: dict[str, Any]) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    """The roots and the definitions cleaned, with the shared definitions of the discriminated unions added."""
    unions: dict[str, dict[str, str]] = {}
    cleaned = [_clean(root, unions) for root in roots]
    defs = {name: _clean(node, unions) for name, node in raw_defs.items()}
    for tag, mapping in unions.items():
        _add_union(tag, mapping, defs)
    return cleaned, defs


def _add_union(tag: str, mapping: dict[str, str], defs: dict[str, Any]) -> None:
    """The shared definition of a discriminated union: the tag is required and picks the variant, whose own
    schema then applies (so errors point into it); the variants require their tag too, as the loader does."""
    variants: dict[str, list[str]] = {}
    for value, ref in mapping.items():
        variants.setdefault(ref, []).append(value)
    branches = []
    for ref, values in variants.items():
        variant = defs[ref.removeprefix("#/$defs/")]
        variant["required"] = _required(variant, tag)
        variant["properties"][tag].pop("default", None)
        match = {"const": values[0]} if len(values) == 1 else {"enum": values}
        branches.append({"if": {"required": [tag], "properties": {tag: match}}, "then": {"$ref": ref}})
    name = _UNION_NAMES[tag]
    defs[name] = {"title": name, "type": "object", "required": [tag],
                  "properties": {tag: {"enum": list(mapping)}}, "allOf": branches}
