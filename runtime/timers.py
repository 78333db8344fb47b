"""An arrival in, its step's timers armed out: the due rows of the destination's `after`/`every` handlers written in
the arrival's own transaction, and the task's rows of the entries it left removed (docs/runtime.md §7).

A timer row belongs to one activation (its `entry_id`); it never fires for another: `tick` checks the
task's current activation before it fires (the fence), so a row an arrival could not remove — one a
runtime of another revision armed, one a host's own ledger row skipped — is dropped then instead.
Arrivals remove old rows only when their plan has any due work (timers or retry policies): a plan
without it writes nothing more per arrival.  Rows taken up later (a host's ledger row whose entry a
runtime dispatches) are armed when the entry is taken up (`arm` is insert-or-ignore).
"""

from __future__ import annotations

from contextvars import ContextVar

from .plan import PlanStep
from .recorder import Recorder
from .revision import Revision
from .store import LedgerRow, Store
from .store_due import DueRow, TimerArm

__all__ = ["Arming", "arms_of", "FIRING"]

FIRING: ContextVar[int | None] = ContextVar("interlock_firing_timer", default=None)
"""The due row a tick is firing in this context: the arrival its transition causes removes it without a
`cancelled` record (it fired)."""


def arms_of(step: PlanStep) -> tuple[TimerArm, ...]:
    """The rows a step's timers are armed as: index, kind, label, seconds."""
    return tuple(TimerArm(i, t.kind, t.label, t.seconds) for i, t in enumerate(step.timers))


class Arming:
    """Timers of one revision's steps, armed with their arrivals."""

    def __init__(self, revision: Revision) -> None:
        self.revision = revision
        self.due_work = revision.index.due_work
        self.recorder: Recorder = revision.recorder
        self._arms: dict[tuple[str, str], tuple[TimerArm, ...]] = {}

    def arm(self, tx: Store, row: LedgerRow | None, step: PlanStep | None) -> list[DueRow]:
        """In the arrival's unit: remove the task's rows of other entries (when this plan has due work) and arm the
        destination's timers for the row's entry; the rows removed (`cancelled` reports them after the commit)."""
        if row is None:
            return []
        dropped = tx.disarm(row.task_id, row.id) if self.due_work else []
        if step is not None and step.timers and row.to_workflow_id is not None:
            self.arm_entry(tx, row, step)
        return dropped

    def arm_entry(self, tx: Store, row: LedgerRow, step: PlanStep) -> None:
        """Arm a step's timers for the entry of `row` (nothing for a timer armed already)."""
        assert row.to_workflow_id is not None
        key = (row.to_workflow_id, step.id)
        arms = self._arms.get(key)
        if arms is None:
            arms = self._arms[key] = arms_of(step)
        tx.arm_timers(row.task_id, row.id, row.to_workflow_id, step.id, row.plan or self.revision.digest, arms)

    def cancelled(self, rows: list[DueRow], reason: str = "the task left the entry") -> None:
        """The records of rows removed because their task left their entry."""
        rec = self.recorder
        firing = FIRING.get()
        for row in rows:
            if row.id == firing:
                continue
            if row.kind == "retry":
                rec.retried(row.task_id, row.label, row.slot, "superseded", step=row.step_id, entry_id=row.entry_id,
                            reason=reason)
            else:
                rec.timer(row.task_id, row.step_id, row.entry_id, row.label, row.slot, "cancelled", reason=reason)
