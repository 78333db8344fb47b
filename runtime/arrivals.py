"""A request to create or move a task in, an arrival out: the ledger row commits with the step change, then (or in
the same transaction) the destination's entry (docs/runtime.md §1).

On a durable store, when every action the destination dispatches is store-backed, the step change, its
ledger row, the actions and the entry record commit in one transaction (ADR 0010); the actions run
without savepoints when all are replayable, and if one fails the transaction is undone and run again
with savepoints (`Retry`).  If the store fails after the step change was written, the step change is
written again on its own and its entry dispatched after that commit: a step change is never given up
for its entry.  Otherwise (host executors at the destination, the in-memory store) the entry runs
after the commit.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import NamedTuple

from .checks import check_bool, check_id, check_text
from .entry import EntryDispatch, Mode, Ran, Retry
from .errors import RuntimeFault, UnknownTaskError, UnknownWorkflowError
from .exits import Exits
from .frozen import builder
from .index import PlanIndex
from .plan import PlanStep
from .recorder import Recorder
from .results import ArrivalResult, EntryResult
from .store import ROUTES, LedgerRow, MoveResult, Store, StoreError, TaskState

__all__ = ["Arrivals", "Write", "ARRIVAL", "TRANSITION"]

_arrival = builder(ArrivalResult)  # the hot path's constructor (frozen.builder: ADR 0027's ablation)

Write = Callable[[Store], "tuple[MoveResult, PlanStep | None]"]
"""A step change: calls the store's `move_task` or `create_task` and names the destination step."""

ARRIVAL: tuple[str, ...] = ("arrivals",)
"""The counters an arrival adds."""
TRANSITION: tuple[str, ...] = ("dispatches", "transitions", "arrivals")
"""The counters a fire that moved its task adds with its arrival (`dispatches`: the fires that completed)."""


class Entered(NamedTuple):
    """An entry run inside its arrival's transaction, to be reported once that has committed."""

    step: PlanStep
    ran: Ran


class Arrivals:
    """Creations and moves.  Uses the plan index, the store, the exits, entry dispatch and the recorder."""

    def __init__(self, index: PlanIndex, store: Store, entry: EntryDispatch, exits: Exits, recorder: Recorder, *,
                 atomic: bool, session_live: Callable[[str], bool] | None) -> None:
        self.index = index
        self.store = store
        self.entry = entry
        self.exits = exits
        self.recorder = recorder
        self.atomic = atomic
        self.session_live = session_live

    # ---- the host's calls --------------------------------------------------------------------------------------
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
        wf = self.index.workflow(workflow_id)
        step_id = step_id or wf.start_step
        step = self.index.step(workflow_id, step_id)
        if self.store.get_task(task_id) is not None:
            raise RuntimeFault(f"task `{task_id}` exists already")
        task = TaskState(task_id, workflow_id, step_id, description, is_from_office, is_ephemeral, False)
        try:
            result, entered = self.write(
                lambda store: (store.create_task(task, actor_kind=actor_kind, actor_id=actor_id,
                                                 session_id=session_id), step), task_id, session_id)
        except StoreError:
            if self.store.get_task(task_id) is not None:  # a concurrent creation won: a refusal, not a store fault
                raise RuntimeFault(f"task `{task_id}` exists already") from None
            raise
        return self.arrived(result.ledger, task_id, None, session_id, entered=entered)

    def move(self, task_id: str, to_step: str, *, route: str = "manual_move", session_id: str | None = None,
             actor_kind: str = "human", actor_id: str | None = None, workflow_id: str | None = None,
             expected_step: str | None = None, dispatch: bool = True) -> ArrivalResult:
        """Move a task; the ledger row commits with the step change, entry dispatch runs after commit.

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
        if self.index.exits:
            left = self._exit_before_move(task_id, to_step, route, session_id, workflow_id, expected_step)
            if isinstance(left, ArrivalResult):
                return left
            expected_step = left
        seen: list[TaskState] = []  # the task as the write found it (the last attempt's)
        actor = actor_id if actor_kind != "agent" else (actor_id or session_id)

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
            step = self.index.step(target_wf, to_step)
            if route == "manual_move" and not step.manual_move:
                raise _Refused(target_wf)
            return store.move_task(task_id, target_wf, to_step, route=route, actor_kind=actor_kind, actor_id=actor,
                                   session_id=session_id, expected_step_id=expected_step), step

        try:
            result, entered = self.write(write, task_id, session_id, dispatch=dispatch)
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
        return self.arrived(result.ledger, task_id, from_step, session_id, dispatch=dispatch, entered=entered)

    def switch_workflow(self, task_id: str, workflow_id: str, step_id: str | None = None, *,
                        session_id: str | None = None) -> ArrivalResult:
        """Move a task into another workflow (its start step by default): one arrival, one entry dispatch."""
        check_id(workflow_id, "workflow_id")
        check_id(step_id, "step_id", optional=True)
        wf = self.index.workflow(workflow_id)
        return self.move(task_id, step_id or wf.start_step, route="workflow_switch", workflow_id=workflow_id,
                         session_id=session_id, actor_kind="agent" if session_id else "system")

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

    # ---- the step change and its entry -----------------------------------------------------------------------
    def write(self, write: Write, task_id: str, session_id: str | None, *,
              dispatch: bool = True) -> tuple[MoveResult, Entered | None]:
        """Write a step change, with its entry in the same transaction when it can (see the module's docstring)."""
        if not self.atomic:
            return write(self.store)[0], None
        known: Retry | None = None  # an action that failed when the entry ran without savepoints
        failed_in: PlanStep | None = None  # the step it failed in
        while True:
            wrote = committing = False
            result: MoveResult | None = None
            step: PlanStep | None = None
            ran: Ran | None = None
            try:
                with self.store.unit() as tx:
                    result, step = write(tx)
                    wrote = True
                    row = result.ledger
                    if (not dispatch or step is None or result.status != "moved" or row is None
                            or row.to_step_id is None or result.task is None or not self.entry.all_store_backed(step)):
                        return result, None
                    bare = known is None and self.entry.all_replayable(step)
                    ran = self.entry.run(tx, row, result.task, step, Mode.IN_ARRIVAL_BARE if bare else Mode.IN_ARRIVAL,
                                         known=known if failed_in is step else None)
                    committing = True
            except Retry as retry:  # undone: again, with savepoints (the task may have moved meanwhile)
                known, failed_in = retry, step
                continue
            except Exception as exc:  # a fresh row cannot have a record: a store fault too
                # A store fault in the run again counts as one after the step change was written (the first run
                # wrote it): the step change is then written on its own, never given up.
                return self._failed(exc, write, task_id, session_id, result, step, ran,
                                    wrote or (known is not None and isinstance(exc, StoreError)), committing)
            assert step is not None and ran is not None
            return result, Entered(step, ran)

    def _failed(self, exc: Exception, write: Write, task_id: str, session_id: str | None,
                result: MoveResult | None, step: PlanStep | None, ran: Ran | None, wrote: bool,
                committing: bool) -> tuple[MoveResult, Entered | None]:
        """An arrival's transaction failed: nothing was written (raise), it committed after all, or the step change
        is written again on its own."""
        if not wrote:
            raise exc
        if committing and isinstance(exc, StoreError):
            # The commit itself failed: on PostgreSQL a connection lost during COMMIT leaves the outcome unknown.
            # The ledger row says: if it is there with its entry record, all of it committed.
            assert result is not None and result.ledger is not None and step is not None and ran is not None
            row = result.ledger
            if self.store.ledger_row(row.id) == row and self.store.entry_record(row.id) is not None:
                return result, Entered(step, ran)
        # Written first, reported after: a store still failing, or refusing the write itself (a task created
        # meanwhile by another process), raises from here with nothing claimed.
        moved = write(self.store)[0]
        self.recorder.emit("error", "error", "arrival transaction failed: the step change is written on its own and "
                           "its entry dispatched after the commit", code="arrival_retried", task=task_id,
                           session=session_id, message=str(exc) or type(exc).__name__)
        return moved, None

    def arrived(self, ledger: LedgerRow | None, task_id: str, from_step: str | None, session_id: str | None,
                dispatch: bool = True, entered: Entered | None = None,
                counts: tuple[str, ...] = ARRIVAL, destination: PlanStep | None = None) -> ArrivalResult:
        """An arrival committed: its record, its counters, its entry, its result.  `destination`: the step the row
        names, when the caller has it."""
        if ledger is None:
            return ArrivalResult("same_step", task_id, from_step, from_step)
        rec = self.recorder
        if rec.active:
            rec.emit("arrival", "info", task=task_id, **{"from": ledger.from_step_id}, to=ledger.to_step_id,
                     ledger_id=ledger.id, route=ledger.route, workflow=ledger.to_workflow_id, session=session_id)
        try:
            live = session_id is not None or (self.session_live is not None and self.session_live(task_id))
        except BaseException:  # the host's callback failed: the arrival committed all the same, and is counted
            rec.counters.add_each(counts)
            raise
        entry: EntryResult | None
        if entered is not None:
            rec.counters.add_each(counts)
            entry = self.entry.report(ledger, entered.step, live, entered.ran)
        elif not dispatch:
            rec.counters.add_each(counts)
            entry = None
        else:
            step = destination or self.index.steps.get((ledger.to_workflow_id or "", ledger.to_step_id or ""))
            if step is not None and not step.entry_dispatch:  # the common case of a transition: nothing to enter
                entry = self.entry.enter_empty(ledger, step, live, counts)  # its counters with the entry's
            else:
                rec.counters.add_each(counts)
                entry = self.entry.enter(ledger, session_live=live)
        return _arrival("moved", task_id, ledger.from_step_id, ledger.to_step_id, ledger.id, entry)


class _Refused(Exception):
    """Internal: a manual move into a step without `manual_move` (raised inside the write: nothing is written)."""

    def __init__(self, workflow: str) -> None:
        super().__init__(workflow)
        self.workflow = workflow
