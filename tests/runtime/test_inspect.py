"""`inspect_task` (runtime/timeline/, ADR 0046): a task's timeline from the store alone, on every backend — arrivals
and their entries (a failed action, an excluded kind), an operation that moved the task and one whose guard was
false, a decision with the seats and the quorum's state, a due timer, an open incident — and the `--why` answers.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from interlock.runtime import UnknownTaskError, inspect_task
from interlock.runtime.timeline import INSPECT_VERSION

FLOW = """
workflow flow "Flow" {
  step todo "Todo" {
    start
    manual_move
    on on_enter         { auto_start_agent }
    on on_turn_complete { move_to_step(review) }
  }
  step review "Review" {
    manual_move
    on on_enter {
      enable_plan_mode
      clear_decisions
      run_code_review
      queue_run(target: primary, reason: "review_entered")
    }
    on on_turn_complete { move_to_step(done) when quorum(reviewer, all_approve) }
    after 4h { queue_run(target: primary, reason: "nudge") }
  }
  step done "Done" {
    manual_move
    terminal
  }
}
"""


def drive(h: Any) -> None:
    """T1: created into todo, moved to review by operation turn:1 (run_code_review fails: an incident), turn:2's
    guard false, then rev-a approves (1 of 2 seats)."""
    h.start(FLOW)
    h.seat("review", "reviewer", "rev-a")
    h.seat("review", "reviewer", "rev-b")
    h.recorder.fail("run_code_review", error="reviewer bot down")
    h.rt.create_task("T1", "flow", description="Fix the login bug")
    h.rt.fire("on_turn_complete", "T1", session_id="S1", operation_id="turn:1")
    h.rt.fire("on_turn_complete", "T1", session_id="S1", operation_id="turn:2")
    h.rt.record_decision("T1", verdict="approved", agent="rev-a", role="reviewer")


def shape(doc: Any) -> Any:
    """The document without its times (which differ by backend)."""
    if isinstance(doc, dict):
        return {k: shape(v) for k, v in doc.items() if k not in ("at", "now", "due_at", "due_in", "opened_at")}
    if isinstance(doc, list):
        return [shape(x) for x in doc]
    return doc


EXPECTED = Path(__file__).with_name("inspect_expected.json")


def test_the_timeline_from_the_store_alone(harness: Any) -> None:
    drive(harness)
    store = harness.backend.reopen()  # a fresh connection: nothing of the runtime's memory is used
    doc = inspect_task(store, "T1").to_json()
    assert doc["inspect_version"] == INSPECT_VERSION
    assert doc["task"] == {"id": "T1", "workflow": "flow", "step": "flow.review", "entry_id": 2 if
                           harness.backend.name == "memory" else doc["task"]["entry_id"], "archived": False,
                           "task_row": True, "plan": harness.plan.digest}
    kinds = [(e["type"], e.get("route") or e.get("outcome") or e.get("verdict")) for e in doc["events"]]
    assert kinds == [("arrival", "creation"), ("operation", "moved"), ("arrival", "engine_transition"),
                     ("operation", "stayed"), ("decision", "approved")]
    created, moved_by, review, stayed, decision = doc["events"]
    assert created["entry"] == {"state": "recorded", "actions": [], "excluded": ["auto_start_agent"]}
    assert [(a["kind"], a["result"], a["error"]) for a in review["entry"]["actions"]] == [
        ("clear_decisions", "ran", None), ("run_code_review", "failed", "reviewer bot down"),
        ("queue_run", "ran", None)]
    assert review["entry"]["excluded"] == ["enable_plan_mode"]
    assert review["cause"] == {"operation_id": "turn:1", "trigger": "on_turn_complete"} and review["current"]
    assert [(r["agent"], r["reason"]) for r in review["runs"]] == [("primary", "review_entered")]
    assert (moved_by["operation_id"], moved_by["step"], moved_by["moved_by"]) == ("turn:1", "flow.todo",
                                                                                 review["ledger_id"])
    assert stayed["operation_id"] == "turn:2" and stayed["transitions"] == [
        {"position": 0, "to": "done", "guard": "quorum(reviewer, all_approve)", "result": "guard_false"}]
    assert (decision["decider"], decision["seated"], decision["round"], decision["state"]) == (
        "agent:rev-a", True, review["ledger_id"], "active")
    (quorum,) = doc["quorum"]
    assert (quorum["required"], quorum["received"], quorum["satisfied"], quorum["reason"]) == (
        2, 1, False, "threshold_not_met")
    (timer,) = doc["timers"]
    assert (timer["label"], timer["entry_id"], timer["current"]) == ("after 4h", review["ledger_id"], True)
    assert 4 * 3600 - 120 < timer["due_in"] <= 4 * 3600
    (incident,) = doc["incidents"]
    assert (incident["state"], incident["entry_id"], incident["failures"][0]["kind"]) == (
        "open", review["ledger_id"], "run_code_review")
    json.dumps(doc)  # JSON-ready as it is


def test_the_document_has_one_stable_shape_on_every_backend(harness: Any) -> None:
    """The `inspect_version` 1 shape, keys and values (times and ids aside), is the same on memory, SQLite and
    PostgreSQL: the golden file below is what they all print."""
    drive(harness)
    doc = inspect_task(harness.store, "T1").to_json(why=True)
    ids = {e["ledger_id"]: i + 1 for i, e in enumerate(e for e in doc["events"] if e["type"] == "arrival")}
    text = json.dumps(shape(doc), indent=1, sort_keys=True)
    for real, canonical in ids.items():  # ledger ids differ by backend (PostgreSQL's sequences are not reset)
        text = text.replace(f'"ledger_id": {real},', f'"ledger_id": {canonical},')
    got = json.loads(text)
    for e in got["events"]:
        e.pop("round", None), e.pop("moved_by", None), e.pop("entry_id", None), e.pop("id", None)
        for r in e.get("runs", ()):
            r.pop("key"), r.pop("entry_id")
    got["task"].pop("entry_id"), got["task"].pop("plan")
    for i in got["incidents"]:
        i.pop("entry_id"), i.pop("id")
    for t in got["timers"]:
        t.pop("entry_id")
    got.pop("why")
    for e in got["events"]:
        e.pop("plan", None)
    assert got == json.loads(EXPECTED.read_text(encoding="utf-8"))


def test_why_answers_from_the_records(harness: Any) -> None:
    drive(harness)
    timeline = inspect_task(harness.store, "T1")
    on_step = timeline.why("flow.review")[0]
    assert on_step["question"] == "why is T1 on flow.review?"
    first, waits, timer, incident = on_step["answer"]
    assert "(engine_transition, by operation 'turn:1' (trigger on_turn_complete)) moved it from flow.todo to " \
           "flow.review as agent:S1" in first
    assert waits == "on_turn_complete -> done waits for quorum(reviewer, all_approve): 1 of 2 approvals, not " \
                    "satisfied (threshold_not_met)"
    assert timer.startswith("timer `after 4h` (slot 1) is due in 3h5") and incident.startswith("incident #")
    assert [a["answer"] for a in timeline.why("enable_plan_mode")] == [[
        "excluded by the entry policy: the host runs `enable_plan_mode` itself (it is never dispatched, nor "
        "recorded as skipped)"]]
    (failed,) = timeline.why("run_code_review")
    assert failed["answer"][0] == "it failed: reviewer bot down (attempt 1)" and "is open" in failed["answer"][1]
    (guard,) = timeline.why("on_turn_complete")
    assert guard["question"] == "why did on_turn_complete on flow.review not move the task to done?"
    assert guard["answer"] == ["its guard `quorum(reviewer, all_approve)` was false when operation 'turn:2' was "
                               "applied"]


def test_a_superseded_decision_and_a_seatless_decider_are_explained(harness: Any) -> None:
    drive(harness)
    harness.rt.record_decision("T1", verdict="rejected", agent="rev-a", role="reviewer")
    harness.rt.record_decision("T1", verdict="approved", agent="rev-z", role="reviewer")
    timeline = inspect_task(harness.store, "T1")
    decisions = [e for e in timeline.to_json()["events"] if e["type"] == "decision"]
    assert [(d["decider"], d["verdict"], d["state"], d["seated"]) for d in decisions] == [
        ("agent:rev-a", "approved", "superseded", True), ("agent:rev-a", "rejected", "active", True),
        ("agent:rev-z", "approved", "active", False)]
    assert [a["answer"][0].split(":")[0] for a in timeline.why("agent:rev-a")] == ["it was superseded"]
    assert timeline.why("agent:rev-z")[0]["answer"] == [
        "agent:rev-z holds no reviewer seat: approve-style thresholds ignore it"]


def test_an_unknown_task_is_an_error(harness: Any) -> None:
    harness.start(FLOW)
    with pytest.raises(UnknownTaskError, match="no task `nope`"):
        inspect_task(harness.store, "nope")


# ---- read-only: the store `interlock inspect` opens cannot write ---------------------------------------------------

@pytest.fixture()
def durable(harness: Any) -> Any:
    """The harness of a store with a URL to open read-only (the tests using it are marked `durable`)."""
    assert harness.backend.url is not None
    return harness


@pytest.mark.durable
def test_inspect_reads_through_a_connection_that_cannot_write(durable: Any) -> None:
    """SQLite opened `mode=ro`, PostgreSQL in a `default_transaction_read_only` session: a write through that store
    is refused by the database, and inspect gives the same timeline through it."""
    from interlock.runtime import StoreError, TaskState
    from interlock.tools.inspect import open_readonly_store

    drive(durable)
    expected = inspect_task(durable.store, "T1").to_json(why=True)
    store = open_readonly_store(durable.backend.url)
    try:
        with pytest.raises(StoreError, match=r"read-only|readonly"):
            store.put_task(TaskState("T2", "flow", "todo"))
        got = inspect_task(store, "T1").to_json(why=True)
    finally:
        store.close()
    assert shape(got) == shape(expected)


@pytest.mark.durable
def test_the_cli_prints_json_and_the_answers(durable: Any, capsys: pytest.CaptureFixture[str]) -> None:
    from interlock.cli import main

    drive(durable)
    assert main(["inspect", "T1", "--store", durable.backend.url, "--why", "run_code_review"]) == 0
    doc = json.loads(capsys.readouterr().out)  # not a terminal: JSON
    assert doc["inspect_version"] == 1 and [e["type"] for e in doc["events"]][:2] == ["arrival", "operation"]
    assert [a["question"] for a in doc["why"]] == [f"why did run_code_review not run on entry "
                                                   f"#{doc['task']['entry_id']} (flow.review)?"]
    assert main(["inspect", "T1", "--store", durable.backend.url, "--format", "table", "--why"]) == 0
    table = capsys.readouterr().out
    assert "T1 on flow.review" in table and "why is T1 on flow.review?" in table and "guard_false" in table
    # not a terminal: no line padded with trailing spaces (as `simulate --format table | cat`, issue 24)
    assert [line for line in table.splitlines() if line != line.rstrip()] == []


@pytest.mark.durable
def test_the_cli_names_an_unknown_task_and_masks_a_bad_url(durable: Any, capsys: pytest.CaptureFixture[str]) -> None:
    from interlock.cli import main

    drive(durable)
    assert main(["inspect", "nope", "--store", durable.backend.url]) == 1
    assert "interlock inspect: no task `nope` in the store" in capsys.readouterr().err
    assert main(["inspect", "T1", "--store", "postgresql://bob:s3cret@127.0.0.1:1/x"]) == 2
    err = capsys.readouterr().err
    assert "s3cret" not in err and "bob:***@127.0.0.1:1" in err and "Traceback" not in err
