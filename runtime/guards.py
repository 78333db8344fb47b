"""A transition, the task, its step, the delivery's payload and the host flags in, whether the transition's guard
holds out (docs/runtime.md §2; the guard language is docs/language.md §6; ADR 0038).

A guard is `quorum(role, threshold)` (the plan's `guard`, what every plan had before guards were expressions) or
an expression over `payload.`, `task.` and `host.` that may contain quorums (the plan's `when`).  Both are
evaluated here, and only here: `TriggerDispatch` (a fire's walk) and `Decisions` (a decision's re-evaluation)
each call `TransitionGuards.holds`.  A quorum is read from the store only when the expression reaches it.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from .expr import evaluate
from .guard_refs import GUARD_NAMES, nodes
from .index import PlanIndex
from .loaders import task_record
from .plan import PlanAction, PlanExpr, QuorumX
from .quorum import QuorumResult
from .quorum import evaluate as evaluate_quorum
from .recorder import Recorder
from .store import Store, TaskState

__all__ = ["TransitionGuards", "guard_of", "has_guard", "reads_quorum", "quorum_of", "GUARD_NAMES"]


def guard_of(action: PlanAction) -> PlanExpr | None:
    """An action's guard as one expression (a plan's quorum-only `guard` as a `QuorumX`), None when unguarded."""
    if action.when is not None:
        return action.when
    g = action.guard
    if g is None:
        return None
    return QuorumX(role=g.role, threshold=g.threshold, count=g.count)


def has_guard(action: PlanAction) -> bool:
    return action.guard is not None or action.when is not None


def reads_quorum(action: PlanAction) -> bool:
    """Whether a transition's guard counts decisions (a decision re-evaluates exactly these transitions)."""
    if action.guard is not None:
        return True
    return action.when is not None and any(isinstance(n, QuorumX) for n in nodes(action.when))


def quorum_of(store: Store, index: PlanIndex, quorum: QuorumX, task: TaskState, step_id: str,
              workflow_id: str) -> QuorumResult:
    """Evaluate one quorum for a task at a step (seats: the task's workflow's)."""
    participants = store.participants(task.id, index.workflow_steps(workflow_id, step_id))
    decisions = store.decisions(task.id, step_id)
    return evaluate_quorum(role=quorum.role, threshold=quorum.threshold, count=quorum.count,
                           participants=participants, decisions=decisions, task_id=task.id, step_id=step_id)


class TransitionGuards:
    """Evaluates transition guards.  Uses the plan index, the store, the host flags (the runtime's live dict)
    and the recorder's counters (a failed quorum counts `quorum:REASON`, any other false guard `guard:false`)."""

    def __init__(self, index: PlanIndex, store: Store, host: Mapping[str, Any], recorder: Recorder) -> None:
        self.index = index
        self.store = store
        self.host = host
        self.recorder = recorder

    def holds(self, action: PlanAction, task: TaskState, workflow_id: str, step_id: str,
              payload: Mapping[str, Any], trace: list[dict[str, Any]] | None = None) -> bool:
        """Whether `action`'s guard holds for `task` at `step_id` (an unguarded action: True).  `trace`, when
        given, gets `{position, to, result}` for the guard (the `guards` field of `dispatch` and `decision`
        records)."""
        expr = guard_of(action)
        if expr is None:
            return True
        counters = self.recorder.counters
        failed: list[str] = []

        def quorum(q: QuorumX) -> bool:
            result = quorum_of(self.store, self.index, q, task, step_id, workflow_id)
            if not result.satisfied:
                failed.append(f"quorum:{result.reason}")
            return result.satisfied

        if isinstance(expr, QuorumX):  # the common case: no scope to build
            held = quorum(expr)
        else:
            scope = {"payload": payload, "task": task_record(task), "host": self.host}
            held = bool(evaluate(expr, scope, quorum))
        if not held:
            for reason in failed or ["guard:false"]:
                counters.skip(reason)
        if trace is not None:
            trace.append({"position": action.position, "to": action.target_step, "result": held})
        return held
