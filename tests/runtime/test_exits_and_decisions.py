"""Leaving a step runs its `on_exit` handler, and decisions are checked and leave a record (docs/runtime.md §2).

On every route the runtime moves a task out of a step — a transition picked by `fire`, a
decision's compare-and-swap, a workflow switch, a host's `move` — the source step's `on_exit`
runs first, abort-on-first, with the session the move names; a failure there refuses the move.
Creation and same-step moves run no exit.  A decision's verdict must be one of three and an
agent's role a role of the plan; every stored decision leaves one `decision` record.
"""

from __future__ import annotations

from typing import Any

import pytest

from interlock.runtime import RuntimeFault, TaskState
from interlock.runtime.store import Participant

pytestmark = pytest.mark.async_runtime  # each harness test runs with a Runtime and an AsyncRuntime

PLAN_AND_BUILD = """
workflow pb "Plan & Build" {
  step plan "Plan" {
    start
    manual_move
    on on_enter { enable_plan_mode }
    on on_turn_complete { move_to_step(build) }
    on on_exit { disable_plan_mode }
  }
  step build "Build" {
    manual_move
    on on_turn_complete { move_to_step(plan) when quorum(reviewer, all_approve) }
  }
  step review "Review" {
    manual_move
    on on_turn_complete {
      move_to_step(plan) when quorum(reviewer, any_reject)
      move_to_step(build) when quorum(reviewer, all_approve)
    }
    on on_exit { disable_plan_mode }
  }
  step sign "Sign-off" {
    on on_turn_complete { move_to_step(gate) when quorum(approver, all_approve) requires_approval }
  }
  step gate "Gate" { manual_move }
}
workflow other "Other" { step start "Start" { start manual_move } }
"""


def start(h: Any, step: str = "plan") -> Any:
    rt = h.start(PLAN_AND_BUILD)
    h.store.put_task(TaskState("T", "pb", step, "Ship it"))
    return rt


def step_of(h: Any) -> str | None:
    task = h.store.get_task("T")
    return task.step_id if task else None


def exits(h: Any) -> list[Any]:
    return [c for c in h.recorder.calls if c.trigger == "on_exit"]


# ---- leaving a step ---------------------------------------------------------------------------------------

def test_a_transition_out_of_a_step_runs_its_exit_before_the_move_with_the_fire_session(harness: Any) -> None:
    h = harness
    rt = start(h)
    mark = h.mark()
    result = rt.fire("on_turn_complete", "T", session_id="S1", operation_id="turn:1")
    assert result.result == "dispatched" and step_of(h) == "build"
    (call,) = exits(h)
    assert (call.kind, call.step, call.session_id, call.operation_id) == ("disable_plan_mode", "plan", "S1", "turn:1")
    kinds = [(r.kind, r.fields.get("trigger")) for r in h.since(mark) if r.kind in ("dispatch", "arrival")]
    assert kinds == [("dispatch", "on_turn_complete"), ("dispatch", "on_exit"), ("arrival", None)]
    assert h.counter("exits") == 1


@pytest.mark.parametrize("route", ["manual_move", "workflow_switch"])
def test_a_hosts_move_and_a_workflow_switch_run_the_exit(harness: Any, route: str) -> None:
    h = harness
    rt = start(h)
    if route == "manual_move":
        result = rt.move("T", "build", session_id="S2")
    else:
        result = rt.switch_workflow("T", "other", session_id="S2")
    assert result.status == "moved"
    (call,) = exits(h)
    assert (call.kind, call.step, call.session_id) == ("disable_plan_mode", "plan", "S2")


def test_a_decision_that_moves_the_task_runs_the_exit(harness: Any) -> None:
    h = harness
    rt = start(h, "review")
    h.store.add_participant(Participant("T", "review", "reviewer", "rev-a"))
    result = rt.record_decision("T", agent="rev-a", role="reviewer", verdict="approved", session_id="S3")
    assert result.transitioned and step_of(h) == "build"
    (call,) = exits(h)
    assert (call.step, call.session_id) == ("review", "S3")


def test_creation_a_same_step_move_and_a_refused_move_run_no_exit(harness: Any) -> None:
    h = harness
    rt = h.start(PLAN_AND_BUILD)
    rt.create_task("T", "pb")
    assert rt.move("T", "plan").status == "same_step"
    assert rt.move("T", "sign").status == "refused"  # no manual_move at sign-off
    assert exits(h) == [] and step_of(h) == "plan"


def test_an_exit_that_fails_refuses_the_move_and_a_redelivery_retries_the_whole_list(harness: Any) -> None:
    h = harness
    rt = start(h)
    h.recorder.fail("disable_plan_mode", error="plan mode stuck")
    mark = h.mark()
    result = rt.fire("on_turn_complete", "T", session_id="S1", operation_id="turn:1")
    assert result.result == "error" and "plan mode stuck" in (result.error or "")
    assert step_of(h) == "plan" and h.store.ledger("T") == []
    assert not h.store.operation_applied("turn:1")
    (error,) = [r for r in h.since(mark, "dispatch") if r.level == "error"]
    assert error.fields["trigger"] == "on_exit" and error.fields["failed_kind"] == "disable_plan_mode"
    again = rt.fire("on_turn_complete", "T", session_id="S1", operation_id="turn:1")
    assert again.result == "dispatched" and step_of(h) == "build"
    assert [c.kind for c in exits(h)] == ["disable_plan_mode", "disable_plan_mode"]
    assert h.store.operation_applied("turn:1")


def test_an_exit_that_fails_refuses_a_hosts_move(harness: Any) -> None:
    h = harness
    rt = start(h)
    h.recorder.panic("disable_plan_mode", error="boom")
    result = rt.move("T", "build")
    assert result.status == "refused" and "boom" in (result.reason or "")
    assert step_of(h) == "plan" and h.store.ledger("T") == []
    assert [r.fields["kind"] for r in h.records("error")] == ["disable_plan_mode"]
    assert rt.move("T", "build").status == "moved"


def test_an_exit_that_fails_refuses_a_decisions_move_and_the_decision_record_says_so(harness: Any) -> None:
    h = harness
    rt = start(h, "review")
    h.store.add_participant(Participant("T", "review", "reviewer", "rev-a"))
    h.recorder.fail("disable_plan_mode")
    result = rt.record_decision("T", agent="rev-a", role="reviewer", verdict="approved")
    assert not result.transitioned and step_of(h) == "review"
    (record,) = h.records("decision")
    assert record.fields["result"] == "refused"


def test_a_missing_exit_executor_warns_and_the_move_goes_on(harness: Any) -> None:
    h = harness
    rt = h.start(PLAN_AND_BUILD, missing=("disable_plan_mode",))
    h.store.put_task(TaskState("T", "pb", "plan"))
    assert rt.move("T", "build").status == "moved"
    (warning,) = h.records("warning")
    assert warning.fields["code"] == "no_executor" and warning.fields["kind"] == "disable_plan_mode"


# ---- decisions are checked and visible --------------------------------------------------------------------

@pytest.mark.parametrize("kwargs, message", [
    ({"agent": "rev-a", "role": "reviewer", "verdict": "LGTM"}, "approved, rejected, changes_requested"),
    ({"agent": "rev-a", "role": "reviewer", "verdict": "approve"}, "is not a verdict"),
    ({"agent": "rev-a", "role": "not_a_role", "verdict": "approved"}, "not a role of the plan"),
    ({"agent": "rev-a", "role": "reviewer", "verdict": None}, "is not a verdict"),
    ({"agent": "rev-a", "role": 7, "verdict": "approved"}, "role must be a string"),
    ({"user": "u1", "role": "ghost", "verdict": "rejected"}, "not a role of the plan"),
])
def test_a_decision_with_a_bad_verdict_or_role_is_refused_and_nothing_is_stored(harness: Any,
                                                                              kwargs: dict[str, Any],
                                                                              message: str) -> None:
    h = harness
    rt = start(h, "review")
    with pytest.raises(RuntimeFault, match=message):
        rt.record_decision("T", **kwargs)
    assert h.store.decisions("T", "review") == [] and h.records("decision") == []


def test_every_decision_leaves_a_record_that_says_what_happened(harness: Any) -> None:
    h = harness
    rt = start(h, "review")
    for agent in ("rev-a", "rev-b"):
        h.store.add_participant(Participant("T", "review", "reviewer", agent))
    rt.record_decision("T", agent="outsider", role="reviewer", verdict="approved")
    rt.record_decision("T", agent="rev-a", role="reviewer", verdict="approved", session_id="S1")
    rt.record_decision("T", agent="rev-b", role="reviewer", verdict="approved")
    records = [r.fields for r in h.records("decision")]
    assert [(f["agent"], f["verdict"], f["seated"], f["result"]) for f in records] == [
        ("outsider", "approved", False, "ignored"),
        ("rev-a", "approved", True, "pending"),
        ("rev-b", "approved", True, "moved"),
    ]
    assert all(f["task"] == "T" and f["step"] == "review" and f["role"] == "reviewer" for f in records)
    assert records[1]["session"] == "S1"


def test_a_users_rejection_is_a_veto_not_ignored(harness: Any) -> None:
    h = harness
    rt = start(h, "review")
    rt.record_decision("T", user="u1", verdict="changes_requested")
    (record,) = h.records("decision")
    assert record.fields["user"] == "u1" and record.fields["result"] == "moved" and step_of(h) == "plan"


def test_a_satisfied_quorum_on_a_requires_approval_transition_is_recorded_as_approval_required(harness: Any) -> None:
    h = harness
    rt = start(h, "sign")
    h.store.add_participant(Participant("T", "sign", "approver", "boss"))
    result = rt.record_decision("T", agent="boss", role="approver", verdict="approved")
    assert not result.transitioned and step_of(h) == "sign"
    (record,) = h.records("decision")
    assert record.fields["result"] == "approval_required" and record.fields["seated"] is True
