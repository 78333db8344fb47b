"""A trigger, a task and a payload in, the step's handler run abort-on-first out (docs/runtime.md §2).

The delivery claims its operation id before anything runs; the handler is walked in order, the first
eligible transition picking the target; an executor failure aborts the rest and releases the claim;
on success the source step's `on_exit` runs (if the task leaves it), then the operation is marked
applied — in the transaction of the move when there is one.
"""

from __future__ import annotations

import contextlib
import json
from collections.abc import Mapping
from typing import Any

from .arrivals import TRANSITION, Arrivals
from .checks import MAX_ID_BYTES, check_id, check_text
from .claims import OperationClaims
from .errors import PayloadError, RuntimeFault, UnknownStepError, UnknownTaskError, UnknownTriggerError
from .exits import Exits
from .frozen import builder
from .index import Handler, PlanIndex
from .invoker import OK, Failed, Invoker, check_effects, failed_from
from .keys import operation_ident
from .plan import PlanAction, PlanStep, value_problem
from .quorum import QuorumResult
from .quorum import evaluate as evaluate_quorum
from .recorder import Recorder
from .records import MESSAGES, Level
from .results import ArrivalResult, FireResult
from .store import Store, StoreError, TaskState

__all__ = ["TriggerDispatch", "quorum_of"]

_fire_result = builder(FireResult)  # the hot path's constructor (frozen.builder: ADR 0027's ablation)


def quorum_of(store: Store, index: PlanIndex, action: PlanAction, task: TaskState, step_id: str,
              workflow_id: str) -> QuorumResult:
    """Evaluate a transition's quorum guard for a task at a step (seats: the task's workflow's)."""
    guard = action.guard
    assert guard is not None
    participants = store.participants(task.id, index.workflow_steps(workflow_id, step_id))
    decisions = store.decisions(task.id, step_id)
    return evaluate_quorum(role=guard.role, threshold=guard.threshold, count=guard.count,
                           participants=participants, decisions=decisions, task_id=task.id, step_id=step_id)


class TriggerDispatch:
    """Every trigger but step entry.  Uses the plan index, the store, the operation claims, the invoker, the exits,
    the arrivals and the recorder."""

    def __init__(self, index: PlanIndex, store: Store, claims: OperationClaims, invoker: Invoker, exits: Exits,
                 arrivals: Arrivals, recorder: Recorder) -> None:
        self.index = index
        self.store = store
        self.claims = claims
        self.invoker = invoker
        self.exits = exits
        self.arrivals = arrivals
        self.recorder = recorder

    def fire(self, trigger: str, task_id: str, session_id: str | None = None,
             payload: Mapping[str, Any] | None = None, operation_id: str | None = None,
             outcome_label: Mapping[str, Any] | None = None) -> FireResult:
        """Run a step's handler for a non-entry trigger.  `outcome_label` names the outcome record's source
        (`{"sequence": …}` when a dispatch sequence fires; None: this trigger)."""
        if trigger.__class__ is not str:
            raise RuntimeFault(f"`trigger` must be a string, not {type(trigger).__name__}")
        if not (task_id.__class__ is str and task_id.isascii() and 0 < len(task_id) <= MAX_ID_BYTES
                and "\x00" not in task_id):  # `check_id`'s common case, inline on the hot path
            check_id(task_id, "task_id")
        if session_id is not None:
            check_id(session_id, "session_id")
        if operation_id is not None:
            check_text(operation_id, "operation_id")
        index = self.index
        payload = {} if not payload and trigger in index.paramless else self.check_payload(trigger, payload)
        task = self.store.get_task(task_id)
        if task is None:
            raise UnknownTaskError(f"no task `{task_id}`")
        wf_id, step_id = task.workflow_id, task.step_id
        if wf_id is None or step_id is None:
            raise UnknownStepError(f"task `{task_id}` is at no step")
        handler = index.handlers.get((wf_id, step_id, trigger)) or index.handler(wf_id, step_id, trigger)
        registered = self.invoker.registry.entries
        rec = self.recorder
        for kind in handler.kinds:  # the pre-dispatch walk: warns even on an idempotent replay
            if kind not in registered:
                step = index.steps.get((wf_id, step_id))
                rec.missing_executor(wf_id, step_id, step.title if step else None, kind, task.id, session_id)
        token = None
        if operation_id:
            claim, token = self.claims.claim(operation_id, task.id, trigger)
            if claim == "applied" or claim == "busy":
                # `busy`: an overlapping delivery holds the claim and is running it: this one is discarded whole
                rec.counters.add("idempotent")
                # trace-only (silent): an idempotent replay writes no dispatch record (docs/runtime.md §3)
                rec.redelivery("silent", task=task.id, operation_id=operation_id, trigger=trigger,
                               **({"in_progress": True} if claim == "busy" else {}))
                self.outcome(outcome_label, trigger, "idempotent", task.id, operation_id)
                return FireResult("idempotent", trigger, task.id, step_id, operation_id)
            if claim == "taken_over":
                rec.warning("operation_claim_expired", "operation claim taken over: its lease ran out (a delivery "
                            "crashed or outlived the lease)", task=task.id, operation_id=operation_id,
                            trigger=trigger)
        try:  # costs nothing until something raises: then the claim is released (a redelivery runs it again)
            return self._walk(handler, trigger, task, wf_id, step_id, session_id, payload, operation_id, token,
                              outcome_label)
        except BaseException:
            if token is not None and operation_id:
                with contextlib.suppress(Exception):
                    self.claims.release(operation_id, token)
            raise

    def _walk(self, handler: Handler, trigger: str, task: TaskState, wf_id: str, step_id: str,
              session_id: str | None, payload: dict[str, Any], operation_id: str | None, token: str | None,
              outcome_label: Mapping[str, Any] | None) -> FireResult:
        """Walk a handler abort-on-first, leave the step if a transition picked another one, mark the operation."""
        rec = self.recorder
        invoker = self.invoker
        actions = handler.actions
        registered = invoker.registry.entries
        # a handler whose target is known walks only its other actions; otherwise transitions are chosen in the
        # walk, their guards evaluated in order
        target, chosen = handler.target, handler.target_known
        walk = handler.runs if chosen else actions
        ran: list[str] | None = None  # the kinds that ran, once one was skipped (None: all of `handler.kinds` so far)
        for action in walk:
            if action.action_class == "transition":
                if chosen or action.requires_approval:
                    continue
                if action.guard is not None:
                    q = quorum_of(self.store, self.index, action, task, step_id, wf_id)
                    if not q.satisfied:
                        rec.counters.skip(f"quorum:{q.reason}")
                        continue
                chosen, target = True, action.target_step
                continue
            executor = registered.get(action.kind)
            if executor is None:
                if ran is None:
                    ran = _ran_before(walk, action)
                continue
            key = f"{operation_ident(operation_id)}:{action.position}:{action.kind}" if operation_id else None
            ctx = invoker.context(action, task, wf_id, step_id, trigger, key, None, operation_id, session_id, payload,
                                  None, handler.workflow_steps)
            try:
                if executor.transactional or invoker.timeout is not None:
                    outcome = invoker.call(executor, action.args, ctx, self.store)
                else:  # in place: the hot path (what `Invoker.call` does for it, without the call)
                    try:
                        returned = executor.fn(action.args, ctx)
                        outcome = OK if returned is None else check_effects(returned)
                    except (KeyboardInterrupt, StoreError):
                        raise
                    except BaseException as exc:  # contained: a fault of this call (ADR 0021)
                        outcome = failed_from(exc)
            except StoreError as exc:  # the store failing under a store-backed action: that action's failure
                outcome = Failed(str(exc) or type(exc).__name__)
            if outcome is not OK:  # OK: it ran, with nothing to report (the common case)
                if isinstance(outcome, Failed):
                    return self._aborted(trigger, task, step_id, session_id, operation_id, token, outcome_label,
                                         tuple(ran if ran is not None else _ran_before(walk, action)), action.kind,
                                         outcome)
                if outcome.effects:
                    rec.effects(outcome.effects, action.kind, task.id, step_id, operation_id=operation_id)
            if ran is not None:
                ran.append(action.kind)
        ran_kinds = handler.kinds if ran is None else tuple(ran)
        if rec.active:
            level: Level = "info" if actions else "debug"
            rec.emit("dispatch", level, MESSAGES["dispatch_info" if actions else "dispatch_debug"], trigger=trigger,
                     task=task.id, session=session_id, step=step_id, operation_id=operation_id,
                     actions=[a.kind for a in actions])
        arrival = None
        if target is not None and target != step_id:
            if handler.exit is not None:  # leaving the step: its `on_exit` first, abort-on-first
                refused = self.exits.leave(handler.exit, task, wf_id, step_id, session_id, operation_id)
                if refused is not None:
                    if token is not None and operation_id:
                        self.claims.release(operation_id, token)
                    self.outcome(outcome_label, trigger, "error", task.id, operation_id)
                    return FireResult("error", trigger, task.id, step_id, operation_id, ran_kinds,
                                      error=f"on_exit: {refused.reason}")
            arrival = self._transition(task, wf_id, step_id, target, session_id, operation_id, trigger,
                                       handler.destination if chosen and target == handler.target else None)
        else:
            rec.counters.add("dispatches")
            if operation_id:
                self.store.mark_operation(operation_id, task_id=task.id, trigger=trigger)
        if rec.active:
            self.outcome(outcome_label, trigger, "dispatched", task.id, operation_id)
        return _fire_result("dispatched", trigger, task.id, step_id, operation_id, ran_kinds, arrival)

    def _transition(self, task: TaskState, wf_id: str, step_id: str, target: str, session_id: str | None,
                    operation_id: str | None, trigger: str, destination: PlanStep | None) -> ArrivalResult:
        """Move the task as an arrival, with a compare-and-swap on its step; the operation is marked in the move's
        transaction.  `destination`: the target step, when the handler knows it."""
        task_id = task.id
        actor_kind = "agent" if session_id else "system"
        if self.arrivals.atomic:
            destination = destination or self.index.steps.get((wf_id, target))
            result, entered = self.arrivals.write(
                lambda store: (store.move_task(task_id, wf_id, target, route="engine_transition",
                                               actor_kind=actor_kind, actor_id=session_id, session_id=session_id,
                                               expected_step_id=step_id, operation_id=operation_id,
                                               operation_trigger=trigger), destination),
                task_id, session_id)
        else:  # the same write, with its entry after the commit: no transaction to wrap it in
            result = self.store.move_task(task_id, wf_id, target, route="engine_transition", actor_kind=actor_kind,
                                          actor_id=session_id, session_id=session_id, expected_step_id=step_id,
                                          operation_id=operation_id, operation_trigger=trigger)
            entered = None
        if result.status == "moved":  # "dispatches" counted with the arrival's counters
            return self.arrivals.arrived(result.ledger, task_id, step_id, session_id, True, entered, TRANSITION,
                                         destination)
        self.recorder.counters.add("dispatches")
        if operation_id:
            self.store.mark_operation(operation_id, task_id=task_id, trigger=trigger)
        return ArrivalResult("cas_lost" if result.status == "cas_lost" else "same_step", task_id, step_id, target)

    def _aborted(self, trigger: str, task: TaskState, step_id: str, session_id: str | None,
                 operation_id: str | None, token: str | None, outcome_label: Mapping[str, Any] | None,
                 ran: tuple[str, ...], kind: str, failure: Failed) -> FireResult:
        """An executor failed: the rest of the handler is not run, the claim is released (a redelivery runs the
        whole list again)."""
        if token is not None and operation_id:
            self.claims.release(operation_id, token)
        rec = self.recorder
        rec.failure(failure.reason, failure.fault, task.id, session_id, kind)
        rec.emit("dispatch", "error", MESSAGES["dispatch_error"], trigger=trigger, task=task.id, session=session_id,
                 step=step_id, operation_id=operation_id, actions=list(ran), failed_kind=kind, error=failure.reason)
        self.outcome(outcome_label, trigger, "error", task.id, operation_id)
        return FireResult("error", trigger, task.id, step_id, operation_id, ran, error=failure.reason)

    def outcome(self, label: Mapping[str, Any] | None, trigger: str, result: str, task_id: str,
                operation_id: str | None) -> None:
        """The trace-only `outcome` record of one fire (or of the sequence that fired it)."""
        if self.recorder.active:
            self.recorder.emit("outcome", "silent", **(label or {"trigger": trigger}), result=result, guard=None,
                               task=task_id, operation_id=operation_id)

    def check_payload(self, trigger: str, payload: Mapping[str, Any] | None) -> dict[str, Any]:
        """A trigger's payload checked against its declared parameters, defaults filled in (`PayloadError`)."""
        index = self.index
        trig = index.triggers.get(trigger)
        if trig is None:
            raise UnknownTriggerError(f"unknown trigger `{trigger}` (known: {', '.join(index.triggers)})")
        if trigger == index.entry_trigger:
            raise RuntimeFault(f"`{trigger}` is the entry trigger: arrivals dispatch it (use move())")
        if not payload and not trig.params:
            return {}  # the common case of the kanban-era triggers: nothing to check
        if payload is not None and not isinstance(payload, Mapping):
            raise PayloadError(f"`{trigger}`'s payload is a mapping of field to value, not {type(payload).__name__}")
        given = dict(payload or {})
        names = {p.name for p in trig.params}
        extra = sorted(set(given) - names, key=str)
        if extra:
            raise PayloadError(f"`{trigger}` has no payload field {', '.join(f'`{e}`' for e in extra)} "
                               f"(fields: {', '.join(sorted(names)) or 'none'})")
        missing = [p.name for p in trig.params if p.required and p.name not in given]
        if missing:
            raise PayloadError(f"`{trigger}`'s payload lacks {', '.join(f'`{m}`' for m in missing)} "
                               f"(fields: {', '.join(f'{p.name}: {p.type}' for p in trig.params)})")
        for p in trig.params:
            if p.name in given:
                problem = value_problem(given[p.name], p.type, index.records)
                if problem:
                    raise PayloadError(f"`{trigger}`'s payload field `{p.name}` ({p.type}): {problem}")
            else:
                given[p.name] = p.default
        try:
            json.dumps(given)
        except (TypeError, ValueError) as exc:
            raise PayloadError(f"`{trigger}`'s payload is not plain JSON data: {exc}") from None
        return given


def _ran_before(walk: tuple[PlanAction, ...], upto: PlanAction) -> list[str]:
    """The kinds of the non-transition actions walked before `upto` (found by position in the walk): what ran
    when every one of them had an executor."""
    ran = []
    for action in walk:
        if action is upto:
            break
        if action.action_class != "transition":
            ran.append(action.kind)
    return ran
