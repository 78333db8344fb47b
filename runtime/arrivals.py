"""A request to move or create a task in, an arrival (ledger row + entry dispatch) out.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import NamedTuple

from .checks import check_bool, check_id, check_text
from .core import EXIT_TRIGGER, Handler, _Failure, _Retry
from .entry import Counts, EntryDispatch, Pending
from .errors import (
    RuntimeFault,
    UnknownTaskError,
    UnknownWorkflowError,
)
from .frozen import builder
from .keys import operation_ident
from .plan import PlanStep
from .records import MESSAGES
from .results import ArrivalResult, EntryResult
from .store import ROUTES, LedgerRow, MoveResult, Store, StoreError, TaskState

_arrival = builder(ArrivalResult)  # the hot paths' constructors (frozen.builder)

ARRIVAL = Counts(("arrivals",), ("arrivals", "entries_dispatched"))
"""The counters an arrival adds (`Counts`)."""

__all__ = ["Arrivals"]


class Arrivals(EntryDispatch):
    """Arrivals: the ledger row commits with the step change; entry dispatch runs after the commit."""

    # ---- arrivals ---------------------------------------------------------------------------------
    def create_task(self, task_id: str, workflow_id: str, step_id: str | None = None, *, description: str = "",
                    session_id: str | None = None, is_from_office: bool = False, is_ephemeral: bool = False,
                    actor_kind: str = "system", actor_id: str | None = None) -> ArrivalResult:
        """Create a task into a step (its workflow's start step by default): an arrival, route `creation`."""
        check_id(task_id, "task_id")
        check_id(workflow_id, "workflow_id")
        check_id(step_id, "step_id", optional=True)
        check_text(description, "description")
        check_id(session_id, "session_id", optional=True)
        check_id(actor_id, "actor_id", optional=True)
        check_id(actor_kind, "actor_kind")
        check_bool(is_from_office, "is_from_office")
        check_bool(is_ephemeral, "is_ephemeral")
        wf = self.workflow(workflow_id)
        step_id = step_id or wf.start_step
        self.step(workflow_id, step_id)
        if self.store.get_task(task_id) is not None:
            raise RuntimeFault(f"task `{task_id}` exists already")
        task = TaskState(task_id, workflow_id, step_id, description, is_from_office, is_ephemeral, False)
        step = self._steps[(workflow_id, step_id)]
        try:
            result, entered = self._write_arrival(
                lambda store: (store.create_task(task, actor_kind=actor_kind, actor_id=actor_id,
                                                 session_id=session_id), step), task_id, session_id)
        except StoreError:
            if self.store.get_task(task_id) is not None:  # a concurrent creation won: a refusal, not a store fault
                raise RuntimeFault(f"task `{task_id}` exists already") from None
            raise
        return self._after_move(result.ledger, task_id, None, session_id, entered=entered)

    def move(self, task_id: str, to_step: str, *, route: str = "manual_move", session_id: str | None = None,
             actor_kind: str = "human", actor_id: str | None = None, workflow_id: str | None = None,
             expected_step: str | None = None, dispatch: bool = True) -> ArrivalResult:
        """Move a task; the ledger row commits with the step change, entry dispatch runs after commit.

        A `manual_move` into a step without `manual_move` is refused (a `warning` record).
        `dispatch=False` commits the arrival without dispatching (what a crash after commit
        leaves behind; `recover` dispatches it)."""
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
        seen: list[TaskState] = []  # the task as the write found it (the last attempt's)
        actor = actor_id if actor_kind != "agent" else (actor_id or session_id)
        if self._exits:
            left = self._exit_before_move(task_id, to_step, route, session_id, workflow_id, expected_step)
            if isinstance(left, ArrivalResult):
                return left
            expected_step = left

        def write(store: Store) -> tuple[MoveResult, PlanStep | None]:
            # The task is read where it is moved: inside the arrival's transaction when there is one, so the
            # checks and the move see the same task, and an arrival costs no read of its own.
            task = store.get_task(task_id)
            if task is None:
                raise UnknownTaskError(f"no task `{task_id}`")
            seen.append(task)
            target_wf = workflow_id or task.workflow_id
            if target_wf is None:
                raise UnknownWorkflowError(f"task `{task_id}` is in no workflow; name `workflow_id`")
            step = self.step(target_wf, to_step)
            if route == "manual_move" and not step.manual_move:
                raise _Refused(target_wf)
            return store.move_task(task_id, target_wf, to_step, route=route, actor_kind=actor_kind, actor_id=actor,
                                   session_id=session_id, expected_step_id=expected_step), step

        try:
            result, entered = self._write_arrival(write, task_id, session_id, dispatch=dispatch)
        except _Refused as refused:  # nothing was written
            from_step = seen[-1].step_id
            self.emit("warning", "warning", "manual move refused: the step does not allow manual moves",
                      code="manual_move_not_allowed", task=task_id, workflow=refused.workflow, step=to_step,
                      **({"from": from_step}))
            return ArrivalResult("refused", task_id, from_step, to_step, reason="manual_move_not_allowed")
        from_step = seen[-1].step_id
        if result.status == "unknown_task":
            raise UnknownTaskError(f"no task `{task_id}`")
        if result.status == "cas_lost":
            return ArrivalResult("cas_lost", task_id, from_step, to_step, reason="the task moved meanwhile")
        if result.status == "same_step":
            return ArrivalResult("same_step", task_id, from_step, to_step)
        return self._after_move(result.ledger, task_id, from_step, session_id, dispatch=dispatch, entered=entered)

    def _exit_before_move(self, task_id: str, to_step: str, route: str, session_id: str | None,
                          workflow_id: str | None, expected_step: str | None) -> str | ArrivalResult | None:
        """Leaving a step by `move` (docs/runtime.md §2): the source step's `on_exit` runs before the step change, and
        the move is then a compare-and-swap on that step (the exit ran for it).  An exit that fails refuses the move
        (the result); otherwise the expected step the write must find."""
        task = self.task(task_id)
        if task.workflow_id is None or task.step_id is None:
            return expected_step
        exit_handler = self._exits.get((task.workflow_id, task.step_id))
        target_wf = workflow_id or task.workflow_id
        if exit_handler is None or (target_wf, to_step) == (task.workflow_id, task.step_id):
            return expected_step
        if expected_step is not None and expected_step != task.step_id:
            return expected_step  # the write's compare-and-swap fails: nothing leaves
        step = self.step(target_wf, to_step)
        if route == "manual_move" and not step.manual_move:
            return expected_step  # refused by the write, with its warning: nothing leaves
        failure = self._leave(exit_handler, task, task.workflow_id, task.step_id, session_id, None)
        if failure is not None:
            return ArrivalResult("refused", task_id, task.step_id, to_step, reason=f"on_exit: {failure.message}")
        return task.step_id

    def _leave(self, exit_handler: Handler, task: TaskState, workflow_id: str, step_id: str,
               session_id: str | None, operation_id: str | None) -> _Failure | None:
        """Run a step's `on_exit` handler abort-on-first before the task leaves it; the failure that refuses the
        move, or None.  Its records: a `dispatch` record of trigger `on_exit` (ERROR when it failed)."""
        registered = self.executors.entries
        for kind in exit_handler.kinds:
            if kind not in registered:
                self._warn_missing(workflow_id, step_id, kind, task.id, session_id)
        ran: list[str] = []
        for action in exit_handler.runs:
            executor = registered.get(action.kind)
            if executor is None:
                continue
            key = f"exit:{operation_ident(operation_id)}:{action.position}:{action.kind}" if operation_id else None
            ctx = self._context(action, task, workflow_id, step_id, EXIT_TRIGGER, operation_id=operation_id,
                                session_id=session_id, key=key)
            try:
                effects = self._invoke(executor, action.args, ctx)
            except _Failure as failure:
                self.counters.add("exits_refused")
                self._record_failure(failure, task.id, session_id, action.kind)
                self.emit("dispatch", "error", MESSAGES["dispatch_error"], trigger=EXIT_TRIGGER, task=task.id,
                          session=session_id, step=step_id, operation_id=operation_id, actions=list(ran),
                          failed_kind=action.kind, error=failure.message)
                return failure
            ran.append(action.kind)
            if effects:
                self._emit_effects(effects, action.kind, task.id, step_id, operation_id=operation_id)
        self.counters.add("exits")
        self.emit("dispatch", "info" if exit_handler.actions else "debug",
                  MESSAGES["dispatch_info" if exit_handler.actions else "dispatch_debug"], trigger=EXIT_TRIGGER,
                  task=task.id, session=session_id, step=step_id, operation_id=operation_id,
                  actions=[a.kind for a in exit_handler.actions])
        return None

    def switch_workflow(self, task_id: str, workflow_id: str, step_id: str | None = None, *,
                        session_id: str | None = None) -> ArrivalResult:
        """Move a task into another workflow (its start step by default): one arrival, one entry dispatch."""
        check_id(workflow_id, "workflow_id")
        check_id(step_id, "step_id", optional=True)
        wf = self.workflow(workflow_id)
        return self.move(task_id, step_id or wf.start_step, route="workflow_switch", workflow_id=workflow_id,
                         session_id=session_id, actor_kind="agent" if session_id else "system")

    def _write_arrival(self, write: Callable[[Store], tuple[MoveResult, PlanStep | None]], task_id: str,
                       session_id: str | None, *, dispatch: bool = True) -> tuple[MoveResult, Entered | None]:
        """Write a step change: `write(store)` calls the store's `move_task` or `create_task` and names the
        destination step.

        On a durable store the write runs in a unit, and when every dispatched entry action of the
        destination is store-backed (or there is none), the whole entry — actions, entry record — commits
        in that same transaction (ADR 0010): one commit per arrival, and no window between the step change
        and its entry.  The actions run without savepoints; if one fails, the transaction is undone and run
        again with a savepoint per action, the failed one recorded as failed without a second call.  If the store fails after the step change was written,
        the step change is written again on its own and its entry is dispatched after that commit, as
        docs/runtime.md §1 describes (the step change is never given up for its entry).  Otherwise (host
        executors at the destination, or the in-memory store) the entry runs after the commit."""
        if not self._atomic:
            return write(self.store)[0], None
        known: _Retry | None = None  # an action that failed when the entry ran without savepoints
        failed_in: PlanStep | None = None  # the step it failed in
        while True:
            pending: list[Pending] = []
            wrote = committing = False
            result: MoveResult | None = None
            step: PlanStep | None = None
            try:
                with self.store.unit() as tx:
                    result, step = write(tx)
                    wrote = True
                    row = result.ledger
                    if (not dispatch or step is None or result.status != "moved" or row is None
                            or row.to_step_id is None or result.task is None or not self._all_transactional(step)):
                        return result, None
                    attempted, failed = self._entry_in(tx, row, result.task, step, None, pending,
                                                       bare=known is None and self._all_replayable(step),
                                                       known=known if failed_in is step else None)
                    committing = True
            except _Retry as retry:  # undone: again, with savepoints (the task may have moved meanwhile)
                known, failed_in = retry, step
                continue
            except Exception as exc:  # a fresh row cannot have a record (`_Redelivered`): a store fault too
                # A store fault in the run again counts as one after the step change was written (the first run
                # wrote it): the step change is then written on its own, never given up.
                return self._arrival_failed(exc, write, task_id, session_id, result, step, pending,
                                            wrote or (known is not None and isinstance(exc, StoreError)),
                                            committing, attempted if committing else (),
                                            failed if committing else ())
            assert step is not None
            return result, Entered(step, pending, attempted, failed)

    def _arrival_failed(self, exc: Exception, write: Callable[[Store], tuple[MoveResult, PlanStep | None]],
                        task_id: str, session_id: str | None, result: MoveResult | None, step: PlanStep | None,
                        pending: list[Pending], wrote: bool, committing: bool, attempted: tuple[str, ...],
                        failed: tuple[tuple[str, str], ...]) -> tuple[MoveResult, Entered | None]:
        """An arrival's transaction failed: nothing was written (raise), it committed after all, or the step
        change is written again on its own."""
        if not wrote:
            raise exc
        if committing and isinstance(exc, StoreError):
            # The commit itself failed: on PostgreSQL a connection lost during COMMIT leaves the outcome
            # unknown.  The ledger row says: if it is there with its entry record, all of it committed.
            assert result is not None and result.ledger is not None and step is not None
            if self._committed(result.ledger):
                return result, Entered(step, pending, attempted, failed)
        # Written first, reported after: a store still failing, or refusing the write itself (a task created
        # meanwhile by another process), raises from here with nothing claimed.
        moved = write(self.store)[0]
        self.emit("error", "error", "arrival transaction failed: the step change is written on its own and "
                  "its entry dispatched after the commit", code="arrival_retried", task=task_id,
                  session=session_id, message=str(exc) or type(exc).__name__)
        return moved, None

    def _committed(self, row: LedgerRow) -> bool:
        """Whether an arrival whose COMMIT reported a failure committed after all (its ledger row and entry record
        are there).  A store still failing leaves the outcome unknown: `StoreError` to the caller."""
        return self.store.ledger_row(row.id) == row and self.store.entry_record(row.id) is not None

    def _after_move(self, ledger: LedgerRow | None, task_id: str, from_step: str | None, session_id: str | None,
                    *, dispatch: bool = True, entered: Entered | None = None,
                    counts: Counts = ARRIVAL) -> ArrivalResult:
        """An arrival committed: its record, its entry, its result.  `counts`: the counters it adds."""
        if ledger is None:
            return ArrivalResult("same_step", task_id, from_step, from_step)
        if self.sinks:
            self.emit("arrival", "info", task=task_id, **{"from": ledger.from_step_id}, to=ledger.to_step_id,
                      ledger_id=ledger.id, route=ledger.route, workflow=ledger.to_workflow_id, session=session_id)
        live = session_id is not None or (self.session_live is not None and self.session_live(task_id))
        if entered is not None:
            self.counters.add_each(counts.plain)
            entry: EntryResult | None = self._entered(ledger, entered.step, live, entered.pending, entered.attempted,
                                                      entered.failed)
        elif not dispatch:
            self.counters.add_each(counts.plain)
            entry = None
        else:
            step = self._steps.get((ledger.to_workflow_id, ledger.to_step_id))  # type: ignore[arg-type]
            if step is not None and not step.entry_dispatch:  # the common case of a transition: nothing to enter
                entry = self._enter_empty(ledger, step, live, counts)  # counts the arrival with its entry
            else:
                self.counters.add_each(counts.plain)
                entry = self._enter(ledger, session_live=live)
        return _arrival("moved", task_id, ledger.from_step_id, ledger.to_step_id, ledger.id, entry)


class _Refused(Exception):
    """Internal: a manual move into a step without `manual_move` (raised inside the write: nothing is written)."""

    def __init__(self, workflow: str) -> None:
        super().__init__(workflow)
        self.workflow = workflow


class Entered(NamedTuple):
    """An entry dispatched inside its arrival's transaction, to be reported once that has committed."""

    step: PlanStep
    pending: list[Pending]
    attempted: tuple[str, ...]
    failed: tuple[tuple[str, str], ...]
