"""A ledger row in, its step's entry dispatched out: record-and-continue, durable per-entry idempotency,
one transaction per entry when every action is store-backed, and the `recover` sweep.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import replace
from typing import Any, NamedTuple

from .checks import check_bool, check_ledger_id
from .core import IN_PROGRESS, _Core, _Failure, _Redelivered, _Retry, as_failure, claim_abandoned
from .errors import (
    RuntimeFault,
)
from .executors import Effect
from .frozen import builder
from .plan import (
    PlanAction,
    PlanStep,
)
from .records import Level
from .results import EntryResult, RecoverResult
from .store import EntryRecord, LedgerRow, Marker, Store, StoreError, TaskState

_entry_record = builder(EntryRecord)  # the hot paths' constructors (frozen.builder)
_entry_result = builder(EntryResult)

__all__ = ["EntryDispatch", "Pending", "Counts", "ENTRY_ONLY"]


class Counts(NamedTuple):
    """The counters an arrival adds: `plain`, or `entered` once its empty entry is recorded (one call either way)."""

    plain: tuple[str, ...]
    entered: tuple[str, ...]


ENTRY_ONLY = Counts((), ("entries_dispatched",))
"""An entry dispatched on its own (`dispatch_entry`, `recover`): no arrival to count."""

Pending = tuple[str, Level, "str | None", dict[str, Any]]
"""A record held back until its transaction commits: (kind, level, message, fields); kind
`executor_failure` is a count, not a record."""


class EntryDispatch(_Core):
    """Step entry (docs/runtime.md §1): record-and-continue, exactly once per ledger row, durable."""

    def dispatch_entry(self, ledger_id: int, *, session_live: bool = False) -> EntryResult:
        """Dispatch the entry of a ledger row written by the host (through `LedgerWriter`), after its commit."""
        check_ledger_id(ledger_id)
        check_bool(session_live, "session_live")
        row = self.store.ledger_row(ledger_id)
        if row is None:
            raise RuntimeFault(f"no ledger row {ledger_id}")
        return self._enter(row, session_live=session_live)

    def recover(self) -> RecoverResult:
        """Dispatch every arrival that has no entry record (the crash window between commit and dispatch), after
        releasing the operation claims that crashed processes of this host left (ADR 0020: a redelivery then runs
        the operation; claims of other hosts end with their lease)."""
        for operation_id, token in self.store.claimed_operations(limit=10_000):
            if claim_abandoned(token) and self.store.release_operation(operation_id, token):
                self.counters.add("claims_released")
                self.emit("warning", "warning", "operation claim released: the process that held it is gone",
                          code="operation_claim_released", operation_id=operation_id)
        entries = []
        while True:
            rows = self.store.unrecorded_arrivals(limit=500)
            done = [self._enter(row, session_live=False) for row in rows]
            entries.extend(done)
            # a batch in which no entry got its record (the store failing, or rows it cannot enter) ends the sweep
            if len(rows) < 500 or not any(e.status in ("dispatched", "redelivery") for e in done):
                break
        return RecoverResult(sum(1 for e in entries if e.status == "dispatched"), tuple(entries))

    # ---- step entry: record-and-continue ------------------------------------------------------------
    def _enter(self, row: LedgerRow, *, session_live: bool) -> EntryResult:
        if row.to_step_id is None or row.to_workflow_id is None:
            return EntryResult(row.id, "detach")
        step_plan = self._steps.get((row.to_workflow_id, row.to_step_id))
        if step_plan is not None:
            if not step_plan.entry_dispatch:
                return self._enter_empty(row, step_plan, session_live)
            if self._all_transactional(step_plan):
                return self._enter_atomically(row, step_plan, session_live=session_live)
        try:
            if self.store.entry_record(row.id) is not None:
                self.counters.add("redeliveries_discarded")
                self.emit("redelivery_discarded", "info", task=row.task_id, entry_id=row.id, step=row.to_step_id,
                          session=row.session_id)
                return EntryResult(row.id, "redelivery")
            step = self._steps.get((row.to_workflow_id, row.to_step_id))
            if step is None:
                reason = f"step `{row.to_step_id}` of workflow `{row.to_workflow_id}` is not in the plan"
                self.emit("warning", "warning", "entry of a step the plan does not know", code="unknown_step",
                          task=row.task_id, workflow=row.to_workflow_id, step=row.to_step_id, entry_id=row.id)
                record = EntryRecord(row.id, row.task_id, row.to_workflow_id, row.to_step_id, (),
                                     ((row.to_step_id, reason),))
                self.store.record_entry(record)
                self.counters.add("entries_dispatched")
                self.emit("entry", "info", task=row.task_id, step=row.to_step_id, entry_id=row.id, attempted=[],
                          failed=[{"kind": k, "error": e} for k, e in record.failed], workflow=row.to_workflow_id,
                          session=row.session_id)
                return EntryResult(row.id, "dispatched", (), record.failed)
            task = self.store.get_task(row.task_id) or TaskState(row.task_id, row.to_workflow_id, row.to_step_id)
            if session_live and step.entry_inline:
                self.emit("inline", "debug", task=row.task_id, step=step.id, kinds=list(step.entry_inline),
                          entry_id=row.id, session=row.session_id)
            markers = self.store.markers(row.id)
            attempted: list[str] = []
            failed: list[tuple[str, str]] = []
            for action in step.entry_dispatch:
                attempted.append(action.kind)
                error = self._entry_action(row, task, step, action, markers.get(action.position))
                if error is not None:
                    failed.append((action.kind, error))
            record = EntryRecord(row.id, row.task_id, row.to_workflow_id, step.id, tuple(attempted), tuple(failed))
            if not self.store.record_entry(record):
                # another delivery of this entry recorded it meanwhile: it is the one dispatch of the row
                self.counters.add("redeliveries_discarded")
                self.emit("redelivery_discarded", "info", task=row.task_id, entry_id=row.id, step=row.to_step_id,
                          session=row.session_id)
                return EntryResult(row.id, "redelivery")
        except StoreError as exc:
            self.emit("error", "error", "entry dispatch interrupted: the store failed; `recover` will finish it",
                      task=row.task_id, session=row.session_id, entry_id=row.id, message=str(exc))
            return EntryResult(row.id, "incomplete")
        self.counters.add("entries_dispatched")
        self.emit("entry", "info", task=row.task_id, step=step.id, entry_id=row.id, attempted=attempted,
                  failed=[{"kind": k, "error": e} for k, e in failed], workflow=row.to_workflow_id,
                  session=row.session_id)
        return EntryResult(row.id, "dispatched", tuple(attempted), tuple(failed))

    def _all_transactional(self, step: PlanStep) -> bool:
        """Every dispatched entry action has a transactional (store-backed) executor."""
        is_tx = self.executors.is_transactional
        return all(is_tx(a.kind) for a in step.entry_dispatch)

    def _all_replayable(self, step: PlanStep) -> bool:
        """Every dispatched entry action has a replayable executor (`ExecutorRegistry`): the entry may run without
        savepoints, and run again with them if an action fails."""
        is_replayable = self.executors.is_replayable
        return all(is_replayable(a.kind) for a in step.entry_dispatch)

    def _redelivered(self, row: LedgerRow) -> EntryResult:
        self.counters.add("redeliveries_discarded")
        self.emit("redelivery_discarded", "info", task=row.task_id, entry_id=row.id, step=row.to_step_id,
                  session=row.session_id)
        return EntryResult(row.id, "redelivery")

    def _enter_empty(self, row: LedgerRow, step: PlanStep, session_live: bool,
                     counts: Counts = ENTRY_ONLY) -> EntryResult:
        """An entry with nothing to dispatch: the entry record alone, one statement.  `counts`: what to count with
        it (the arrival's counters too, when the arrival hands them over)."""
        assert row.to_workflow_id is not None
        try:
            # the row's own ids (step.id is the same step): a store may compare them by identity
            if not self.store.record_entry(_entry_record(row.id, row.task_id, row.to_workflow_id, row.to_step_id,
                                                         ())):
                self.counters.add_each(counts.plain)
                return self._redelivered(row)
        except StoreError as exc:
            self.counters.add_each(counts.plain)
            self.emit("error", "error", "entry dispatch interrupted: the store failed; `recover` will finish it",
                      task=row.task_id, session=row.session_id, entry_id=row.id, message=str(exc))
            return EntryResult(row.id, "incomplete")
        self.counters.add_each(counts.entered)
        if self.sinks:
            if session_live and step.entry_inline:
                self.emit("inline", "debug", task=row.task_id, step=step.id, kinds=list(step.entry_inline),
                          entry_id=row.id, session=row.session_id)
            self.emit("entry", "info", task=row.task_id, step=step.id, entry_id=row.id, attempted=[], failed=[],
                      workflow=row.to_workflow_id, session=row.session_id)
        return _entry_result(row.id, "dispatched")

    def _enter_atomically(self, row: LedgerRow, step: PlanStep, *, session_live: bool) -> EntryResult:
        """Dispatch an entry whose actions are all store-backed in ONE transaction: each action in a
        savepoint (record-and-continue), the entry record last.  One commit per entry; records are
        emitted only once it has committed."""
        assert row.to_workflow_id is not None
        pending: list[Pending] = []
        try:
            with self.store.unit() as tx:
                if tx.entry_record(row.id) is not None:
                    raise _Redelivered
                task = tx.get_task(row.task_id) or TaskState(row.task_id, row.to_workflow_id, step.id)
                attempted, failed = self._entry_in(tx, row, task, step, tx.markers(row.id), pending)
        except _Redelivered:
            return self._redelivered(row)
        except StoreError as exc:
            self.emit("error", "error", "entry dispatch interrupted: the store failed; `recover` will finish it",
                      task=row.task_id, session=row.session_id, entry_id=row.id, message=str(exc))
            return EntryResult(row.id, "incomplete")
        return self._entered(row, step, session_live, pending, attempted, failed)

    def _entry_in(self, tx: Store, row: LedgerRow, task: TaskState, step: PlanStep,
                  markers: Mapping[int, Marker] | None, pending: list[Pending], *, bare: bool = False,
                  known: _Retry | None = None) -> tuple[tuple[str, ...], tuple[tuple[str, str], ...]]:
        """The store-backed actions of an entry and its record, inside the open unit `tx` (records to emit
        after the commit go to `pending`).  Raises `_Redelivered` if the entry has its record already.

        `markers` None: the entry runs in the transaction that writes its ledger row (ADR 0010), so no other
        delivery can see the row before the entry record commits with every effect: that record is the
        durable marker of every position, and no per-position marker is written.  `bare`: the actions run
        without savepoints, and the first that fails raises `_Retry`; the caller then runs the transaction
        again with savepoints, passing that `_Retry` as `known`: its action is recorded as failed without
        being called again (ADR 0010: a savepoint costs more than the rest of an action)."""
        assert row.to_workflow_id is not None
        attempted: list[str] = []
        failed: list[tuple[str, str]] = []
        for action in step.entry_dispatch:
            attempted.append(action.kind)
            if markers is None:
                if bare:
                    self._entry_action_bare(tx, row, task, step, action, pending)
                    continue
                error: str | None
                if known is not None and action.position == known.position:
                    error = self._failed_in(known.failure, row, task, action.kind, pending)
                else:
                    error = self._entry_action_in(tx, row, task, step, action, None, pending, marked=False)
            else:
                error = self._entry_action_in(tx, row, task, step, action, markers.get(action.position), pending)
            if error is not None:
                failed.append((action.kind, error))
        record = _entry_record(row.id, row.task_id, row.to_workflow_id, step.id, tuple(attempted), tuple(failed))
        if not tx.record_entry(record):
            raise _Redelivered  # another delivery recorded it meanwhile: undo ours
        return record.attempted, record.failed

    def _entered(self, row: LedgerRow, step: PlanStep, session_live: bool, pending: list[Pending],
                 attempted: tuple[str, ...], failed: tuple[tuple[str, str], ...]) -> EntryResult:
        """After an entry's transaction committed: its records, in order, and its result."""
        if session_live and step.entry_inline:
            self.emit("inline", "debug", task=row.task_id, step=step.id, kinds=list(step.entry_inline),
                      entry_id=row.id, session=row.session_id)
        for kind, level, message, fields in pending:
            if kind == "executor_failure":
                self.counters.add("executor_failures")
                continue
            if kind == "effect":
                self.counters.add("effects")
            self.emit(kind, level, message, **fields)
        self.counters.add("entries_dispatched")
        if self.sinks:
            self.emit("entry", "info", task=row.task_id, step=step.id, entry_id=row.id, attempted=list(attempted),
                      failed=[{"kind": k, "error": e} for k, e in failed], workflow=row.to_workflow_id,
                      session=row.session_id)
        return _entry_result(row.id, "dispatched", attempted, failed)

    def _entry_action_bare(self, tx: Store, row: LedgerRow, task: TaskState, step: PlanStep, action: PlanAction,
                           pending: list[Pending]) -> None:
        """One store-backed entry action in the entry's transaction, without a savepoint: `_Retry` if it fails."""
        assert row.to_workflow_id is not None
        kind = action.kind
        fn = self.executors.get(kind)
        assert fn is not None
        ctx = self._context(action, task, row.to_workflow_id, step.id, self._entry_trigger, entry_id=row.id,
                            session_id=row.session_id, key=f"entry:{row.id}:{action.position}:{kind}", store=tx)
        try:
            returned = fn(action.args, ctx)
            effects = () if returned is None else self._effects(returned)
        except KeyboardInterrupt:
            raise
        except BaseException as exc:
            raise _Retry(action.position, _contained(exc)) from exc
        self._pend_effects(effects, kind, row, task, step, pending)

    @staticmethod
    def _failed_in(failure: _Failure, row: LedgerRow, task: TaskState, kind: str, pending: list[Pending]) -> str:
        """A failed entry action's records, held until its transaction commits; its error."""
        # counted once the transaction commits (a rolled-back try is not a failure of the entry)
        pending.append(("executor_failure", "silent", None, {}))
        if failure.panic:
            pending.append(("error", "error", None, {"task": task.id, "session": row.session_id, "kind": kind,
                                                     "message": failure.message}))
        return failure.message

    @staticmethod
    def _pend_effects(effects: Sequence[Effect], kind: str, row: LedgerRow, task: TaskState, step: PlanStep,
                      pending: list[Pending]) -> None:
        for effect in effects:
            pending.append(("effect", "info", None, {"kind": kind, "task": task.id, "step": step.id,
                                                     "entry_id": row.id,
                                                     **{k: v for k, v in effect.items() if k != "kind"}}))

    def _entry_action_in(self, tx: Store, row: LedgerRow, task: TaskState, step: PlanStep, action: PlanAction,
                         marker: Any, pending: list[Pending], *, marked: bool = True) -> str | None:
        """One store-backed entry action inside the entry's transaction, in a savepoint of its own.
        `marked` False: no per-position marker (see `_entry_in`)."""
        if marker is not None:
            if marker.state == "done":
                return None
            return str(marker.error or "failed") if marker.state == "failed" else IN_PROGRESS
        assert row.to_workflow_id is not None
        kind, position = action.kind, action.position
        fn = self.executors.get(kind)
        assert fn is not None
        try:
            with tx.unit() as sp:
                if marked and not sp.claim_marker(row.id, position, kind):
                    return None  # another delivery has it
                ctx = self._context(action, task, row.to_workflow_id, step.id, self._entry_trigger, entry_id=row.id,
                                    session_id=row.session_id, key=f"entry:{row.id}:{position}:{kind}", store=sp)
                returned = fn(action.args, ctx)
                effects = () if returned is None else self._effects(returned)  # garbage: a failure, rolled back
                if marked:
                    sp.finish_marker(row.id, position, "done")
        except KeyboardInterrupt:
            raise
        except BaseException as exc:
            # anything else but a transient store fault (raised on: the entry is incomplete) a contained fault
            message = self._failed_in(_contained(exc), row, task, kind, pending)
            if marked and tx.claim_marker(row.id, position, kind):
                tx.finish_marker(row.id, position, "failed", message)
            return message
        self._pend_effects(effects, kind, row, task, step, pending)
        return None

    def _entry_action(self, row: LedgerRow, task: TaskState, step: PlanStep, action: PlanAction,
                      marker: Any) -> str | None:
        """Run one dispatched entry action at most once per entry; return its error (None: ok)."""
        if marker is not None and marker.state == "done":
            return None
        if marker is not None and marker.state == "failed":
            return str(marker.error or "failed")
        if marker is not None:  # in_progress: claimed by a delivery still running it, or one a crash cut short
            return IN_PROGRESS
        assert row.to_workflow_id is not None
        kind = action.kind
        key = f"entry:{row.id}:{action.position}:{kind}"
        fn = self.executors.get(kind)
        if fn is None:
            self._warn_missing(row.to_workflow_id, step.id, kind, task.id, row.session_id)
            if self.store.claim_marker(row.id, action.position, kind):
                self.store.finish_marker(row.id, action.position, "failed", "no executor")
            return "no executor"
        ctx = self._context(action, task, row.to_workflow_id, step.id, self._entry_trigger, entry_id=row.id,
                            session_id=row.session_id, key=key)
        effects: Sequence[Effect] = ()
        # Whether this position's marker exists when a failure is recorded: a pre-existing marker, or
        # the one a host executor's call claimed outside any unit (a unit's claim is undone with it).
        held = marker is not None
        try:
            if self.executors.is_transactional(kind):
                with self.store.unit() as tx:
                    if marker is None and not tx.claim_marker(row.id, action.position, kind):
                        return None  # another delivery has it
                    effects = self._effects(fn(action.args, replace(ctx, store=tx)))
                    tx.finish_marker(row.id, action.position, "done")
            else:
                if marker is None:
                    if not self.store.claim_marker(row.id, action.position, kind):
                        return None
                    held = True
                effects = self._call(fn, action.args, ctx)
                self.store.finish_marker(row.id, action.position, "done")
        except KeyboardInterrupt:
            raise
        except BaseException as exc:
            fault = _contained(exc)
            self._record_failure(fault, task.id, row.session_id, kind)
            self._mark_failed(row.id, action.position, kind, fault.message, had_marker=held)
            return fault.message
        self._emit_effects(effects, kind, task.id, step.id, entry_id=row.id)
        return None

    def _mark_failed(self, entry_id: int, position: int, kind: str, error: str, *, had_marker: bool) -> None:
        if had_marker or self.store.claim_marker(entry_id, position, kind):
            self.store.finish_marker(entry_id, position, "failed", error)


def _contained(exc: BaseException) -> _Failure:
    """An entry action's exception as its recorded failure, or raised on: a transient store fault (a lock, a lost
    connection) leaves the entry incomplete for `recover` to finish, while a permanent one (the data itself refused:
    it would fail on every retry) is that action's failure, and the entry goes on (record-and-continue)."""
    if isinstance(exc, StoreError) and not exc.permanent:
        raise exc
    return as_failure(exc)
