"""A trigger, a task and a payload in, the step's handler run abort-on-first out (docs/runtime.md §2, §6).

A fire is one `Delivery`: built once, under this runtime's revision, fenced by the activation it
belongs to when the host names one (`entry_id`: a delivery whose activation the task has left is
`superseded` and changes nothing), `stranded` when the task stands on a step the plan does not
have.  The delivery claims its operation id before anything runs (`Claims.operation`); the handler is
walked in order, the first eligible transition picking the target; an executor failure aborts the
rest and releases the claim; on success the source step's `on_exit` runs (if the task leaves it), then
the operation is marked applied — in the transaction of the move when there is one, a
compare-and-swap on the activation.  Records read causes first: the handler's `dispatch` record, then
its actions' effects, then the arrival it caused.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import replace
from functools import partial
from typing import Any

from .arrivals import Arrivals
from .checks import MAX_ID_BYTES, check_id, check_ledger_id, check_text
from .claims import UNCLAIMED, Claims, OperationHold
from .delivery import EMPTY, Delivery, new_delivery, operation_key
from .errors import RuntimeFault, UnknownStepError, UnknownTaskError, UnknownTriggerError
from .exits import Exits
from .failures import Failures
from .frozen import builder
from .guards import TransitionGuards
from .index import Handler
from .invoker import Invoker
from .options import transition_options
from .outcomes import OK, Failed, Outcome
from .owner import Owner
from .payloads import check_fields
from .plan import PlanAction, PlanStep
from .records import MESSAGES, Level
from .results import ArrivalResult, FireResult
from .revision import Revision
from .store import MoveResult, Store, StoreError, TaskState

__all__ = ["TriggerDispatch"]

_fire_result = builder(FireResult)  # the hot path's constructor (frozen.builder: ADR 0027's ablation)


class TriggerDispatch:
    """Every trigger but step entry.  Uses the own revision, the store, the claims, the invoker, the exits and the
    arrivals."""

    def __init__(self, revision: Revision, store: Store, claims: Claims, invoker: Invoker, exits: Exits,
                 arrivals: Arrivals, owner: Owner, guards: TransitionGuards) -> None:
        self.revision = revision
        self.index = revision.index
        self.store = store
        self.claims = claims
        self.invoker = invoker
        self.exits = exits
        self.arrivals = arrivals
        self.owner = owner
        self.recorder = revision.recorder
        self.guards = guards
        self.failures = Failures(revision)

    def fire(self, trigger: str, task_id: str, session_id: str | None = None,
             payload: Mapping[str, Any] | None = None, operation_id: str | None = None,
             outcome_label: Mapping[str, Any] | None = None, entry_id: int | None = None, *, attempt: int = 1,
             managed: bool = False) -> FireResult:
        """Run a step's handler for a non-entry trigger.  `outcome_label` names the outcome record's source
        (`{"sequence": …}` when a dispatch sequence fires; None: this trigger); `entry_id` fences the delivery to
        the task's activation it belongs to.  `attempt`, `managed`: a retry's or a redrive's delivery (its try; the
        one running it decides what its failure becomes)."""
        if trigger.__class__ is not str:
            raise RuntimeFault(f"`trigger` must be a string, not {type(trigger).__name__}")
        if not (task_id.__class__ is str and task_id.isascii() and 0 < len(task_id) <= MAX_ID_BYTES
                and "\x00" not in task_id):  # `check_id`'s common case, inline on the hot path
            check_id(task_id, "task_id")
        if session_id is not None:
            check_id(session_id, "session_id")
        if operation_id is not None:
            check_text(operation_id, "operation_id")
        if entry_id is not None:
            check_ledger_id(entry_id, "entry_id")
        index = self.index
        payload = {} if not payload and trigger in index.paramless else self.check_payload(trigger, payload)
        task = self.store.get_task(task_id)
        if task is None:
            raise UnknownTaskError(f"no task `{task_id}`")
        wf_id, step_id = task.workflow_id, task.step_id
        if wf_id is None or step_id is None:
            raise UnknownStepError(f"task `{task_id}` is at no step")
        rec = self.recorder
        if entry_id is not None and task.entry_id != entry_id:
            rec.superseded(task.id, entry_id, task.entry_id, trigger=trigger, operation_id=operation_id,
                           session=session_id)
            self.outcome(outcome_label, trigger, "superseded", task.id, operation_id)
            return FireResult("superseded", trigger, task.id, step_id, operation_id)
        handler = index.handlers.get((wf_id, step_id, trigger))
        if handler is None:
            if (wf_id, step_id) not in index.steps:
                rec.stranded(task.id, wf_id, step_id, trigger=trigger, operation_id=operation_id)
                self.outcome(outcome_label, trigger, "stranded", task.id, operation_id)
                return FireResult("stranded", trigger, task.id, step_id, operation_id)
            handler = index.handler(wf_id, step_id, trigger)
        delivery = new_delivery(trigger, task, wf_id, step_id, self.revision, self.owner,
                                operation_key(operation_id) if operation_id else None, session_id, payload,
                                operation_id, task.entry_id, handler.workflow_steps, EMPTY, attempt)
        return self.deliver(delivery, handler, outcome_label, managed=managed)

    def fire_timer(self, task: TaskState, step_id: str, handler: Handler, label: str, operation_id: str, *,
                   attempt: int = 1, managed: bool = False,
                   before: Callable[[], None] | None = None) -> FireResult:
        """Run a step's timer (`after 48h`: the trigger its records name) for the task's current activation, as
        operation `operation_id` (derived from the entry, the timer and its slot: `Ticker`).  `before`: called once
        the delivery holds its claim, before anything runs (the `timer` record, its cause)."""
        assert task.workflow_id is not None
        delivery = new_delivery(label, task, task.workflow_id, step_id, self.revision, self.owner,
                                operation_key(operation_id), None, {}, operation_id, task.entry_id,
                                handler.workflow_steps, EMPTY, attempt)
        return self.deliver(delivery, handler, None, managed=managed, before=before)

    def deliver(self, delivery: Delivery, handler: Handler, outcome_label: Mapping[str, Any] | None, *,
                managed: bool = False, before: Callable[[], None] | None = None) -> FireResult:
        """A delivery of a handler: warn of kinds with no executor, claim its operation, walk it."""
        rec, task, trigger, step_id = self.recorder, delivery.task, delivery.trigger, delivery.step_id
        session_id, operation_id, wf_id = delivery.session_id, delivery.operation_id, delivery.workflow_id
        registered = self.invoker.registry.entries
        for kind in handler.kinds:  # the pre-dispatch walk: warns even on an idempotent replay
            if kind not in registered:
                step = self.index.steps.get((wf_id, step_id))
                rec.missing_executor(wf_id, step_id, step.title if step else None, kind, task.id, session_id)
        if not operation_id:  # nothing to claim: `Claims.operation`'s `UNCLAIMED`, without its block (ADR 0052)
            if before is not None:
                before()
            result = self._walk(delivery, handler, UNCLAIMED, outcome_label)
        else:
            with self.claims.operation(delivery) as hold:
                if not hold.runs:
                    fields = {"task": task.id, "operation_id": operation_id, "trigger": trigger}
                    if hold.claim == "pruned":  # ADR 0047: older than the store's deduplication window
                        rec.redelivery_refused(**fields)
                        self.outcome(outcome_label, trigger, "pruned", task.id, operation_id)
                        return FireResult("pruned", trigger, task.id, step_id, operation_id)
                    if hold.claim == "busy":
                        rec.in_progress(**fields)
                        self.outcome(outcome_label, trigger, "in_progress", task.id, operation_id)
                        return FireResult("in_progress", trigger, task.id, step_id, operation_id)
                    rec.idempotent(**fields)  # trace-only: an idempotent replay writes no dispatch record (§3)
                    self.outcome(outcome_label, trigger, "idempotent", task.id, operation_id)
                    return FireResult("idempotent", trigger, task.id, step_id, operation_id)
                if hold.claim == "taken_over":
                    rec.warning("operation_claim_taken_over", "operation claim taken over: the runtime that held it "
                                "is gone", task=task.id, operation_id=operation_id, trigger=trigger)
                    if delivery.attempt == 1:  # its host actions may have run: this is at least the second try
                        delivery = replace(delivery, attempt=2)
                if before is not None:
                    before()
                result = self._walk(delivery, handler, hold, outcome_label)
        if result.result == "error" and not managed and result.failed_kind is not None:
            self._hand_over(delivery, result)
        return result

    def _hand_over(self, delivery: Delivery, result: FireResult) -> None:
        """An aborted delivery's failure, after its claim was released: retried by `tick`, or an incident."""
        assert result.failed_kind is not None
        try:
            self.failures.operation_aborted(
                self.store, task_id=delivery.task.id, entry_id=delivery.entry_id, workflow_id=delivery.workflow_id,
                step_id=delivery.step_id, trigger=delivery.trigger, operation_id=delivery.operation_id,
                payload=delivery.payload, session_id=delivery.session_id, kind=result.failed_kind,
                error=result.error or "failed", attempt=delivery.attempt)
        except StoreError as exc:  # the failure is recorded; only its retry or incident could not be written
            self.recorder.emit("error", "error", "failed delivery not handed over: the store failed", task=
                               delivery.task.id, operation_id=delivery.operation_id, trigger=delivery.trigger,
                               message=str(exc) or type(exc).__name__)

    def _walk(self, delivery: Delivery, handler: Handler, hold: OperationHold,
              outcome_label: Mapping[str, Any] | None) -> FireResult:
        """Walk a handler abort-on-first (an action flagged `continue_on_failure` records its failure and the walk
        goes on: ADR 0042), then `_finish`."""
        invoker = self.invoker
        task, step_id = delivery.task, delivery.step_id
        registered = invoker.registry.entries
        # a handler whose target is known walks only its other actions; otherwise transitions are chosen in the
        # walk, their guards evaluated in order
        target, chosen = handler.target, handler.target_known
        options = handler.options  # the arrival options of the transition that picks `target` (ADR 0043)
        walk = handler.runs if chosen else handler.actions
        ran: list[str] | None = None  # the kinds that ran, once one was skipped (None: all of `handler.kinds` so far)
        held: list[tuple[str, Outcome]] | None = None  # reported after the dispatch record (causes first)
        guards: list[dict[str, Any]] | None = [] if self.recorder.active else None  # the guards evaluated
        for action in walk:
            if action.action_class == "transition":
                if chosen or action.requires_approval:
                    continue
                if not self.guards.holds(action, task, delivery.workflow_id, step_id, delivery.payload, guards):
                    continue
                chosen, target = True, action.target_step
                options = transition_options(action.args, action.kind)
                continue
            executor = registered.get(action.kind)
            if executor is None:
                if ran is None:
                    ran = _ran_before(walk, action)
                continue
            try:
                outcome = invoker.call(executor, action.args, invoker.context(delivery, action), self.store)
            except StoreError as exc:  # the store failing under a store-backed action: that action's failure
                outcome = Failed(str(exc) or type(exc).__name__)
            if outcome is not OK:  # OK: it ran, with nothing to report (the common case)
                if isinstance(outcome, Failed) and not action.continue_on_failure:
                    return self._aborted(delivery, hold, outcome_label, held,
                                         tuple(ran if ran is not None else _ran_before(walk, action)), action.kind,
                                         outcome, guards or [])
                if isinstance(outcome, Failed) or outcome.effects:
                    if held is None:
                        held = []
                    held.append((action.kind, outcome))
            if ran is not None:
                ran.append(action.kind)
        return self._finish(delivery, handler, hold, outcome_label, (target, chosen, options),
                            handler.kinds if ran is None else tuple(ran), held or [], guards or [])

    def _finish(self, delivery: Delivery, handler: Handler, hold: OperationHold,
                outcome_label: Mapping[str, Any] | None, picked: tuple[str | None, bool, str | None],
                ran_kinds: tuple[str, ...], held: list[tuple[str, Outcome]], guards: list[dict[str, Any]]
                ) -> FireResult:
        """A walk that ran to its end: its `dispatch` record, its actions' records, then leave the step if a
        transition picked another one (`picked`: target, whether it was chosen, its arrival's options), else mark
        the operation."""
        rec = self.recorder
        task, step_id, trigger = delivery.task, delivery.step_id, delivery.trigger
        actions = handler.actions
        target, chosen, options = picked
        failed = tuple((kind, o.reason) for kind, o in held if isinstance(o, Failed)) if held else ()  # continued from
        if rec.active:
            level: Level = "info" if actions else "debug"
            rec.emit("dispatch", level, MESSAGES["dispatch_info" if actions else "dispatch_debug"], trigger=trigger,
                     task=task.id, session=delivery.session_id, step=step_id, operation_id=delivery.operation_id,
                     actions=[a.kind for a in actions], guards=guards,
                     **({"failed": [list(f) for f in failed]} if failed else {}))
        if held:
            self._held(held, delivery)
        arrival = None
        if target is not None and target != step_id:
            if handler.exit is not None:  # leaving the step: its `on_exit` first, abort-on-first
                refused = self.exits.leave(handler.exit, task, delivery.workflow_id, step_id, delivery.session_id,
                                           delivery.operation_id)
                if refused is not None:
                    hold.release()
                    self.outcome(outcome_label, trigger, "error", task.id, delivery.operation_id)
                    return FireResult("error", trigger, task.id, step_id, delivery.operation_id, ran_kinds,
                                      error=f"on_exit: {refused.reason}", failed=failed)
            arrival = self._transition(delivery, target, hold,
                                       handler.destination if chosen and target == handler.target else None, options)
        else:
            rec.count("dispatches")
            hold.mark()
        if rec.active:
            self.outcome(outcome_label, trigger, "dispatched", task.id, delivery.operation_id)
        return _fire_result("dispatched", trigger, task.id, step_id, delivery.operation_id, ran_kinds, arrival, None,
                            failed)

    def _held(self, held: list[tuple[str, Outcome]], delivery: Delivery) -> None:
        """The records of the actions that ran: their effects, and the failures continued from (ADR 0042)."""
        rec, task_id, step_id = self.recorder, delivery.task.id, delivery.step_id
        for kind, outcome in held:
            if isinstance(outcome, Failed):
                rec.failure(outcome.reason, outcome.fault, task_id, delivery.session_id, kind, step=step_id,
                            trigger=delivery.trigger, operation_id=delivery.operation_id, continued=True)
            else:
                rec.effects(outcome.effects, kind, task_id, step_id, operation_id=delivery.operation_id)

    def _transition(self, delivery: Delivery, target: str, hold: OperationHold,
                    destination: PlanStep | None, options: str | None = None) -> ArrivalResult:
        """Move the task as an arrival, with a compare-and-swap on its activation; the operation is marked in the
        move's transaction.  `destination`: the target step, when the handler knows it; `options`: the arrival's
        entry options (canonical JSON text)."""
        task_id, step_id, session_id = delivery.task.id, delivery.step_id, delivery.session_id
        destination = destination or self.index.steps.get((delivery.workflow_id, target))
        result, progress = self.arrivals.write(partial(_move, delivery, target, options, destination), task_id,
                                               session_id)
        if result.status == "moved":  # "dispatches" counted with the arrival's counters
            if hold is not UNCLAIMED:  # settled from the start: nothing to note
                hold.marked()
            return self.arrivals.arrived(result.ledger, task_id, step_id, session_id, progress=progress,
                                         destination=destination, counts=("dispatches", "transitions", "arrivals"))
        self.recorder.count("dispatches")
        if result.status == "cas_lost":
            hold.mark()
        else:
            hold.marked()
        return ArrivalResult("cas_lost" if result.status == "cas_lost" else "same_step", task_id, step_id, target)

    def _aborted(self, delivery: Delivery, hold: OperationHold, outcome_label: Mapping[str, Any] | None,
                 held: list[tuple[str, Outcome]] | None, ran: tuple[str, ...], kind: str, failure: Failed,
                 guards: list[dict[str, Any]]) -> FireResult:
        """An executor failed: the rest of the handler is not run, the claim is released (a redelivery runs the
        whole list again)."""
        hold.release()
        rec = self.recorder
        task, step_id, trigger, operation_id = delivery.task, delivery.step_id, delivery.trigger, delivery.operation_id
        rec.emit("dispatch", "error", MESSAGES["dispatch_error"], trigger=trigger, task=task.id,
                 session=delivery.session_id, step=step_id, operation_id=operation_id, actions=list(ran),
                 failed_kind=kind, error=failure.reason, guards=guards)
        if held:
            self._held(held, delivery)
        rec.failure(failure.reason, failure.fault, task.id, delivery.session_id, kind, step=step_id, trigger=trigger,
                    operation_id=operation_id, attempt=delivery.attempt)
        self.outcome(outcome_label, trigger, "error", task.id, operation_id)
        return FireResult("error", trigger, task.id, step_id, operation_id, ran, error=failure.reason,
                          failed_kind=kind)

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
        return check_fields(payload, trig.params, f"`{trigger}`", "payload", index.records)


def _move(d: Delivery, target: str, options: str | None, destination: PlanStep | None, store: Store,
          stamp: Mapping[str, Any]) -> tuple[MoveResult, PlanStep | None]:
    """A transition's step change, as `Arrivals.write` calls it (`partial(_move, …)`): a module function rather than
    a closure (a closure made every local of `_transition` a cell; ADR 0052)."""
    session_id = d.session_id
    return store.move_task(d.task.id, d.workflow_id, target, route="engine_transition",
                           actor_kind="agent" if session_id else "system", actor_id=session_id,
                           session_id=session_id, expected_step_id=d.step_id, expected_entry_id=d.task.entry_id,
                           operation_id=d.operation_id, operation_trigger=d.trigger, arrival_options=options,
                           plan=stamp["plan"], entry_owner=stamp["entry_owner"]), destination


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
