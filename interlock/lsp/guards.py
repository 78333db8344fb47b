"""A transition's guard (or the text typed before the cursor inside one) in, its index entries and completions out:
`payload.` is the handler's trigger's parameters, `task.` and `host.` the prelude's records (docs/language.md §6).
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

from lsprotocol import types as lsp

from interlock.dsl import ir

from .render import type_text

if TYPE_CHECKING:
    from interlock.compiler.symbols import Symbols

    from .index import Index, Key

__all__ = ["index_guard", "guard_completion"]

_IN_GUARD = re.compile(r"\bwhen\b[^{}]*$")  # after `when` on the line, no brace since: inside a guard
_FIELD = re.compile(r"\b(payload|task|host)\.(\w*)$")
_GUARD_WORDS = ("quorum", "not", "and", "or", "true", "false", "requires_approval")


def _paths(expr: ir.Expr) -> list[ir.PathExpr]:
    found: list[ir.PathExpr] = []
    stack: list[ir.Expr] = [expr]
    while stack:
        node = stack.pop()
        if isinstance(node, ir.PathExpr):
            found.append(node)
        elif isinstance(node, ir.NotExpr):
            stack.append(node.operand)
        elif isinstance(node, ir.BinaryExpr):
            stack.extend((node.right, node.left))
    return found


def _key(trigger: str, head: str, field: str) -> Key | None:
    if head == "payload":
        return ("payload", trigger, field)
    if head in ("task", "host"):
        return ("field", head, field)
    return None


def index_guard(index: Index, trigger: str, guard: ir.Expr) -> None:
    """Index the roles and thresholds of a guard's quorums and the fields its paths read (a path written on one
    line without spaces: its field's column is then known)."""
    from interlock.compiler.guards import quorums  # here: the server answers `initialize` before the compiler loads

    from .index import name_span

    for q in quorums(guard):
        index.add(q.role.span, ("role", q.role.name))
        index.add(q.threshold.name.span, ("threshold", q.threshold.name.name))
    for path in _paths(guard):
        span = path.span
        if len(path.parts) < 2 or span.line != span.end_line or span.end_col - span.col != len(path.dotted):
            continue
        key = _key(trigger, path.parts[0], path.parts[1])
        if key is not None:
            at = span.model_copy(update={"col": span.col + len(path.parts[0]) + 1})
            index.add(name_span(at, path.parts[1]), key)


def guard_completion(symbols: Symbols, trigger: str, prefix: str) -> list[lsp.CompletionItem] | None:
    """Completions inside a guard of a transition under `trigger`: a path's fields after `payload.`, `task.` or
    `host.`, else the names and words a guard is made of.  None: the cursor is not in a guard."""
    from interlock.compiler.guards import GUARD_NAMES, STORE_UNKNOWN

    K = lsp.CompletionItemKind
    if m := _FIELD.search(prefix):
        head = m.group(1)
        if head == "payload":
            decl = symbols.triggers.get(trigger)
            params = decl.params if decl is not None else ()
            return [lsp.CompletionItem(label=p.name.name, kind=K.Field, detail=f"{type_text(p.type)}: payload of "
                                       f"{trigger}") for p in params]
        fields = symbols.record_fields(head) or {}
        unknown = STORE_UNKNOWN if head == "task" else {}
        return [lsp.CompletionItem(label=name, kind=K.Field, detail=f"{type_text(f.type)}: field of {head}")
                for name, f in fields.items() if name not in unknown]
    if not _IN_GUARD.search(prefix):
        return None
    return ([lsp.CompletionItem(label=name, kind=K.Variable, detail="in a transition's guard")
             for name in GUARD_NAMES]
            + [lsp.CompletionItem(label=word, kind=K.Keyword) for word in _GUARD_WORDS])
