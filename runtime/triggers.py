"""A trigger, a task and a payload in, the step's handler run abort-on-first out (docs/runtime.md §2).
"""

from __future__ import annotations

import contextlib
import json
from collections.abc import Mapping, Sequence
from typing import Any

from .arrivals import Arrivals
from .checks import MAX_ID_BYTES, check_id, check_text
from .core import NO_HANDLER, Handler, _Failure, _new_context, as_failure, check_effects
from .entry import Counts
from .errors import (
    PayloadError,
    RuntimeFault,
    UnknownStepError,
    UnknownTaskError,
    UnknownTriggerError,
)
from .frozen import builder
from .keys import operation_ident
from .plan import PlanAction, value_problem
from .quorum import evaluate as evaluate_quorum
from .records import MESSAGES, Level
from .results import ArrivalResult, FireResult
from .store import TaskState

_fire_result = builder(FireResult)  # the hot path's constructor (frozen.builder)

__all__ = ["TriggerDispatch"]


class TriggerDispatch(Arrivals):
    """Every trigger but step entry (docs/runtime.md §2): abort-on-first, first eligible transition wins."""

    # ---- other triggers: abort-on-first -------------------------------------------------------------
    def fire(self, trigger: str, task_id: str, *, session_id: str | None = None,
             payload: Mapping[str, Any] | None = None, operation_id: str | None = None) -> FireResult:
        """Run a step's handler for a non-entry trigger (docs/runtime.md §2)."""
        if trigger.__class__ is not str:
            raise RuntimeFault(f"`trigger` must be a string, not {type(trigger).__name__}")
        return self._fire(trigger, task_id, session_id, payload, operation_id, None)

    def _check_payload(self, trigger: str, payload: Mapping[str, Any] | None) -> dict[str, Any]:
        trig = self._triggers.get(trigger)
        if trig is None:
            raise UnknownTriggerError(f"unknown trigger `{trigger}` (known: {', '.join(self._triggers)})")
        if trigger == self._entry_trigger:
            raise RuntimeFault(f"`{trigger}` is the entry trigger: arrivals dispatch it (use move())")
        if not payload and not trig.params:
            return {}  # the common case of the kanban-era triggers: nothing to check
        if payload is not None and not isinstance(payload, Mapping):
            raise PayloadError(f"`{trigger}`'s payload is a mapping of field to value, not {type(payload).__name__}")
        given = dict(payload or {})
        names = {p.name for p in trig.params}
        extra = sorted(set(given) - names)
        if extra:
            raise PayloadError(f"`{trigger}` has no payload field {', '.join(f'`{e}`' for e in extra)} "
                               f"(fields: {', '.join(sorted(names)) or 'none'})")
        missing = [p.name for p in trig.params if p.required and p.name not in given]
        if missing:
            raise PayloadError(f"`{trigger}`'s payload lacks {', '.join(f'`{m}`' for m in missing)} "
                               f"(fields: {', '.join(f'{p.name}: {p.type}' for p in trig.params)})")
        for p in trig.params:
            if p.name in given:
                problem = self._type_problem(given[p.name], p.type)
                if problem:
                    raise PayloadError(f"`{trigger}`'s payload field `{p.name}` ({p.type}): {problem}")
            else:
                given[p.name] = p.default
        try:
            json.dumps(given)
        except (TypeError, ValueError) as exc:
            raise PayloadError(f"`{trigger}`'s payload is not plain JSON data: {exc}") from None
        return given

    def _type_problem(self, value: Any, type_: str) -> str | None:
        return value_problem(value, type_, self._records)

    def _fire(self, trigger: str, task_id: str, session_id: str | None, payload: Mapping[str, Any] | None,
              operation_id: str | None, outcome_label: Mapping[str, Any] | None,
              task: TaskState | None = None) -> FireResult:
        """`outcome_label` names the outcome record's source (`{"sequence": …}`; None: this trigger)."""
        if not (task_id.__class__ is str and task_id.isascii() and 0 < len(task_id) <= MAX_ID_BYTES
                and "\x00" not in task_id):  # `check_id`'s common case, inline on the hot path
            check_id(task_id, "task_id")
        if session_id is not None:
            check_id(session_id, "session_id")
        if operation_id is not None:
            check_text(operation_id, "operation_id")
        payload = {} if not payload and trigger in self._paramless else self._check_payload(trigger, payload)
        if task is None:
            task = self.store.get_task(task_id)
            if task is None:
                raise UnknownTaskError(f"no task `{task_id}`")
        wf_id, step_id = task.workflow_id, task.step_id
        if wf_id is None or step_id is None:
            raise UnknownStepError(f"task `{task_id}` is at no step")
        handler = self._handlers.get((wf_id, step_id, trigger))
        if handler is None:  # a step without a handler for this trigger, or no such step
            if (wf_id, step_id) not in self._steps:
                self.step(wf_id, step_id)  # raises: the plan has no such workflow or step
            handler = NO_HANDLER
        registered = self.executors.entries
        for kind in handler.kinds:  # the pre-dispatch walk: warns even on an idempotent replay
            if kind not in registered:
                self._warn_missing(wf_id, step_id, kind, task.id, session_id)
        token = None
        if operation_id:
            token = self.new_claim()
            claim = self.store.claim_operation(operation_id, token=token, lease=self.operation_lease, task_id=task.id,
                                               trigger=trigger)
            if claim == "applied" or claim == "busy":
                # `busy`: an overlapping delivery holds the claim and is running it: this one is discarded whole
                self.counters.add("idempotent")
                self.counters.add("redeliveries_discarded")
                # trace-only (silent): an idempotent replay writes no dispatch record (docs/runtime.md §3)
                self.emit("redelivery_discarded", "silent", task=task.id, operation_id=operation_id, trigger=trigger,
                          **({"in_progress": True} if claim == "busy" else {}))
                self._outcome(outcome_label, trigger, "idempotent", task.id, operation_id)
                return FireResult("idempotent", trigger, task.id, step_id, operation_id)
            if claim == "taken_over":
                self.emit("warning", "warning", "operation claim taken over: its lease ran out (a delivery crashed "
                          "or outlived the lease)", code="operation_claim_expired", task=task.id,
                          operation_id=operation_id, trigger=trigger)
        try:  # zero-cost until something raises: then the claim is released (a redelivery runs it again)
            return self._walk(handler, trigger, task, wf_id, step_id, session_id, payload, operation_id, token,
                              outcome_label)
        except BaseException:
            if token is not None:
                with contextlib.suppress(Exception):
                    self.store.release_operation(operation_id or "", token)
            raise

    def _walk(self, handler: Handler, trigger: str, task: TaskState, wf_id: str, step_id: str,
              session_id: str | None, payload: dict[str, Any], operation_id: str | None, token: str | None,
              outcome_label: Mapping[str, Any] | None) -> FireResult:
        """Walk a handler abort-on-first, leave the step if a transition picked another one, mark the operation."""
        actions = handler.actions
        registered = self.executors.entries
        # a plain handler's target is known; otherwise transitions are chosen in the walk, guards evaluated in order
        target, chosen = handler.target, handler.plain
        walk = handler.runs if chosen else actions
        executed: list[str] | None = None  # the kinds that ran; None: every non-transition action walked so far
        for action in walk:
            if action.action_class == "transition":
                if chosen or action.requires_approval:
                    continue
                if action.guard is not None:
                    q = self._quorum(action, task, step_id, wf_id)
                    if not q.satisfied:
                        self.counters.skip(f"quorum:{q.reason}")
                        continue
                chosen, target = True, action.target_step
                continue
            executor = registered.get(action.kind)
            if executor is None:
                if executed is None:
                    executed = _ran(walk, action)
                continue
            key = f"{operation_ident(operation_id)}:{action.position}:{action.kind}" if operation_id else None
            ctx = _new_context(action.kind, task, wf_id, step_id, trigger, action.position, key, None, operation_id,
                               session_id, payload, None, self, self.directory,  # as `_context` builds it
                               handler.workflow_steps)
            try:
                if not executor.transactional and self.executor_timeout is None:  # in place: the hot path
                    try:
                        returned = executor.fn(action.args, ctx)
                    except KeyboardInterrupt:
                        raise
                    except BaseException as exc:
                        raise as_failure(exc) from None
                    effects = () if returned is None else check_effects(returned)
                else:
                    effects = self._invoke(executor, action.args, ctx)
            except _Failure as failure:
                ran = tuple(executed if executed is not None else _ran(walk, action))
                return self._aborted(trigger, task, step_id, session_id, operation_id, token, outcome_label, ran,
                                     action.kind, failure)
            if executed is not None:
                executed.append(action.kind)
            if effects:
                self._emit_effects(effects, action.kind, task.id, step_id, operation_id=operation_id)
        ran_kinds = handler.kinds if executed is None else tuple(executed)
        if self.sinks:
            level: Level = "info" if actions else "debug"
            self.emit("dispatch", level, MESSAGES["dispatch_info" if actions else "dispatch_debug"],
                      trigger=trigger, task=task.id, session=session_id, step=step_id, operation_id=operation_id,
                      actions=[a.kind for a in actions])
        arrival = None
        if target is not None and target != step_id:
            if handler.exit is not None:  # leaving the step: its `on_exit` first, abort-on-first
                refused = self._leave(handler.exit, task, wf_id, step_id, session_id, operation_id)
                if refused is not None:
                    if token is not None and operation_id:
                        self.store.release_operation(operation_id, token)
                    self._outcome(outcome_label, trigger, "error", task.id, operation_id)
                    return FireResult("error", trigger, task.id, step_id, operation_id, ran_kinds,
                                      error=f"on_exit: {refused.message}")
            task_id = task.id
            actor_kind = "agent" if session_id else "system"
            entered = None
            if self._atomic:
                destination = self._steps.get((wf_id, target))
                result, entered = self._write_arrival(
                    lambda store: (store.move_task(task_id, wf_id, target, route="engine_transition",
                                                   actor_kind=actor_kind, actor_id=session_id, session_id=session_id,
                                                   expected_step_id=step_id, operation_id=operation_id,
                                                   operation_trigger=trigger), destination),
                    task_id, session_id)
            else:  # the same write, without a closure (the in-memory store's hot path)
                result = self.store.move_task(task_id, wf_id, target, route="engine_transition", actor_kind=actor_kind,
                                              actor_id=session_id, session_id=session_id, expected_step_id=step_id,
                                              operation_id=operation_id, operation_trigger=trigger)
            if result.status == "moved":  # "dispatches" counted with the arrival's counters
                arrival = self._after_move(result.ledger, task_id, step_id, session_id, entered=entered,
                                           counts=_TRANSITION)
            else:
                self.counters.add("dispatches")
                if operation_id:
                    self.store.mark_operation(operation_id, task_id=task.id, trigger=trigger)
                arrival = ArrivalResult("cas_lost" if result.status == "cas_lost" else "same_step", task.id,
                                        step_id, target)
        else:
            self.counters.add("dispatches")
            if operation_id:
                self.store.mark_operation(operation_id, task_id=task.id, trigger=trigger)
        if self.sinks:
            self._outcome(outcome_label, trigger, "dispatched", task.id, operation_id)
        return _fire_result("dispatched", trigger, task.id, step_id, operation_id, ran_kinds, arrival)

    def _aborted(self, trigger: str, task: TaskState, step_id: str, session_id: str | None,
                 operation_id: str | None, token: str | None, outcome_label: Mapping[str, Any] | None,
                 ran: tuple[str, ...], kind: str, failure: _Failure) -> FireResult:
        """An executor failed: the rest of the handler is not run, the claim is released (a redelivery runs the
        whole list again)."""
        if token is not None and operation_id:
            self.store.release_operation(operation_id, token)
        self._record_failure(failure, task.id, session_id, kind)
        self.emit("dispatch", "error", MESSAGES["dispatch_error"], trigger=trigger, task=task.id,
                  session=session_id, step=step_id, operation_id=operation_id, actions=list(ran),
                  failed_kind=kind, error=failure.message)
        self._outcome(outcome_label, trigger, "error", task.id, operation_id)
        return FireResult("error", trigger, task.id, step_id, operation_id, ran, error=failure.message)

    def _outcome(self, label: Mapping[str, Any] | None, trigger: str, result: str, task_id: str,
                 operation_id: str | None) -> None:
        """The trace-only `outcome` record of one fire (or of the sequence that fired it)."""
        if self.sinks:
            self.emit("outcome", "silent", **(label or {"trigger": trigger}), result=result, guard=None, task=task_id,
                      operation_id=operation_id)

    def _quorum(self, action: PlanAction, task: TaskState, step_id: str, workflow_id: str) -> Any:
        guard = action.guard
        assert guard is not None
        participants = self.store.participants(task.id, self._step_ids.get(workflow_id, (step_id,)))
        decisions = self.store.decisions(task.id, step_id)
        return evaluate_quorum(role=guard.role, threshold=guard.threshold, count=guard.count,
                               participants=participants, decisions=decisions, task_id=task.id, step_id=step_id)


_TRANSITION = Counts(("dispatches", "transitions", "arrivals"),
                     ("dispatches", "transitions", "arrivals", "entries_dispatched"))
"""The counters a fire that moved its task adds with its arrival (`Counts`): `dispatches` counts the fires that
completed (one that raises, e.g. on a store failure, is not counted)."""


def _ran(walk: Sequence[PlanAction], upto: PlanAction) -> list[str]:
    """The kinds of the actions walked before `upto` (found by identity), when all of them ran (transitions do
    not run)."""
    ran = []
    for a in walk:
        if a is upto:
            break
        if a.action_class != "transition":
            ran.append(a.kind)
    return ran
