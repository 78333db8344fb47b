"""A deployment's promises inside one test process (docs/runtime.md §6): unambiguous keys that include the declared
position, stale deliveries fenced by the activation they belong to, idempotent creation, plan revisions kept by the
store and entries finished under their own, recover beside a live worker, and the store's clock.  The promises that
need real processes (SIGKILL, another PID namespace, a fleet of two revisions) are in tests/runtime/test_fleet.py.
"""

from __future__ import annotations

import threading
import time
from typing import Any

import pytest

from interlock.runtime import ExecutorRegistry, ListSink, Runtime
from interlock.runtime.store import TaskState

WAIT = 20.0

FLOW = """
task notify(text: str = "") on on_enter, on_comment, on_turn_complete
task page(text: str = "") on on_enter
entry { dispatch notify, page }
workflow flow "Flow" {
  step work "Work" {
    start
    manual_move
    on on_comment {
      queue_run(target: primary, reason: "commented")
      queue_run(target: primary, reason: "commented")
      notify
    }
    on on_turn_complete { move_to_step(review) }
  }
  step review "Review" {
    manual_move
    on on_enter { clear_decisions  notify }
    on on_comment { queue_run(target: primary, reason: "commented") }
    on on_turn_complete {
      move_to_step(done) when quorum(reviewer, all_approve)
      move_to_step(work) when quorum(reviewer, any_reject)
    }
  }
  step done "Done" { manual_move  terminal }
}
"""

FLOW_V2 = FLOW.replace("    on on_enter { clear_decisions  notify }", "    on on_enter { clear_decisions  page  notify }")
"""Version 2 adds an entry action in front of the one version 1 has."""

HOST = ("notify", "page")
"""The host kinds of these tests (the harness records their calls)."""

COMMENT = {"comment_id": "c1", "author_id": "u1", "body": "hi"}


def comment(rt: Runtime, task: str, operation_id: str, **kw: Any) -> Any:
    return rt.fire("on_comment", task, session_id="S1", payload=COMMENT, operation_id=operation_id, **kw)


# ---- keys ----------------------------------------------------------------------------------------------------

def test_two_queue_runs_in_one_handler_queue_two_runs(harness: Any) -> None:
    """The declared position is part of every key: two identical actions of one handler are two runs."""
    h = harness
    rt = h.start(FLOW, host=HOST)
    rt.create_task("T", "flow")
    assert comment(rt, "T", "comment:1").result == "dispatched"
    runs = h.store.runs("T")
    assert [(r.agent, r.reason) for r in runs] == [("primary", "commented")] * 2
    assert len({r.key for r in runs}) == 2
    assert comment(rt, "T", "comment:1").result == "idempotent" and len(h.store.runs("T")) == 2


def test_keys_of_different_deliveries_never_meet(harness: Any) -> None:
    """Operation `c:work` on task `T` at review and operation `c` on task `review:T` at work joined, unescaped, to one
    run key: one of the two runs was dropped.  Every host field of a key is escaped now."""
    h = harness
    rt = h.start(FLOW, host=HOST)
    h.store.put_task(TaskState("T", "flow", "review"))
    h.store.put_task(TaskState("review:T", "flow", "work"))
    assert comment(rt, "T", "c:work").result == "dispatched"
    assert comment(rt, "review:T", "c").result == "dispatched"
    keys = [r.key for r in h.store.runs()]
    assert len(keys) == 3 and len(set(keys)) == 3, keys  # one run at review, two at work
    assert {r.task_id for r in h.store.runs()} == {"T", "review:T"}


# ---- the activation, and stale deliveries --------------------------------------------------------------------

def test_the_current_entry_is_the_activation_executors_see(harness: Any) -> None:
    h = harness
    rt = h.start(FLOW, host=HOST)
    created = rt.create_task("T", "flow")
    assert rt.current_entry("T") == created.ledger_id
    moved = rt.move("T", "review")
    assert rt.current_entry("T") == moved.ledger_id and h.store.get_task("T").entry_id == moved.ledger_id
    (notify,) = h.recorder.of("notify")
    assert notify.entry_id == moved.ledger_id and notify.key == f"entry:{moved.ledger_id}:1:notify"
    comment(rt, "T", "comment:9")
    (run,) = h.store.runs("T")
    assert run.entry_id == moved.ledger_id  # a run queued by an operation names its activation too


def test_a_turn_completed_under_an_activation_the_task_left_is_superseded(harness: Any) -> None:
    """An agent's turn began at `work`; a person moved the task to `review` meanwhile; the turn's completion comes
    late.  Fenced by its activation it changes nothing (it used to run Review's handler and move the task on)."""
    h = harness
    rt = h.start(FLOW, host=HOST)
    began = rt.create_task("T", "flow").ledger_id
    moved = rt.move("T", "review")
    h.seat("review", "reviewer", "rev-a")
    h.store.record_decision(_decision("T", "review", "rev-a", "approved"))  # a quorum that would move it
    mark = h.mark()
    late = rt.fire("on_turn_complete", "T", session_id="S1", operation_id="turn:1", entry_id=began)
    assert late.result == "superseded" and late.arrival is None
    assert h.store.get_task("T").step_id == "review"  # type: ignore[union-attr]
    assert [r.to_step_id for r in h.store.ledger("T")] == ["work", "review"]
    assert not h.store.operation_applied("turn:1")
    (record,) = h.since(mark, "superseded_discarded")
    assert (record.fields["task"], record.fields["entry_id"], record.fields["current"]) == ("T", began, moved.ledger_id)
    assert record.fields["plan"] == rt.digest
    assert h.counter("superseded_discarded") == 1
    # the turn of the current activation is not fenced off
    current = rt.fire("on_turn_complete", "T", session_id="S1", operation_id="turn:2", entry_id=moved.ledger_id)
    assert current.result == "dispatched" and h.store.get_task("T").step_id == "done"  # type: ignore[union-attr]


def test_a_round_one_rejection_redelivered_in_round_two_is_superseded(harness: Any) -> None:
    h = harness
    rt = h.start(FLOW, host=HOST)
    h.seat("review", "reviewer", "rev-a")
    rt.create_task("T", "flow")
    round1 = rt.move("T", "review").ledger_id
    rejected = rt.record_decision("T", verdict="rejected", agent="rev-a", role="reviewer", entry_id=round1)
    assert rejected.transitioned and h.store.get_task("T").step_id == "work"  # type: ignore[union-attr]
    round2 = rt.move("T", "review").ledger_id
    again = rt.record_decision("T", verdict="rejected", agent="rev-a", role="reviewer", entry_id=round1)
    assert again.superseded and not again.transitioned
    assert h.store.get_task("T").step_id == "review"  # type: ignore[union-attr]
    assert h.store.decisions("T", "review") == []  # not stored: round 2 has no decision yet
    approved = rt.record_decision("T", verdict="approved", agent="rev-a", role="reviewer", entry_id=round2)
    assert approved.transitioned and h.store.get_task("T").step_id == "done"  # type: ignore[union-attr]


def test_a_stale_dispatch_is_superseded(harness: Any) -> None:
    h = harness
    rt = h.start(FLOW, host=HOST, loaders={
        "session": lambda arg, event: {"id": arg, "task_id": "T", "agent_profile_id": "p", "state": "failed"},
        "task": lambda arg, event: {**_task_record(h.store.get_task(arg)), "other_working_session": ""}})
    began = rt.create_task("T", "flow").ledger_id
    rt.move("T", "review")
    event = {"task_id": "T", "session_id": "S1", "execution_id": "E1", "agent_profile_id": "p",
             "error_message": "boom", "user_initiated": False}
    assert rt.dispatch("agent_error", event, entry_id=began).result == "superseded"
    assert h.counter("superseded_discarded") == 1


def _task_record(task: TaskState | None) -> dict[str, Any]:
    assert task is not None
    return {"id": task.id, "workflow_id": task.workflow_id, "workflow_step_id": task.step_id,
            "description": task.description, "is_from_office": task.is_from_office,
            "is_ephemeral": task.is_ephemeral, "archived": task.archived}


def _decision(task: str, step: str, agent: str, verdict: str) -> Any:
    from interlock.runtime.store import Decision

    return Decision(task, step, "agent", agent, "reviewer", verdict)


# ---- creation ------------------------------------------------------------------------------------------------

def test_a_creation_delivered_again_returns_the_first_arrival_and_writes_nothing(harness: Any) -> None:
    h = harness
    rt = h.start(FLOW, host=HOST)
    first = rt.create_task("T", "flow", operation_id="create:T")
    again = rt.create_task("T", "flow", operation_id="create:T")
    assert (again.status, again.ledger_id, again.to_step) == ("moved", first.ledger_id, "work")
    assert again.entry is not None and again.entry.status == "redelivery"
    assert len(h.store.ledger("T")) == 1 and len(h.recorder.of("notify")) == 0
    with pytest.raises(Exception, match="exists already"):  # the same task under another operation: refused
        rt.create_task("T", "flow", operation_id="create:T:again")


# ---- plan revisions ------------------------------------------------------------------------------------------

def test_rows_and_records_name_the_plan_revision_and_the_store_keeps_it(harness: Any) -> None:
    h = harness
    rt = h.start(FLOW, host=HOST)
    row = h.store.ledger_row(rt.create_task("T", "flow").ledger_id)  # type: ignore[arg-type]
    assert row is not None and row.plan == rt.digest
    assert h.store.plan_text(rt.digest) is not None
    assert h.records() and all(r.fields.get("plan") == rt.digest for r in h.records())


def _runtime(h: Any, text: str, sink: ListSink, **executors: Any) -> Runtime:
    plan = _compile(text)
    registry = ExecutorRegistry()
    for kind, fn in executors.items():
        registry.register(kind, fn)
    return Runtime(plan, h.store, executors=registry, sinks=[sink], executor_timeout=10.0)


def _compile(text: str) -> Any:
    from interlock.compiler import compile_source
    from interlock.dsl import SourceFile

    result = compile_source(SourceFile("flow.wf", text))
    assert result.plan is not None, result.diagnostics
    return result.plan


def test_an_entry_finishes_under_the_revision_it_began_with(harness: Any) -> None:
    """Version 1's entry of review (`notify`) was interrupted inside `notify`; a version 2 runtime (which puts `page`
    in front) finishes it: `notify` again with version 1's key and the next attempt, and `page` neither runs nor is
    recorded — matched by position in version 2's plan it used to be recorded done."""
    h = harness
    calls: list[tuple[str, str | None, int, str | None]] = []

    def executor(kind: str) -> Any:
        return lambda args, ctx: calls.append((kind, ctx.idempotency_key, ctx.attempt, ctx.plan))

    v1 = _runtime(h, FLOW, ListSink(), notify=executor("notify"), page=executor("page"))
    v1.create_task("T", "flow")
    began = v1.move("T", "review", dispatch=False)  # what a crash just after the commit leaves
    assert began.ledger_id is not None
    assert h.store.start_marker(began.ledger_id, 1, "notify").attempt == 1  # v1 was inside notify
    v1.close()  # its owner is gone
    sink = ListSink()
    v2 = _runtime(h, FLOW_V2, sink, notify=executor("notify"), page=executor("page"))
    assert v2.digest != v1.digest
    recovered = v2.recover()
    assert recovered.dispatched == 1
    assert calls == [("notify", f"entry:{began.ledger_id}:1:notify", 2, v1.digest)]
    record = h.store.entry_record(began.ledger_id)
    assert record is not None and record.attempted == ("clear_decisions", "notify") and record.failed == ()
    assert {p: (m.kind, m.state) for p, m in h.store.markers(began.ledger_id).items()} == {
        0: ("clear_decisions", "done"), 1: ("notify", "done")}
    (entry,) = sink.of("entry")
    assert entry.fields["plan"] == v1.digest  # its records name the revision it ran under
    # a new arrival is decided by v2's own plan
    v2.move("T", "work")
    v2.move("T", "review")
    assert [c[0] for c in calls[1:]] == ["page", "notify"] and calls[-1][3] == v2.digest


# ---- recover beside a live worker -----------------------------------------------------------------------------

def test_recover_beside_a_live_worker_leaves_its_entry_alone(harness: Any) -> None:
    """A worker is inside an entry's host action; another runtime's `recover` runs meanwhile.  It must not run the
    entry's later positions, must not record the entry (listing the running action as failed), and the worker's own
    `move` must report its entry as dispatched, not as a redelivery."""
    h = harness
    entered, release = threading.Event(), threading.Event()
    calls: list[str] = []

    def notify(args: Any, ctx: Any) -> None:
        calls.append("notify")
        entered.set()
        assert release.wait(WAIT)

    def page(args: Any, ctx: Any) -> None:
        calls.append("page")

    worker = _runtime(h, FLOW_V2, ListSink(), page=page, notify=notify)
    worker.create_task("T", "flow")
    box: dict[str, Any] = {}
    thread = threading.Thread(target=lambda: box.setdefault("moved", worker.move("T", "review")), daemon=True)
    thread.start()
    try:
        assert entered.wait(WAIT)
        other = _runtime(h, FLOW_V2, ListSink(), page=page, notify=notify)  # as another process would
        recovered = other.recover()
        assert recovered.entries == () and calls == ["page", "notify"]
        current = worker.current_entry("T")
        assert current is not None and other.dispatch_entry(current).status == "in_progress"
    finally:
        release.set()
        thread.join(WAIT)
    moved = box["moved"]
    assert moved.entry is not None and moved.entry.status == "dispatched" and moved.entry.failed == ()
    assert calls == ["page", "notify"]


# ---- the store's clock ---------------------------------------------------------------------------------------

@pytest.mark.durable
@pytest.mark.parametrize("skew", [11 * 60.0, 3 * 3600.0, -3 * 3600.0], ids=["11min-ahead", "3h-ahead", "3h-behind"])
def test_a_host_clock_far_off_neither_steals_a_live_claim_nor_keeps_a_dead_one(
        harness: Any, monkeypatch: pytest.MonkeyPatch, skew: float) -> None:
    """Leases are judged by the store's clock.  A host whose own clock is far ahead does not take over a claim that
    is still running; one far behind does not keep a dead owner's claim alive.  (The in-memory store's clock is the
    process's own: there is one host there, so it has nothing to disagree with — durable stores only.)"""
    h = harness
    entered, release = threading.Event(), threading.Event()

    def slow(args: Any, ctx: Any) -> None:
        if ctx.operation_id == "comment:live":  # the worker's delivery: it holds its claim until released
            entered.set()
            assert release.wait(WAIT)

    worker = h.start(FLOW, host=HOST)
    worker.create_task("T", "flow")
    h.recorder.hook("notify", lambda ctx: slow({}, ctx))  # a host action: no transaction is open while it runs
    thread = threading.Thread(target=lambda: comment(worker, "T", "comment:live"), daemon=True)
    thread.start()
    try:
        assert entered.wait(WAIT)
        h.store.register_owner("dead-owner", host="h", pid=1, plan=None, lease=30.0)
        h.store.stop_owner("dead-owner")
        assert h.store.claim_operation("comment:dead", token="dead-owner:1", owner_id="dead-owner") == "claimed"
        real = time.time
        monkeypatch.setattr(time, "time", lambda: real() + skew)
        skewed = h.restart()  # a host whose clock is `skew` off: it would stamp and judge leases by it
        got = comment(skewed, "T", "comment:live")
        assert got.result == "in_progress"
        assert "comment:live" not in skewed.recover().operations_released
        assert comment(skewed, "T", "comment:dead").result == "dispatched"
    finally:
        release.set()
        thread.join(WAIT)
    assert h.store.operation_applied("comment:live") and h.store.operation_applied("comment:dead")
    assert [c.operation_id for c in h.recorder.of("queue_run")].count("comment:live") == 2  # two queue_run actions


def test_a_lease_shorter_than_the_executor_timeout_is_refused(memory_harness: Any) -> None:
    from interlock.runtime import RuntimeFault

    plan = _compile(FLOW)
    with pytest.raises(RuntimeFault, match="shorter than `executor_timeout`"):
        Runtime(plan, memory_harness.store, executor_timeout=60.0, operation_lease=30.0)
    rt = Runtime(plan, memory_harness.store, executor_timeout=10.0, operation_lease=30.0)
    with pytest.raises(RuntimeFault, match="shorter than `executor_timeout`"):
        rt.executor_timeout = 31.0


def test_a_dead_owners_seat_in_the_store_is_visible(harness: Any) -> None:
    h = harness
    rt = h.start(FLOW, host=HOST)
    owners = {o.owner_id: o for o in h.store.owners()}
    assert owners[rt.owner_id].alive and owners[rt.owner_id].plan == rt.digest
    rt.close()
    assert not {o.owner_id: o for o in h.store.owners()}[rt.owner_id].alive

