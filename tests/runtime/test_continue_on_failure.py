"""`continue_on_failure` at run time (ADR 0042, docs/runtime.md §2): on every abort-on-first trigger — a `fire`, a
dispatch sequence's fire, a step's `on_exit` — a failing action written with the flag is recorded as a failure
(counters, a `warning` record with code `action_failed` saying `continued`, the `dispatch` record and the result list it) and the walk goes on; without
the flag the first failure still aborts.  Step entry is record-and-continue whatever the flag says.
"""

from __future__ import annotations

from typing import Any

import pytest

from interlock.runtime import TaskState


def action_failed(records: list[Any], *, continued: bool | None = None) -> list[Any]:
    """The `warning` records with code `action_failed` (docs/runtime.md §7: every failed action leaves one), those
    of failures continued from (`continued=True`) or that aborted or were recorded (`False`)."""
    return [r for r in records if r.kind == "warning" and r.fields.get("code") == "action_failed"
            and (continued is None or bool(r.fields.get("continued")) == continued)]


HOST = ("set_workflow_data", "run_script", "create_child_task", "page_oncall", "auto_start_agent", "disable_plan_mode")

FLOW = """
task page_oncall (note: str = "") on on_agent_error
workflow ci "CI" {
  step build "Build" {
    start
    manual_move
    on on_turn_complete {
      run_script(command: "make lint", timeout_seconds: 60) continue_on_failure
      set_workflow_data(key: "linted", value: true)
      move_to_step(review)
    }
    on on_comment {
      set_workflow_data(key: "a", value: 1) continue_on_failure
      create_child_task(title: "follow-up") continue_on_failure
      set_workflow_data(key: "b", value: 2)
    }
    on on_agent_error {
      page_oncall(note: "agent failed") continue_on_failure
      queue_run(target: primary, reason: "agent_error")
    }
    on on_exit { run_script(command: "make clean") continue_on_failure }
  }
  step strict "Strict" {
    manual_move
    on on_turn_complete {
      run_script(command: "make lint")
      set_workflow_data(key: "linted", value: true)
      move_to_step(review)
    }
    on on_exit { run_script(command: "make clean") }
  }
  step guarded "Guarded" {
    manual_move
    on on_turn_complete {
      run_script(command: "make lint") continue_on_failure
      move_to_step(review) when quorum(reviewer, any_reject)
      move_to_step(build)
    }
  }
  step review "Review" {
    manual_move
    on on_enter {
      run_script(command: "make docs") continue_on_failure
      queue_run(target: primary, reason: "review")
    }
  }
}
"""


def start(h: Any, step: str = "build") -> Any:
    rt = h.start(FLOW, host=HOST)
    h.store.put_task(TaskState("T1", "ci", step))
    return rt


def test_a_flagged_failure_is_recorded_and_the_handler_goes_on(harness: Any) -> None:
    h = harness
    rt = start(h)
    h.recorder.fail("run_script", error="lint failed")
    mark = h.mark()
    result = rt.fire("on_turn_complete", "T1", session_id="S1", operation_id="op-1")
    assert result.result == "dispatched"
    assert result.failed == (("run_script", "lint failed"),)
    assert result.actions == ("run_script", "set_workflow_data")
    assert result.arrival is not None and result.arrival.to_step == "review"
    assert h.recorder.kinds()[:2] == ["run_script", "set_workflow_data"]
    assert h.store.get_task("T1").step_id == "review"  # type: ignore[union-attr]
    (failed,) = action_failed(h.since(mark), continued=True)
    assert (failed.level, failed.fields["kind"], failed.fields["error"], failed.fields["trigger"],
            failed.fields["step"], failed.fields["operation_id"]) == \
        ("warning", "run_script", "lint failed", "on_turn_complete", "build", "op-1")
    dispatch = [r for r in h.since(mark, "dispatch") if r.fields["trigger"] == "on_turn_complete"]
    assert [(r.level, r.fields.get("failed")) for r in dispatch] == [("info", [["run_script", "lint failed"]])]
    assert h.counter("failures_continued") == 1 and h.counter("executor_failures") == 1
    # the operation took effect: a redelivery runs nothing again, the failed script included
    again = rt.fire("on_turn_complete", "T1", session_id="S1", operation_id="op-1")
    assert again.result == "idempotent"
    assert [c.args["command"] for c in h.recorder.of("run_script")] == ["make lint", "make clean", "make docs"]


def test_without_the_flag_the_first_failure_still_aborts(harness: Any) -> None:
    h = harness
    rt = start(h, "strict")
    h.recorder.fail("run_script", error="lint failed")
    result = rt.fire("on_turn_complete", "T1", operation_id="op-1")
    assert (result.result, result.error, result.failed) == ("error", "lint failed", ())
    assert h.recorder.kinds() == ["run_script"]
    assert h.store.get_task("T1").step_id == "strict"  # type: ignore[union-attr]
    assert h.counter("failures_continued") == 0
    assert action_failed(h.records(), continued=True) == []
    assert [r.fields["kind"] for r in action_failed(h.records(), continued=False)] == ["run_script"]


def test_every_flagged_failure_is_listed_in_order(harness: Any) -> None:
    h = harness
    rt = start(h)
    h.recorder.fail("set_workflow_data", error="store refused")
    h.recorder.panic("create_child_task", error="boom")
    result = rt.fire("on_comment", "T1", payload={"comment_id": "c", "author_id": "u", "body": "hi"})
    assert result.result == "dispatched"
    assert result.failed == (("set_workflow_data", "store refused"), ("create_child_task", "RuntimeError: boom"))
    assert h.recorder.kinds() == ["set_workflow_data", "create_child_task", "set_workflow_data"]
    assert [r.fields["kind"] for r in action_failed(h.records(), continued=True)] == ["set_workflow_data", "create_child_task"]
    (fault,) = h.records("error")  # an unexpected exception keeps its own error record as well
    assert fault.fields["kind"] == "create_child_task"


def test_a_guarded_walk_continues_past_a_flagged_failure(harness: Any) -> None:
    h = harness
    rt = start(h, "guarded")
    h.recorder.fail("run_script")
    result = rt.fire("on_turn_complete", "T1")
    assert (result.result, result.failed) == ("dispatched", (("run_script", "simulated failure"),))
    assert result.arrival is not None and result.arrival.to_step == "build"  # the guard did not hold


def test_a_dispatch_sequence_fire_continues(harness: Any) -> None:
    h = harness
    rt = start(h)
    h.recorder.fail("page_oncall", error="pager down")
    out = rt.dispatch("agent_error", {"task_id": "T1", "session_id": "S1", "execution_id": "E1",
                                      "agent_profile_id": "p", "error_message": "x", "user_initiated": False},
                      host={"engine_ready": True})
    # no session loader: the sequence's `load session` fails first; with loaders it reaches the fire
    if out.result == "error":
        h.rt.loaders.update(session=lambda sid, ev: {"id": sid, "task_id": "T1", "agent_profile_id": "p",
                                                     "state": "done"},
                            task=lambda tid, ev: {"id": tid, "workflow_id": "ci", "workflow_step_id": "build",
                                                  "description": "", "is_from_office": False,
                                                  "is_ephemeral": False, "archived": False,
                                                  "other_working_session": ""})
        out = rt.dispatch("agent_error", {"task_id": "T1", "session_id": "S1", "execution_id": "E2",
                                          "agent_profile_id": "p", "error_message": "x", "user_initiated": False})
    assert out.result == "dispatched", out
    assert out.fire is not None and out.fire.failed == (("page_oncall", "pager down"),)
    assert h.runs("T1") == [("T1", "primary", "agent_error")]


def test_a_flagged_exit_failure_does_not_refuse_the_move(harness: Any) -> None:
    h = harness
    rt = start(h)
    h.recorder.fail("run_script", error="clean failed")
    moved = rt.move("T1", "strict")
    assert moved.status == "moved"
    exits = [r for r in h.records("dispatch") if r.fields["trigger"] == "on_exit"]
    assert [(r.level, r.fields.get("failed")) for r in exits] == [("info", [["run_script", "clean failed"]])]
    assert [r.fields["trigger"] for r in action_failed(h.records(), continued=True)] == ["on_exit"]
    assert h.counter("exits") == 1 and h.counter("exits_refused") == 0


def test_an_exit_failure_without_the_flag_still_refuses_the_move(harness: Any) -> None:
    h = harness
    rt = start(h, "strict")
    h.recorder.fail("run_script", error="clean failed")
    refused = rt.move("T1", "build")
    assert (refused.status, refused.reason) == ("refused", "on_exit: clean failed")


def test_on_entry_the_flag_changes_nothing_it_is_record_and_continue(harness: Any) -> None:
    h = harness
    rt = start(h, "guarded")  # a step without an exit handler
    h.recorder.fail("run_script", error="docs failed")
    moved = rt.move("T1", "review")
    assert moved.entry is not None
    assert moved.entry.attempted == ("run_script", "queue_run")
    assert moved.entry.failed == (("run_script", "docs failed"),)
    assert h.runs("T1") == [("T1", "primary", "review")]
    # entry failures live in the entry record, and are loud like every failure (none is `continued`: entry is
    # record-and-continue anyway)
    assert [r.fields["kind"] for r in action_failed(h.records())] == ["run_script"]
    assert action_failed(h.records(), continued=True) == []


@pytest.mark.parametrize("flag", [True, False])
def test_the_plan_carries_the_flag(memory_harness: Any, flag: bool) -> None:
    h = memory_harness
    start(h)
    assert h.plan is not None
    steps = {s.id: s for s in h.plan.workflows[0].steps}
    step = steps["build" if flag else "strict"]
    (script, *_rest) = step.handlers["on_turn_complete"]
    assert script.continue_on_failure is flag
