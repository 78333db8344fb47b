"""A request to move or create a task in, an arrival (ledger row + entry dispatch) out.
"""

from __future__ import annotations

from .entry import EntryDispatch
from .errors import (
    RuntimeFault,
    UnknownTaskError,
    UnknownWorkflowError,
)
from .results import ArrivalResult
from .store import LedgerRow, StoreError, TaskState

__all__ = ["Arrivals"]


class Arrivals(EntryDispatch):
    """Arrivals: the ledger row commits with the step change; entry dispatch runs after the commit."""

    # ---- arrivals ---------------------------------------------------------------------------------
    def create_task(self, task_id: str, workflow_id: str, step_id: str | None = None, *, description: str = "",
                    session_id: str | None = None, is_from_office: bool = False, is_ephemeral: bool = False,
                    actor_kind: str = "system", actor_id: str | None = None) -> ArrivalResult:
        """Create a task into a step (its workflow's start step by default): an arrival, route `creation`."""
        wf = self.workflow(workflow_id)
        step_id = step_id or wf.start_step
        self.step(workflow_id, step_id)
        if self.store.get_task(task_id) is not None:
            raise RuntimeFault(f"task `{task_id}` exists already")
        task = TaskState(task_id, workflow_id, step_id, description, is_from_office, is_ephemeral, False)
        try:
            result = self.store.create_task(task, actor_kind=actor_kind, actor_id=actor_id, session_id=session_id)
        except StoreError:
            if self.store.get_task(task_id) is not None:  # a concurrent creation won: a refusal, not a store fault
                raise RuntimeFault(f"task `{task_id}` exists already") from None
            raise
        return self._after_move(result.ledger, task_id, None, session_id)

    def move(self, task_id: str, to_step: str, *, route: str = "manual_move", session_id: str | None = None,
             actor_kind: str = "human", actor_id: str | None = None, workflow_id: str | None = None,
             expected_step: str | None = None, dispatch: bool = True) -> ArrivalResult:
        """Move a task; the ledger row commits with the step change, entry dispatch runs after commit.

        A `manual_move` into a step without `manual_move` is refused (a `warning` record).
        `dispatch=False` commits the arrival without dispatching (what a crash after commit
        leaves behind; `recover` dispatches it)."""
        task = self.task(task_id)
        target_wf = workflow_id or task.workflow_id
        if target_wf is None:
            raise UnknownWorkflowError(f"task `{task_id}` is in no workflow; name `workflow_id`")
        step = self.step(target_wf, to_step)
        if route == "manual_move" and not step.manual_move:
            self.emit("warning", "warning", "manual move refused: the step does not allow manual moves",
                      code="manual_move_not_allowed", task=task_id, workflow=target_wf, step=to_step,
                      **({"from": task.step_id}))
            return ArrivalResult("refused", task_id, task.step_id, to_step, reason="manual_move_not_allowed")
        result = self.store.move_task(task_id, target_wf, to_step, route=route, actor_kind=actor_kind,
                                      actor_id=actor_id if actor_kind != "agent" else (actor_id or session_id),
                                      session_id=session_id, expected_step_id=expected_step)
        if result.status == "unknown_task":
            raise UnknownTaskError(f"no task `{task_id}`")
        if result.status == "cas_lost":
            return ArrivalResult("cas_lost", task_id, task.step_id, to_step, reason="the task moved meanwhile")
        if result.status == "same_step":
            return ArrivalResult("same_step", task_id, task.step_id, to_step)
        return self._after_move(result.ledger, task_id, task.step_id, session_id, dispatch=dispatch)

    def switch_workflow(self, task_id: str, workflow_id: str, step_id: str | None = None, *,
                        session_id: str | None = None) -> ArrivalResult:
        """Move a task into another workflow (its start step by default): one arrival, one entry dispatch."""
        wf = self.workflow(workflow_id)
        return self.move(task_id, step_id or wf.start_step, route="workflow_switch", workflow_id=workflow_id,
                         session_id=session_id, actor_kind="agent" if session_id else "system")

    def _after_move(self, ledger: LedgerRow | None, task_id: str, from_step: str | None, session_id: str | None,
                    *, dispatch: bool = True) -> ArrivalResult:
        if ledger is None:
            return ArrivalResult("same_step", task_id, from_step, from_step)
        self.counters.add("arrivals")
        if self.sinks:
            self.emit("arrival", "info", task=task_id, **{"from": ledger.from_step_id}, to=ledger.to_step_id,
                      ledger_id=ledger.id, route=ledger.route, workflow=ledger.to_workflow_id, session=session_id)
        live = session_id is not None or (self.session_live is not None and self.session_live(task_id))
        entry = self._enter(ledger, session_live=live) if dispatch else None
        return ArrivalResult("moved", task_id, ledger.from_step_id, ledger.to_step_id, ledger.id, entry)
