"""A request to create or move a task in, an arrival out: the ledger row commits with the step change and the first
segment of the destination's entry, then the rest of the entry runs (docs/runtime.md §1).

Every row the runtime writes names the revision that decided it and, when its entry is dispatched at
once, this runtime's owner (`entry_owner`): another process's `recover` leaves it alone while this
owner lives.  On a durable store the step change, its ledger row and the entry's first segment
(every store-backed position up to the first host one, whose marker is started; or the whole entry
with its record) commit in one transaction (ADRs 0010, 0036).  If the store fails after the step change
was written, the step change is written again on its own and its entry dispatched after that commit:
a step change is never given up for its entry.  On the in-memory store, or with
`atomic_arrivals=False`, the entry starts after the commit.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Mapping
from typing import Any

from .checks import check_bool, check_id, check_text
from .entries import Entries
from .entry import Progress, Retry
from .errors import RuntimeFault, UnknownTaskError, UnknownWorkflowError
from .exits import Exits
from .frozen import builder
from .options import check_options
from .plan import PlanStep
from .recorder import Recorder
from .results import ArrivalResult, EntryResult
from .revision import Revision
from .store import ROUTES, EntryRecord, LedgerRow, MoveResult, Store, StoreError, TaskState
from .store_due import DueRow
from .timers import Arming

__all__ = ["Arrivals", "Write"]

_arrival = builder(ArrivalResult)  # the hot path's constructor (frozen.builder: ADR 0027's ablation)
_entry_record = builder(EntryRecord)

Write = Callable[[Store, Mapping[str, Any]], "tuple[MoveResult, PlanStep | None]"]
"""A step change: calls the store's `move_task` or `create_task` with the stamp it is given (the row's revision
and entry owner) and names the destination step."""


class Arrivals:
    """Creations and moves.  Uses the own revision, the store, the entries, the exits and the recorder."""

    def __init__(self, revision: Revision, store: Store, entries: Entries, exits: Exits, *, atomic: bool,
                 session_live: Callable[[str], bool] | None) -> None:
        self.revision = revision
        self.index = revision.index
        self.store = store
        self.entries = entries
        self.entry = entries.own
        self.exits = exits
        self.recorder: Recorder = revision.recorder
        self.atomic = atomic
        self.session_live = session_live
        self.arming = Arming(revision)
        self._dropped = _Dropped()  # due rows an arrival removed: reported after its `arrival` record
        self.dispatching = {"plan": revision.digest, "entry_owner": entries.owner.id}
        self.not_dispatching = {"plan": revision.digest, "entry_owner": None}

    # ---- the host's calls --------------------------------------------------------------------------------------
    def create_task(self, task_id: str, workflow_id: str, step_id: str | None = None, *, description: str = "",
                    session_id: str | None = None, is_from_office: bool = False, is_ephemeral: bool = False,
                    actor_kind: str = "system", actor_id: str | None = None,
                    operation_id: str | None = None, options: Mapping[str, Any] | None = None) -> ArrivalResult:
        """Create a task into a step (its workflow's start step by default): an arrival, route `creation`.  With
        `operation_id`, a second call with the same id returns the first call's arrival and writes nothing;
        `options`: its entry's one-shot options (ADR 0043)."""
        check_id(task_id, "task_id")
        check_id(workflow_id, "workflow_id")
        check_id(step_id, "step_id", optional=True)
        check_text(description, "description")
        check_id(session_id, "session_id", optional=True)
        check_id(actor_id, "actor_id", optional=True)
        check_id(actor_kind, "actor_kind")
        check_bool(is_from_office, "is_from_office")
        check_bool(is_ephemeral, "is_ephemeral")
        check_text(operation_id, "operation_id", optional=True)
        arrival_options = check_options(options)
        wf = self.index.workflow(workflow_id)
        step_id = step_id or wf.start_step
        step = self.index.step(workflow_id, step_id)
        if operation_id and self.store.operation_applied(operation_id):
            return self._created_before(task_id, operation_id)
        if self.store.get_task(task_id) is not None:
            raise RuntimeFault(f"task `{task_id}` exists already")
        task = TaskState(task_id, workflow_id, step_id, description, is_from_office, is_ephemeral, False)
        try:
            result, progress = self.write(
                lambda store, stamp: (store.create_task(task, actor_kind=actor_kind, actor_id=actor_id,
                                                        session_id=session_id, operation_id=operation_id,
                                                        arrival_options=arrival_options,
                                                        record_in_unit=self.recorded_in_unit(stamp, step), **stamp),
                                      step),
                task_id, session_id)
        except StoreError:
            if operation_id and self.store.operation_applied(operation_id):  # a concurrent delivery of it won
                return self._created_before(task_id, operation_id)
            if self.store.get_task(task_id) is not None:  # a concurrent creation won: a refusal, not a store fault
                raise RuntimeFault(f"task `{task_id}` exists already") from None
            raise
        return self.arrived(result.ledger, task_id, None, session_id, progress=progress, destination=step)

    def _created_before(self, task_id: str, operation_id: str) -> ArrivalResult:
        """A creation delivered again: the first one's arrival (its entry taken up if nobody finished it)."""
        rows = self.store.ledger(task_id)
        genesis = next((r for r in rows if r.route == "creation"), None)
        if genesis is None:
            raise RuntimeFault(f"operation `{operation_id}` was applied, but not to a creation of task `{task_id}`")
        self.recorder.redelivery("info", task=task_id, operation_id=operation_id, route="creation")
        entry = self.entries.take_up(genesis) if genesis.to_step_id is not None else None
        return _arrival("moved", task_id, None, genesis.to_step_id, genesis.id, entry)

    def move(self, task_id: str, to_step: str, *, route: str = "manual_move", session_id: str | None = None,
             actor_kind: str = "human", actor_id: str | None = None, workflow_id: str | None = None,
             expected_step: str | None = None, dispatch: bool = True,
             options: Mapping[str, Any] | None = None) -> ArrivalResult:
        """Move a task; the ledger row commits with the step change, entry dispatch runs after commit.
        `options`: the arrival's one-shot entry options, stored with its ledger row (ADR 0043).

        A `manual_move` into a step without `manual_move` is refused (a `warning` record).  The source step's
        `on_exit` runs first; if it fails, the move is refused.  `dispatch=False` commits the arrival without
        dispatching (what a crash after commit leaves behind; `recover` dispatches it)."""
        check_id(task_id, "task_id")
        check_id(to_step, "to_step")
        if route not in ROUTES or route == "detach":
            raise RuntimeFault(f"route {route!r} is not a route: use one of "
                               f"{', '.join(r for r in ROUTES if r != 'detach')}")
        check_id(session_id, "session_id", optional=True)
        check_id(actor_kind, "actor_kind")
        check_id(actor_id, "actor_id", optional=True)
        check_id(workflow_id, "workflow_id", optional=True)
        check_id(expected_step, "expected_step", optional=True)
        check_bool(dispatch, "dispatch")
        arrival_options = check_options(options)
        if self.index.exits:
            left = self._exit_before_move(task_id, to_step, route, session_id, workflow_id, expected_step)
            if isinstance(left, ArrivalResult):
                return left
            expected_step = left
        seen: list[TaskState] = []  # the task as the write found it (the last attempt's)
        actor = actor_id if actor_kind != "agent" else (actor_id or session_id)

        def write(store: Store, stamp: Mapping[str, Any]) -> tuple[MoveResult, PlanStep | None]:
            # The task is read where it is moved: inside the arrival's transaction when there is one, so the
            # checks and the move see the same task, and an arrival costs no read of its own.
            task = store.get_task(task_id)
            if task is None:
                raise UnknownTaskError(f"no task `{task_id}`")
            seen.append(task)
            target_wf = workflow_id or task.workflow_id
            if target_wf is None:
                raise UnknownWorkflowError(f"task `{task_id}` is in no workflow; name `workflow_id`")
            step = self.index.step(target_wf, to_step)
            if route == "manual_move" and not step.manual_move:
                raise _Refused(target_wf)
            return store.move_task(task_id, target_wf, to_step, route=route, actor_kind=actor_kind, actor_id=actor,
                                   session_id=session_id, expected_step_id=expected_step,
                                   arrival_options=arrival_options, record_in_unit=self.recorded_in_unit(stamp, step),
                                   **stamp), step

        try:
            result, progress = self.write(write, task_id, session_id, dispatch=dispatch)
        except _Refused as refused:  # nothing was written
            from_step = seen[-1].step_id
            self.recorder.warning("manual_move_not_allowed", "manual move refused: the step does not allow manual "
                                  "moves", task=task_id, workflow=refused.workflow, step=to_step,
                                  **{"from": from_step})
            return ArrivalResult("refused", task_id, from_step, to_step, reason="manual_move_not_allowed")
        from_step = seen[-1].step_id
        if result.status == "unknown_task":
            raise UnknownTaskError(f"no task `{task_id}`")
        if result.status == "cas_lost":
            return ArrivalResult("cas_lost", task_id, from_step, to_step, reason="the task moved meanwhile")
        if result.status == "same_step":
            return ArrivalResult("same_step", task_id, from_step, to_step)
        return self.arrived(result.ledger, task_id, from_step, session_id, dispatch=dispatch, progress=progress)

    def switch_workflow(self, task_id: str, workflow_id: str, step_id: str | None = None, *,
                        session_id: str | None = None) -> ArrivalResult:
        """Move a task into another workflow (its start step by default): one arrival, one entry dispatch."""
        check_id(workflow_id, "workflow_id")
        check_id(step_id, "step_id", optional=True)
        wf = self.index.workflow(workflow_id)
        return self.move(task_id, step_id or wf.start_step, route="workflow_switch", workflow_id=workflow_id,
                         session_id=session_id, actor_kind="agent" if session_id else "system")

    def migrate(self, task_id: str, workflow_id: str, step_id: str, *, enter: bool) -> ArrivalResult:
        """Move a task onto a step of this runtime's plan from wherever it stands (typically a step the plan does not
        have: docs/runtime.md §6, `interlock migrate`): one ledger row, route `migration`, a compare-and-swap on the
        task's activation.  No `on_exit` (its step is not the plan's), no `manual_move` check.  `enter`: dispatch the
        destination's entry; otherwise the row gets an entry record with nothing attempted (nobody dispatches it
        later)."""
        check_id(task_id, "task_id")
        check_id(workflow_id, "workflow_id")
        check_id(step_id, "step_id")
        check_bool(enter, "enter")
        step = self.index.step(workflow_id, step_id)
        task = self.store.get_task(task_id)
        if task is None:
            raise UnknownTaskError(f"no task `{task_id}`")

        def write(store: Store, stamp: Mapping[str, Any]) -> tuple[MoveResult, PlanStep | None]:
            moved = store.move_task(task_id, workflow_id, step_id, route="migration", actor_kind="system",
                                    actor_id="interlock migrate", expected_entry_id=task.entry_id,
                                    expected_step_id=task.step_id, record_in_unit=enter and self.recorded_in_unit(stamp, step),
                                    **stamp)
            row = moved.ledger
            if not enter and row is not None:
                store.record_entry(EntryRecord(row.id, task_id, workflow_id, step_id, ()))
            return moved, step

        if enter:
            result, progress = self.write(write, task_id, None)
        else:
            with self.store.unit() as tx:
                result, _ = write(tx, self.not_dispatching)
                self._dropped.rows = self.arming.arm(tx, result.ledger if result.status == "moved" else None, step)
            progress = None
        if result.status == "cas_lost":
            return ArrivalResult("cas_lost", task_id, task.step_id, step_id, reason="the task moved meanwhile")
        if result.status != "moved":
            return ArrivalResult("same_step", task_id, task.step_id, step_id)
        return self.arrived(result.ledger, task_id, task.step_id, None, dispatch=enter, progress=progress,
                            destination=step)

    def _exit_before_move(self, task_id: str, to_step: str, route: str, session_id: str | None,
                          workflow_id: str | None, expected_step: str | None) -> str | ArrivalResult | None:
        """Leaving a step by `move`: the source step's `on_exit` runs before the step change, and the move is then a
        compare-and-swap on that step (the exit ran for it).  An exit that fails refuses the move (the result);
        otherwise the expected step the write must find."""
        task = self.store.get_task(task_id)
        if task is None:
            raise UnknownTaskError(f"no task `{task_id}`")
        exit_handler = self.exits.handler(task.workflow_id, task.step_id)
        if exit_handler is None or task.workflow_id is None or task.step_id is None:
            return expected_step
        target_wf = workflow_id or task.workflow_id
        if (target_wf, to_step) == (task.workflow_id, task.step_id):
            return expected_step
        if expected_step is not None and expected_step != task.step_id:
            return expected_step  # the write's compare-and-swap fails: nothing leaves
        step = self.index.step(target_wf, to_step)
        if route == "manual_move" and not step.manual_move:
            return expected_step  # refused by the write, with its warning: nothing leaves
        failure = self.exits.leave(exit_handler, task, task.workflow_id, task.step_id, session_id, None)
        if failure is not None:
            return ArrivalResult("refused", task_id, task.step_id, to_step, reason=f"on_exit: {failure.reason}")
        return task.step_id

    # ---- the step change and its entry's first segment --------------------------------------------------------
    def recorded_in_unit(self, stamp: Mapping[str, Any], step: PlanStep) -> bool:
        """Whether the arrival's unit will write the row's entry record (the store's `record_in_unit` hint): an
        atomic arrival dispatching an entry of one segment.  A hint only: a unit that commits without the record
        leaves the row unrecorded all the same."""
        return self.atomic and stamp is self.dispatching and not self.entry.segmented(step)

    def write(self, write: Write, task_id: str, session_id: str | None, *,
              dispatch: bool = True) -> tuple[MoveResult, Progress | None]:
        """Write a step change, with its entry's first segment in the same transaction when it can (see the
        module's docstring)."""
        stamp = self.dispatching if dispatch else self.not_dispatching
        if not self.atomic:
            written = write(self.store, stamp)
            moved, dest = written
            if moved.status != "moved" or not (self.arming.due_work or (dest is not None and dest.timers)):
                return moved, None  # `_armed`'s common case inline: nothing to arm (ADR 0052)
            return self._armed(self.store, written), None
        entry = self.entry
        known: Retry | None = None  # an action that failed when the entry ran without savepoints
        failed_in: PlanStep | None = None  # the step it failed in
        while True:
            wrote = False
            result: MoveResult | None = None
            step: PlanStep | None = None
            progress: Progress | None = None
            dropped: list[DueRow] = []
            try:
                with self.store.unit() as tx:
                    result, step = write(tx, stamp)
                    wrote = True
                    if result.status == "moved":  # its timers armed with it, the ones it left removed (§7)
                        dropped = self.arming.arm(tx, result.ledger, step)
                    row = result.ledger
                    if (not dispatch or step is None or result.status != "moved" or row is None
                            or row.to_step_id is None or result.task is None):
                        progress = None
                    else:
                        progress = entry.progress(row, result.task, step)
                        bare = known is None and not progress.segmented and entry.all_replayable(step)
                        entry.segment(tx, progress, bare=bare, known=known if failed_in is step else None)
            except Retry as retry:  # undone: again, with savepoints (the task may have moved meanwhile)
                known, failed_in = retry, step
                continue
            except Exception as exc:  # a fresh row cannot have a record: a store fault too
                # A store fault in the run again counts as one after the step change was written (the first run
                # wrote it): the step change is then written on its own, never given up.
                return self._failed(exc, write, task_id, session_id, result, progress,
                                    wrote or (known is not None and isinstance(exc, StoreError)))
            self._dropped.rows = dropped
            return result, progress

    def _armed(self, store: Store, written: tuple[MoveResult, PlanStep | None]) -> MoveResult:
        """A step change written outside the arrival's transaction: its timers armed after it."""
        result, step = written
        if result.status == "moved" and (self.arming.due_work or (step is not None and step.timers)):
            with store.unit() as tx:
                self._dropped.rows = self.arming.arm(tx, result.ledger, step)
        return result

    def _failed(self, exc: Exception, write: Write, task_id: str, session_id: str | None,
                result: MoveResult | None, progress: Progress | None,
                wrote: bool) -> tuple[MoveResult, Progress | None]:
        """An arrival's transaction failed: nothing was written (raise), it committed after all, or the step change
        is written again on its own."""
        if not wrote:
            raise exc
        if isinstance(exc, StoreError) and result is not None and result.ledger is not None:
            # The commit itself may have failed: on PostgreSQL a connection lost during COMMIT leaves the outcome
            # unknown.  The ledger row says: if it is there, the arrival committed with its entry's first segment.
            row = result.ledger
            if self.store.ledger_row(row.id) == row:
                if progress is not None and progress.recorded and self.store.entry_record(row.id) is None:
                    progress = None  # (cannot happen: the record commits with the row) — `recover` has it
                return result, progress
        # Written first, reported after: a store still failing, or refusing the write itself (a task created
        # meanwhile by another process), raises from here with nothing claimed.
        moved = self._armed(self.store, write(self.store, self.dispatching))
        self.recorder.emit("error", "error", "arrival transaction failed: the step change is written on its own and "
                           "its entry dispatched after the commit", code="arrival_retried", task=task_id,
                           session=session_id, message=str(exc) or type(exc).__name__)
        return moved, None

    def arrived(self, ledger: LedgerRow | None, task_id: str, from_step: str | None, session_id: str | None, *,
                dispatch: bool = True, progress: Progress | None = None, destination: PlanStep | None = None,
                counts: tuple[str, ...] = ("arrivals",)) -> ArrivalResult:
        """An arrival committed: its record, its counters, the rest of its entry, its result.  `destination`: the
        step the row names, when the caller has it; `counts`: the counters the arrival completes."""
        if ledger is None:
            return ArrivalResult("same_step", task_id, from_step, from_step)
        rec = self.recorder
        rec.count(*counts)
        if rec.active:
            rec.emit("arrival", "info", task=task_id, **{"from": ledger.from_step_id}, to=ledger.to_step_id,
                     ledger_id=ledger.id, route=ledger.route, workflow=ledger.to_workflow_id, session=session_id)
        dropped = self._dropped.rows
        if dropped:  # what the arrival left behind (its task's timers and retries of the entry it left)
            self._dropped.rows = None
            self.arming.cancelled(dropped)
        live = session_id is not None or (self.session_live is not None and self.session_live(task_id))
        entry: EntryResult | None
        if progress is not None:
            entry = self.entry.report(progress, live) if progress.recorded else \
                self.entry.finish(progress, session_live=live)
        elif not dispatch:
            entry = None
        else:
            entry = self._enter_after_commit(ledger, destination, live)
        return _arrival("moved", task_id, ledger.from_step_id, ledger.to_step_id, ledger.id, entry)

    def _enter_after_commit(self, row: LedgerRow, destination: PlanStep | None, live: bool) -> EntryResult | None:
        """The entry of a row that committed alone (this owner's: its row names it)."""
        if row.to_workflow_id is None or row.to_step_id is None:
            return None
        step = destination or self.index.steps.get((row.to_workflow_id, row.to_step_id))
        if step is None:
            return self.entry.unknown_step(row)
        if not step.entry_dispatch:  # the common case of a transition: the record alone, no unit, no `Progress`
            try:
                recorded = self.store.record_entry(_entry_record(row.id, row.task_id, row.to_workflow_id, step.id, ()))
            except StoreError as exc:
                return self.entry._incomplete(row, exc)
            if not recorded:
                return self.entry.redelivered(row)
            return self.entry.report_empty(row, step, live)
        try:  # what executors are given: the task as stored
            task = self.store.get_task(row.task_id) or TaskState(row.task_id, row.to_workflow_id, step.id,
                                                                 entry_id=row.id)
        except StoreError as exc:
            return self.entry._incomplete(row, exc)
        return self.entry.finish(self.entry.progress(row, task, step), session_live=live)


class _Dropped(threading.local):
    """One thread's due rows an arrival removed, until its `arrival` record is out (None: none; a class default, so
    reading it never raises `AttributeError` — a `getattr(local, "rows", None)` that missed cost ~1.5% of a
    `fire`: ADR 0052)."""

    rows: list[DueRow] | None = None


class _Refused(Exception):
    """Internal: a manual move into a step without `manual_move` (raised inside the write: nothing is written)."""

    def __init__(self, workflow: str) -> None:
        super().__init__(workflow)
        self.workflow = workflow

