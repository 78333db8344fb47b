"""A task's history (runtime/history.py) in, its timeline's events out: arrivals with their entries, operations with
their outcome and guards, decisions, queued runs — in the order the store wrote them (ADR 0046).

Each event is a plain JSON-ready dict (the `inspect_version` 1 shape, docs/runtime.md "Inspecting a task").
What the store does not keep is inferred from what it does, and said so:

- an entry's excluded kinds come from the step of the plan revision its ledger row names;
- an operation belongs to the activation (ledger row) the task stood on when it was applied; it *moved* the
  task when the next arrival is an `engine_transition` out of that step written in the same transaction (same
  store time, nothing written between) that one of its handler's transitions targets; an operation that did not
  move the task had no eligible transition: each guarded one is reported `guard_false`, one needing approval
  `approval_required`.
"""

from __future__ import annotations

from typing import Any

from ..history import ArrivalRow, DecisionRow, OperationRow, RunRow, TaskHistory
from ..plan import PlanStep
from .plans import Revisions, Transition

__all__ = ["build_events", "where", "SAME_TRANSACTION_S"]

SAME_TRANSACTION_S = 0.005
"""How close (store seconds) an operation's applied time and an arrival's time must be for the operation to have
moved the task in that arrival's transaction (PostgreSQL stamps both with the transaction's time; SQLite with each
statement's, a millisecond or so apart)."""


def where(workflow_id: str | None, step_id: str | None) -> str | None:
    if step_id is None:
        return None
    return f"{workflow_id}.{step_id}" if workflow_id else step_id


def _run(row: RunRow) -> dict[str, Any]:
    r = row.run
    return {"key": r.key, "agent": r.agent, "reason": r.reason, "step": r.step_id, "entry_id": r.entry_id,
            "operation_id": r.operation_id, "at": row.at}


def _entry(arrival: ArrivalRow, step: PlanStep | None) -> dict[str, Any] | None:
    """What the entry of an arrival ran: per declared position (from the plan revision) its marker and record."""
    row = arrival.ledger
    if row.to_step_id is None or row.to_workflow_id is None:
        return None
    markers = {m.position: m for m in arrival.markers}
    record = arrival.entry
    failed = list(record.failed) if record is not None else []
    declared = [(a.position, a.kind) for a in step.entry_dispatch] if step is not None else \
        [(i, k) for i, k in enumerate(record.attempted if record is not None else ())]
    actions = []
    for position, kind in declared:
        marker = markers.get(position)
        error = None
        attempt = marker.attempt if marker is not None else None
        if record is not None:
            hit = next((f for f in failed if f[0] == kind), None)
            if hit is not None:
                failed.remove(hit)
                result, error = "failed", hit[1]
            elif kind in record.attempted:
                result = "ran"
            else:
                result = "not_run"
        elif marker is not None:
            result = {"done": "ran", "failed": "failed", "in_progress": "in_progress"}[marker.state]
            error = marker.error
        else:
            result = "pending"
        actions.append({"position": position, "kind": kind, "result": result, "error": error, "attempt": attempt})
    return {"state": "recorded" if record is not None else "pending", "actions": actions,
            "excluded": list(step.entry_inline) if step is not None else None}


def _arrival(arrival: ArrivalRow, revisions: Revisions, current: int | None) -> dict[str, Any]:
    row = arrival.ledger
    step = revisions.step(row.plan, row.to_workflow_id, row.to_step_id)
    return {"type": "arrival", "ledger_id": row.id, "at": arrival.at, "route": row.route,
            "from": where(row.from_workflow_id, row.from_step_id), "to": where(row.to_workflow_id, row.to_step_id),
            "actor": row.actor_kind if row.actor_id is None else f"{row.actor_kind}:{row.actor_id}",
            "session": row.session_id, "plan": row.plan, "plan_known": revisions.plan(row.plan) is not None,
            "current": row.id == current, "entry": _entry(arrival, step), "cause": None, "runs": []}


def _handler_transitions(revisions: Revisions, arrival: ArrivalRow | None, trigger: str | None) -> list[Transition]:
    if arrival is None:
        return []
    row = arrival.ledger
    step = revisions.step(row.plan, row.to_workflow_id, row.to_step_id)
    found = revisions.transitions(step, trigger)
    if not found and step is not None and trigger is not None:  # a timer's operation: its trigger is its label
        timer = next((t for t in step.timers if t.label == trigger), None)
        if timer is not None:
            found = [Transition(a.position, a.target_step, None, a.requires_approval, a) for a in timer.actions
                     if a.action_class == "transition"]
    return found


def _moved(op: OperationRow, nxt: ArrivalRow | None, before: ArrivalRow | None, revisions: Revisions) -> bool:
    """Whether `op` made arrival `nxt` (see the module's docstring)."""
    if nxt is None or nxt.ledger.route not in ("engine_transition", "creation"):
        return False
    if nxt.ledger.route == "creation":
        return op.trigger == "creation"
    if op.at is not None and nxt.at is not None and abs(op.at - nxt.at) > SAME_TRANSACTION_S:
        return False
    return any(t.to == nxt.ledger.to_step_id for t in _handler_transitions(revisions, before, op.trigger))


def _operation(op: OperationRow, activation: ArrivalRow | None, caused: ArrivalRow | None,
               revisions: Revisions) -> dict[str, Any]:
    transitions = []
    for t in _handler_transitions(revisions, activation, op.trigger):
        if caused is not None:
            result = "taken" if t.to == caused.ledger.to_step_id and not t.requires_approval else "not_reached"
        elif op.state != "applied":
            result = "not_evaluated"
        elif t.requires_approval:
            result = "approval_required"
        elif t.guard is not None:
            result = "guard_false"
        else:
            result = "same_step"
        transitions.append({"position": t.position, "to": t.to, "guard": t.guard, "result": result})
    if caused is not None:  # only the first taken one; the rest were never reached
        seen = False
        for item in transitions:
            if item["result"] == "taken":
                item["result"] = "not_reached" if seen else "taken"
                seen = True
    outcome = "running" if op.state != "applied" else ("moved" if caused is not None else "stayed")
    act = activation.ledger if activation is not None else None
    return {"type": "operation", "operation_id": op.operation_id, "trigger": op.trigger, "state": op.state,
            "at": op.at, "entry_id": act.id if act is not None else None,
            "step": where(act.to_workflow_id, act.to_step_id) if act is not None else None, "outcome": outcome,
            "moved_by": caused.ledger.id if caused is not None else None, "transitions": transitions, "runs": []}


def _decision(row: DecisionRow, seated: set[tuple[str, str]]) -> dict[str, Any]:
    d = row.decision
    return {"type": "decision", "id": d.id, "at": row.at, "step": d.step_id, "round": d.entry_id,
            "decider": f"{d.decider_type}:{d.decider_id}", "role": d.role, "verdict": d.verdict,
            "seated": (d.role, d.decider_id) in seated if d.decider_type == "agent" else None,
            "state": "superseded" if row.superseded else "active", "session": d.session_id}


def build_events(history: TaskHistory, revisions: Revisions) -> list[dict[str, Any]]:
    """Every event of the task, oldest first (see the module's docstring)."""
    current = history.task.entry_id if history.task is not None else None
    if current is None and history.arrivals:
        current = history.arrivals[-1].ledger.id
    rows: list[tuple[float, int, Any]] = [(a.seq, 0, a) for a in history.arrivals]
    rows += [(o.seq, 1, o) for o in history.operations]
    rows += [(d.seq, 2, d) for d in history.decisions]
    rows.sort(key=lambda r: (r[0], r[1]))
    seated = {(p.role, p.agent) for p in history.seats if p.decision_required}
    events: list[dict[str, Any]] = []
    by_ledger: dict[int, dict[str, Any]] = {}
    by_operation: dict[str, dict[str, Any]] = {}
    activation: ArrivalRow | None = None
    previous: ArrivalRow | None = None
    claimed: set[int] = set()
    for index, (_seq, _tag, item) in enumerate(rows):
        if isinstance(item, ArrivalRow):
            previous, activation = activation, item
            event = _arrival(item, revisions, current)
            by_ledger[item.ledger.id] = event
            events.append(event)
        elif isinstance(item, OperationRow):
            caused = None
            if (activation is not None and activation.ledger.id not in claimed and item.state == "applied"
                    and _only_between(rows, activation, index)
                    and _moved(item, activation, previous, revisions)):
                caused = activation
                claimed.add(activation.ledger.id)
                by_ledger[activation.ledger.id]["cause"] = {"operation_id": item.operation_id,
                                                            "trigger": item.trigger}
            event = _operation(item, previous if caused is not None else activation, caused, revisions)
            by_operation[item.operation_id] = event
            if caused is not None:  # causes first: the operation, then the arrival it made
                events.insert(events.index(by_ledger[caused.ledger.id]), event)
            else:
                events.append(event)
        else:
            events.append(_decision(item, seated))
    _decision_causes(events)
    _attach_runs(history, events, by_ledger, by_operation)
    return events


def _only_between(rows: list[tuple[float, int, Any]], arrival: ArrivalRow, index: int) -> bool:
    """Whether nothing but operations lies between `arrival` and row `index` (an operation that moved the task is
    marked in the arrival's transaction)."""
    for _seq, tag, item in reversed(rows[:index]):
        if item is arrival:
            return True
        if tag != 1:
            return False
    return False


def _decision_causes(events: list[dict[str, Any]]) -> None:
    """An arrival with route `decision` names the decision it followed (the latest one before it)."""
    last: dict[str, Any] | None = None
    for event in events:
        if event["type"] == "decision":
            last = event
        elif event["type"] == "arrival" and event["route"] == "decision" and last is not None:
            event["cause"] = {"decision_id": last["id"], "decider": last["decider"], "verdict": last["verdict"]}


def _attach_runs(history: TaskHistory, events: list[dict[str, Any]], by_ledger: dict[int, dict[str, Any]],
                 by_operation: dict[str, dict[str, Any]]) -> None:
    """Queued runs go with the operation that queued them, else with the entry they name; others stand alone."""
    loose = []
    for row in history.runs:
        owner = by_operation.get(row.run.operation_id or "") or (
            by_ledger.get(row.run.entry_id) if row.run.entry_id is not None and row.run.operation_id is None
            else None)
        if owner is not None:
            owner["runs"].append(_run(row))
        else:
            loose.append({"type": "run", **_run(row), "seq": row.seq})
    for run in loose:  # by time among the others (the memory store's times may tie: then after them)
        del run["seq"]
        at = run["at"]
        spot = next((i for i, e in enumerate(events) if e.get("at") is not None and at is not None and e["at"] > at),
                    len(events))
        events.insert(spot, run)
