"""A ledger row in, its step's entry dispatched out: record-and-continue, each position at least once with one key
(host actions) or exactly once (store-backed ones), one entry record per row, under the row's own revision.

An entry is walked position by position in *segments*, each one transaction (docs/runtime.md §1, §6,
§7; ADR 0036).  A segment runs the store-backed positions in savepoints of its transaction and ends
either with the entry record (the last segment) or by starting the next host position's marker
(`in_progress`, attempt n); the segment commits, the host executor is called outside any transaction,
and the next segment begins by finishing that marker.  The first segment of a fresh arrival is the
arrival's own transaction, so an arrival whose entry runs one host action takes two commits.  An
entry with no host action is one segment: when every action is replayable it runs without
savepoints (`bare`), and a failure undoes the transaction to run it again with savepoints (`Retry`).

Markers exist only for entries of more than one segment (an entry record is the marker of every
position of its one transaction).  A marker left `in_progress` by an owner that died is a host call
whose outcome is unknown: the owner that takes the entry over calls it again with the same key and
the next attempt.  Each record kind of an entry is emitted from one place: `report` (inline, the held
effects and failures, the `entry` record) and `redelivered`.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from .delivery import Delivery, entry_key, new_delivery
from .errors import RuntimeFault
from .failures import Failures
from .index import PlanIndex
from .invoker import Invoker
from .options import options_of
from .outcomes import Failed, Outcome
from .owner import Owner
from .plan import PlanAction, PlanStep
from .recorder import Deferred, Recorder
from .results import EntryResult
from .revision import Revision
from .store import EntryRecord, LedgerRow, Marker, Store, StoreError, TaskState
from .store_due import DueRow
from .timers import Arming

__all__ = ["EntryRun", "Progress", "Retry", "Redelivered", "Rerun", "NO_EXECUTOR"]

NO_EXECUTOR = "no executor"


class Retry(Exception):
    """An action failed in a `bare` segment: undo the transaction and run it again with savepoints, with this
    failure handed over (`known`), so the failed action is recorded from its one call."""

    def __init__(self, position: int, outcome: Failed) -> None:
        super().__init__(position)
        self.position = position
        self.outcome = outcome


class Redelivered(Exception):
    """Internal: the entry has its record already (raised inside a unit to undo this delivery)."""


@dataclass
class Progress:
    """An entry under way: where it stands, what failed, the records held until their transaction commits."""

    row: LedgerRow
    task: TaskState
    step: PlanStep
    segmented: bool
    next: int = 0  # index of the next action of `step.entry_dispatch`
    failed: list[tuple[str, str]] = field(default_factory=list)
    failed_at: list[tuple[int, str, str, int]] = field(default_factory=list)  # (position, kind, error, attempt)
    pending: tuple[PlanAction, int] | None = None  # a host action whose marker is started: (action, attempt)
    finished: tuple[int, str, str | None] | None = None  # its marker to finish: (position, state, error)
    recorded: bool = False
    held: Deferred = field(default_factory=Deferred)
    inline_reported: bool = False
    delivery: Delivery | None = None  # built once, at its first action

    @property
    def attempted(self) -> tuple[str, ...]:
        return tuple(a.kind for a in self.step.entry_dispatch)

    def fail(self, action: PlanAction, error: str, attempt: int = 1) -> None:
        """A position failed (on its `attempt`-th try)."""
        self.failed.append((action.kind, error))
        self.failed_at.append((action.position, action.kind, error, attempt))


class EntryRun:
    """Step entry under one revision.  Uses the revision (index, recorder), the store, the invoker and the owner."""

    def __init__(self, revision: Revision, store: Store, invoker: Invoker, owner: Owner) -> None:
        self.revision = revision
        self.index: PlanIndex = revision.index
        self.recorder: Recorder = revision.recorder
        self.store = store
        self.invoker = invoker
        self.owner = owner
        self.failures = Failures(revision)
        self.arming = Arming(revision)

    # ---- what kind of entry a step has -----------------------------------------------------------------------
    def segmented(self, step: PlanStep) -> bool:
        """Whether a step's entry calls a host executor (and so spans several transactions)."""
        entries = self.invoker.registry.entries
        return any((e := entries.get(a.kind)) is not None and not e.transactional for a in step.entry_dispatch)

    def all_replayable(self, step: PlanStep) -> bool:
        """Every dispatched action is replayable (`ExecutorRegistry`): one segment may run without savepoints."""
        entries = self.invoker.registry.entries
        return all((e := entries.get(a.kind)) is not None and e.replayable for a in step.entry_dispatch)

    def progress(self, row: LedgerRow, task: TaskState, step: PlanStep) -> Progress:
        return Progress(row, task, step, self.segmented(step))

    # ---- segments ------------------------------------------------------------------------------------------
    def segment(self, tx: Store, p: Progress, markers: Mapping[int, Marker] | None = None, *, bare: bool = False,
                known: Retry | None = None) -> None:
        """Run one segment of `p` in the open unit `tx`: finish the marker of the host call before it, run the
        store-backed positions, then start the next host position's marker or write the entry record.
        Raises `Redelivered` if the entry was recorded meanwhile, `Retry` (`bare`) when an action fails,
        `StoreError` when the store fails."""
        row, step = p.row, p.step
        if p.finished is not None:
            position, state, error = p.finished
            tx.finish_marker(row.id, position, state, error)  # type: ignore[arg-type]
            p.finished = None
        actions = step.entry_dispatch
        registered = self.invoker.registry.entries
        while p.next < len(actions):
            action = actions[p.next]
            marker = markers.get(action.position) if markers else None
            if marker is not None and marker.state != "in_progress":
                if marker.state == "failed":
                    p.fail(action, str(marker.error or "failed"), marker.attempt)
                p.next += 1
                continue
            executor = registered.get(action.kind)
            if executor is None:
                self._missing(tx, p, action)
                p.next += 1
                continue
            if not executor.transactional:
                started = tx.start_marker(row.id, action.position, action.kind)
                if started.state != "in_progress":  # finished meanwhile (cannot happen under the entry's claim)
                    p.next += 1
                    continue
                p.pending = (action, started.attempt)
                return
            if known is not None and action.position == known.position:
                outcome: Outcome = known.outcome
            else:
                outcome = self._run_in(tx, p, action, bare)
            if p.segmented:
                self._mark(tx, row.id, action, outcome)
            self._held_outcome(p, action, outcome)
            p.next += 1
        record = EntryRecord(row.id, row.task_id, row.to_workflow_id or "", step.id, p.attempted, tuple(p.failed))
        if not tx.record_entry(record):
            raise Redelivered
        if p.failed_at:  # retried by `tick`, or an incident: durable with the record (docs/runtime.md §7)
            self.failures.entry_failed(tx, row, step.id, p.failed_at, p.held)
        p.recorded = True

    def _run_in(self, tx: Store, p: Progress, action: PlanAction, bare: bool) -> Outcome:
        """One store-backed action inside the segment's transaction: bare (its failure raises `Retry`) or in a
        savepoint (rolled back if it fails)."""
        fn = self.invoker.registry.entries[action.kind].fn
        if bare:
            outcome = self.invoker.call_in(fn, action.args, self.invoker.context(self.delivery(p), action, store=tx))
            if isinstance(outcome, Failed):
                raise Retry(action.position, outcome)
            return outcome
        try:
            with tx.unit() as sp:
                outcome = self.invoker.call_in(fn, action.args,
                                               self.invoker.context(self.delivery(p), action, store=sp))
                if isinstance(outcome, Failed):
                    raise _RollBack(outcome)
        except _RollBack as undone:
            return undone.outcome
        return outcome

    @staticmethod
    def _mark(tx: Store, entry_id: int, action: PlanAction, outcome: Outcome) -> None:
        tx.start_marker(entry_id, action.position, action.kind)
        if isinstance(outcome, Failed):
            tx.finish_marker(entry_id, action.position, "failed", outcome.reason)
        else:
            tx.finish_marker(entry_id, action.position, "done")

    def _missing(self, tx: Store, p: Progress, action: PlanAction) -> None:
        """A position whose kind has no executor: a warning, and a failure of the entry (marked, when it spans
        transactions)."""
        row = p.row
        assert row.to_workflow_id is not None
        step_plan = self.index.steps.get((row.to_workflow_id, p.step.id))
        p.held.missing_executor(row.to_workflow_id, p.step.id, step_plan.title if step_plan else None, action.kind,
                                p.task.id, row.session_id)
        if p.segmented:
            tx.start_marker(row.id, action.position, action.kind)
            tx.finish_marker(row.id, action.position, "failed", NO_EXECUTOR)
        p.fail(action, NO_EXECUTOR)

    def _held_outcome(self, p: Progress, action: PlanAction, outcome: Outcome, attempt: int = 1) -> None:
        sink = p.held
        if isinstance(outcome, Failed):
            sink.failure(outcome.reason, outcome.fault, p.task.id, p.row.session_id, action.kind, step=p.step.id,
                         attempt=attempt, entry_id=p.row.id)
            p.fail(action, outcome.reason, attempt)
        elif outcome.effects:
            sink.effects(outcome.effects, action.kind, p.task.id, p.step.id, entry_id=p.row.id)

    def delivery(self, p: Progress) -> Delivery:
        if p.delivery is not None:
            return p.delivery
        row = p.row
        assert row.to_workflow_id is not None
        p.delivery = new_delivery(self.index.entry_trigger, p.task, row.to_workflow_id, p.step.id, self.revision,
                            self.owner, entry_key(row.id), row.session_id, {}, None, row.id,
                            self.index.workflow_steps(row.to_workflow_id, p.step.id),
                            options_of(row.arrival_options))  # ADR 0043
        return p.delivery

    # ---- after the first segment committed -----------------------------------------------------------------
    def finish(self, p: Progress, *, session_live: bool) -> EntryResult:
        """The rest of an entry whose first segment committed: each host call, then the next segment; its
        report.  Runs while this owner holds the entry."""
        try:
            with self.owner.running_entry(p.row.id):
                while not p.recorded:
                    if p.pending is not None:
                        if session_live and p.step.entry_inline and not p.inline_reported:
                            self._inline(p)  # before the host's actions run: the host may run its own meanwhile
                        self._call(p)
                    with self.store.unit() as tx:
                        self.segment(tx, p)
                    p.held.flush(self.recorder)
        except Redelivered:
            return self.redelivered(p.row)
        except StoreError as exc:
            return self._incomplete(p.row, exc)
        return self.report(p, session_live)

    def _call(self, p: Progress) -> None:
        """The started host position: called outside any transaction; its records at once (in order with what it
        calls back), its marker finished by the next segment."""
        assert p.pending is not None
        action, attempt = p.pending
        executor = self.invoker.registry.entries.get(action.kind)
        ctx = self.invoker.context(self.delivery(p), action, attempt=attempt)
        if executor is None:  # unregistered since the segment started it
            outcome: Outcome = Failed(NO_EXECUTOR)
        else:
            try:
                outcome = self.invoker.call(executor, action.args, ctx, self.store)
            except StoreError as exc:
                if not exc.permanent:
                    raise
                outcome = Failed(str(exc) or type(exc).__name__)
        self._held_outcome(p, action, outcome, attempt)
        p.held.flush(self.recorder)
        p.finished = (action.position, "failed" if isinstance(outcome, Failed) else "done",
                      outcome.reason if isinstance(outcome, Failed) else None)
        p.pending = None
        p.next += 1

    # ---- a committed row taken up by its claim ----------------------------------------------------------------
    def resume(self, row: LedgerRow, step: PlanStep, *, session_live: bool) -> EntryResult:
        """Dispatch a committed row's entry that this owner has claimed: from its first unfinished position."""
        try:
            with self.owner.running_entry(row.id):
                task = self.store.get_task(row.task_id) or TaskState(row.task_id, row.to_workflow_id, step.id)
                p = self.progress(row, task, step)
                markers = self.store.markers(row.id) if p.segmented else None
                if session_live and step.entry_inline and p.segmented:
                    self._inline(p)
                # a row written elsewhere (a host's, or one whose arrival committed alone) has its timers armed
                # here, while it is the task's current activation
                arm = bool(step.timers or self.arming.due_work) and task.entry_id == row.id
                dropped: list[DueRow] = []
                with self.store.unit() as tx:
                    if arm:
                        dropped = self.arming.arm(tx, row, step)
                    self.segment(tx, p, markers)
                p.held.flush(self.recorder)
                self.arming.cancelled(dropped)
        except Redelivered:
            return self.redelivered(row)
        except StoreError as exc:
            return self._incomplete(row, exc)
        if not p.recorded:
            return self.finish(p, session_live=session_live)
        return self.report(p, session_live)

    # ---- positions of a recorded entry run again (a retry, a redrive) ---------------------------------------
    def rerun(self, row: LedgerRow, step: PlanStep, positions: tuple[int, ...]) -> list[Rerun]:
        """Run positions of a recorded entry again, in order, each once (the caller holds the claim that makes it
        the only one): with the entry's key and each position's next attempt (its marker counts them).  A position
        whose marker is `done` is skipped.  What each try did; its records at once."""
        task = self.store.get_task(row.task_id) or TaskState(row.task_id, row.to_workflow_id, step.id,
                                                            entry_id=row.id)
        p = self.progress(row, task, step)
        by_position = {a.position: a for a in step.entry_dispatch}
        out: list[Rerun] = []
        for position in positions:
            action = by_position.get(position)
            if action is None:
                out.append(Rerun(position, "?", Failed(f"position {position} is not in the entry of `{step.id}`"), 0))
                continue
            marker = self.store.rerun_marker(row.id, position, action.kind)
            if marker is None:
                continue
            executor = self.invoker.registry.entries.get(action.kind)
            if executor is None:
                outcome: Outcome = Failed(NO_EXECUTOR)
                self.store.finish_marker(row.id, position, "failed", NO_EXECUTOR)
            elif executor.transactional:
                with self.store.unit() as tx:
                    outcome = self._run_in(tx, p, action, bare=False)
                    self._finish_rerun(tx, row.id, position, outcome)
            else:
                ctx = self.invoker.context(self.delivery(p), action, attempt=marker.attempt)
                try:
                    outcome = self.invoker.call(executor, action.args, ctx, self.store)
                except StoreError as exc:
                    if not exc.permanent:
                        raise
                    outcome = Failed(str(exc) or type(exc).__name__)
                self._finish_rerun(self.store, row.id, position, outcome)
            self._held_outcome(p, action, outcome, marker.attempt)
            p.held.flush(self.recorder)
            out.append(Rerun(position, action.kind, outcome, marker.attempt))
        return out

    @staticmethod
    def _finish_rerun(store: Store, entry_id: int, position: int, outcome: Outcome) -> None:
        if isinstance(outcome, Failed):
            store.finish_marker(entry_id, position, "failed", outcome.reason)
        else:
            store.finish_marker(entry_id, position, "done")

    # ---- what an entry says -------------------------------------------------------------------------------------
    def report(self, p: Progress, session_live: bool) -> EntryResult:
        """An entry whose record is written (and committed): its records, in order, its counter and its result."""
        rec = self.recorder
        if session_live and p.step.entry_inline and not p.inline_reported:
            self._inline(p)
        p.held.flush(rec)
        rec.count("entries_dispatched")
        row = p.row
        attempted, failed = p.attempted, tuple(p.failed)
        if rec.active:
            rec.emit("entry", "info", task=row.task_id, step=p.step.id, entry_id=row.id, attempted=list(attempted),
                     failed=[{"kind": k, "error": e} for k, e in failed], workflow=row.to_workflow_id,
                     session=row.session_id)
        return EntryResult(row.id, "dispatched", attempted, failed)

    def report_empty(self, row: LedgerRow, step: PlanStep, session_live: bool) -> EntryResult:
        """`report` of a recorded entry that dispatches nothing, without building its `Progress` (the same records
        and counter; ADR 0052)."""
        if session_live and step.entry_inline:
            task = TaskState(row.task_id, row.to_workflow_id, step.id, entry_id=row.id)
            return self.report(Progress(row, task, step, False, recorded=True), session_live)
        rec = self.recorder
        rec.count("entries_dispatched")
        if rec.active:
            rec.emit("entry", "info", task=row.task_id, step=step.id, entry_id=row.id, attempted=[], failed=[],
                     workflow=row.to_workflow_id, session=row.session_id)
        return EntryResult(row.id, "dispatched", (), ())

    def redelivered(self, row: LedgerRow) -> EntryResult:
        """A delivery of an entry that has its record: discarded whole."""
        self.recorder.redelivery("info", task=row.task_id, entry_id=row.id, step=row.to_step_id,
                                 session=row.session_id)
        return EntryResult(row.id, "redelivery")

    def in_progress(self, row: LedgerRow, owner: str | None) -> EntryResult:
        """A delivery of an entry that a live owner is dispatching: discarded (that owner finishes it)."""
        self.recorder.redelivery("info", task=row.task_id, entry_id=row.id, step=row.to_step_id,
                                 session=row.session_id, in_progress=True, owner=owner)
        return EntryResult(row.id, "in_progress")

    def _inline(self, p: Progress) -> None:
        p.inline_reported = True
        self.recorder.emit("inline", "debug", task=p.row.task_id, step=p.step.id, kinds=list(p.step.entry_inline),
                           entry_id=p.row.id, session=p.row.session_id)

    def _incomplete(self, row: LedgerRow, exc: StoreError) -> EntryResult:
        self.recorder.emit("error", "error", "entry dispatch interrupted: the store failed; `recover` will finish it",
                           task=row.task_id, session=row.session_id, entry_id=row.id, message=str(exc))
        return EntryResult(row.id, "incomplete")

    def unknown_step(self, row: LedgerRow, reason: str | None = None) -> EntryResult:
        """A row into a step its revision does not know (a host's row, or a revision the store lost): recorded as a
        failure."""
        assert row.to_workflow_id is not None and row.to_step_id is not None
        reason = reason or f"step `{row.to_step_id}` of workflow `{row.to_workflow_id}` is not in the plan"
        try:
            self.recorder.warning("unknown_step", "entry of a step the plan does not know", task=row.task_id,
                                  workflow=row.to_workflow_id, step=row.to_step_id, entry_id=row.id, message=reason)
            record = EntryRecord(row.id, row.task_id, row.to_workflow_id, row.to_step_id, (),
                                 ((row.to_step_id, reason),))
            if not self.store.record_entry(record):
                return self.redelivered(row)
        except StoreError as exc:
            return self._incomplete(row, exc)
        self.recorder.count("entries_dispatched")
        if self.recorder.active:
            self.recorder.emit("entry", "info", task=row.task_id, step=row.to_step_id, entry_id=row.id, attempted=[],
                               failed=[{"kind": row.to_step_id, "error": reason}], workflow=row.to_workflow_id,
                               session=row.session_id)
        return EntryResult(row.id, "dispatched", (), record.failed)


@dataclass(frozen=True)
class Rerun:
    """One position of a recorded entry run again: its kind, what it did, the attempt it was."""

    position: int
    kind: str
    outcome: Outcome
    attempt: int

    @property
    def error(self) -> str | None:
        return self.outcome.reason if isinstance(self.outcome, Failed) else None


class _RollBack(Exception):
    """Internal: an action in a savepoint failed; the savepoint is rolled back, the failure recorded."""

    def __init__(self, outcome: Failed) -> None:
        super().__init__(outcome.reason)
        self.outcome = outcome


def check_row(row: LedgerRow | None, ledger_id: int) -> LedgerRow:
    if row is None:
        raise RuntimeFault(f"no ledger row {ledger_id}")
    return row
