"""`diff` reports every difference between two plans: a change to any field of any plan model is reported, a change
to the layout (source positions, file names, compiler version) never is.

The test walks the pydantic models of `interlock.runtime.plan` generically — no field is named here — so a field
added to the plan model later is mutated by this test the day it is added, and the test fails if `diff` ignores it.
Every model and field reachable from `Plan` by its type hints is covered: fields of the compiled examples are
mutated where they occur; a field an example leaves empty or None gets a sample value of its type, whose own fields
are then mutated in turn.  The only fields not mutated are those that cannot differ (a `Literal` with one value: the
`op`/`step` tags of discriminated unions) and the layout and digests.
"""

from __future__ import annotations

import functools
import json
import typing
from collections.abc import Iterator
from pathlib import Path
from types import UnionType
from typing import Annotated, Any, Literal, Union, get_args, get_origin

import pytest
from pydantic import BaseModel

from interlock.compiler import compile_path
from interlock.diffing import diff_plans
from interlock.runtime import plan_model as plan_module  # the models (runtime/plan.py re-exports them)
from interlock.runtime.plan import Plan, SourceRef
from interlock.runtime.plan_digest import DIGEST_FIELDS, PLAN_LAYOUT_FIELDS

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = sorted((ROOT / "examples").glob("*.wf"))
PER_FIELD = 3
"""How many places of each (model, field) are mutated (the first ones met, over all examples)."""

Path_ = tuple[Any, ...]


# ---- types ----------------------------------------------------------------------------------------------------


@functools.cache
def hints(model: type[BaseModel]) -> dict[str, Any]:
    resolved = typing.get_type_hints(model, include_extras=True, globalns=vars(plan_module))
    return {name: resolved[name] for name in model.model_fields}


def unwrap(hint: Any) -> Any:
    while get_origin(hint) is Annotated:
        hint = get_args(hint)[0]
    return hint


def members(hint: Any) -> list[Any]:
    hint = unwrap(hint)
    if get_origin(hint) in (Union, UnionType):
        return [m for a in get_args(hint) for m in members(a)]
    return [hint]


def is_model(hint: Any) -> bool:
    return isinstance(hint, type) and issubclass(hint, BaseModel)


def is_layout(model: type[BaseModel], field: str) -> bool:
    if model is Plan and field in (*PLAN_LAYOUT_FIELDS, *DIGEST_FIELDS):
        return True
    return SourceRef in members(hints(model)[field])


def fixed(hint: Any) -> bool:
    """A field that cannot differ: a `Literal` of one value."""
    hint = unwrap(hint)
    return get_origin(hint) is Literal and len(get_args(hint)) == 1


def reachable() -> set[tuple[str, str]]:
    """Every (model, field) reachable from `Plan` by type hints that can differ and is not layout (a field that is
    always one model, such as `Plan.entry_policy`, differs only by its own fields, which are in the set)."""
    seen: set[type[BaseModel]] = set()
    out: set[tuple[str, str]] = set()
    stack: list[Any] = [Plan]
    while stack:
        hint = stack.pop()
        for m in members(hint):
            if is_model(m):
                if m in seen:
                    continue
                seen.add(m)
                for name, h in hints(m).items():
                    whole_model = is_model(unwrap(h))  # not optional: only its own fields can differ
                    if not is_layout(m, name) and not fixed(h) and not whole_model:
                        out.add((m.__name__, name))
                    if not is_layout(m, name):
                        stack.append(h)
            elif get_origin(m) in (tuple, list, dict):
                stack.extend(get_args(m))
    return out


# ---- values -----------------------------------------------------------------------------------------------------


def sample(hint: Any) -> Any:
    """A small value of the type."""
    options = [m for m in members(hint) if m is not type(None)]
    hint = options[0]
    origin = get_origin(hint)
    if is_model(hint):
        values = {name: sample(h) for name, h in hints(hint).items() if hint.model_fields[name].is_required()}
        return hint.model_construct(**values)
    if hint is SourceRef:
        return SourceRef(file="sample.wf", line=1, col=1)
    if origin is Literal:
        return get_args(hint)[0]
    if origin in (tuple, list):
        return ()
    if origin is dict:
        return {}
    return {bool: True, int: 1, str: "sample"}.get(hint, "sample")


def mutated(value: Any, hint: Any) -> tuple[Any, bool] | None:
    """A different value of the type, and whether it is a sample (so its own fields are still to be mutated); None
    when the type allows no other value."""
    options = [m for m in members(hint) if m is not type(None)]
    optional = len(options) < len(members(hint))
    if value is None:
        return sample(hint), True
    if len(options) > 1 and all(is_model(m) for m in options):  # a discriminated union: another variant
        # the last other variant: the first ones (paths, literals, `not`, `and`/`or`) occur in the examples as they
        # are, so every variant is changed somewhere
        other = [m for m in options if not isinstance(value, m)][-1]
        return sample(other), True
    hint = options[0]
    origin = get_origin(hint)
    if isinstance(value, BaseModel):
        return (None, False) if optional else None  # its fields are mutated one by one
    if origin is Literal:
        others = [v for v in get_args(hint) if v != value]
        return (others[0], False) if others else None
    if origin in (tuple, list):
        return (value[:-1], False) if value else ((sample(get_args(hint)[0]),), True)
    if origin is dict:
        if value:
            return {k: v for k, v in list(value.items())[:-1]}, False
        return {"sample_key": sample(get_args(hint)[1])}, True
    if isinstance(value, bool):
        return not value, False
    if isinstance(value, int):
        return value + 1, False
    if isinstance(value, str):
        return value + "_x", False
    return (["mutated"] if value != ["mutated"] else "mutated"), False  # `Any`: an argument, a default


def replaced(obj: Any, path: Path_, value: Any) -> Any:
    if not path:
        return value
    head, rest = path[0], path[1:]
    if isinstance(obj, BaseModel):
        return obj.model_copy(update={head: replaced(getattr(obj, head), rest, value)})
    if isinstance(obj, tuple):
        return tuple(replaced(v, rest, value) if i == head else v for i, v in enumerate(obj))
    if isinstance(obj, dict):
        return {k: replaced(v, rest, value) if k == head else v for k, v in obj.items()}
    raise AssertionError(f"cannot descend into {type(obj).__name__} at {path}")


def sites(obj: Any, hint: Any, path: Path_ = ()) -> Iterator[tuple[Path_, Any, Any, type[BaseModel], str]]:
    """(path, value, type, owning model, field) of every non-layout field of every model in `obj`, at any depth."""
    if isinstance(obj, BaseModel):
        model = type(obj)
        for name, h in hints(model).items():
            if is_layout(model, name):
                continue
            value = getattr(obj, name)
            yield (*path, name), value, h, model, name
            yield from sites(value, h, (*path, name))
        return
    container = next((m for m in members(hint) if get_origin(m) in (tuple, list, dict)), None)
    if container is None:
        return
    args = get_args(container)
    if isinstance(obj, dict):
        for k, v in obj.items():
            yield from sites(v, args[1], (*path, k))
    elif isinstance(obj, tuple):
        for i, v in enumerate(obj):
            yield from sites(v, args[0], (*path, i))


@functools.cache
def example_plans() -> tuple[Plan, ...]:
    plans = []
    for path in EXAMPLES:
        result = compile_path(path, display=path.name)
        assert result.plan is not None, path
        plans.append(result.plan)
    return tuple(plans)


def mutations() -> Iterator[tuple[Plan, Plan, Path_, str]]:
    """(plan, the plan with one field changed, where, which model.field), PER_FIELD places per (model, field)."""
    count: dict[tuple[str, str], int] = {}
    queue: list[tuple[Plan, Path_, Any]] = [(p, (), None) for p in example_plans()]
    while queue:
        base, at, at_hint = queue.pop(0)
        node = base
        for p in at:
            node = node[p] if isinstance(node, (tuple, dict)) else getattr(node, p)
        # the hint lets a sampled list (a step's `timers`, empty in every example) be walked into
        for path, value, hint, model, name in sites(node, at_hint, at):
            key = (model.__name__, name)
            if count.get(key, 0) >= PER_FIELD:
                continue
            change = mutated(value, hint)
            if change is None:
                continue
            count[key] = count.get(key, 0) + 1
            new_value, is_sample = change
            other = replaced(base, path, new_value)
            yield base, other, path, f"{model.__name__}.{name}"
            if is_sample:  # the sample's own fields, in the plan that holds it
                queue.append((other, path, hint))


# ---- the tests ------------------------------------------------------------------------------------------------------


def test_every_field_of_every_plan_model_is_mutated() -> None:
    """The walk below reaches every field the plan model has, the ones added after this test was written too."""
    covered = {tuple(where.split(".")) for _, _, _, where in mutations()}
    missing = reachable() - covered
    assert not missing, f"fields of the plan model this test never changed: {sorted(missing)}"


def test_diff_reports_a_change_to_any_field_of_the_plan() -> None:
    silent: list[str] = []
    for base, other, path, where in mutations():
        assert diff_plans(base, base) == []
        found = diff_plans(base, other)
        if not found:
            silent.append(f"{where} at {'/'.join(map(str, path))}")
            continue
        for change in found:
            assert change.category in ("behaviour", "metadata")
            json.dumps(change.to_json())  # every change is JSON as it is
    assert not silent, "diff reported nothing for these changes of the plan:\n  " + "\n  ".join(silent)


def test_diff_reports_nothing_for_a_change_of_the_layout() -> None:
    for plan in example_plans():
        layout_sites = 0
        for path, value, _h, _m, _n in _layout_sites(plan):
            other = replaced(plan, path, SourceRef(file="elsewhere.wf", line=value.line + 7, col=value.col + 1))
            assert diff_plans(plan, other) == [], path
            layout_sites += 1
        assert layout_sites > 0
        moved = plan.model_copy(update={"compiler": "interlock 9.9", "sources": ("<prelude:std>", "renamed.wf")})
        assert diff_plans(plan, moved) == []


def _layout_sites(obj: Any, path: Path_ = ()) -> Iterator[tuple[Path_, Any, Any, Any, Any]]:
    if isinstance(obj, BaseModel):
        for name in type(obj).model_fields:
            value = getattr(obj, name)
            if isinstance(value, SourceRef):
                yield (*path, name), value, None, None, None
            else:
                yield from _layout_sites(value, (*path, name))
    elif isinstance(obj, tuple):
        for i, v in enumerate(obj):
            yield from _layout_sites(v, (*path, i))
    elif isinstance(obj, dict):
        for k, v in obj.items():
            yield from _layout_sites(v, (*path, k))


@pytest.mark.parametrize("field", ["prompt", "description", "color", "show_in_command_panel", "agent_profile",
                                   "auto_archive_after_hours", "cancel_triggers_turn_complete",
                                   "auto_advance_requires_signal"])
def test_each_host_setting_of_a_step_is_reported_with_its_category(field: str) -> None:
    plan = next(p for p in example_plans() if p.workflows)
    step = plan.workflows[0].steps[0]
    value = getattr(step, field)
    change = mutated(value, hints(type(step))[field])
    assert change is not None
    other = replaced(plan, ("workflows", 0, "steps", 0, field), change[0])
    found = diff_plans(plan, other)
    assert [(c.code, c.subject, c.step) for c in found] == [("step.attribute", field, step.id)]
    expected = "metadata" if field in ("description", "color", "show_in_command_panel") else "behaviour"
    assert found[0].category == expected and not found[0].breaking
