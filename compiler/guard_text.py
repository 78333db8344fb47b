"""A plan's expression (or a transition's guard) in, its `.wf` text out: what `graph`, `diff` and the kandev export
show of a guard, written as the source writes it, with only the parentheses precedence needs."""

from __future__ import annotations

from interlock.dsl.escapes import quote
from interlock.dsl.printer import ATOM_PRECEDENCE, BINARY_PRECEDENCE, NOT_PRECEDENCE
from interlock.runtime.guards import guard_of
from interlock.runtime.plan import BinX, LitX, NotX, PathX, PlanAction, PlanExpr, QuorumX

__all__ = ["expr_text", "guard_text", "quorum_text"]

_PREC, _NOT, _ATOM = BINARY_PRECEDENCE, NOT_PRECEDENCE, ATOM_PRECEDENCE  # one table: the IR printer's


def quorum_text(q: QuorumX) -> str:
    """`quorum(role, threshold)`, `n_approve(N)` with its count."""
    threshold = q.threshold if q.count is None else f"{q.threshold}({q.count})"
    return f"quorum({q.role}, {threshold})"


def _prec(expr: PlanExpr) -> int:
    if isinstance(expr, BinX):
        return _PREC[expr.op]
    return _NOT if isinstance(expr, NotX) else _ATOM


def _text(expr: PlanExpr, least: int) -> str:
    prec = _prec(expr)
    if isinstance(expr, PathX):
        text = ".".join(expr.path)
    elif isinstance(expr, LitX):
        value = expr.value
        text = quote(value) if isinstance(value, str) else ("true" if value is True else "false" if value is False
                                                             else str(value))
    elif isinstance(expr, QuorumX):
        text = quorum_text(expr)
    elif isinstance(expr, NotX):
        text = "not " + _text(expr.arg, _NOT)
    else:
        # comparisons do not chain (`a == b == c` is no expression); the others are left-associative
        right = prec + 1
        left = prec + 1 if prec == _PREC["=="] else prec
        text = f"{_text(expr.left, left)} {expr.op} {_text(expr.right, right)}"
    return f"({text})" if prec < least else text


def expr_text(expr: PlanExpr) -> str:
    """An expression as `.wf` text."""
    return _text(expr, 0)


def guard_text(action: PlanAction) -> str:
    """`when EXPR` for a guarded action (its quorum-only `guard` or its `when`), "" for an unguarded one."""
    expr = guard_of(action)
    return "" if expr is None else f"when {expr_text(expr)}"
