"""A participant's decision in, a stored decision and (when a quorum is met) a compare-and-swap move out
(docs/runtime.md §2, "Decisions and quorum").

Decisions are checked first (a verdict of `VERDICTS`, a role of the plan); every stored one is
re-evaluated once (its mark is in the store, so `recover` finishes what a crash cut short) and leaves
one `decision` record saying what happened, before the records of the arrival it caused.  A decision
names its round — the task's activation it was made in (`entry_id`) —: one made for an activation the
task has left is `superseded` and not stored (docs/runtime.md §6).
"""

from __future__ import annotations

from typing import Any

from .arrivals import Arrivals
from .checks import check_id, check_ledger_id
from .errors import RuntimeFault, UnknownStepError, UnknownTaskError
from .exits import Exits
from .guards import TransitionGuards, reads_quorum
from .index import PlanIndex
from .options import transition_options
from .quorum import REJECTIONS, seats
from .records import MESSAGES
from .results import DecisionResult
from .revision import Revision
from .store import Decision, Store, TaskState

__all__ = ["Decisions", "VERDICTS"]

VERDICTS: tuple[str, ...] = ("approved", "rejected", "changes_requested")
"""The verdicts a decision may carry (docs/runtime.md §2)."""


class Decisions:
    """Decisions: store, re-evaluate guarded transitions, move with a compare-and-swap.  Uses the plan index, the
    store, the exits, the arrivals and the recorder."""

    def __init__(self, revision: Revision, store: Store, exits: Exits, arrivals: Arrivals,
                 guards: TransitionGuards) -> None:
        self.index: PlanIndex = revision.index
        self.store = store
        self.exits = exits
        self.arrivals = arrivals
        self.recorder = revision.recorder
        self.guards = guards

    def _task(self, task_id: str) -> TaskState:
        task = self.store.get_task(task_id)
        if task is None:
            raise UnknownTaskError(f"no task `{task_id}`")
        return task


    # ---- decisions -------------------------------------------------------------------------------------
    def record_decision(self, task_id: str, *, verdict: str, agent: str | None = None, user: str | None = None,
                        role: str = "", session_id: str | None = None, entry_id: int | None = None) -> DecisionResult:
        """Store a decision at the task's current step and re-evaluate its guarded `on_turn_complete`
        transitions; a satisfied one moves the task with a compare-and-swap (route `decision`).  Checked first
        (docs/runtime.md §2, "Decisions are checked"): the verdict is one of `VERDICTS`, an agent names a role of
        the plan; a refused decision raises `RuntimeFault` and stores nothing.  Every stored decision leaves one
        `decision` record."""
        check_id(task_id, "task_id")
        if (agent is None) == (user is None):
            raise RuntimeFault("a decision comes from exactly one of `agent` or `user`")
        check_id(agent if agent is not None else user, "agent" if agent is not None else "user")
        check_id(session_id, "session_id", optional=True)
        if not isinstance(verdict, str) or verdict not in VERDICTS:
            raise RuntimeFault(f"verdict {verdict!r} is not a verdict: use one of {', '.join(VERDICTS)}")
        if not isinstance(role, str):
            raise RuntimeFault(f"role must be a string, not {type(role).__name__}")
        if agent is not None and not role:
            raise RuntimeFault("an agent's decision names its role")
        if role and role not in self.index.roles:
            raise RuntimeFault(f"role {role!r} is not a role of the plan (roles: {', '.join(sorted(self.index.roles))})")
        if entry_id is not None:
            check_ledger_id(entry_id, "entry_id")
        task = self._task(task_id)
        if task.workflow_id is None or task.step_id is None:
            raise UnknownStepError(f"task `{task_id}` is at no step")
        who = {"agent": agent} if agent is not None else {"user": user}
        if entry_id is not None and task.entry_id != entry_id:
            self.recorder.superseded(task.id, entry_id, task.entry_id, trigger="decision", verdict=verdict, **who)
            return DecisionResult(0, task.id, task.step_id, superseded=True)
        step = self.index.steps.get((task.workflow_id, task.step_id))
        if step is None:
            self.recorder.stranded(task.id, task.workflow_id, task.step_id, trigger="decision", **who)
            return DecisionResult(0, task.id, task.step_id, stranded=True)
        decision = self.store.record_decision(Decision(
            task_id, step.id, "agent" if agent is not None else "user", agent if agent is not None else user or "",
            role, verdict, session_id=session_id, entry_id=task.entry_id))
        return self.reevaluate_decision(task.id, step.id, decision)

    def reevaluate(self, task_id: str, step_id: str, decision_id: int, *, actor: str | None = None,
                   actor_kind: str = "system", session_id: str | None = None) -> DecisionResult:
        """Re-evaluate the guarded transitions of `step_id` after decision `decision_id` (idempotent per decision)."""
        check_id(task_id, "task_id")
        check_id(step_id, "step_id")
        check_ledger_id(decision_id, "decision_id")
        check_id(actor, "actor", optional=True)
        check_id(session_id, "session_id", optional=True)
        decision = next((d for d in self.store.decisions(task_id, step_id) if d.id == decision_id), None)
        if decision is None:  # superseded or cleared since: re-evaluated as a decision of `actor`
            decision = Decision(task_id, step_id, "agent" if actor_kind == "agent" else "user", actor or "", "",
                                "", id=decision_id, session_id=session_id)
        return self.reevaluate_decision(task_id, step_id, decision, record=False)

    def reevaluate_decision(self, task_id: str, step_id: str, decision: Decision, *,
                            record: bool = True) -> DecisionResult:
        """Re-evaluate the guarded transitions of `step_id` after `decision` (idempotent per decision: its
        re-evaluation is marked in the store); its `decision` record when `record`."""
        task = self._task(task_id)
        assert task.workflow_id is not None
        step = self.index.steps.get((task.workflow_id, step_id))
        if step is None:  # a step the plan does not have (stranded): nothing to re-evaluate under this plan
            self.recorder.stranded(task.id, task.workflow_id, step_id, trigger="decision", decision_id=decision.id)
            return DecisionResult(decision.id, task.id, step_id, stranded=True)
        decision_id, session_id = decision.id, decision.session_id
        agent = decision.decider_id if decision.decider_type == "agent" else None
        user = decision.decider_id if decision.decider_type != "agent" else None

        guards: list[dict[str, Any]] = []  # the guards evaluated, for the record

        def done(result: str, outcome: DecisionResult) -> DecisionResult:
            if record:
                self._decision_record(task.id, step.id, decision, result, guards)
            return outcome

        if self.store.decision_evaluated(decision_id):
            self.recorder.redelivery("silent", task=task.id, decision_id=decision_id, trigger="decision")
            return DecisionResult(decision_id, task.id, step.id, idempotent=True)
        if task.step_id != step.id or (decision.entry_id is not None and task.entry_id is not None
                                       and decision.entry_id != task.entry_id):
            # the task left the decision's step (or its round): nothing to re-evaluate
            self.store.mark_decision_evaluated(decision_id)
            return done("ignored", DecisionResult(decision_id, task.id, step.id, abandoned=True))
        target = options = None
        approval = False  # a satisfied guard on a `requires_approval` transition: a person must move the task
        payload = self._payload("on_turn_complete")
        for action in step.handlers.get("on_turn_complete", ()):
            # a decision can change only what counts decisions: the transitions whose guard reads a quorum
            if action.action_class != "transition" or not reads_quorum(action):
                continue
            if not self.guards.holds(action, task, task.workflow_id, step.id, payload, guards):
                continue
            if action.requires_approval:
                approval = approval or (action.target_step is not None and action.target_step != step.id)
                continue
            if action.target_step is not None and action.target_step != step.id:
                target = action.target_step
                options = transition_options(action.args, action.kind)  # ADR 0043: its arrival's entry options
                break
        if target is None:
            self.store.mark_decision_evaluated(decision_id)
            if approval:
                outcome = "approval_required"
            elif not self._seated(task, step.id, decision) and decision.verdict not in REJECTIONS:
                outcome = "ignored"  # nobody's seat: approve-style thresholds never count it
            else:
                outcome = "pending"
            return done(outcome, DecisionResult(decision_id, task.id, step.id))
        wf_id, from_step = task.workflow_id, step.id
        exit_handler = self.exits.handler(wf_id, from_step)
        if exit_handler is not None:
            failure = self.exits.leave(exit_handler, task, wf_id, from_step, session_id, None)
            if failure is not None:  # the move is refused; a later decision (or `recover`) evaluates again
                return done("refused", DecisionResult(decision_id, task.id, step.id, abandoned=True))
        destination = self.index.steps.get((wf_id, target))
        result, progress = self.arrivals.write(
            lambda store, stamp: (store.move_task(task.id, wf_id, target, route="decision",
                                                  actor_kind="agent" if agent else "human", actor_id=agent or user,
                                                  session_id=session_id, expected_step_id=from_step,
                                                  expected_entry_id=task.entry_id, decision_id=decision_id,
                                                  arrival_options=options, **stamp), destination),
            task.id, session_id)
        if result.status != "moved":  # another writer moved the task first
            return done("refused", DecisionResult(decision_id, task.id, step.id, abandoned=True))
        if record:  # causes first: the decision's record, then the arrival and the entry it caused
            self._decision_record(task.id, step.id, decision, "moved", guards,
                                  seated=self._seated(task, step.id, decision))
        arrival = self.arrivals.arrived(result.ledger, task.id, step.id, session_id, progress=progress,
                                        destination=destination, counts=("transitions", "arrivals"))
        return DecisionResult(decision_id, task.id, step.id, transitioned=True, arrival=arrival)

    def _payload(self, trigger: str) -> dict[str, Any]:
        """The payload a decision's re-evaluation gives `trigger`'s guards: no delivery, so every declared
        parameter at its default."""
        declared = self.index.triggers.get(trigger)
        return {p.name: p.default for p in declared.params} if declared is not None else {}

    def _seated(self, task: TaskState, step_id: str, decision: Decision) -> bool:
        """Whether the decider holds a seat of the decision's role for the task at the step."""
        if not decision.role or not decision.decider_id:
            return False
        participants = self.store.participants(task.id, self.index.workflow_steps(task.workflow_id, step_id))
        return any(p.agent == decision.decider_id
                   for p in seats(participants, task_id=task.id, step_id=step_id, role=decision.role))

    def _decision_record(self, task_id: str, step_id: str, decision: Decision, result: str,
                         guards: list[dict[str, Any]], *, seated: bool | None = None) -> None:
        if not self.recorder.active:
            return
        if seated is None:
            task = self.store.get_task(task_id)
            seated = task is not None and self._seated(task, step_id, decision)
        who = {"agent": decision.decider_id} if decision.decider_type == "agent" else {"user": decision.decider_id}
        self.recorder.emit("decision", "info", MESSAGES["decision"], task=task_id, step=step_id, verdict=decision.verdict,
                  **who, role=decision.role, seated=seated, result=result, decision_id=decision.id,
                  session=decision.session_id, entry_id=decision.entry_id, guards=guards)
