"""A plan expression and the values in scope in, its value out (dispatch-sequence evaluation)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from .plan import BinX, LitX, NotX, PathX, PlanExpr

__all__ = ["evaluate", "lookup", "empty"]


def empty(value: Any) -> bool:
    return value is None or value == ""


def lookup(scope: Mapping[str, Any], path: tuple[str, ...]) -> Any:
    """The value at a field path: keys of mappings only.  Never an attribute: a host value that is not a mapping
    (an exception object, a model) reads as missing, so no path can walk into a host's objects (`__traceback__`,
    `f_globals`, …) and read what the plan did not declare."""
    value: Any = scope.get(path[0])
    for part in path[1:]:
        if not isinstance(value, Mapping):
            return None
        value = value.get(part)
    return value


def evaluate(expr: PlanExpr, scope: Mapping[str, Any]) -> Any:
    if isinstance(expr, LitX):
        return expr.value
    if isinstance(expr, PathX):
        value = lookup(scope, expr.path)
        if value is None:
            return {"str": "", "int": 0, "bool": False}.get(expr.type)
        return value
    if isinstance(expr, NotX):
        return not evaluate(expr.arg, scope)
    assert isinstance(expr, BinX)
    if expr.op == "or":
        return bool(evaluate(expr.left, scope)) or bool(evaluate(expr.right, scope))
    if expr.op == "and":
        return bool(evaluate(expr.left, scope)) and bool(evaluate(expr.right, scope))
    if expr.op == "==":
        return bool(evaluate(expr.left, scope) == evaluate(expr.right, scope))
    if expr.op == "!=":
        return bool(evaluate(expr.left, scope) != evaluate(expr.right, scope))
    left = evaluate(expr.left, scope)
    return evaluate(expr.right, scope) if empty(left) else left
