"""A task about to leave a step in, the step's `on_exit` run abort-on-first out: None, or the failure that refuses
the move (docs/runtime.md §2, "Leaving a step"; ADR 0022).

Every route by which the runtime moves a task out of a step asks this component first: a transition
picked by `fire`, a decision's compare-and-swap, a workflow switch, a host's `move`.
"""

from __future__ import annotations

from .delivery import new_delivery, operation_key
from .index import EXIT_TRIGGER, Handler
from .invoker import Invoker
from .outcomes import Failed
from .owner import Owner
from .records import MESSAGES
from .revision import Revision
from .store import Store, StoreError, TaskState

__all__ = ["Exits"]


class Exits:
    """Runs exit handlers.  Uses the own revision, the store (for store-backed exit actions), the invoker and the
    owner."""

    def __init__(self, revision: Revision, store: Store, invoker: Invoker, owner: Owner) -> None:
        self.revision = revision
        self.index = revision.index
        self.store = store
        self.invoker = invoker
        self.owner = owner
        self.recorder = revision.recorder

    def handler(self, workflow_id: str | None, step_id: str | None) -> Handler | None:
        """The step's exit handler, or None when it has none."""
        if workflow_id is None or step_id is None:
            return None
        return self.index.exits.get((workflow_id, step_id))

    def leave(self, exit_handler: Handler, task: TaskState, workflow_id: str, step_id: str, session_id: str | None,
              operation_id: str | None) -> Failed | None:
        """Run `exit_handler` abort-on-first; the failure that refuses the move, or None.  Its record: one
        `dispatch` record of trigger `on_exit` (ERROR when an action failed), before the records of its actions."""
        rec = self.recorder
        registered = self.invoker.registry.entries
        step = self.index.steps.get((workflow_id, step_id))
        for kind in exit_handler.kinds:
            if kind not in registered:
                rec.missing_executor(workflow_id, step_id, step.title if step else None, kind, task.id, session_id)
        delivery = new_delivery(EXIT_TRIGGER, task, workflow_id, step_id, self.revision, self.owner,
                                operation_key(operation_id, exit=True), session_id, {}, operation_id, task.entry_id,
                                exit_handler.workflow_steps)
        ran: list[str] = []
        held: list[tuple[str, tuple[object, ...]]] = []
        failed: list[tuple[str, Failed]] = []  # failures continued from (`continue_on_failure`, ADR 0042)
        for action in exit_handler.runs:
            executor = registered.get(action.kind)
            if executor is None:
                continue
            ctx = self.invoker.context(delivery, action)
            try:
                outcome = self.invoker.call(executor, action.args, ctx, self.store)
            except StoreError as exc:
                outcome = Failed(str(exc) or type(exc).__name__)
            if isinstance(outcome, Failed) and action.continue_on_failure:
                failed.append((action.kind, outcome))
                ran.append(action.kind)
                continue
            if isinstance(outcome, Failed):
                rec.count("exits_refused")
                rec.emit("dispatch", "error", MESSAGES["dispatch_error"], trigger=EXIT_TRIGGER, task=task.id,
                         session=session_id, step=step_id, operation_id=operation_id, actions=list(ran),
                         failed_kind=action.kind, error=outcome.reason)
                self._flush(held, task, step_id, operation_id)
                rec.failure(outcome.reason, outcome.fault, task.id, session_id, action.kind, step=step_id,
                            trigger=EXIT_TRIGGER, operation_id=operation_id)
                return outcome
            ran.append(action.kind)
            if outcome.effects:
                held.append((action.kind, outcome.effects))
        rec.count("exits")
        rec.emit("dispatch", "info" if exit_handler.actions else "debug",
                 MESSAGES["dispatch_info" if exit_handler.actions else "dispatch_debug"], trigger=EXIT_TRIGGER,
                 task=task.id, session=session_id, step=step_id, operation_id=operation_id,
                 actions=[a.kind for a in exit_handler.actions],
                 **({"failed": [[k, f.reason] for k, f in failed]} if failed else {}))
        self._flush(held, task, step_id, operation_id)
        for kind, failure in failed:
            rec.failure(failure.reason, failure.fault, task.id, session_id, kind, step=step_id, trigger=EXIT_TRIGGER,
                        operation_id=operation_id, continued=True)
        return None

    def _flush(self, held: list[tuple[str, tuple[object, ...]]], task: TaskState, step_id: str,
               operation_id: str | None = None) -> None:
        for kind, effects in held:
            self.recorder.effects(effects, kind, task.id, step_id, operation_id=operation_id)  # type: ignore[arg-type]
