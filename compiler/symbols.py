"""A `Program` in, a `Symbols` table out: every declaration by name, duplicates reported at the second site.

Later passes only read this table; none of them re-walks declarations to find names.  The
views derived from it (the entry trigger, the triggers each kind allows, each record's
fields) are computed once, so no check costs more per action as the vocabulary grows.
"""

from __future__ import annotations

from collections.abc import Collection, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from typing import NamedTuple, TypeVar

from interlock.dsl import Diagnostic, ir
from interlock.dsl.diagnostics import label, make
from interlock.runtime.vocabulary import STAGES, THRESHOLDS  # defined once, for the runtime too

from .program import Program

__all__ = ["Symbols", "Signature", "collect_symbols", "suggest", "suggestion_budget", "listing", "STAGES", "THRESHOLDS"]



class Symbols:
    """Every declaration of the program by name, filled in by `collect_symbols` and read-only after it."""

    def __init__(self) -> None:
        self.triggers: dict[str, ir.TriggerDecl] = {}
        self.kinds: dict[str, ir.ActionKindDecl] = {}
        self.records: dict[str, ir.RecordDecl] = {}
        self.roles: dict[str, ir.Ident] = {}
        self.entry_clauses: list[ir.EntryClause] = []
        self.workflows: dict[str, ir.WorkflowDecl] = {}
        self.dispatches: list[ir.DispatchDecl] = []
        self._entry: list[str | None] = []
        self._allowed: dict[int, tuple[tuple[str, ...], frozenset[str]]] = {}
        self._fields: dict[str, dict[str, ir.Field]] = {}
        self.signatures: dict[int, Signature] = {}  # `bind_args`' per-kind cache, by id of the kind

    @property
    def entry_trigger(self) -> str | None:
        if not self._entry:
            self._entry.append(next((name for name, decl in self.triggers.items() if decl.entry), None))
        return self._entry[0]

    def _kind(self, kind: ir.ActionKindDecl) -> tuple[tuple[str, ...], frozenset[str]]:
        found = self._allowed.get(id(kind))
        if found is None:
            if kind.triggers is not None:
                names = tuple(t.name for t in kind.triggers)
            else:
                entry = self.entry_trigger
                names = tuple(t for t in self.triggers if not (kind.action_class == "transition" and t == entry))
            found = self._allowed[id(kind)] = (names, frozenset(names))
        return found

    def kind_triggers(self, kind: ir.ActionKindDecl) -> tuple[str, ...]:
        """Every trigger a kind may be declared on (a transition never on the entry trigger)."""
        return self._kind(kind)[0]

    def kind_allows(self, kind: ir.ActionKindDecl, trigger: str) -> bool:
        """Whether `kind` may be declared on `trigger`."""
        return trigger in self._kind(kind)[1]

    def record_fields(self, record: str) -> dict[str, ir.Field] | None:
        """A declared record's fields by name (a duplicated name: its last declaration), or None."""
        fields = self._fields.get(record)
        if fields is None:
            decl = self.records.get(record)
            if decl is None:
                return None
            fields = self._fields[record] = {f.name.name: f for f in decl.fields}
        return fields


# A suggestion compares a name with every candidate, so a file of many misspellings against a
# huge vocabulary would take quadratic time: inside `suggestion_budget` (every compile) the
# comparisons are counted, and once the budget is spent diagnostics carry no "did you mean".
SUGGESTION_BUDGET = 50_000  # worst case (every candidate a near miss) about half a second
_budget: ContextVar[list[int] | None] = ContextVar("interlock_suggestion_budget", default=None)


@contextmanager
def suggestion_budget(comparisons: int = SUGGESTION_BUDGET) -> Iterator[None]:
    """Allow at most `comparisons` name comparisons for suggestions within the block."""
    token = _budget.set([comparisons])
    try:
        yield
    finally:
        _budget.reset(token)


def suggest(name: str, candidates: Collection[str]) -> str | None:
    """`did you mean `x`?` help text for a misspelt name, or None."""
    budget = _budget.get()
    if budget is not None:
        if budget[0] < len(candidates):
            return None
        budget[0] -= len(candidates)
    import difflib  # only when there is something to suggest: `interlock check` on a clean file skips it

    match = difflib.get_close_matches(name, list(candidates), n=1, cutoff=0.7)
    return f"did you mean `{match[0]}`?" if match else None


def listing(names: Collection[str], *, limit: int = 8, noun: str = "") -> str:
    """`a`, `b`, `c` in the collection's order: at most `limit` names, then "and N more"
    (`noun` after "more"), so a message stays short however long the list it describes."""
    shown = [f"`{n}`" for n in (list(names)[:limit] if len(names) > limit else names)]
    rest = len(names) - len(shown)
    return ", ".join(shown) + (f" and {rest:,} more{' ' + noun if noun else ''}" if rest else "")


class Signature(NamedTuple):
    """A kind's parameters as `binding.bind_args` uses them: built once per kind, not once per call (cached in
    `Symbols.signatures`)."""

    params: dict[str, ir.Param]
    order: list[str]
    required: tuple[ir.Param, ...]
    required_names: frozenset[str]
    takes: str  # help text naming the parameters


def _dup(kind: str, ident: ir.Ident, first: ir.Ident) -> Diagnostic:
    return make("duplicate-declaration", ident.span, f"{kind} `{ident.name}` is declared twice",
                labels=(label(first.span, "first declared here"),))


_Named = TypeVar("_Named", ir.TriggerDecl, ir.ActionKindDecl, ir.RecordDecl, ir.WorkflowDecl)


def _declare(table: dict[str, _Named], what: str, decl: _Named, diagnostics: list[Diagnostic]) -> None:
    """Enter `decl` under its name, or report it as a second declaration of that name."""
    name = decl.name.name
    if name in table:
        diagnostics.append(_dup(what, decl.name, table[name].name))
    else:
        table[name] = decl


def collect_symbols(program: Program) -> tuple[Symbols, list[Diagnostic]]:
    symbols = Symbols()
    diagnostics: list[Diagnostic] = []
    for module in program.modules:
        for decl in module.decls:
            match decl:
                case ir.TriggerDecl():
                    _declare(symbols.triggers, "trigger", decl, diagnostics)
                case ir.ActionKindDecl():
                    _declare(symbols.kinds, "action kind", decl, diagnostics)
                case ir.RecordDecl():
                    _declare(symbols.records, "record", decl, diagnostics)
                case ir.WorkflowDecl():
                    _declare(symbols.workflows, "workflow", decl, diagnostics)
                case ir.RoleDecl():
                    for ident in decl.names:
                        if ident.name in symbols.roles:
                            diagnostics.append(_dup("role", ident, symbols.roles[ident.name]))
                        else:
                            symbols.roles[ident.name] = ident
                case ir.EntryDecl():
                    symbols.entry_clauses.extend(decl.clauses)
                case ir.DispatchDecl():
                    symbols.dispatches.append(decl)
    return symbols, diagnostics
