"""An IR value in, its plan JSON value out: what an action argument, a parameter default or an option block
becomes in a plan.  Its own module so the passes (the size of an arrival's options) use it without importing
the plan models: `check` never builds a plan."""

from __future__ import annotations

from typing import Any

from interlock.dsl import ir

__all__ = ["plan_value"]


def plan_value(value: ir.Value, t: ir.TypeRef | None) -> Any:
    """The JSON value of `value`, read as type `t` (None: untyped, as an option block's)."""
    match value:
        case ir.StrLit() | ir.IntLit() | ir.BoolLit():
            return value.value
        case ir.NameValue():
            return value.dotted
        case ir.CallValue(args=(ir.IntLit(value=count), *_)):
            return {"threshold": value.name.dotted, "count": count}
        case ir.CallValue():
            return {"threshold": value.name.dotted, "count": None}
        case ir.ListValue():
            inner = t.arg if t is not None and t.name == "list" else None
            return [plan_value(v, inner) for v in value.items]
        case ir.MapValue():
            return {e.key: plan_value(e.value, None) for e in value.entries}
    raise TypeError(f"not a value node: {type(value).__name__}")
