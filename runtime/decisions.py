"""A participant's decision in, a stored decision and (when a quorum is met) a compare-and-swap move out.
"""

from __future__ import annotations

from dataclasses import replace

from .errors import (
    RuntimeFault,
    UnknownStepError,
)
from .results import DecisionResult, RecoverResult
from .store import Decision
from .triggers import TriggerDispatch

__all__ = ["DecisionDispatch"]


class DecisionDispatch(TriggerDispatch):
    """Decisions: store, re-evaluate guarded transitions, move with a compare-and-swap."""

    # ---- decisions -------------------------------------------------------------------------------------
    def record_decision(self, task_id: str, *, verdict: str, agent: str | None = None, user: str | None = None,
                        role: str = "", session_id: str | None = None) -> DecisionResult:
        """Store a decision at the task's current step and re-evaluate its guarded `on_turn_complete`
        transitions; a satisfied one moves the task with a compare-and-swap (route `decision`)."""
        if (agent is None) == (user is None):
            raise RuntimeFault("a decision comes from exactly one of `agent` or `user`")
        if agent is not None and not role:
            raise RuntimeFault("an agent's decision names its role")
        task = self.task(task_id)
        if task.workflow_id is None or task.step_id is None:
            raise UnknownStepError(f"task `{task_id}` is at no step")
        step = self.step(task.workflow_id, task.step_id)
        decision = self.store.record_decision(Decision(
            task_id, step.id, "agent" if agent is not None else "user", agent if agent is not None else user or "",
            role, verdict, session_id=session_id))
        return self.reevaluate(task.id, step.id, decision.id, actor=agent or user, actor_kind="agent" if agent else
                               "human", session_id=session_id)

    def recover(self) -> RecoverResult:
        """Dispatch every arrival that has no entry record, then re-evaluate every stored decision whose
        re-evaluation is not marked applied (a crash between storing a decision and re-evaluating it: the
        quorum it completes would otherwise wait for the next decision)."""
        result = super().recover()
        decisions: list[DecisionResult] = []
        seen: set[int] = set()
        while True:
            batch = [d for d in self.store.unevaluated_decisions(limit=500) if d.id not in seen]
            if not batch:
                break
            for d in batch:
                seen.add(d.id)
                try:
                    decisions.append(self.reevaluate(d.task_id, d.step_id, d.id, actor=d.decider_id,
                                                     actor_kind="agent" if d.decider_type == "agent" else "human",
                                                     session_id=d.session_id))
                except RuntimeFault as exc:  # its task or step is gone (from the store or the plan): left alone
                    self.emit("warning", "warning", "a stored decision could not be re-evaluated",
                              code="decision_not_reevaluated", task=d.task_id, step=d.step_id, decision_id=d.id,
                              message=str(exc))
        return replace(result, decisions=tuple(decisions))

    def reevaluate(self, task_id: str, step_id: str, decision_id: int, *, actor: str | None = None,
                   actor_kind: str = "system", session_id: str | None = None) -> DecisionResult:
        """Re-evaluate the guarded transitions of `step_id` after decision `decision_id` (idempotent per decision)."""
        task = self.task(task_id)
        assert task.workflow_id is not None
        step = self.step(task.workflow_id, step_id)
        operation_id = f"decision:{task.id}:{step.id}:{decision_id}"
        agent = actor if actor_kind == "agent" else None
        user = actor if actor_kind != "agent" else None
        if self.store.operation_applied(operation_id):
            self.counters.add("redeliveries_discarded")
            self.emit("redelivery_discarded", "silent", task=task.id, operation_id=operation_id, trigger="decision")
            return DecisionResult(decision_id, task.id, step.id, idempotent=True)
        if task.step_id != step.id:  # the task left the decision's step: nothing to re-evaluate
            self.store.mark_operation(operation_id, task_id=task.id, trigger="decision")
            return DecisionResult(decision_id, task.id, step.id, abandoned=True)
        target = None
        for action in step.handlers.get("on_turn_complete", ()):
            if action.action_class != "transition" or action.guard is None or action.requires_approval:
                continue
            q = self._quorum(action, task, step.id, task.workflow_id)
            if not q.satisfied:
                self.counters.skip(f"quorum:{q.reason}")
                continue
            if action.target_step is not None and action.target_step != step.id:
                target = action.target_step
                break
        if target is None:
            self.store.mark_operation(operation_id, task_id=task.id, trigger="decision")
            return DecisionResult(decision_id, task.id, step.id)
        wf_id, step_id = task.workflow_id, step.id
        destination = self._steps.get((wf_id, target))
        result, entered = self._write_arrival(
            lambda store: (store.move_task(task.id, wf_id, target, route="decision",
                                           actor_kind="agent" if agent else "human", actor_id=agent or user,
                                           session_id=session_id, expected_step_id=step_id,
                                           operation_id=operation_id, operation_trigger="decision"), destination),
            task.id, session_id)
        if result.status != "moved":
            return DecisionResult(decision_id, task.id, step.id, abandoned=True)
        self.counters.add("transitions")
        arrival = self._after_move(result.ledger, task.id, step.id, session_id, entered=entered)
        return DecisionResult(decision_id, task.id, step.id, transitioned=True, arrival=arrival)
