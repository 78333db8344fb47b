"""A task's history in, where it stands now out: its seats, the quorums its current step's guarded transitions wait
for (evaluated on the seats and active decisions the store keeps), its due timers and retries, its incidents.
"""

from __future__ import annotations

from typing import Any

from ..guard_refs import nodes
from ..history import TaskHistory
from ..plan import PlanStep, QuorumX
from ..quorum import evaluate
from ..store import Decision
from ..store_due import NO_POSITION
from .plans import Revisions, guard_text

__all__ = ["current_step", "seats", "quorums", "timers", "incidents"]


def current_step(history: TaskHistory, revisions: Revisions) -> tuple[PlanStep | None, str | None]:
    """The plan step the task stands on, from the revision of its current activation (else the latest revision its
    ledger names), and that revision's digest."""
    task = history.task
    wf, step = (task.workflow_id, task.step_id) if task is not None else (None, None)
    entry = task.entry_id if task is not None else None
    arrivals = history.arrivals
    if task is None and arrivals:
        wf, step = arrivals[-1].ledger.to_workflow_id, arrivals[-1].ledger.to_step_id
    digests = [a.ledger.plan for a in arrivals if a.ledger.id == entry and a.ledger.plan]
    digests += [a.ledger.plan for a in reversed(arrivals) if a.ledger.plan]
    for digest in digests:
        found = revisions.step(digest, wf, step)
        if found is not None:
            return found, digest
    return None, digests[0] if digests else None


def seats(history: TaskHistory) -> list[dict[str, Any]]:
    return [{"step": p.step_id, "role": p.role, "agent": p.agent, "template": p.task_id == "",
             "decision_required": p.decision_required} for p in history.seats]


def quorums(history: TaskHistory, step: PlanStep | None) -> list[dict[str, Any]]:
    """Every quorum a guarded transition of the current step reads, with its state now."""
    if step is None or history.task is None:
        return []
    task_id = history.task_id
    active: list[Decision] = [d.decision for d in history.decisions
                              if not d.superseded and d.decision.step_id == step.id]
    out = []
    for trigger, actions in step.handlers.items():
        for action in actions:
            if action.action_class != "transition":
                continue
            expr = action.when
            found = [n for n in nodes(expr) if isinstance(n, QuorumX)] if expr is not None else []
            if action.guard is not None:
                found.append(QuorumX(role=action.guard.role, threshold=action.guard.threshold,
                                     count=action.guard.count))
            for q in found:
                r = evaluate(role=q.role, threshold=q.threshold, count=q.count, participants=history.seats,
                             decisions=active, task_id=task_id, step_id=step.id)
                out.append({"trigger": trigger, "to": action.target_step, "guard": guard_text(action),
                            "requires_approval": action.requires_approval, "role": q.role,
                            "threshold": q.threshold, "required": r.required, "received": r.received,
                            "satisfied": r.satisfied, "reason": r.reason})
    return out


def timers(history: TaskHistory, current: int | None) -> list[dict[str, Any]]:
    return [{"kind": d.kind, "label": d.label, "entry_id": d.entry_id, "step": d.step_id, "slot": d.slot,
             "position": None if d.position == NO_POSITION else d.position, "operation_id": d.operation_id,
             "due_at": d.due_at, "due_in": round(d.due_at - history.now, 3), "current": d.entry_id == current}
            for d in history.due]


def incidents(history: TaskHistory) -> list[dict[str, Any]]:
    return [{"id": i.id, "kind": i.kind, "state": i.state, "entry_id": i.entry_id, "step": i.step_id,
             "operation_id": i.operation_id, "trigger": i.trigger, "error": i.error, "attempts": i.attempts,
             "failures": [{"position": None if p == NO_POSITION else p, "kind": k, "error": e}
                          for p, k, e in i.failures],
             "opened_at": i.opened_at, "resolution": i.resolution, "note": i.note}
            for i in history.incidents]
