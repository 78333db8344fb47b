"""A ledger row in, its step's entry dispatched out: record-and-continue, exactly once per row, durable.

One algorithm (`EntryDispatch.run`) runs an entry in one of three modes, each a different place in
the row's life (docs/runtime.md §1, ADR 0010):

- `AFTER_COMMIT` — the row committed on its own; every position is claimed by a durable marker before
  it runs (claim → run → mark), host executors run with their timeout, each store-backed one in a
  unit of its own; the entry record is written last.  What `dispatch_entry`, `recover` and every
  destination with a host executor take.
- `IN_ARRIVAL` — inside the transaction that writes the row: no other delivery can see the row before
  the entry record commits with every effect, so that record is the marker of every position; each
  action runs in a savepoint of its own (a failing one is rolled back and recorded).
- `IN_ARRIVAL_BARE` — the same without savepoints, for entries whose actions are all replayable: the
  first that fails raises `Retry`; the caller undoes the transaction and runs it again `IN_ARRIVAL`,
  handing the failure over, so the failed action is recorded from its one call.

Each record kind of an entry is emitted from one place: `report` (inline, effects, failures, the
`entry` record) and `redelivered`.
"""

from __future__ import annotations

import enum
from collections.abc import Mapping
from typing import NamedTuple

from .checks import check_bool, check_ledger_id
from .errors import RuntimeFault
from .executors import ActionContext
from .frozen import builder
from .index import PlanIndex
from .invoker import Failed, Invoker, Ok, Outcome, failed_from
from .plan import PlanAction, PlanStep
from .recorder import Deferred, Recorder
from .results import EntryResult
from .store import EntryRecord, LedgerRow, Marker, Store, StoreError, TaskState

__all__ = ["Mode", "EntryDispatch", "Retry", "Ran", "IN_PROGRESS"]

IN_PROGRESS = "not run: its marker is in progress (another delivery is running it, or one was interrupted)"
"""The failure an entry records for a position whose marker was claimed but never finished: the position is not
run again (docs/runtime.md §1: only positions without a marker run), and its outcome is unknown."""

NO_EXECUTOR = "no executor"

ENTERED: tuple[str, ...] = ("entries_dispatched",)
"""The counters an entry that dispatched adds."""

_entry_record = builder(EntryRecord)  # the hot paths' constructors (frozen.builder: ADR 0027's ablation)
_entry_result = builder(EntryResult)


class Mode(enum.Enum):
    AFTER_COMMIT = "after the row's commit, claim → run → mark per position"
    IN_ARRIVAL = "inside the row's transaction, a savepoint per action"
    IN_ARRIVAL_BARE = "inside the row's transaction, no savepoints"


class Retry(Exception):
    """An action failed in an `IN_ARRIVAL_BARE` entry: undo the transaction and run it again `IN_ARRIVAL`, with
    this failure handed over (`known`)."""

    def __init__(self, position: int, outcome: Failed) -> None:
        super().__init__(position)
        self.position = position
        self.outcome = outcome


class Redelivered(Exception):
    """Internal: the entry has its record already (raised inside a unit to undo this delivery)."""


class Ran(NamedTuple):
    """What an entry did: the kinds attempted in order, the failures with their reasons, and the records of its
    actions held until its transaction commits."""

    attempted: tuple[str, ...]
    failed: tuple[tuple[str, str], ...]
    deferred: Deferred


class EntryDispatch:
    """Step entry.  Uses the plan index, the store, the invoker and the recorder; nothing above it."""

    def __init__(self, index: PlanIndex, store: Store, invoker: Invoker, recorder: Recorder) -> None:
        self.index = index
        self.store = store
        self.invoker = invoker
        self.recorder = recorder

    # ---- the entry points ------------------------------------------------------------------------------------
    def dispatch_entry(self, ledger_id: int, *, session_live: bool = False) -> EntryResult:
        """Dispatch the entry of a ledger row written by the host (through `LedgerWriter`), after its commit."""
        check_ledger_id(ledger_id)
        check_bool(session_live, "session_live")
        row = self.store.ledger_row(ledger_id)
        if row is None:
            raise RuntimeFault(f"no ledger row {ledger_id}")
        return self.enter(row, session_live=session_live)

    def enter(self, row: LedgerRow, *, session_live: bool) -> EntryResult:
        """Dispatch a committed row's entry: in one transaction when every action is store-backed, else
        position by position."""
        if row.to_step_id is None or row.to_workflow_id is None:
            return EntryResult(row.id, "detach")
        step = self.index.steps.get((row.to_workflow_id, row.to_step_id))
        if step is None:
            return self._unknown_step(row)
        if not step.entry_dispatch:
            return self.enter_empty(row, step, session_live)
        try:
            if self.all_store_backed(step):
                with self.store.unit() as tx:
                    if tx.entry_record(row.id) is not None:
                        raise Redelivered
                    task = tx.get_task(row.task_id) or TaskState(row.task_id, row.to_workflow_id, step.id)
                    ran = self.run(tx, row, task, step, Mode.AFTER_COMMIT, markers=tx.markers(row.id))
                return self.report(row, step, session_live, ran)
            if self.store.entry_record(row.id) is not None:
                raise Redelivered
            task = self.store.get_task(row.task_id) or TaskState(row.task_id, row.to_workflow_id, step.id)
            if session_live and step.entry_inline:
                self._inline(row, step)
                session_live = False  # reported before the actions run: the host may run them meanwhile
            ran = self.run(self.store, row, task, step, Mode.AFTER_COMMIT, markers=self.store.markers(row.id),
                           defer=False)
            return self.report(row, step, session_live, ran)
        except Redelivered:
            return self.redelivered(row)
        except StoreError as exc:
            return self._incomplete(row, exc)

    def enter_empty(self, row: LedgerRow, step: PlanStep, session_live: bool,
                    arrival_counts: tuple[str, ...] = ()) -> EntryResult:
        """An entry with nothing to dispatch: its record alone.  `arrival_counts`: the counters of the arrival that
        led here, added with the entry's in one step."""
        assert row.to_workflow_id is not None and row.to_step_id is not None
        try:
            recorded = self.store.record_entry(_entry_record(row.id, row.task_id, row.to_workflow_id, row.to_step_id,
                                                             ()))
        except StoreError as exc:
            self.recorder.counters.add_each(arrival_counts)
            return self._incomplete(row, exc)
        except BaseException:  # the arrival committed whatever its entry does: it is counted
            self.recorder.counters.add_each(arrival_counts)
            raise
        if not recorded:
            self.recorder.counters.add_each(arrival_counts)
            return self.redelivered(row)
        return self.report(row, step, session_live, NOTHING_RAN, arrival_counts + ENTERED)

    # ---- the one algorithm -------------------------------------------------------------------------------------
    def run(self, store: Store, row: LedgerRow, task: TaskState, step: PlanStep, mode: Mode, *,
            markers: Mapping[int, Marker] | None = None, known: Retry | None = None, defer: bool = True) -> Ran:
        """Run the entry's actions in `mode` and write its record through `store` (the open unit, or the store
        itself `AFTER_COMMIT` with host executors).  Raises `Redelivered` if another delivery recorded the entry
        meanwhile, `Retry` (`IN_ARRIVAL_BARE`) when an action fails, `StoreError` when the store fails.

        `defer` False: records are emitted at once (a host executor's effects, in order with what it calls
        back); otherwise they are held until the caller's transaction has committed."""
        assert row.to_workflow_id is not None
        held = Deferred() if defer else None
        sink: Deferred | Recorder = held if held is not None else self.recorder
        attempted: list[str] = []
        failed: list[tuple[str, str]] = []
        for action in step.entry_dispatch:
            attempted.append(action.kind)
            outcome: Outcome | Listed
            if known is not None and action.position == known.position:
                outcome = known.outcome
            elif mode is Mode.AFTER_COMMIT:
                outcome = self._run_marked(store, row, task, step, action, (markers or {}).get(action.position))
            else:
                outcome = self._run_in(store, row, task, step, action, bare=mode is Mode.IN_ARRIVAL_BARE)
            if isinstance(outcome, Listed):
                failed.append((action.kind, outcome.reason))
            elif isinstance(outcome, Failed):
                sink.failure(outcome.reason, outcome.fault, task.id, row.session_id, action.kind)
                failed.append((action.kind, outcome.reason))
            elif outcome.effects:
                sink.effects(outcome.effects, action.kind, task.id, step.id, entry_id=row.id)
        record = EntryRecord(row.id, row.task_id, row.to_workflow_id, step.id, tuple(attempted), tuple(failed))
        if not store.record_entry(record):
            raise Redelivered  # another delivery recorded it meanwhile: it is the row's one dispatch
        return Ran(record.attempted, record.failed, held if held is not None else Deferred())

    def _run_in(self, tx: Store, row: LedgerRow, task: TaskState, step: PlanStep, action: PlanAction, *,
                bare: bool) -> Outcome:
        """One store-backed action inside the row's transaction: in a savepoint (rolled back if it fails), or
        bare (its failure raises `Retry`)."""
        fn = self.invoker.registry.get(action.kind)
        assert fn is not None  # every action of an entry run in the transaction is store-backed
        if bare:
            outcome = self.invoker.call_here(fn, action.args, self._context(action, row, task, step, tx))
            if isinstance(outcome, Failed):
                raise Retry(action.position, outcome)
            return outcome
        try:
            with tx.unit() as sp:
                outcome = self.invoker.call_here(fn, action.args, self._context(action, row, task, step, sp))
                if isinstance(outcome, Failed):
                    raise _RollBack(outcome)
        except _RollBack as undone:
            return undone.outcome
        return outcome

    def _run_marked(self, store: Store, row: LedgerRow, task: TaskState, step: PlanStep, action: PlanAction,
                    marker: Marker | None) -> Outcome | Listed:
        """One action after the row's commit, at most once per entry: claim the position's marker, run, mark."""
        if marker is not None:
            if marker.state == "done":
                return OK_DONE
            return Listed(str(marker.error or "failed") if marker.state == "failed" else IN_PROGRESS)
        assert row.to_workflow_id is not None
        kind, position = action.kind, action.position
        executor = self.invoker.registry.entries.get(kind)
        if executor is None:
            step_plan = self.index.steps.get((row.to_workflow_id, step.id))
            self.recorder.missing_executor(row.to_workflow_id, step.id, step_plan.title if step_plan else None, kind,
                                           task.id, row.session_id)
            self._mark_failed(store, row.id, position, kind, NO_EXECUTOR)
            return Listed(NO_EXECUTOR)
        if executor.transactional:  # claim, run and mark in one unit (a savepoint inside an open one)
            try:
                with store.unit() as unit:
                    if not unit.claim_marker(row.id, position, kind):
                        return OK_DONE  # another delivery has it
                    outcome = self.invoker.call_here(executor.fn, action.args,
                                                     self._context(action, row, task, step, unit))
                    if isinstance(outcome, Failed):
                        raise _RollBack(outcome)
                    unit.finish_marker(row.id, position, "done")
            except _RollBack as undone:  # the unit's claim went with it: claimed again, as failed
                self._mark_failed(store, row.id, position, kind, undone.outcome.reason)
                return undone.outcome
            return outcome
        if not store.claim_marker(row.id, position, kind):
            return OK_DONE
        try:
            outcome = self.invoker.call(executor, action.args, self._context(action, row, task, step, None), store)
        except StoreError as exc:
            if not exc.permanent:
                raise  # the store failed: the entry is incomplete, `recover` finishes it
            outcome = failed_from(exc)
        if isinstance(outcome, Failed):
            store.finish_marker(row.id, position, "failed", outcome.reason)
        else:
            store.finish_marker(row.id, position, "done")
        return outcome

    def _context(self, action: PlanAction, row: LedgerRow, task: TaskState, step: PlanStep,
                 store: Store | None) -> ActionContext:
        assert row.to_workflow_id is not None
        return self.invoker.context(action, task, row.to_workflow_id, step.id, self.index.entry_trigger,
                                    f"entry:{row.id}:{action.position}:{action.kind}", row.id, None, row.session_id,
                                    None, store, None)

    @staticmethod
    def _mark_failed(store: Store, entry_id: int, position: int, kind: str, error: str) -> None:
        """A position that failed without a marker of its own: claimed and marked failed (unless another delivery
        holds it)."""
        if store.claim_marker(entry_id, position, kind):
            store.finish_marker(entry_id, position, "failed", error)

    # ---- what an entry says -------------------------------------------------------------------------------------
    def report(self, row: LedgerRow, step: PlanStep | None, session_live: bool, ran: Ran,
               counts: tuple[str, ...] = ENTERED) -> EntryResult:
        """An entry whose record is written (and committed): its records, in order, its counters (`counts`) and its
        result.  `step` None: a step the plan does not know."""
        rec = self.recorder
        if step is not None and session_live and step.entry_inline:
            self._inline(row, step)
        if ran is not NOTHING_RAN:
            ran.deferred.flush(rec)
        rec.counters.add_each(counts)
        if rec.active:
            rec.emit("entry", "info", task=row.task_id, step=step.id if step is not None else row.to_step_id,
                     entry_id=row.id, attempted=list(ran.attempted),
                     failed=[{"kind": k, "error": e} for k, e in ran.failed], workflow=row.to_workflow_id,
                     session=row.session_id)
        return _entry_result(row.id, "dispatched", ran.attempted, ran.failed)

    def redelivered(self, row: LedgerRow) -> EntryResult:
        """A delivery of an entry that has its record: discarded whole."""
        self.recorder.redelivery("info", task=row.task_id, entry_id=row.id, step=row.to_step_id,
                                 session=row.session_id)
        return EntryResult(row.id, "redelivery")

    def _inline(self, row: LedgerRow, step: PlanStep) -> None:
        self.recorder.emit("inline", "debug", task=row.task_id, step=step.id, kinds=list(step.entry_inline),
                           entry_id=row.id, session=row.session_id)

    def _incomplete(self, row: LedgerRow, exc: StoreError) -> EntryResult:
        self.recorder.emit("error", "error", "entry dispatch interrupted: the store failed; `recover` will finish it",
                           task=row.task_id, session=row.session_id, entry_id=row.id, message=str(exc))
        return EntryResult(row.id, "incomplete")

    def _unknown_step(self, row: LedgerRow) -> EntryResult:
        """A row into a step the plan does not know (a plan changed under stored rows): recorded as a failure."""
        assert row.to_workflow_id is not None and row.to_step_id is not None
        try:
            if self.store.entry_record(row.id) is not None:
                return self.redelivered(row)
            reason = f"step `{row.to_step_id}` of workflow `{row.to_workflow_id}` is not in the plan"
            self.recorder.warning("unknown_step", "entry of a step the plan does not know", task=row.task_id,
                                  workflow=row.to_workflow_id, step=row.to_step_id, entry_id=row.id)
            record = EntryRecord(row.id, row.task_id, row.to_workflow_id, row.to_step_id, (),
                                 ((row.to_step_id, reason),))
            if not self.store.record_entry(record):
                return self.redelivered(row)
        except StoreError as exc:
            return self._incomplete(row, exc)
        return self.report(row, None, False, Ran((), record.failed, Deferred()))

    # ---- which mode a step's entry can take -------------------------------------------------------------------------
    def all_store_backed(self, step: PlanStep) -> bool:
        """Every dispatched action has a store-backed (transactional) executor: the entry can run in one unit."""
        entries = self.invoker.registry.entries
        return all((e := entries.get(a.kind)) is not None and e.transactional for a in step.entry_dispatch)

    def all_replayable(self, step: PlanStep) -> bool:
        """Every dispatched action is replayable (`ExecutorRegistry`): the entry may run without savepoints."""
        entries = self.invoker.registry.entries
        return all((e := entries.get(a.kind)) is not None and e.replayable for a in step.entry_dispatch)


class _RollBack(Exception):
    """Internal: an action in a savepoint failed; the savepoint is rolled back, the failure recorded."""

    def __init__(self, outcome: Failed) -> None:
        super().__init__(outcome.reason)
        self.outcome = outcome


NOTHING_RAN = Ran((), (), Deferred())
"""What an entry with nothing to dispatch did (shared: nothing is ever added to its `Deferred`)."""

OK_DONE = Ok()
"""The outcome of a position that ran before (its marker is done) or that another delivery holds."""


class Listed(NamedTuple):
    """A position's failure known from before (its marker's, a missing executor's warning): listed in the entry
    record, not counted or reported again."""

    reason: str
