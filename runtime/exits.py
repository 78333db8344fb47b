"""A task about to leave a step in, the step's `on_exit` run abort-on-first out: None, or the failure that refuses
the move (docs/runtime.md §2, "Leaving a step"; ADR 0022).

Every route by which the runtime moves a task out of a step asks this component first: a transition
picked by `fire`, a decision's compare-and-swap, a workflow switch, a host's `move`.
"""

from __future__ import annotations

from .index import EXIT_TRIGGER, Handler, PlanIndex
from .invoker import Failed, Invoker
from .keys import operation_ident
from .recorder import Recorder
from .records import MESSAGES
from .store import Store, StoreError, TaskState

__all__ = ["Exits"]


class Exits:
    """Runs exit handlers.  Uses the plan index, the store (for store-backed exit actions), the invoker and the
    recorder."""

    def __init__(self, index: PlanIndex, store: Store, invoker: Invoker, recorder: Recorder) -> None:
        self.index = index
        self.store = store
        self.invoker = invoker
        self.recorder = recorder

    def handler(self, workflow_id: str | None, step_id: str | None) -> Handler | None:
        """The step's exit handler, or None when it has none."""
        if workflow_id is None or step_id is None:
            return None
        return self.index.exits.get((workflow_id, step_id))

    def leave(self, exit_handler: Handler, task: TaskState, workflow_id: str, step_id: str, session_id: str | None,
              operation_id: str | None) -> Failed | None:
        """Run `exit_handler` abort-on-first; the failure that refuses the move, or None.  Its record: one
        `dispatch` record of trigger `on_exit` (ERROR when an action failed)."""
        rec = self.recorder
        registered = self.invoker.registry.entries
        step = self.index.steps.get((workflow_id, step_id))
        for kind in exit_handler.kinds:
            if kind not in registered:
                rec.missing_executor(workflow_id, step_id, step.title if step else None, kind, task.id, session_id)
        ran: list[str] = []
        for action in exit_handler.runs:
            executor = registered.get(action.kind)
            if executor is None:
                continue
            key = f"exit:{operation_ident(operation_id)}:{action.position}:{action.kind}" if operation_id else None
            ctx = self.invoker.context(action, task, workflow_id, step_id, EXIT_TRIGGER, key, None, operation_id,
                                       session_id, None, None, exit_handler.workflow_steps)
            try:
                outcome = self.invoker.call(executor, action.args, ctx, self.store)
            except StoreError as exc:
                outcome = Failed(str(exc) or type(exc).__name__)
            if isinstance(outcome, Failed):
                rec.counters.add("exits_refused")
                rec.failure(outcome.reason, outcome.fault, task.id, session_id, action.kind)
                rec.emit("dispatch", "error", MESSAGES["dispatch_error"], trigger=EXIT_TRIGGER, task=task.id,
                         session=session_id, step=step_id, operation_id=operation_id, actions=list(ran),
                         failed_kind=action.kind, error=outcome.reason)
                return outcome
            ran.append(action.kind)
            if outcome.effects:
                rec.effects(outcome.effects, action.kind, task.id, step_id, operation_id=operation_id)
        rec.counters.add("exits")
        rec.emit("dispatch", "info" if exit_handler.actions else "debug",
                 MESSAGES["dispatch_info" if exit_handler.actions else "dispatch_debug"], trigger=EXIT_TRIGGER,
                 task=task.id, session=session_id, step=step_id, operation_id=operation_id,
                 actions=[a.kind for a in exit_handler.actions])
        return None
