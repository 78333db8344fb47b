"""Dispatch-sequence expressions in, their types (and type errors) out.

Scope: `event` (the block's event record), `host`, and each name a `load` line has
loaded so far.  A name loaded further down is a use-before-load error.
"""

from __future__ import annotations

import re

from interlock.dsl import Diagnostic, ir
from interlock.dsl.diagnostics import make

from .symbols import Symbols, listing, suggest

__all__ = ["ExprScope", "type_of", "PLACEHOLDER"]

PLACEHOLDER = re.compile(r"\{([^{}]*)\}")


class ExprScope:
    """The names an expression of one dispatch block (or one transition guard) may use, as its lines are checked
    in order."""

    def __init__(self, symbols: Symbols, *, quorum: bool = False) -> None:
        self.symbols = symbols
        self.names: dict[str, str] = {}  # name -> record type
        self.later: dict[str, str] = {}  # loaded further down
        # names whose record is unknown or missing (already reported): their uses stay quiet
        self.unknown: set[str] = set()
        # record-like names no `record` declares (a trigger's payload): type name -> (fields, how messages name it,
        # the help of an unknown field when no name is close)
        self.own: dict[str, tuple[dict[str, ir.Field], str, str]] = {}
        # fields of a record this scope cannot read, with the reason: (record, field) -> why
        self.unavailable: dict[tuple[str, str], str] = {}
        self.quorum = quorum  # `quorum(…)` is allowed (transition guards only)

    def fields(self, record: str) -> tuple[dict[str, ir.Field] | None, str, str | None]:
        """A record type's fields, how a message names it and the help of an unknown field when no name is
        close (None: a type without fields)."""
        own = self.own.get(record)
        if own is not None:
            return own
        return self.symbols.record_fields(record), f"record `{record}`", None

    def path_type(self, parts: tuple[str, ...], node: ir.Node, out: list[Diagnostic]) -> str | None:
        head = parts[0]
        record = self.names.get(head)
        if record is None and head in self.unknown:
            return None
        if record is None:
            if head in self.later:
                out.append(make("use-before-load", node.span, f"`{head}` is used before its `load` line",
                                help=f"move this below `load {head} = …`"))
            else:
                out.append(make("unknown-name", node.span, f"unknown name `{head}`",
                                help=suggest(head, self.names) or
                                f"names in scope: {listing(self.names)}"))
            return None
        current: str = record
        for i, part in enumerate(parts[1:], start=1):
            fields, what, fallback = self.fields(current)
            if fields is None:
                out.append(make("expression-type-error", node.span,
                                f"`{'.'.join(parts[:i])}` is a `{current}`, which has no fields"))
                return None
            f = fields.get(part)
            why = self.unavailable.get((current, part))
            if f is None or why is not None:
                out.append(make("unknown-record-field", node.span,
                                why or f"{what} has no field `{part}`",
                                help=None if why else suggest(part, fields) or fallback))
                return None
            current = f.type.render().rstrip("?")
        if len(parts) == 1:
            return record
        return current


def type_of(expr: ir.Expr, scope: ExprScope, out: list[Diagnostic]) -> str | None:
    """The type of `expr` ('str', 'int', 'bool', 'list[str]', a record name), None after an error."""
    match expr:
        case ir.StrLit():
            return "str"
        case ir.IntLit():
            return "int"
        case ir.BoolLit():
            return "bool"
        case ir.PathExpr():
            return scope.path_type(expr.parts, expr, out)
        case ir.NotExpr():
            t = type_of(expr.operand, scope, out)
            if t is not None and t != "bool":
                out.append(make("expression-type-error", expr.operand.span, f"`not` needs a bool, found `{t}`"))
            return "bool"
        case ir.BinaryExpr():
            return _binary_type(expr, scope, out)
        case ir.QuorumGuard():
            if not scope.quorum:
                out.append(make("expression-type-error", expr.span,
                                "`quorum(…)` belongs to a transition's guard: a dispatch sequence runs before any "
                                "step's decisions are counted",
                                help="guard the transition the trigger fires instead: `move_to_step(STEP) when "
                                     "quorum(ROLE, THRESHOLD)`"))
            return "bool"
    raise TypeError(f"not an expression node: {type(expr).__name__}")


def _binary_type(expr: ir.BinaryExpr, scope: ExprScope, out: list[Diagnostic]) -> str | None:
    left = type_of(expr.left, scope, out)
    right = type_of(expr.right, scope, out)
    if expr.op in ("or", "and"):
        for side, t in ((expr.left, left), (expr.right, right)):
            if t is not None and t != "bool":
                out.append(make("expression-type-error", side.span, f"`{expr.op}` needs bools, found `{t}`",
                                help='compare it: `x != ""`' if t == "str" else None))
        return "bool"
    if expr.op in ("==", "!="):
        if left is not None and right is not None and left != right:
            out.append(make("expression-type-error", expr.span,
                            f"cannot compare `{left}` with `{right}` using `{expr.op}`"))
        return "bool"
    # `??`: first non-empty value; both sides must have one type
    if left is not None and right is not None and left != right:
        out.append(make("expression-type-error", expr.span, f"`??` needs one type on both sides, found `{left}` "
                        f"and `{right}`"))
        return None
    return left if left is not None else right
