"""A plan expression and the values in scope in, its value out (dispatch-sequence evaluation)."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from .errors import RuntimeFault
from .plan import BinX, LitX, NotX, PathX, PlanExpr, QuorumX

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


def evaluate(expr: PlanExpr, scope: Mapping[str, Any], quorum: Callable[[QuorumX], bool] | None = None) -> Any:
    """The value of `expr` over `scope`; `quorum` answers a transition guard's `quorum(…)` (`and` and `or` stop at
    the first side that decides, so a quorum the other side decides is never counted)."""
    if isinstance(expr, LitX):
        return expr.value
    if isinstance(expr, PathX):
        value = lookup(scope, expr.path)
        if value is None:
            return {"str": "", "int": 0, "bool": False}.get(expr.type)
        return value
    if isinstance(expr, NotX):
        return not evaluate(expr.arg, scope, quorum)
    if isinstance(expr, QuorumX):
        if quorum is None:  # a plan's references are checked on load: only a hand-built plan gets here
            raise RuntimeFault("`quorum(…)` outside a transition's guard")
        return bool(quorum(expr))
    assert isinstance(expr, BinX)
    if expr.op == "or":
        return bool(evaluate(expr.left, scope, quorum)) or bool(evaluate(expr.right, scope, quorum))
    if expr.op == "and":
        return bool(evaluate(expr.left, scope, quorum)) and bool(evaluate(expr.right, scope, quorum))
    if expr.op == "==":
        return bool(evaluate(expr.left, scope, quorum) == evaluate(expr.right, scope, quorum))
    if expr.op == "!=":
        return bool(evaluate(expr.left, scope, quorum) != evaluate(expr.right, scope, quorum))
    left = evaluate(expr.left, scope, quorum)
    return evaluate(expr.right, scope, quorum) if empty(left) else left
