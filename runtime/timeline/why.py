"""A timeline in, answers out: why the task is on its step, and why each thing that did not run did not (ADR 0046).

Every answer is built from the timeline's events and state, so it says no more than the store's rows do;
`subject` names what it is about (a step, an entry kind, a trigger, a transition), so `--why KIND` can pick.
"""

from __future__ import annotations

from typing import Any

__all__ = ["answers"]


def _ago(seconds: float) -> str:
    s = int(abs(seconds))
    text = f"{s // 86400}d{s % 86400 // 3600}h" if s >= 86400 else \
        f"{s // 3600}h{s % 3600 // 60:02d}m" if s >= 3600 else f"{s // 60}m{s % 60:02d}s" if s >= 60 else f"{s}s"
    return text


def _on_step(doc: dict[str, Any]) -> dict[str, Any]:
    """Why the task is on its step: the arrival that put it there, and what it waits for to leave."""
    task = doc["task"]
    arrival = next((e for e in doc["events"] if e["type"] == "arrival" and e["current"]), None)
    lines = []
    if arrival is None:
        lines.append("no arrival put it there: it was written as pre-existing state (no ledger row)")
    else:
        cause = arrival["cause"] or {}
        by = (f", by operation {cause['operation_id']!r} (trigger {cause['trigger']})" if "operation_id" in cause
              else f", after decision #{cause['decision_id']} ({cause['decider']} {cause['verdict']})"
              if "decision_id" in cause else "")
        lines.append(f"arrival #{arrival['ledger_id']} ({arrival['route']}{by}) moved it from "
                     f"{arrival['from'] or '(nowhere)'} to {arrival['to']} as {arrival['actor']}, "
                     f"under plan revision {(arrival['plan'] or 'unknown').rpartition(':')[2][:12]}")
    for q in doc["quorum"]:
        state = "satisfied" if q["satisfied"] else f"not satisfied ({q['reason']})"
        tail = "; a person must move it (requires_approval)" if q["requires_approval"] and q["satisfied"] else ""
        lines.append(f"{q['trigger']} -> {q['to']} waits for {q['guard']}: {q['received']} of {q['required']} "
                     f"{'vetoes' if q['threshold'] == 'any_reject' else 'approvals'}, {state}{tail}")
    for t in doc["timers"]:
        if t["current"] and t["kind"] != "retry":
            when = f"due in {_ago(t['due_in'])}" if t["due_in"] > 0 else f"overdue by {_ago(t['due_in'])}"
            lines.append(f"timer `{t['label']}` (slot {t['slot']}) is {when}")
    for i in doc["incidents"]:
        if i["state"] != "resolved":
            lines.append(f"incident #{i['id']} is {i['state']}: {i['error']}")
    return {"question": f"why is {task['id']} on {task['step']}?", "subject": task["step"], "answer": lines}


def _entry_answers(event: dict[str, Any], doc: dict[str, Any]) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    entry = event["entry"]
    if entry is None:
        return out
    step = event["to"]
    for kind in entry["excluded"] or ():
        out.append({"question": f"why did {kind} not run on entry #{event['ledger_id']} ({step})?",
                    "subject": kind, "answer": [f"excluded by the entry policy: the host runs `{kind}` itself "
                                                "(it is never dispatched, nor recorded as skipped)"]})
    for action in entry["actions"]:
        kind, result = action["kind"], action["result"]
        if result == "ran":
            continue
        lines = {"failed": [f"it failed: {action['error']}" + (f" (attempt {action['attempt']})"
                                                               if action["attempt"] else "")],
                 "in_progress": ["it is still running (or its owner died: `recover` runs it again)"],
                 "pending": ["the entry is not recorded yet: `recover` dispatches it"],
                 "not_run": ["the entry record does not list it as attempted"]}[result]
        for i in doc["incidents"]:
            if i["entry_id"] == event["ledger_id"] and any(f["kind"] == kind for f in i["failures"]):
                lines.append(f"incident #{i['id']} is {i['state']}" + (f" ({i['resolution']})"
                                                                       if i["resolution"] else ""))
        for t in doc["timers"]:
            if t["kind"] == "retry" and t["entry_id"] == event["ledger_id"] and t["position"] == action["position"]:
                lines.append(f"a retry (attempt {t['slot']}) is due in {_ago(t['due_in'])}")
        out.append({"question": f"why did {kind} not run on entry #{event['ledger_id']} ({step})?",
                    "subject": kind, "answer": lines})
    return out


def _operation_answers(event: dict[str, Any]) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    words = {"guard_false": "its guard `{guard}` was false when {op} was applied",
             "approval_required": "it requires approval: a person must move the task",
             "not_reached": "an earlier transition of the handler was taken",
             "same_step": "it targets the step the task was on",
             "not_evaluated": "the operation is still running"}
    for t in event["transitions"]:
        if t["result"] == "taken":
            continue
        op = f"operation {event['operation_id']!r}"
        out.append({"question": f"why did {event['trigger']} on {event['step']} not move the task to {t['to']}?",
                    "subject": event["trigger"], "answer": [words[t["result"]].format(guard=t["guard"], op=op)]})
    return out


def answers(doc: dict[str, Any]) -> list[dict[str, Any]]:
    """The answers of a timeline document (`Timeline.to_json()` without `why`)."""
    out = [_on_step(doc)]
    for event in doc["events"]:
        if event["type"] == "arrival":
            out += _entry_answers(event, doc)
        elif event["type"] == "operation":
            out += _operation_answers(event)
        elif event["type"] == "decision" and event["state"] == "superseded":
            out.append({"question": f"why does decision #{event['id']} ({event['decider']} {event['verdict']}) "
                                    "not count?", "subject": event["decider"],
                        "answer": ["it was superseded: by a later decision of the same decider and role, or cleared "
                                   "by the step's `clear_decisions`"]})
        elif event["type"] == "decision" and event["seated"] is False:
            out.append({"question": f"why does decision #{event['id']} ({event['decider']} {event['verdict']}) "
                                    "not count?", "subject": event["decider"],
                        "answer": [f"{event['decider']} holds no {event['role']} seat: approve-style thresholds "
                                   "ignore it"]})
    for i in doc["incidents"]:
        if i["kind"] == "operation" and i["state"] != "resolved":
            out.append({"question": f"why did operation {i['operation_id']!r} ({i['trigger']}) not take effect?",
                        "subject": i["trigger"], "answer": [f"its delivery aborted: {i['error']} (after "
                                                            f"{i['attempts']} attempt(s)); incident #{i['id']} "
                                                            f"is {i['state']}"]})
    return out
