"""Other triggers (docs/runtime.md §2): abort-on-first, first eligible transition wins, quorum guards,
durable operation markers, transitions applied as arrivals, the missing-executor warning
and the dispatch records.

Store-parametrised where the claim is about durable state (markers, restarts, arrivals).
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from typing import Any

import pytest

from interlock.runtime import StoreError, TaskState
from interlock.runtime.store import Store

pytestmark = pytest.mark.async_runtime  # each harness test runs with a Runtime and an AsyncRuntime

FIRE = """
workflow f "F" {
  step a "A" {
    start
    manual_move
    on on_comment {
      set_workflow_data(key: "k", value: "v")
      queue_run(target: primary, reason: "commented")
      create_child_task(title: "child")
    }
    on on_turn_complete {
      set_workflow_data(key: "k", value: "done")
      create_child_task(title: "child")
      move_to_step(b)
    }
    on on_turn_start { move_to_step(b) requires_approval  move_to_step(c) }
    on on_blocker_resolved { move_to_next  move_to_step(c) }
    on on_children_completed {
      move_to_step(b) when quorum(reviewer, all_approve)
      move_to_step(c) when quorum(reviewer, any_reject)
    }
    on on_heartbeat { set_workflow_data(key: "beat", value: 1)  move_to_step(a) }
    on on_approval_resolved { auto_start_agent  queue_run(target: primary, reason: "approved") }
    on on_budget_alert { run_it  queue_run(target: primary, reason: "budget") }
  }
  step b "B" {
    manual_move
    on on_enter { queue_run(target: primary, reason: "entered_b") }
  }
  step c "C" {
    manual_move
    on on_enter { queue_run(target: primary, reason: "entered_c") }
  }
}
task run_it on on_budget_alert
"""

COMMENT = {"comment_id": "c1", "author_id": "u1", "body": "hello"}


def start(h: Any, step: str = "a") -> Any:
    rt = h.start(FIRE)
    h.store.put_task(TaskState("T", "f", step, "Fix the login bug"))
    return rt


def step_of(store: Store, task: str = "T") -> str | None:
    t = store.get_task(task)
    return t.step_id if t else None


def only_silent(records: list[Any]) -> bool:
    return all(r.level == "silent" for r in records)


# ---- abort-on-first -----------------------------------------------------------------------------

def test_executor_error_aborts_the_rest_and_leaves_the_operation_unmarked(harness: Any) -> None:
    h = harness
    rt = start(h)
    h.recorder.fail("queue_run", error="queue down")
    mark = h.mark()
    result = rt.fire("on_comment", "T", session_id="S1", payload=COMMENT, operation_id="task_comment:c1")
    assert result.result == "error" and result.error == "queue down"
    assert result.actions == ("set_workflow_data",)  # what ran before the failure
    assert h.recorder.kinds() == ["set_workflow_data", "queue_run"]  # create_child_task never ran
    assert not h.store.operation_applied("task_comment:c1")
    (dispatch,) = h.since(mark, "dispatch")
    assert dispatch.level == "error" and dispatch.message == "trigger dispatch aborted"
    assert dispatch.fields["failed_kind"] == "queue_run" and dispatch.fields["error"] == "queue down"
    # the redelivery re-runs the whole list from the start, the succeeded action included
    again = rt.fire("on_comment", "T", session_id="S1", payload=COMMENT, operation_id="task_comment:c1")
    assert again.result == "dispatched"
    assert h.recorder.kinds() == ["set_workflow_data", "queue_run", "set_workflow_data", "queue_run",
                                  "create_child_task"]
    assert h.store.operation_applied("task_comment:c1")
    assert h.runs("T") == [("T", "primary", "commented")]


def test_failing_turn_complete_action_aborts_before_the_transition(harness: Any) -> None:
    """Fact 65 / AC-001.6: abort-on-first is unchanged for every trigger but entry."""
    h = harness
    rt = start(h)
    h.recorder.fail("set_workflow_data")
    result = rt.fire("on_turn_complete", "T", session_id="S1", operation_id="turn:1")
    assert result.result == "error" and result.arrival is None
    assert h.recorder.kinds() == ["set_workflow_data"]
    assert step_of(h.store) == "a" and h.store.ledger("T") == []
    again = rt.fire("on_turn_complete", "T", session_id="S1", operation_id="turn:1")
    assert again.result == "dispatched" and step_of(h.store) == "b"


# ---- transitions --------------------------------------------------------------------------------

def test_transition_is_an_arrival_and_the_destination_entry_runs(harness: Any) -> None:
    h = harness
    rt = start(h)
    result = rt.fire("on_turn_complete", "T", session_id="S1", operation_id="turn:1")
    assert result.result == "dispatched" and result.arrival is not None
    assert result.arrival.status == "moved" and result.arrival.entry is not None
    (row,) = h.store.ledger("T")
    assert (row.from_step_id, row.to_step_id, row.route) == ("a", "b", "engine_transition")
    assert row.session_id == "S1" and row.actor_kind == "agent"
    assert h.store.entry_record(row.id) is not None
    assert h.runs("T") == [("T", "primary", "entered_b")]
    assert h.store.operation_applied("turn:1")
    # the transition's actions ran before the move
    assert h.recorder.kinds() == ["set_workflow_data", "create_child_task", "queue_run"]


def test_first_eligible_transition_wins(harness: Any) -> None:
    h = harness
    rt = start(h)
    result = rt.fire("on_blocker_resolved", "T", session_id="S1", operation_id="b:1",
                     payload={"resolved_blocker_ids": ["x"]})
    assert result.arrival is not None and result.arrival.to_step == "b"
    assert step_of(h.store) == "b"
    assert [r.to_step_id for r in h.store.ledger("T")] == ["b"]
    assert h.runs("T") == [("T", "primary", "entered_b")]


def test_requires_approval_never_fires_but_the_next_eligible_transition_may(harness: Any) -> None:
    h = harness
    rt = start(h)
    result = rt.fire("on_turn_start", "T", session_id="S1", operation_id="ts:1")
    assert result.arrival is not None and result.arrival.to_step == "c"
    assert [r.to_step_id for r in h.store.ledger("T")] == ["c"]
    assert h.records("warning") == []  # a requires_approval transition is no missing executor


def test_quorum_guards_pick_the_transition(harness: Any) -> None:
    h = harness
    rt = start(h)
    h.seat("a", "reviewer", "rev-a")
    h.seat("a", "reviewer", "rev-b")
    payload = {"child_summaries": []}
    waiting = rt.fire("on_children_completed", "T", session_id="S1", payload=payload, operation_id="cc:1")
    assert waiting.result == "dispatched" and waiting.arrival is None and step_of(h.store) == "a"
    assert rt.counters.snapshot()["guard_skips"] == {"quorum:threshold_not_met": 2}
    rt.record_decision("T", agent="rev-a", role="reviewer", verdict="approved")
    one = rt.fire("on_children_completed", "T", session_id="S1", payload=payload, operation_id="cc:2")
    assert one.arrival is None and step_of(h.store) == "a"  # 1 of 2 approvals
    rt.record_decision("T", agent="rev-b", role="reviewer", verdict="approved")
    both = rt.fire("on_children_completed", "T", session_id="S1", payload=payload, operation_id="cc:3")
    assert both.arrival is not None and both.arrival.to_step == "b" and step_of(h.store) == "b"


def test_quorum_veto_takes_the_second_transition(harness: Any) -> None:
    h = harness
    rt = start(h)
    h.seat("a", "reviewer", "rev-a")
    h.seat("a", "reviewer", "rev-b")
    rt.record_decision("T", agent="rev-a", role="reviewer", verdict="approved")
    rt.record_decision("T", user="u1", verdict="changes_requested")  # a user's rejection vetoes in any role
    result = rt.fire("on_children_completed", "T", session_id="S1", payload={"child_summaries": []},
                     operation_id="cc:1")
    assert result.arrival is not None and result.arrival.to_step == "c"


def test_quorum_with_no_seats_fails_closed(harness: Any) -> None:
    h = harness
    rt = start(h)
    rt.record_decision("T", agent="rev-a", role="reviewer", verdict="approved")  # holds no seat
    result = rt.fire("on_children_completed", "T", session_id="S1", payload={"child_summaries": []},
                     operation_id="cc:1")
    assert result.arrival is None and step_of(h.store) == "a"
    assert rt.counters.snapshot()["guard_skips"]["quorum:slate_empty"] == 1


def test_self_transition_is_marked_but_inert(harness: Any) -> None:
    h = harness
    rt = start(h)
    result = rt.fire("on_heartbeat", "T", session_id="S1", operation_id="hb:1")
    assert result.result == "dispatched" and result.arrival is None
    assert h.recorder.kinds() == ["set_workflow_data"]
    assert h.store.ledger("T") == [] and h.records("entry") == []
    assert h.store.operation_applied("hb:1")
    assert rt.fire("on_heartbeat", "T", session_id="S1", operation_id="hb:1").result == "idempotent"
    assert h.recorder.kinds() == ["set_workflow_data"]


def test_transition_declined_after_the_walk_is_not_retried(harness: Any) -> None:
    """AC-C7's shape: the task moved while the actions ran, so the compare-and-swap declines the
    transition; the operation is marked and a redelivery does nothing."""
    h = harness
    rt = start(h)
    h.recorder.hook("create_child_task", lambda ctx: ctx.runtime.move(ctx.task.id, "c"))
    result = rt.fire("on_turn_complete", "T", session_id="S1", operation_id="turn:1")
    assert result.result == "dispatched"
    assert result.arrival is not None and result.arrival.status == "cas_lost"
    assert step_of(h.store) == "c" and [r.to_step_id for r in h.store.ledger("T")] == ["c"]
    assert h.store.operation_applied("turn:1")
    assert rt.fire("on_turn_complete", "T", session_id="S1", operation_id="turn:1").result == "idempotent"
    assert [r.to_step_id for r in h.store.ledger("T")] == ["c"]


class _MoveFailsOnce:
    def __init__(self, inner: Store) -> None:
        self._inner = inner
        self.failed = False

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)

    @contextlib.contextmanager
    def unit(self) -> Iterator[Any]:
        """The runtime may move the task inside a unit (ADR 0010): fail there too."""
        with self._inner.unit() as tx:
            inner, self._inner = self._inner, tx
            try:
                yield self
            finally:
                self._inner = inner

    def move_task(self, *args: Any, **kwargs: Any) -> Any:
        if not self.failed:
            self.failed = True
            raise StoreError("connection lost")
        return self._inner.move_task(*args, **kwargs)


def test_transition_and_operation_marker_commit_together(harness: Any) -> None:
    h = harness
    start(h)
    h.backend.store = _MoveFailsOnce(h.store)
    rt = h._build()
    with pytest.raises(StoreError):
        rt.fire("on_turn_complete", "T", session_id="S1", operation_id="turn:1")
    assert step_of(h.store) == "a" and h.store.ledger("T") == []
    assert not h.store.operation_applied("turn:1")  # neither the move nor the marker
    again = rt.fire("on_turn_complete", "T", session_id="S1", operation_id="turn:1")
    assert again.result == "dispatched" and step_of(h.store) == "b"
    assert h.store.operation_applied("turn:1") and len(h.store.ledger("T")) == 1


# ---- operation markers ---------------------------------------------------------------------------

def test_operation_marker_makes_a_redelivery_idempotent(harness: Any) -> None:
    h = harness
    rt = start(h)
    rt.fire("on_comment", "T", session_id="S1", payload=COMMENT, operation_id="task_comment:c1")
    calls = h.recorder.kinds()
    mark = h.mark()
    again = rt.fire("on_comment", "T", session_id="S1", payload=COMMENT, operation_id="task_comment:c1")
    assert again.result == "idempotent" and again.actions == ()
    assert h.recorder.kinds() == calls and h.runs("T") == [("T", "primary", "commented")]
    after = h.since(mark)
    assert {r.kind for r in after} == {"redelivery_discarded", "outcome"} and only_silent(after)
    assert rt.counters.snapshot()["idempotent"] == 1


def test_operation_marker_survives_a_restart(harness: Any) -> None:
    h = harness
    start(h)
    h.rt.fire("on_turn_complete", "T", session_id="S1", operation_id="turn:1")
    calls = h.recorder.kinds()
    rt = h.restart()
    h.store.put_task(TaskState("T", "f", "a"))  # even back at the step, the operation is not re-applied
    result = rt.fire("on_turn_complete", "T", session_id="S1", operation_id="turn:1")
    assert result.result == "idempotent"
    assert h.recorder.kinds() == calls and len(h.store.ledger("T")) == 1 and step_of(h.store) == "a"


def test_delivery_without_operation_id_is_never_deduplicated(harness: Any) -> None:
    h = harness
    rt = start(h)
    first = rt.fire("on_approval_resolved", "T", session_id="S1",
                    payload={"approval_id": "a1", "status": "approved", "note": ""})
    second = rt.fire("on_approval_resolved", "T", session_id="S1",
                     payload={"approval_id": "a1", "status": "approved", "note": ""})
    assert first.result == second.result == "dispatched"
    assert h.runs("T") == [("T", "primary", "approved")] * 2
    assert len(h.recorder.of("auto_start_agent")) == 2


def test_session_kinds_run_through_executors_on_other_triggers(harness: Any) -> None:
    """The entry policy's exclude list concerns the entry trigger only."""
    h = harness
    rt = start(h)
    rt.fire("on_approval_resolved", "T", session_id="S1", operation_id="ap:1",
            payload={"approval_id": "a1", "status": "approved", "note": ""})
    (call,) = h.recorder.of("auto_start_agent")
    assert call.trigger == "on_approval_resolved" and call.session_id == "S1" and call.operation_id == "ap:1"


# ---- missing executors and records -------------------------------------------------------------

def test_missing_executor_warns_with_names_and_the_walk_goes_on(harness: Any) -> None:
    h = harness
    rt = start(h)
    result = rt.fire("on_budget_alert", "T", session_id="S1", operation_id="budget:1",
                     payload={"budget_pct": 90, "scope": "task"})
    assert result.result == "dispatched" and result.actions == ("queue_run",)
    (warning,) = h.records("warning")
    assert warning.level == "warning" and warning.fields["code"] == "no_executor"
    assert {k: warning.fields[k] for k in ("workflow", "step", "kind", "task", "session")} == {
        "workflow": "f", "step": "a", "kind": "run_it", "task": "T", "session": "S1"}
    assert h.runs("T") == [("T", "primary", "budget")]
    assert h.store.operation_applied("budget:1")


def test_dispatch_records_by_outcome(harness: Any) -> None:
    """INFO with actions, DEBUG with none (still marked), ERROR on abort, none when idempotent."""
    h = harness
    rt = start(h)
    mark = h.mark()
    rt.fire("on_comment", "T", session_id="S1", payload=COMMENT, operation_id="op:info")
    (info,) = h.since(mark, "dispatch")
    assert info.level == "info" and info.message == "trigger dispatched"
    assert info.fields["actions"] == ["set_workflow_data", "queue_run", "create_child_task"]
    assert (info.fields["task"], info.fields["session"], info.fields["step"], info.fields["operation_id"]) == (
        "T", "S1", "a", "op:info")

    h.store.put_task(TaskState("T", "f", "b"))  # b declares no on_comment actions
    mark = h.mark()
    empty = rt.fire("on_comment", "T", session_id="S1", payload=COMMENT, operation_id="op:debug")
    assert empty.result == "dispatched"
    (debug,) = h.since(mark, "dispatch")
    assert debug.level == "debug" and debug.message == "trigger dispatched: step has no actions"
    assert h.store.operation_applied("op:debug")

    h.store.put_task(TaskState("T", "f", "a"))
    h.recorder.fail("set_workflow_data")
    mark = h.mark()
    rt.fire("on_comment", "T", session_id="S1", payload=COMMENT, operation_id="op:error")
    (error,) = h.since(mark, "dispatch")
    assert error.level == "error"

    mark = h.mark()
    rt.fire("on_comment", "T", session_id="S1", payload=COMMENT, operation_id="op:info")
    assert h.since(mark, "dispatch") == [] and only_silent(h.since(mark))


def test_the_actions_of_a_fire_are_those_that_ran_even_when_the_registry_changes_during_it(harness: Any) -> None:
    """An executor unregistered while the fire runs (by an action before it) is skipped, and not listed."""
    h = harness
    rt = start(h)
    h.recorder.hook("set_workflow_data", lambda ctx: ctx.runtime.executors.unregister("create_child_task"))
    result = rt.fire("on_comment", "T", session_id="S1", payload=COMMENT, operation_id="task_comment:c9")
    assert result.result == "dispatched", result
    assert result.actions == ("set_workflow_data", "queue_run")
    assert h.recorder.kinds() == ["set_workflow_data", "queue_run"]
