"""Guards on transitions (docs/language.md §6, ADR 0038): a transition's `when` reads the delivery's payload, the
task as the store holds it and the host flags, and combines quorums; `fire` takes the first transition whose guard
holds, a decision re-evaluates the transitions whose guard counts decisions, and every guard evaluated is listed,
in order, in the `guards` field of the `dispatch` or `decision` record."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from interlock.compiler import compile_source
from interlock.dsl import SourceFile
from interlock.runtime import TaskState
from interlock.runtime.plan import Plan, PlanError, dump_plan, load_plan, seal_digests

ROOT = Path(__file__).resolve().parents[2]

ROUTES = """
workflow w "W" {
  step wait "Wait" {
    start
    manual_move
    on on_approval_resolved {
      move_to_step(done) when payload.status == "approved" and not task.is_from_office
      move_to_step(office) when payload.status == "approved"
      move_to_step(back) when payload.status != "approved" and host.engine_ready
    }
    on on_comment {
      clear_decisions
      move_to_step(done) when payload.body == "ship it"
      queue_run(target: workspace.ceo_agent, reason: "after the guard")
    }
    on on_turn_complete {
      move_to_step(done) when quorum(reviewer, all_approve) and task.description != "hold"
      move_to_step(back) when task.description == "bounce"
    }
  }
  step office "Office" { manual_move }
  step back "Back" { manual_move }
  step done "Done" { manual_move terminal }
}
"""


def approval(status: str) -> dict[str, str]:
    return {"approval_id": "ap-1", "status": status, "note": ""}


def step_of(h: Any, task: str = "T") -> str | None:
    t = h.store.get_task(task)
    return t.step_id if t else None


@pytest.mark.parametrize(("status", "office", "flags", "to"), [
    ("approved", False, {}, "done"),
    ("approved", True, {}, "office"),              # the first guard reads the task: not this one
    ("rejected", False, {}, "back"),
    ("rejected", False, {"engine_ready": False}, "wait"),  # the host flag: no guard holds, the task stays
])
def test_fire_takes_the_first_transition_whose_guard_holds(harness: Any, status: str, office: bool,
                                                           flags: dict[str, Any], to: str) -> None:
    h = harness
    rt = h.start(ROUTES, host_flags=flags)
    h.store.put_task(TaskState("T", "w", "wait", "", is_from_office=office))
    result = rt.fire("on_approval_resolved", "T", payload=approval(status), operation_id="ap:1")
    assert result.result == "dispatched"
    assert step_of(h) == to


def test_host_flags_are_read_live(memory_harness: Any) -> None:
    h = memory_harness
    rt = h.start(ROUTES)
    h.store.put_task(TaskState("T", "w", "wait", ""))
    rt.host["engine_ready"] = False  # the runtime's live flags, as dispatch sequences read them
    rt.fire("on_approval_resolved", "T", payload=approval("rejected"))
    assert step_of(h) == "wait"
    rt.host["engine_ready"] = True
    rt.fire("on_approval_resolved", "T", payload=approval("rejected"))
    assert step_of(h) == "back"


def test_the_dispatch_record_lists_every_guard_evaluated_in_order(memory_harness: Any) -> None:
    h = memory_harness
    rt = h.start(ROUTES)
    h.store.put_task(TaskState("T", "w", "wait", "", is_from_office=True))
    mark = h.mark()
    rt.fire("on_approval_resolved", "T", payload=approval("approved"))
    (record,) = h.since(mark, "dispatch")
    assert record.fields["guards"] == [{"position": 0, "to": "done", "result": False},
                                       {"position": 1, "to": "office", "result": True}]


def test_a_handler_without_guards_lists_none(memory_harness: Any) -> None:
    h = memory_harness
    rt = h.start(ROUTES)
    h.store.put_task(TaskState("T", "w", "office", ""))
    mark = h.mark()
    rt.fire("on_comment", "T", payload={"comment_id": "c", "author_id": "u", "body": ""})
    assert [r.fields["guards"] for r in h.since(mark, "dispatch")] == [[]]


def test_an_aborted_walk_still_lists_the_guards_evaluated_before_the_failure(memory_harness: Any) -> None:
    h = memory_harness
    rt = h.start(ROUTES)
    h.store.put_task(TaskState("T", "w", "wait", ""))
    h.recorder.fail("queue_run")  # the action after the guard fails
    rt.fire("on_comment", "T", payload={"comment_id": "c", "author_id": "u", "body": "ship it"},
            operation_id="c:1")
    (record,) = [r for r in h.records("dispatch") if r.level == "error"]
    assert record.fields["guards"] == [{"position": 1, "to": "done", "result": True}]
    assert step_of(h) == "wait"  # aborted: no move


def test_a_false_guard_counts_a_skip(memory_harness: Any) -> None:
    h = memory_harness
    rt = h.start(ROUTES)
    h.store.put_task(TaskState("T", "w", "wait", ""))
    rt.fire("on_comment", "T", payload={"comment_id": "c", "author_id": "u", "body": "not yet"})
    assert rt.counters.guard_skips == {"guard:false": 1}


def test_a_quorum_the_other_side_decides_is_never_read(memory_harness: Any) -> None:
    h = memory_harness
    rt = h.start(ROUTES)
    h.store.put_task(TaskState("T", "w", "wait", "hold"))
    h.seat("wait", "reviewer", "rev-a")
    reads: list[str] = []
    participants = h.store.participants

    def counting(*args: Any, **kwargs: Any) -> Any:
        reads.append("participants")
        return participants(*args, **kwargs)

    h.store.participants = counting  # type: ignore[method-assign]
    rt.fire("on_turn_complete", "T")
    # `quorum(…) and task.description != "hold"`: the quorum is read first (written first) and fails
    assert reads == ["participants"] and step_of(h) == "wait"
    assert rt.counters.guard_skips["quorum:threshold_not_met"] == 1


def test_a_decision_re_evaluates_the_guards_that_count_decisions(harness: Any) -> None:
    h = harness
    rt = h.start(ROUTES)
    h.seat("wait", "reviewer", "rev-a")
    h.store.put_task(TaskState("T", "w", "wait", "bounce"))  # the second guard holds, but counts no decision
    mark = h.mark()
    result = rt.record_decision("T", agent="rev-a", role="reviewer", verdict="approved")
    assert result.transitioned and step_of(h) == "done"
    (record,) = h.since(mark, "decision")
    assert record.fields["result"] == "moved"
    assert record.fields["guards"] == [{"position": 0, "to": "done", "result": True}]


def test_a_decision_does_not_move_when_the_rest_of_the_guard_fails(harness: Any) -> None:
    h = harness
    rt = h.start(ROUTES)
    h.seat("wait", "reviewer", "rev-a")
    h.store.put_task(TaskState("T", "w", "wait", "hold"))
    mark = h.mark()
    result = rt.record_decision("T", agent="rev-a", role="reviewer", verdict="approved")
    assert not result.transitioned and step_of(h) == "wait"
    (record,) = h.since(mark, "decision")
    assert (record.fields["result"], record.fields["guards"]) == (
        "pending", [{"position": 0, "to": "done", "result": False}])


def test_a_quorum_only_guard_is_recorded_too(memory_harness: Any) -> None:
    h = memory_harness
    rt = h.start()  # Office Default: quorum-only guards (the plan's `guard`)
    h.seat("review", "reviewer", "rev-a")
    h.store.put_task(TaskState("T", "office_default", "review", ""))
    mark = h.mark()
    rt.record_decision("T", agent="rev-a", role="reviewer", verdict="approved")
    (record,) = h.since(mark, "decision")
    assert record.fields["guards"] == [{"position": 0, "to": "approval", "result": True}]


# ---- the plan's guard expression ------------------------------------------------------------------


def _plan(text: str) -> Plan:
    result = compile_source(SourceFile("t.wf", text))
    assert result.plan is not None, [str(d) for d in result.diagnostics]
    return result.plan


def _edited(edit: Any) -> str:
    """The ROUTES plan as JSON, edited by `edit(data)` and given a fresh digest (a hand-edited plan)."""
    data = json.loads(dump_plan(_plan(ROUTES)))
    edit(data)
    data.update(seal_digests(data))
    return json.dumps(data)


def _handler(data: dict[str, Any], trigger: str) -> list[dict[str, Any]]:
    handlers: list[dict[str, Any]] = data["workflows"][0]["steps"][0]["handlers"][trigger]
    return handlers


@pytest.mark.parametrize(("edit", "problem"), [
    (lambda d: _handler(d, "on_comment")[1]["when"].update(left={"op": "path", "path": ["event", "body"],
                                                                 "type": "str"}),
     "guard reads `event.body`"),
    (lambda d: _handler(d, "on_comment")[1]["when"].update(left={"op": "path", "path": ["payload", "nope"],
                                                                 "type": "str"}),
     "which `payload` does not have"),
    (lambda d: _handler(d, "on_turn_complete")[0]["when"].update(
        left={"op": "quorum", "role": "nobody", "threshold": "all_approve", "count": None}),
     "undeclared role `nobody`"),
    (lambda d: _handler(d, "on_comment")[0].update(when={"op": "lit", "value": True}),
     "is not a transition but has a `when`"),
    (lambda d: _handler(d, "on_comment")[1].update(guard={"role": "reviewer", "threshold": "all_approve",
                                                          "count": None,
                                                          "source": {"file": "t.wf", "line": 1, "col": 1}}),
     "has both a `guard` and a `when`"),
    (lambda d: d["sequences"][0]["steps"][0].update(
        when={"op": "quorum", "role": "reviewer", "threshold": "all_approve", "count": None}),
     "`quorum(…)` outside a transition's guard"),
])
def test_a_hand_edited_guard_is_refused_on_load(edit: Any, problem: str) -> None:
    with pytest.raises(PlanError, match="references do not resolve") as info:
        load_plan(_edited(edit))
    assert problem in str(info.value)


def test_a_plan_without_expression_guards_has_no_when_key() -> None:
    """An action without an expression guard is written as before: old plans and their digests stay as they
    were (ADR 0038), and such a plan still loads."""
    def keys(plan: Plan) -> set[str]:
        data = json.loads(dump_plan(plan))
        return {k for wf in data["workflows"] for s in wf["steps"] for acts in s["handlers"].values()
                for a in acts for k in a}

    office = _plan((ROOT / "examples" / "routine.wf").read_text(encoding="utf-8"))
    assert "when" not in keys(office) and "guard" in keys(office)
    assert load_plan(dump_plan(office)) == office
    routes = _plan(ROUTES)
    assert "when" in keys(routes) and load_plan(dump_plan(routes)) == routes
