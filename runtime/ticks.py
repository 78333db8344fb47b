"""Nothing in, what was due done out: `Runtime.tick()` fires the due timers and runs the due retries, and says when
the next thing is due (docs/runtime.md §7; ADR 0050).

Any number of processes may tick at once, as often as they like.  Each due row runs as an operation
whose id derives from the row — a timer's from its entry, its index and its slot
(`timer:<entry>:<index>:<slot>`), a retry's from the failure it retries — so the operation claim
lets one delivery of it run, whichever process read the row; the others find it `in_progress` or
`idempotent` and leave the row to the one that ran it.  The row moves on only after its delivery
took effect (a compare-and-swap on its slot): a process killed in between leaves the row due, the
next tick claims the same operation (taken over from the dead owner) and runs it again with the
same keys and the next attempt.

An `every` timer whose slots passed while nobody ticked fires once, for its first missed slot, and
says how many it skipped (`missed`); its next slot is the first one still ahead.  A timer fires under
the ticking runtime's own plan (a new delivery, like any other), matched by its step and label; a
plan without that timer on that step cancels the row.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from typing import Literal

from .entries import Entries
from .failures import Failures, delay, next_attempt
from .index import PlanIndex
from .plan import PlanError
from .recorder import Recorder
from .results import FireResult
from .revision import Revision, Revisions
from .store import Store, StoreError, TaskState
from .store_due import NO_POSITION, DueRow
from .timers import FIRING
from .triggers import TriggerDispatch

__all__ = ["Ticker", "TickItem", "TickResult", "timer_operation", "retry_operation"]

DONE = ("dispatched", "idempotent")


@dataclass(frozen=True)
class TickItem:
    """One due row a tick took: a timer (`fired`, `cancelled`, `in_progress`: another process runs it, `idempotent`:
    another process ran it, `error`: its delivery aborted) or a retry (`ok`, `failed`, `exhausted`: an incident is
    opened, `superseded`, `in_progress`, `idempotent`).  Of the processes that take one row at once, one says it
    ran it."""

    what: Literal["timer", "retry"]
    task_id: str
    label: str  # the timer (`every 1h`), or the kind retried
    slot: int  # the timer's slot, or the retry's attempt
    result: str
    missed: int = 0
    fire: FireResult | None = None
    error: str | None = None


@dataclass(frozen=True)
class TickResult:
    """What one `tick()` did, and when the next row is due (`next_due`, the store's clock; None: nothing pending) —
    a host may sleep until then (`now` is the store's clock when the tick began)."""

    items: tuple[TickItem, ...]
    next_due: float | None
    now: float

    @property
    def timers_fired(self) -> int:
        return sum(1 for i in self.items if i.what == "timer" and i.result in ("fired", "error"))

    @property
    def retries(self) -> int:
        return sum(1 for i in self.items if i.what == "retry" and i.result not in ("in_progress", "superseded",
                                                                                   "idempotent"))


def timer_operation(row: DueRow) -> str:
    """The operation id a timer row's slot fires as."""
    return f"timer:{row.entry_id}:{row.position}:{row.slot}"


def retry_operation(row: DueRow) -> str:
    """The operation id of one try of a retried entry position (an operation's retry redelivers its own id)."""
    return f"retry:{row.entry_id}:{row.position}:{row.slot}"


class Ticker:
    """`tick`.  Uses the store, the own revision's trigger dispatch, the entries (a retried entry position runs
    under its entry's revision) and the recorder."""

    def __init__(self, store: Store, revisions: Revisions, triggers: TriggerDispatch, entries: Entries) -> None:
        self.store = store
        self.revisions = revisions
        self.index: PlanIndex = revisions.own.index
        self.triggers = triggers
        self.entries = entries
        self.recorder: Recorder = revisions.own.recorder
        self.failures = Failures(revisions.own)

    def tick(self, limit: int = 1000) -> TickResult:
        self.triggers.owner.beat()  # a ticking runtime is alive: its claims hold, on the store's clock
        now = self.store.now()
        items = tuple(map(self._take, self.store.due(limit)))
        return TickResult(items, self.store.next_due(), now)

    def _take(self, row: DueRow) -> TickItem:
        """One due row: the fence's read of its task (a row of an entry the task has left never runs), then the timer
        fired or the retry run."""
        task = self.store.get_task(row.task_id)
        if task is None or task.entry_id != row.entry_id:
            return self._superseded(row)
        if row.kind == "retry":
            return self._retry(row, task)
        return self._timer(row, task)

    def _superseded(self, row: DueRow) -> TickItem:
        """A row whose task left its entry (or is gone): dropped, nothing runs."""
        if self.store.drop_due(row.id, row.slot):
            if row.kind == "retry":
                self.recorder.retried(row.task_id, row.label, row.slot, "superseded", step=row.step_id,
                                      entry_id=row.entry_id, reason="the task left the entry")
            else:
                self.recorder.timer(row.task_id, row.step_id, row.entry_id, row.label, row.slot, "cancelled",
                                    reason="the task left the entry")
        return TickItem("retry" if row.kind == "retry" else "timer", row.task_id, row.label, row.slot,
                        "superseded" if row.kind == "retry" else "cancelled")

    # ---- timers ------------------------------------------------------------------------------------------
    def _timer(self, row: DueRow, task: TaskState) -> TickItem:
        index = self.index
        step = index.steps.get((row.workflow_id, row.step_id))
        position = _timer_index(step.timers if step else (), row)
        handler = index.timer_handlers.get((row.workflow_id, row.step_id, position)) if position is not None else None
        if handler is None:
            if self.store.drop_due(row.id, row.slot):
                self.recorder.timer(row.task_id, row.step_id, row.entry_id, row.label, row.slot, "cancelled",
                                    reason="this plan revision has no such timer on the step")
            return TickItem("timer", row.task_id, row.label, row.slot, "cancelled")
        now = self.store.now()
        last = row.slot
        if row.kind == "every":  # every slot that has passed; the first of them fires
            last = max(row.slot, math.floor((now - row.armed_at) / row.period))
        missed = last - row.slot
        rec = self.recorder

        def fired() -> None:
            rec.timer(row.task_id, row.step_id, row.entry_id, row.label, row.slot, "fired", missed)

        firing = FIRING.set(row.id)
        try:
            result = self.triggers.fire_timer(task, row.step_id, handler, row.label, timer_operation(row),
                                              before=fired)
        finally:
            FIRING.reset(firing)
        if result.result == "in_progress":
            return TickItem("timer", row.task_id, row.label, row.slot, "in_progress", missed, result)
        if result.result in ("superseded", "stranded"):
            self.store.drop_due(row.id, row.slot)
            return TickItem("timer", row.task_id, row.label, row.slot, "cancelled", missed, result)
        # done, or aborted (its failure is a retry or an incident now): the timer moves on either way
        if row.kind == "every":
            self.store.advance_due(row.id, row.slot, last + 1, row.armed_at + (last + 1) * row.period)
        else:
            self.store.drop_due(row.id, row.slot)
        outcome = {"dispatched": "fired", "idempotent": "idempotent"}.get(result.result, "error")
        return TickItem("timer", row.task_id, row.label, row.slot, outcome, missed, result, result.error)

    # ---- retries -----------------------------------------------------------------------------------------
    def _retry(self, row: DueRow, task: TaskState) -> TickItem:
        if row.position == NO_POSITION:
            return self._retry_operation(row, task)
        return self._retry_entry(row)

    def _retry_operation(self, row: DueRow, task: TaskState) -> TickItem:
        """An operation's delivery again, as stored: the same operation id (so the same keys), the next attempt."""
        result = self.redeliver(task, trigger=row.trigger or "", session_id=row.session_id, payload=row.payload,
                                operation_id=row.operation_id, entry_id=row.entry_id, workflow_id=row.workflow_id,
                                step_id=row.step_id, attempt=row.slot)
        if result.result == "in_progress":
            return TickItem("retry", row.task_id, row.label, row.slot, "in_progress", fire=result)
        if result.result == "error":
            return self._retry_failed(row, result.failed_kind or row.label, result.error or "failed", result)
        self.store.drop_due(row.id, row.slot)
        if result.result == "idempotent":  # another process ran this try (or a host redelivery took effect)
            return TickItem("retry", row.task_id, row.label, row.slot, "idempotent", fire=result)
        outcome = "ok" if result.result in DONE else "superseded"
        self.recorder.retried(row.task_id, row.label, row.slot, outcome, step=row.step_id, entry_id=row.entry_id,
                              operation_id=row.operation_id, trigger=row.trigger)
        return TickItem("retry", row.task_id, row.label, row.slot, outcome, fire=result)

    def redeliver(self, task: TaskState, *, trigger: str, session_id: str | None, payload: str | None,
                  operation_id: str | None, entry_id: int | None, workflow_id: str | None, step_id: str | None,
                  attempt: int) -> FireResult:
        """An operation's delivery as stored, delivered again by a retry or a redrive (`managed`: the caller decides
        what its failure becomes); a timer's (its trigger is the timer's label) fires the timer again under its own
        operation id."""
        if trigger.startswith(("after ", "every ")):
            parts = (operation_id or "").split(":")
            position = int(parts[2]) if len(parts) == 4 and parts[2].isdigit() else -1
            handler = self.index.timer_handlers.get((workflow_id or "", step_id or "", position))
            if handler is None or operation_id is None or step_id is None:
                return FireResult("stranded", trigger, task.id, step_id, operation_id)
            if entry_id is not None and task.entry_id != entry_id:
                return FireResult("superseded", trigger, task.id, step_id, operation_id)
            return self.triggers.fire_timer(task, step_id, handler, trigger, operation_id, attempt=attempt,
                                            managed=True)
        return self.triggers.fire(trigger, task.id, session_id, json.loads(payload) if payload else {},
                                  operation_id, None, entry_id, attempt=attempt, managed=True)

    def _retry_entry(self, row: DueRow) -> TickItem:
        """One failed entry position again, under its entry's revision, once (its own operation claim)."""
        ledger = self.store.ledger_row(row.entry_id)
        try:
            revision = self.revisions.of(ledger.plan if ledger else row.plan)
        except PlanError as exc:
            return self._retry_failed(row, row.label, f"its plan revision cannot be loaded: {exc}", None)
        step = revision.index.steps.get((row.workflow_id, row.step_id))
        if ledger is None or step is None:
            return self._retry_failed(row, row.label, "its entry is not in the store or the plan", None)
        owner = self.triggers.owner
        token = owner.token()
        owner.hold(token)  # `recover` leaves a claim alone while a thread of its owner holds it
        try:
            claim = self.store.claim_operation(retry_operation(row), token=token, owner_id=owner.id,
                                               task_id=row.task_id, trigger="retry")
            if claim == "busy":
                return TickItem("retry", row.task_id, row.label, row.slot, "in_progress")
            if claim in ("applied", "pruned"):  # this try ran (here or elsewhere): its marker says how it ended
                marker = self.store.markers(row.entry_id).get(row.position)
                if marker is not None and marker.state == "failed":  # cut off before its failure was handed on
                    return self._retry_failed(row, marker.kind, marker.error or "failed", None, revision)
                self.store.drop_due(row.id, row.slot)
                return TickItem("retry", row.task_id, row.label, row.slot, "idempotent")
            reruns = self.entries.run_of(revision).rerun(ledger, step, (row.position,))
            self.store.mark_operation(retry_operation(row), task_id=row.task_id, trigger="retry")
            failed = next((r for r in reruns if r.error is not None), None)
            if failed is not None:
                return self._retry_failed(row, failed.kind, failed.error or "failed", None, revision)
        finally:
            owner.let_go(token)
        self.store.drop_due(row.id, row.slot)
        self.recorder.retried(row.task_id, row.label, row.slot, "ok", step=row.step_id, entry_id=row.entry_id,
                              position=row.position)
        return TickItem("retry", row.task_id, row.label, row.slot, "ok")

    def _retry_failed(self, row: DueRow, kind: str, error: str, result: FireResult | None,
                      revision: Revision | None = None) -> TickItem:
        """A retry that failed: the next try scheduled, or, with none left, an incident."""
        failures = Failures(revision) if revision is not None else self.failures
        policy = failures.policy(kind)
        again = next_attempt(policy, row.slot)
        rec = self.recorder
        if again is not None and policy is not None:
            due = self.store.now() + delay(policy, row.slot)
            if self.store.advance_due(row.id, row.slot, again, due):
                rec.retried(row.task_id, kind, row.slot, "failed", step=row.step_id, entry_id=row.entry_id,
                            error=error, next_attempt=again, due_at=due)
            return TickItem("retry", row.task_id, kind, row.slot, "failed", fire=result, error=error)
        if not self.store.drop_due(row.id, row.slot):
            return TickItem("retry", row.task_id, kind, row.slot, "in_progress", fire=result, error=error)
        rec.retried(row.task_id, kind, row.slot, "exhausted", step=row.step_id, entry_id=row.entry_id, error=error)
        try:
            if row.position == NO_POSITION:
                failures.open_operation_incident(
                    self.store, task_id=row.task_id, entry_id=row.entry_id, workflow_id=row.workflow_id,
                    step_id=row.step_id, trigger=row.trigger or "", operation_id=row.operation_id,
                    payload=row.payload, session_id=row.session_id, kind=kind, error=error, attempts=row.slot)
            else:
                ledger = self.store.ledger_row(row.entry_id)
                if ledger is not None:
                    with self.store.unit() as tx:
                        failures.open_entry_incident(tx, ledger, row.step_id, ((row.position, kind, error),),
                                                     row.slot, rec)
        except StoreError as exc:
            rec.emit("error", "error", "incident not opened: the store failed", task=row.task_id,
                     message=str(exc) or type(exc).__name__)
        return TickItem("retry", row.task_id, kind, row.slot, "exhausted", fire=result, error=error)


def _timer_index(timers: tuple[object, ...], row: DueRow) -> int | None:
    """The index, in this plan's step, of the timer a row was armed for: the same index when its label matches,
    else the first timer with that label."""
    labels = [getattr(t, "label", None) for t in timers]
    if 0 <= row.position < len(labels) and labels[row.position] == row.label:
        return row.position
    return labels.index(row.label) if row.label in labels else None
