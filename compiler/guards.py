"""A transition's guard and the trigger it is declared under in, its scope, its type errors and its quorums out.

A transition guard (docs/language.md §6) is an expression of dispatch sequences' language over three names:
`payload` (the trigger's declared parameters), `task` (the prelude's `task` record, as the runtime reads it
from its store) and `host` (the host flags), with `quorum(ROLE, THRESHOLD)` as a bool-typed atom.  The type
checker and the plan lowering build the same scope here, so a path's type in the plan is the one checked.
"""

from __future__ import annotations

from collections.abc import Iterator

from interlock.dsl import Diagnostic, ir
from interlock.dsl.construct import construct
from interlock.dsl.diagnostics import make

from .exprs import ExprScope, type_of
from .symbols import Symbols, listing

__all__ = ["guard_scope", "check_guard", "quorums", "GUARD_NAMES", "STORE_UNKNOWN"]

GUARD_NAMES = ("payload", "task", "host")
"""The names a transition's guard reads, in the order messages list them."""

STORE_UNKNOWN = {"other_working_session": "the host's sessions"}
"""`task` fields the runtime cannot fill from its store when it evaluates a transition guard (only a dispatch
sequence's `load task` reads them, through the host's loader), and what the store does not know."""


def _payload_type(trigger: str) -> str:
    # not an identifier: no declared record can take this name
    return f"payload of {trigger}"


_TIMER_PAYLOAD = "payload of a timer"


def guard_scope(symbols: Symbols, trigger: str | None) -> ExprScope:
    """The scope of a guard on a transition declared under `trigger` (an unknown trigger: `payload` is quiet; None:
    a timer's transition, whose `payload` has no fields)."""
    scope = ExprScope(symbols, quorum=True)
    decl = None if trigger is None else symbols.triggers.get(trigger)
    if trigger is None:
        scope.own[_TIMER_PAYLOAD] = ({}, "a timer's payload", "a timer carries no payload: its guards read `task.` "
                                                              "and `host.`")
        scope.names["payload"] = _TIMER_PAYLOAD
    elif decl is None:
        scope.unknown.add("payload")
    else:
        name = _payload_type(trigger)
        fields = {p.name.name: construct(ir.Field, {"span": p.span, "kind": "field", "name": p.name, "type": p.type})
                  for p in decl.params}
        fallback = (f"`{trigger}`'s payload has {listing(fields)}" if fields
                    else f"`{trigger}` carries no payload")
        scope.own[name] = (fields, f"the payload of `{trigger}`", fallback)
        scope.names["payload"] = name
    for record in ("task", "host"):
        if record in symbols.records:
            scope.names[record] = record
        else:  # a program without the prelude's records: reported where it is used
            scope.unknown.add(record)
    for field, what in STORE_UNKNOWN.items():
        scope.unavailable[("task", field)] = (
            f"`task.{field}` cannot be read by a transition's guard: the runtime reads the task from its store, "
            f"which does not know {what} (a dispatch sequence's `load task` reads it through the host)")
    return scope


def check_guard(guard: ir.Expr, trigger: str | None, symbols: Symbols, out: list[Diagnostic]) -> None:
    """Type-check a transition's guard: every path, operator and quorum, and the whole a bool."""
    scope = guard_scope(symbols, trigger)
    t = type_of(guard, scope, out)
    if t is not None and t != "bool":
        out.append(make("expression-type-error", guard.span, f"a transition's guard must be a bool, found `{t}`",
                        help='compare it: `payload.status == "approved"`' if t == "str" else None))


def quorums(expr: ir.Expr) -> Iterator[ir.QuorumGuard]:
    """Every `quorum(…)` of a guard, in the order written."""
    stack: list[ir.Expr] = [expr]
    while stack:
        node = stack.pop()
        match node:
            case ir.QuorumGuard():
                yield node
            case ir.NotExpr():
                stack.append(node.operand)
            case ir.BinaryExpr():
                stack.extend((node.right, node.left))
