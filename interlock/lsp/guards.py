"""The text typed before the cursor inside a transition's guard in, its completions out (its index entries are
`interlock.lsp.occurrences.index_guard`):
`payload.` is the handler's trigger's parameters, `task.` and `host.` the prelude's records (docs/language.md §6).
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

from lsprotocol import types as lsp

from .hover_text import type_text

if TYPE_CHECKING:
    from interlock.compiler.symbols import Symbols

__all__ = ["guard_completion"]

_IN_GUARD = re.compile(r"\bwhen\b[^{}]*$")  # after `when` on the line, no brace since: inside a guard
_FIELD = re.compile(r"\b(payload|task|host)\.(\w*)$")
_GUARD_WORDS = ("quorum", "not", "and", "or", "true", "false", "requires_approval")


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
