"""A `Program` in, a `Symbols` table out: every declaration by name, duplicates reported at the second site.

Later passes only read this table; none of them re-walks declarations to find names.
"""

from __future__ import annotations

import difflib
from collections.abc import Iterable
from dataclasses import dataclass, field

from interlock.dsl import Diagnostic, ir
from interlock.dsl.diagnostics import label, make

from .program import Program

__all__ = ["Symbols", "collect_symbols", "suggest", "STAGES", "THRESHOLDS"]

STAGES = ("work", "review", "approval", "custom")
THRESHOLDS = ("all_approve", "all_decide", "majority_approve", "any_reject", "n_approve")


@dataclass
class Symbols:
    triggers: dict[str, ir.TriggerDecl] = field(default_factory=dict)
    kinds: dict[str, ir.ActionKindDecl] = field(default_factory=dict)
    records: dict[str, ir.RecordDecl] = field(default_factory=dict)
    roles: dict[str, ir.Ident] = field(default_factory=dict)
    entry_clauses: list[ir.EntryClause] = field(default_factory=list)
    workflows: dict[str, ir.WorkflowDecl] = field(default_factory=dict)
    dispatches: list[ir.DispatchDecl] = field(default_factory=list)

    @property
    def entry_trigger(self) -> str | None:
        for name, decl in self.triggers.items():
            if decl.entry:
                return name
        return None

    def kind_triggers(self, kind: ir.ActionKindDecl) -> tuple[str, ...]:
        """Every trigger a kind may be declared on (a transition never on the entry trigger)."""
        if kind.triggers is not None:
            return tuple(t.name for t in kind.triggers)
        entry = self.entry_trigger
        return tuple(t for t in self.triggers if not (kind.action_class == "transition" and t == entry))


def suggest(name: str, candidates: Iterable[str]) -> str | None:
    """`did you mean `x`?` help text for a misspelt name, or None."""
    match = difflib.get_close_matches(name, list(candidates), n=1, cutoff=0.7)
    return f"did you mean `{match[0]}`?" if match else None


def _dup(kind: str, ident: ir.Ident, first: ir.Ident) -> Diagnostic:
    return make("duplicate-declaration", ident.span, f"{kind} `{ident.name}` is declared twice",
                labels=(label(first.span, "first declared here"),))


def collect_symbols(program: Program) -> tuple[Symbols, list[Diagnostic]]:
    symbols = Symbols()
    diagnostics: list[Diagnostic] = []
    for module in program.modules:
        for decl in module.decls:
            if isinstance(decl, ir.TriggerDecl):
                if decl.name.name in symbols.triggers:
                    diagnostics.append(_dup("trigger", decl.name, symbols.triggers[decl.name.name].name))
                else:
                    symbols.triggers[decl.name.name] = decl
            elif isinstance(decl, ir.ActionKindDecl):
                if decl.name.name in symbols.kinds:
                    diagnostics.append(_dup("action kind", decl.name, symbols.kinds[decl.name.name].name))
                else:
                    symbols.kinds[decl.name.name] = decl
            elif isinstance(decl, ir.RecordDecl):
                if decl.name.name in symbols.records:
                    diagnostics.append(_dup("record", decl.name, symbols.records[decl.name.name].name))
                else:
                    symbols.records[decl.name.name] = decl
            elif isinstance(decl, ir.RoleDecl):
                for ident in decl.names:
                    if ident.name in symbols.roles:
                        diagnostics.append(_dup("role", ident, symbols.roles[ident.name]))
                    else:
                        symbols.roles[ident.name] = ident
            elif isinstance(decl, ir.EntryDecl):
                symbols.entry_clauses.extend(decl.clauses)
            elif isinstance(decl, ir.WorkflowDecl):
                if decl.name.name in symbols.workflows:
                    diagnostics.append(_dup("workflow", decl.name, symbols.workflows[decl.name.name].name))
                else:
                    symbols.workflows[decl.name.name] = decl
            elif isinstance(decl, ir.DispatchDecl):
                symbols.dispatches.append(decl)
    return symbols, diagnostics
