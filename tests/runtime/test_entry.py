"""Step entry (docs/runtime.md §1; the step-entry seed AC-OFFICE-STEP-ENTRY-001.x): one dispatch per
ledger row that names a destination, on every route; record-and-continue; durable
redelivery discarding; re-entry; the `recover` sweep.

Store-parametrised: the guarantees are claims about durable state, so each runs on the
memory store, a SQLite file and PostgreSQL.
"""

from __future__ import annotations

from typing import Any

import pytest
from support import conc_flaky as flaky_mod

from interlock.compiler import compile_source
from interlock.dsl import SourceFile
from interlock.runtime.store import Store

pytestmark = pytest.mark.async_runtime  # each harness test runs with a Runtime and an AsyncRuntime

FLOW = """
workflow flow "Flow" {
  step todo "Todo" {
    start
    manual_move
    on on_enter         { auto_start_agent }
    on on_turn_complete { move_to_step(review) }
    on on_comment       { switch_workflow(workflow: "other") }
  }
  step review "Review" {
    manual_move
    on on_enter {
      enable_plan_mode
      clear_decisions
      run_code_review
      ensure_seats(role: reviewer)
      queue_run_for_each_participant(role: reviewer, reason: "review_started")
      queue_run(target: primary, reason: "review_entered")
      auto_start_agent
    }
    on on_turn_complete { move_to_step(done) when quorum(reviewer, all_approve) }
  }
  step done "Done" {
    manual_move
    terminal
    on on_enter { queue_run(target: primary, reason: "done_entered") }
  }
  step locked "Locked" {
    on on_enter { clear_decisions }
  }
}
workflow other "Other" {
  step intake "Intake" {
    start
    manual_move
    on on_enter { clear_decisions  queue_run(target: primary, reason: "intake_entered") }
  }
}
"""

REVIEW_DISPATCH = ("clear_decisions", "run_code_review", "ensure_seats", "queue_run_for_each_participant", "queue_run")
REVIEW_INLINE = ["enable_plan_mode", "auto_start_agent"]
EXCLUDED = ("enable_plan_mode", "set_session_mode", "auto_start_agent", "reset_agent_context")


def put(store: Store, task: str, workflow: str, step: str, description: str = "") -> None:
    from interlock.runtime import TaskState

    store.put_task(TaskState(task, workflow, step, description))


def assert_every_destination_row_entered_once(h: Any) -> None:
    """The §1 correspondence: each ledger row naming a destination has exactly one entry record
    (durable) and exactly one `entry` trace record, and nothing else does."""
    rows = h.store.ledger()
    with_dest = [r for r in rows if r.to_step_id is not None]
    for row in rows:
        record = h.store.entry_record(row.id)
        if row.to_step_id is None:
            assert record is None, f"detach row {row.id} has an entry record"
            assert h.entries_for(row.id) == []
        else:
            assert record is not None, f"ledger row {row.id} ({row.route}) has no entry record"
            assert record.entry_id == row.id and record.step_id == row.to_step_id
            assert len(h.entries_for(row.id)) == 1, f"ledger row {row.id} dispatched {len(h.entries_for(row.id))}x"
    assert len(h.records("entry")) == len(with_dest)


# ---- one dispatch per arrival, on every route -----------------------------------------------------

def _creation(h: Any) -> Any:
    return h.rt.create_task("T", "flow", "review")


def _manual_move(h: Any) -> Any:
    put(h.store, "T", "flow", "todo")
    return h.rt.move("T", "review")


def _engine_transition(h: Any) -> Any:
    put(h.store, "T", "flow", "todo")
    return h.rt.fire("on_turn_complete", "T", session_id="S1", operation_id="turn:1").arrival


def _decision(h: Any) -> Any:
    put(h.store, "T", "flow", "review")
    return h.rt.record_decision("T", agent="rev-a", role="reviewer", verdict="approved").arrival


def _workflow_switch(h: Any) -> Any:
    put(h.store, "T", "flow", "todo")
    return h.rt.switch_workflow("T", "other")


def _queue_promotion(h: Any) -> Any:
    put(h.store, "T", "flow", "todo")
    return h.rt.move("T", "review", route="queue_promotion")


ROUTES = {
    "creation": (_creation, "review", REVIEW_DISPATCH, [("T", "rev-a", "review_started"),
                                                        ("T", "primary", "review_entered")]),
    "manual_move": (_manual_move, "review", REVIEW_DISPATCH, [("T", "rev-a", "review_started"),
                                                              ("T", "primary", "review_entered")]),
    "engine_transition": (_engine_transition, "review", REVIEW_DISPATCH, [("T", "rev-a", "review_started"),
                                                                          ("T", "primary", "review_entered")]),
    "decision": (_decision, "done", ("queue_run",), [("T", "primary", "done_entered")]),
    "workflow_switch": (_workflow_switch, "intake", ("clear_decisions", "queue_run"),
                        [("T", "primary", "intake_entered")]),
    "queue_promotion": (_queue_promotion, "review", REVIEW_DISPATCH, [("T", "rev-a", "review_started"),
                                                                      ("T", "primary", "review_entered")]),
}


@pytest.mark.parametrize("route", list(ROUTES))
def test_every_route_dispatches_the_destination_entry_exactly_once(harness: Any, route: str) -> None:
    drive, step, attempted, runs = ROUTES[route]
    h = harness
    h.start(FLOW)
    h.seat("review", "reviewer", "rev-a")
    arrival = drive(h)
    # synchronous: the entry has run when the call that moved the task returns
    assert arrival is not None and arrival.status == "moved"
    assert arrival.entry is not None and arrival.entry.status == "dispatched"
    rows = h.store.ledger("T")
    assert [r.route for r in rows] == [route]
    (row,) = rows
    assert row.to_step_id == step
    assert arrival.ledger_id == row.id == arrival.entry.entry_id  # entry identity == ledger row id
    record = h.store.entry_record(row.id)
    assert record is not None and record.attempted == attempted and record.failed == ()
    assert sorted(h.runs("T")) == sorted(runs)
    assert {r.entry_id for r in h.store.runs("T")} == {row.id}
    assert_every_destination_row_entered_once(h)


def test_manual_move_without_a_session_dispatches_entry(harness: Any) -> None:
    """The manual-move route with no live session still runs the session-independent half."""
    h = harness
    h.start(FLOW)
    h.seat("review", "reviewer", "rev-a")
    put(h.store, "T", "flow", "todo")
    result = h.rt.move("T", "review", session_id=None)
    assert result.entry is not None and result.entry.attempted == REVIEW_DISPATCH
    assert h.store.ledger("T")[0].session_id is None
    assert ("T", "rev-a", "review_started") in h.runs("T")
    assert h.records("inline") == []  # no live session: nothing to leave to the host


def test_same_step_move_is_not_an_arrival(harness: Any) -> None:
    h = harness
    h.start(FLOW)
    h.seat("review", "reviewer", "rev-a")
    put(h.store, "T", "flow", "todo")
    h.rt.move("T", "review")
    calls, runs = len(h.recorder.calls), h.runs()
    again = h.rt.move("T", "review")
    assert again.status == "same_step" and again.ledger_id is None and again.entry is None
    assert len(h.store.ledger("T")) == 1
    assert len(h.recorder.calls) == calls and h.runs() == runs
    assert_every_destination_row_entered_once(h)


def test_detach_row_dispatches_nothing(harness: Any) -> None:
    h = harness
    h.start(FLOW)
    h.seat("review", "reviewer", "rev-a")
    put(h.store, "T", "flow", "review")
    moved = h.store.move_task("T", None, None, route="detach")
    assert moved.status == "moved" and moved.ledger is not None and moved.ledger.to_step_id is None
    result = h.rt.dispatch_entry(moved.ledger.id)
    assert result.status == "detach" and result.attempted == ()
    assert h.store.entry_record(moved.ledger.id) is None
    assert h.rt.recover().dispatched == 0  # the sweep does not pick a detach row up either
    assert h.recorder.calls == [] and h.runs() == []
    assert_every_destination_row_entered_once(h)


def test_manual_move_into_a_step_without_manual_move_is_refused(harness: Any) -> None:
    h = harness
    h.start(FLOW)
    put(h.store, "T", "flow", "todo")
    result = h.rt.move("T", "locked")
    assert result.status == "refused" and result.reason == "manual_move_not_allowed"
    assert h.store.get_task("T").step_id == "todo"
    assert h.store.ledger("T") == [] and h.recorder.calls == []
    (warning,) = h.records("warning")
    assert warning.fields["code"] == "manual_move_not_allowed"


# ---- what is dispatched -------------------------------------------------------------------------

def test_excluded_kinds_are_never_dispatched_nor_effects(harness: Any) -> None:
    """AC-001.3/.5: the session-shaped kinds are left to the arriving session even when an
    executor for them is registered; they are not logged as skipped either."""
    h = harness
    h.start(FLOW)
    h.seat("review", "reviewer", "rev-a")
    put(h.store, "T", "flow", "todo")
    result = h.rt.move("T", "review", session_id="S1")
    assert result.entry is not None and result.entry.attempted == REVIEW_DISPATCH
    assert not set(result.entry.attempted) & set(EXCLUDED)
    assert not [c for c in h.recorder.calls if c.kind in EXCLUDED]
    assert not [r for r in h.records("effect") if r.fields["kind"] in EXCLUDED]
    assert h.records("warning") == []
    (inline,) = h.records("inline")  # with a live session, the host runs them inline
    assert inline.fields["kinds"] == REVIEW_INLINE and inline.fields["task"] == "T"


def test_excluded_kinds_without_executors_do_not_warn(harness: Any) -> None:
    h = harness
    h.start(FLOW, missing=EXCLUDED)
    put(h.store, "T", "flow", "todo")
    result = h.rt.move("T", "review")
    assert result.entry is not None and result.entry.failed == ()
    assert h.records("warning") == []


def test_every_entry_kind_is_placed_in_exactly_one_list() -> None:
    """AC-001.5: the exclusion is explicit and exhaustive: a kind that may be declared on entry and
    sits in neither list (or both) does not compile."""
    unplaced = compile_source(SourceFile("t.wf", 'task notify on on_enter\nworkflow w "W" { step a "A" { start } }\n'))
    assert not unplaced.ok and [d.code for d in unplaced.diagnostics] == ["IL306"]
    both = compile_source(SourceFile(
        "t.wf", 'task notify on on_enter\nentry { exclude notify dispatch notify }\n'
                'workflow w "W" { step a "A" { start } }\n'))
    assert not both.ok and [d.code for d in both.diagnostics] == ["IL307"]
    plan = compile_source(SourceFile("t.wf", FLOW)).plan
    assert plan is not None
    policy = plan.entry_policy
    assert not set(policy.exclude) & set(policy.dispatch)
    entry_kinds = {k.name for k in plan.kinds if policy.trigger in k.triggers and k.action_class != "transition"}
    assert entry_kinds == set(policy.exclude) | set(policy.dispatch)


# ---- record-and-continue ----------------------------------------------------------------------

def test_failing_entry_action_is_recorded_and_the_rest_still_run(harness: Any) -> None:
    h = harness
    h.start(FLOW)
    h.seat("review", "reviewer", "rev-a")
    h.recorder.fail("clear_decisions", error="decision store down")
    put(h.store, "T", "flow", "todo")
    result = h.rt.move("T", "review")
    assert result.status == "moved" and h.store.get_task("T").step_id == "review"  # the arrival stands
    assert result.entry is not None
    assert result.entry.attempted == REVIEW_DISPATCH
    assert result.entry.failed == (("clear_decisions", "decision store down"),)
    assert h.recorder.kinds() == list(REVIEW_DISPATCH)  # every later action was attempted
    assert sorted(h.runs("T")) == [("T", "primary", "review_entered"), ("T", "rev-a", "review_started")]
    record = h.store.entry_record(result.ledger_id)
    assert record is not None and record.failed == (("clear_decisions", "decision store down"),)
    (entry,) = h.records("entry")
    assert entry.fields["failed"] == [{"kind": "clear_decisions", "error": "decision store down"}]
    assert h.counter("executor_failures") == 1


def test_panicking_entry_action_is_contained_and_the_rest_still_run(harness: Any) -> None:
    h = harness
    h.start(FLOW)
    h.seat("review", "reviewer", "rev-a")
    h.recorder.panic("run_code_review", error="boom")
    put(h.store, "T", "flow", "todo")
    result = h.rt.move("T", "review", session_id="S1")
    assert result.entry is not None
    assert result.entry.failed == (("run_code_review", "RuntimeError: boom"),)
    assert h.recorder.kinds() == list(REVIEW_DISPATCH)
    (error,) = h.records("error")
    assert error.level == "error" and error.fields["task"] == "T" and error.fields["session"] == "S1"
    # the host executor's marker says how it ended (a sweep will not run it again)
    markers = {m.kind: m for m in h.store.markers(result.ledger_id).values()}
    assert (markers["run_code_review"].state, markers["run_code_review"].error) == ("failed", "RuntimeError: boom")
    assert {m.state for k, m in markers.items() if k != "run_code_review"} == {"done"}


def test_entry_kind_without_executor_is_recorded_as_failed_with_a_warning(harness: Any) -> None:
    h = harness
    h.start(FLOW, missing=("run_code_review",))
    h.seat("review", "reviewer", "rev-a")
    put(h.store, "T", "flow", "todo")
    result = h.rt.move("T", "review", session_id="S1")
    assert result.entry is not None
    assert result.entry.attempted == REVIEW_DISPATCH
    assert result.entry.failed == (("run_code_review", "no executor"),)
    assert h.recorder.kinds() == ["clear_decisions", "ensure_seats", "queue_run_for_each_participant", "queue_run"]
    (warning,) = h.records("warning")
    assert warning.level == "warning" and warning.fields["code"] == "no_executor"
    assert {k: warning.fields[k] for k in ("workflow", "step", "kind", "task", "session")} == {
        "workflow": "flow", "step": "review", "kind": "run_code_review", "task": "T", "session": "S1"}


def test_entry_record_is_written_when_the_step_dispatches_nothing(harness: Any) -> None:
    h = harness
    h.start(FLOW)
    result = h.rt.create_task("T", "flow")  # todo: only an excluded kind
    assert result.entry is not None and result.entry.status == "dispatched" and result.entry.attempted == ()
    record = h.store.entry_record(result.ledger_id)
    assert record is not None and record.attempted == () and record.failed == ()
    (entry,) = h.records("entry")
    assert entry.fields["attempted"] == [] and entry.fields["entry_id"] == result.ledger_id
    # and the redelivery of such an entry is recognised like any other
    assert h.rt.dispatch_entry(result.ledger_id).status == "redelivery"


# ---- redelivery, re-entry, restart ------------------------------------------------------------------

def test_redelivery_is_discarded_whole_and_counted(harness: Any) -> None:
    h = harness
    h.start(FLOW)
    h.seat("review", "reviewer", "rev-a")
    put(h.store, "T", "flow", "todo")
    moved = h.rt.move("T", "review")
    # a decision recorded after the entry: re-running clear_decisions would wipe it
    h.rt.record_decision("T", agent="outsider", role="reviewer", verdict="rejected")
    calls, runs = len(h.recorder.calls), h.runs()
    result = h.rt.dispatch_entry(moved.ledger_id)
    assert result.status == "redelivery"
    assert len(h.recorder.calls) == calls and h.runs() == runs
    assert [d.decider_id for d in h.store.decisions("T", "review")] == ["outsider"]
    assert h.rt.counters.snapshot()["redeliveries_discarded"] == 1
    (discarded,) = h.records("redelivery_discarded")
    assert discarded.fields["entry_id"] == moved.ledger_id and discarded.fields["task"] == "T"
    assert_every_destination_row_entered_once(h)


def test_redelivery_is_discarded_after_a_restart(harness: Any) -> None:
    """AC-001.10: the recognition is durable, not in-process."""
    h = harness
    h.start(FLOW)
    h.seat("review", "reviewer", "rev-a")
    put(h.store, "T", "flow", "todo")
    moved = h.rt.move("T", "review")
    h.rt.record_decision("T", agent="outsider", role="reviewer", verdict="approved")
    calls, runs = len(h.recorder.calls), h.runs()
    rt = h.restart()
    assert rt is not h.runtimes[0]
    result = rt.dispatch_entry(moved.ledger_id)
    assert result.status == "redelivery"
    assert len(h.recorder.calls) == calls and h.runs() == runs
    assert len(h.store.decisions("T", "review")) == 1
    assert rt.counters.snapshot()["redeliveries_discarded"] == 1
    assert_every_destination_row_entered_once(h)


def test_reentry_is_a_new_entry_and_acts_afresh(harness: Any) -> None:
    """AC-001.7 and the seats seed's 003.6: leaving and coming back writes a new row, so a new identity."""
    h = harness
    h.start(FLOW)
    h.seat("review", "reviewer", "rev-a")
    put(h.store, "T", "flow", "todo")
    first = h.rt.move("T", "review")
    h.rt.move("T", "todo")
    second = h.rt.move("T", "review")
    assert first.ledger_id is not None and second.ledger_id is not None
    assert second.ledger_id > first.ledger_id  # allocated by the insert, never reused
    assert second.entry is not None and second.entry.status == "dispatched"
    assert len(h.recorder.of("clear_decisions")) == 2
    assert sorted(h.runs("T")) == sorted([("T", "rev-a", "review_started"), ("T", "primary", "review_entered")] * 2)
    assert {r.entry_id for r in h.store.runs("T")} == {first.ledger_id, second.ledger_id}
    assert h.rt.counters.snapshot()["redeliveries_discarded"] == 0
    assert_every_destination_row_entered_once(h)


# ---- the recover sweep --------------------------------------------------------------------------

def test_recover_dispatches_arrivals_that_have_no_entry_record(harness: Any) -> None:
    h = harness
    h.start(FLOW)
    h.seat("review", "reviewer", "rev-a")
    put(h.store, "T", "flow", "todo")
    crashed = h.rt.move("T", "review", dispatch=False)  # committed; the dispatch was lost
    assert crashed.entry is None and h.store.entry_record(crashed.ledger_id) is None
    assert h.recorder.calls == [] and h.runs() == []
    rt = h.restart()
    recovered = rt.recover()
    assert recovered.dispatched == 1 and recovered.entries[0].entry_id == crashed.ledger_id
    assert sorted(h.runs("T")) == [("T", "primary", "review_entered"), ("T", "rev-a", "review_started")]
    assert rt.recover().dispatched == 0  # idempotent: nothing left to sweep
    assert len(h.recorder.of("clear_decisions")) == 1
    assert_every_destination_row_entered_once(h)


def test_recover_runs_only_positions_without_a_marker(harness: Any) -> None:
    h = harness
    h.start(FLOW)
    h.seat("review", "reviewer", "rev-a")
    put(h.store, "T", "flow", "todo")
    crashed = h.rt.move("T", "review", dispatch=False)
    entry_id = crashed.ledger_id
    assert h.plan is not None
    step = h.plan.workflow("flow").steps[1]
    position = {a.kind: a.position for a in step.entry_dispatch}
    # what a crash mid-dispatch leaves: clear_decisions done, run_code_review failed
    assert h.store.claim_marker(entry_id, position["clear_decisions"], "clear_decisions")
    h.store.finish_marker(entry_id, position["clear_decisions"], "done")
    assert h.store.claim_marker(entry_id, position["run_code_review"], "run_code_review")
    h.store.finish_marker(entry_id, position["run_code_review"], "failed", "host said no")
    assert h.rt.recover().dispatched == 1
    assert h.recorder.kinds() == ["ensure_seats", "queue_run_for_each_participant", "queue_run"]
    record = h.store.entry_record(entry_id)
    assert record is not None and record.attempted == REVIEW_DISPATCH
    assert record.failed == (("run_code_review", "host said no"),)


def test_recover_runs_again_a_host_position_a_crash_left_in_progress_with_its_key_and_the_next_attempt(
        harness: Any) -> None:
    """A host executor's marker was started and the process died before it finished: its outcome is unknown.  The
    sweep calls it again — the same idempotency key, the next attempt — and records the entry without a failure
    (docs/runtime.md §7: host actions are at least once with a stable key, never silently lost)."""
    h = harness
    h.start(FLOW)
    h.seat("review", "reviewer", "rev-a")
    put(h.store, "T", "flow", "todo")
    crashed = h.rt.move("T", "review", dispatch=False)
    assert h.plan is not None and crashed.ledger_id is not None
    position = {a.kind: a.position for a in h.plan.workflow("flow").steps[1].entry_dispatch}
    started = h.store.start_marker(crashed.ledger_id, position["run_code_review"], "run_code_review")
    assert started.attempt == 1
    rt = h.restart()
    assert rt.recover().dispatched == 1
    (call,) = h.recorder.of("run_code_review")
    assert call.key == f"entry:{crashed.ledger_id}:{position['run_code_review']}:run_code_review"
    assert call.attempt == 2 and call.entry_id == crashed.ledger_id
    record = h.store.entry_record(crashed.ledger_id)
    assert record is not None and record.attempted == REVIEW_DISPATCH and record.failed == ()
    assert h.store.markers(crashed.ledger_id)[position["run_code_review"]].state == "done"


def test_entry_interrupted_before_its_record_is_finished_by_recover_store_backed_actions_once(harness: Any) -> None:
    """The store fails as the entry's last transaction commits its record: that transaction is undone (the host
    call's marker finish and the store-backed actions after it), the entry is incomplete, and `recover` finishes it:
    the interrupted host call again with its key and the next attempt, each store-backed action once in all."""
    h = harness
    h.start(FLOW)
    h.seat("review", "reviewer", "rev-a")
    put(h.store, "T", "flow", "todo")
    flaky = flaky_mod.FlakyStore(h.store)
    h.backend.store = flaky
    rt = h._build()
    flaky.fail_on("record_entry")
    result = rt.move("T", "review", session_id="S1")
    flaky.heal()
    assert result.entry is not None and result.entry.status == "incomplete"
    (error,) = h.records("error")
    assert error.fields["task"] == "T" and error.fields["entry_id"] == result.ledger_id
    assert h.recorder.kinds() == list(REVIEW_DISPATCH)
    assert h.runs() == []  # queued in the transaction that was undone
    assert rt.recover().dispatched == 1
    assert h.recorder.kinds() == [*REVIEW_DISPATCH, *REVIEW_DISPATCH[1:]]  # clear_decisions had committed
    first, again = h.recorder.of("run_code_review")
    assert first.key == again.key and (first.attempt, again.attempt) == (1, 2)
    assert sorted(h.runs()) == [("T", "primary", "review_entered"), ("T", "rev-a", "review_started")]
    record = h.store.entry_record(result.ledger_id)
    assert record is not None and record.attempted == REVIEW_DISPATCH and record.failed == ()
    assert rt.recover().dispatched == 0


# ---- workflow switch: one dispatcher ---------------------------------------------------------------

def test_workflow_switch_dispatches_the_destination_entry_once(harness: Any) -> None:
    """AC-001.8: a switch commits one arrival; nothing else dispatches the destination's entry."""
    h = harness
    h.start(FLOW)
    h.recorder.hook("switch_workflow", lambda ctx: ctx.runtime.switch_workflow(ctx.task.id, "other",
                                                                                session_id=ctx.session_id))
    put(h.store, "T", "flow", "todo")
    fired = h.rt.fire("on_comment", "T", session_id="S1", operation_id="task_comment:c1",
                      payload={"comment_id": "c1", "author_id": "u1", "body": "switch"})
    assert fired.result == "dispatched"
    task = h.store.get_task("T")
    assert (task.workflow_id, task.step_id) == ("other", "intake")
    (row,) = h.store.ledger("T")
    assert row.route == "workflow_switch" and (row.from_workflow_id, row.to_workflow_id) == ("flow", "other")
    assert len(h.recorder.of("clear_decisions")) == 1
    assert h.runs("T") == [("T", "primary", "intake_entered")]
    # the trigger's redelivery does not switch (or enter) again
    again = h.rt.fire("on_comment", "T", session_id="S1", operation_id="task_comment:c1",
                      payload={"comment_id": "c1", "author_id": "u1", "body": "switch"})
    assert again.result == "idempotent"
    assert len(h.recorder.of("switch_workflow")) == 1 and len(h.recorder.of("clear_decisions")) == 1
    assert_every_destination_row_entered_once(h)


def test_entry_into_a_step_the_plan_no_longer_has_is_recorded_as_failed(harness: Any) -> None:
    """A row written under an older plan: the entry is still recorded (once), with the reason."""
    h = harness
    h.start(FLOW)
    put(h.store, "T", "flow", "todo")
    moved = h.store.move_task("T", "flow", "retired", route="manual_move")
    assert moved.ledger is not None
    result = h.rt.dispatch_entry(moved.ledger.id)
    assert result.status == "dispatched" and result.attempted == ()
    assert result.failed and "not in the plan" in result.failed[0][1]
    (warning,) = h.records("warning")
    assert warning.fields["code"] == "unknown_step" and warning.fields["task"] == "T"
    assert h.rt.dispatch_entry(moved.ledger.id).status == "redelivery"
    assert_every_destination_row_entered_once(h)


def test_ensure_seats_fills_an_empty_role_once_and_the_fan_out_wakes_it(harness: Any) -> None:
    """The seats seed's 001.3/001.4 through entry: the seat is written once per (task, role) whatever
    the entries and redeliveries; the fan-out after it wakes the new seat; the seat counts for quorum."""
    h = harness
    h.start(FLOW)
    put(h.store, "T", "flow", "todo")
    first = h.rt.move("T", "review")
    seats = [p for p in h.store.participants("T", ("todo", "review", "done", "locked")) if p.task_id == "T"]
    assert [(p.step_id, p.role, p.agent) for p in seats] == [("review", "reviewer", "ceo-1")]
    assert ("T", "ceo-1", "review_started") in h.runs("T")
    h.rt.dispatch_entry(first.ledger_id)  # redelivery
    h.rt.move("T", "todo")
    h.rt.move("T", "review")  # re-entry: the role has its seat already
    seats = [p for p in h.store.participants("T", ("todo", "review", "done", "locked")) if p.task_id == "T"]
    assert len(seats) == 1
    assert len([e for e in h.records("effect") if e.fields["kind"] == "ensure_seats"]) == 1
    assert h.runs("T").count(("T", "ceo-1", "review_started")) == 2  # one per entry
    decided = h.rt.record_decision("T", agent="ceo-1", role="reviewer", verdict="approved")
    assert decided.transitioned and h.store.get_task("T").step_id == "done"
