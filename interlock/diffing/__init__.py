"""Two plans in, the typed list of what changed between them out: `interlock diff`'s comparison (docs/diff.md).

Everything is compared by id, never by list position: workflows and steps by id, triggers,
kinds, records, roles and dispatch sequences by name, a trigger's or kind's parameters by
name.  A handler's actions have no id, so they are aligned as an ordered list
(interlock/diffing/actions.py).  Every field of every plan model is compared: the parts with
changes of their own by name, every other field by `DifferBase.fields` as `PART.attribute`,
so a field added to the plan model is reported without a line of code here (ADR 0040).
Each change is `behaviour` or `metadata` (`METADATA`: titles, descriptions, colours,
pickers); a long or multi-line value carries a unified diff (`text_diff`).

Each `Change` says whether it is *breaking*: whether tasks, entries, seats or host calls
that were valid under the old plan may be stranded or refused under the new one (the list
and the reasons are in docs/diff.md).  The package is pure: no I/O, deterministic output.  Its modules:
`change` (the `Change` record, the field-by-field fallback), `guards` (guard strictness, ways out),
`vocabulary`, `workflows` and `actions` (the comparisons of each part).
"""

from __future__ import annotations

from interlock.runtime.plan import Plan
from interlock.runtime.plan_digest import DIGEST_FIELDS, PLAN_LAYOUT_FIELDS

from .change import METADATA, Change, text_diff
from .guard_changes import guard_strictness
from .guards import MOVES_TASK, has_way_out
from .vocabulary import VocabularyDiffer
from .workflows import STEP_ATTRIBUTES, WorkflowDiffer

__all__ = ["Change", "diff_plans", "has_way_out", "guard_strictness", "text_diff", "STEP_ATTRIBUTES", "MOVES_TASK",
           "METADATA"]

_PARTS = ("roles", "triggers", "kinds", "records", "entry_policy", "workflows", "sequences")
"""The plan fields compared part by part; any other field but the layout and the digests is a `plan.attribute`."""


class _Differ(VocabularyDiffer, WorkflowDiffer):
    def run(self) -> list[Change]:
        self.fields("plan.attribute", "plan", self.old, self.new, (*_PARTS, *PLAN_LAYOUT_FIELDS, *DIGEST_FIELDS))
        self.roles()
        self.triggers()
        self.kinds()
        self.records()
        self.entry_policy()
        self.sequences()
        self.workflows()
        return self.out


def diff_plans(old: Plan, new: Plan) -> list[Change]:
    """Every difference between `old` and `new`, in a fixed order: plan attributes, roles, triggers, kinds, records,
    the entry policy, dispatch sequences, then workflows (old order, added ones last) step by step.  Empty when the
    plans mean the same (the layout — source positions, `sources`, the compiler version — and the digests are not
    compared), so exactly when their digests are equal."""
    return _Differ(old, new).run()
