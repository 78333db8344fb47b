"""Host actions fail loudly and are run again with their key (docs/runtime.md §7, issue 20): `action_failed` on
entry and on fire, a late completion of a timed-out executor recorded and retried with the same key, a retry
policy driven by `tick` across a test clock, and an incident's redrive that runs only what failed, once.

Every backend (memory, SQLite, PostgreSQL), each on a test clock the test moves.  The workflow is
support/timer_host.py's: `notify` has `retry 2 backoff 10s..40s`, `page` has no retry policy.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import pytest
from support.timer_host import T0, Calls, Clock, clocked_store, runtime

from interlock.runtime import ListSink, Runtime
from interlock.runtime.records import Record
from interlock.runtime.store import Store

COMMENT = {"comment_id": "c1", "author_id": "u1", "body": "hi"}
BACKENDS = ["memory", "sqlite", pytest.param("postgresql", marks=pytest.mark.postgres)]
pytestmark = pytest.mark.async_runtime  # each test also runs through AsyncRuntime (tests/runtime/conftest.py)


@dataclass
class Env:
    store: Store
    clock: Clock
    calls: Calls
    sink: ListSink
    rt: Runtime

    def records(self, kind: str, **fields: Any) -> list[Record]:
        return [r for r in self.sink.records
                if r.kind == kind and all(r.fields.get(k) == v for k, v in fields.items())]

    def action_failed(self) -> list[Record]:
        return self.records("warning", code="action_failed")


@pytest.fixture(params=BACKENDS)
def env(request: pytest.FixtureRequest, build_runtime: Callable[..., Runtime]) -> Any:
    clock = Clock()
    store, _ = clocked_store(request, clock)
    calls, sink = Calls(), ListSink()
    return Env(store, clock, calls, sink, runtime(store, calls, sink=sink, build=build_runtime))  # closed by it


# ---- action_failed -------------------------------------------------------------------------------------------


def test_a_failed_entry_action_is_a_warning_besides_the_entry_record(env: Env) -> None:
    env.calls.fail("page", error="pager is down")
    result = env.rt.create_task("T1", "w")
    assert result.entry is not None and result.entry.failed == (("page", "pager is down"),)
    (warning,) = env.action_failed()
    assert warning.level == "warning"  # a host that alerts on WARNING sees it (the entry record is INFO)
    assert {k: warning.fields.get(k) for k in ("task", "step", "kind", "error", "attempt", "entry_id")} == {
        "task": "T1", "step": "open", "kind": "page", "error": "pager is down", "attempt": 1,
        "entry_id": result.ledger_id}
    (entry,) = env.records("entry")
    assert entry.fields["failed"] == [{"kind": "page", "error": "pager is down"}]
    # nothing retries `page`: an incident, announced at ERROR
    (opened,) = env.records("incident_opened")
    assert opened.level == "error" and opened.fields["kind"] == "entry"
    (incident,) = env.rt.incidents()
    assert (incident.task_id, incident.failures, incident.attempts) == ("T1", ((1, "page", "pager is down"),), 1)


def test_a_failed_action_of_a_fire_is_a_warning_and_an_incident(env: Env) -> None:
    env.rt.create_task("T1", "w")
    env.calls.fail("page", error="pager is down")
    fired = env.rt.fire("on_comment", "T1", operation_id="comment:1", payload=COMMENT)
    assert fired.result == "error" and fired.failed_kind == "page"
    (warning,) = env.action_failed()
    assert warning.level == "warning"
    assert {k: warning.fields.get(k) for k in ("task", "step", "kind", "error", "attempt")} == {
        "task": "T1", "step": "open", "kind": "page", "error": "pager is down", "attempt": 1}
    (incident,) = env.rt.incidents()
    assert (incident.kind, incident.operation_id, incident.trigger, incident.error) == (
        "operation", "comment:1", "on_comment", "pager is down")


# ---- late completion -------------------------------------------------------------------------------------------


class Late:
    """An executor call that blocks until the test releases it, and a sink that says when the runtime recorded its
    late completion."""

    def __init__(self, env: Env, kind: str) -> None:
        self.release = threading.Event()
        self.recorded = threading.Event()
        self.inside = threading.Event()
        env.calls.block(kind, self._block)
        env.rt.add_sink(self._sink)

    def _block(self, ctx: Any) -> None:
        self.inside.set()
        assert self.release.wait(timeout=60), "never released"

    def _sink(self, record: Record) -> None:
        if record.kind == "late_completion":
            self.recorded.set()

    def finish(self) -> None:
        """Let the abandoned call return, and wait for its record (a handshake, not a sleep)."""
        self.release.set()
        assert self.recorded.wait(timeout=60), "no late_completion record"


def test_an_entry_action_that_timed_out_and_then_returned_is_recorded_and_retried_with_its_key(env: Env) -> None:
    late = Late(env, "notify")
    env.rt.executor_timeout = 0.05  # the call blocks until released: it times out whatever the machine's speed
    result = env.rt.create_task("T1", "w")
    assert late.inside.wait(timeout=60)  # the executor thread may start after the 0.05 s timeout on a loaded machine
    assert result.entry is not None and [k for k, _ in result.entry.failed] == ["notify"]
    assert "timed out" in result.entry.failed[0][1]
    (warning,) = env.action_failed()
    assert (warning.fields["kind"], warning.fields["attempt"]) == ("notify", 1)
    assert env.records("late_completion") == []
    late.finish()
    (record,) = env.records("late_completion")
    first = env.calls.of("notify")[0]
    assert record.level == "warning"
    assert {k: record.fields.get(k) for k in ("kind", "task", "step", "key", "outcome", "attempt", "entry_id")} == {
        "kind": "notify", "task": "T1", "step": "open", "key": first.key, "outcome": "ok", "attempt": 1,
        "entry_id": result.ledger_id}
    assert env.rt.counters.snapshot()["late_completions"] == 1
    # the failure was handed to `notify`'s retry policy: the next try carries the same key
    env.rt.executor_timeout = 10.0
    env.clock.advance(10)
    (item,) = env.rt.tick().items
    assert (item.what, item.result) == ("retry", "ok")
    second = env.calls.of("notify")[1]
    assert (second.key, second.attempt) == (first.key, 2)


def test_a_fire_whose_action_timed_out_records_the_late_completion(env: Env) -> None:
    env.rt.create_task("T1", "w")
    late = Late(env, "page")
    env.rt.executor_timeout = 0.05
    fired = env.rt.fire("on_comment", "T1", operation_id="comment:1", payload=COMMENT)
    assert fired.result == "error" and "timed out" in (fired.error or "")
    late.finish()
    (record,) = env.records("late_completion")
    call = env.calls.of("page", "on_comment")[0]
    assert {k: record.fields.get(k) for k in ("kind", "key", "outcome", "operation_id", "attempt")} == {
        "kind": "page", "key": call.key, "outcome": "ok", "operation_id": "comment:1", "attempt": 1}
    # `page` has no retry: an incident, and its redrive runs the delivery with the same key, next attempt
    env.rt.executor_timeout = 10.0
    (incident,) = env.rt.incidents()
    assert env.rt.redrive(incident).status == "redriven"
    again = env.calls.of("page", "on_comment")[1]
    assert (again.key, again.attempt) == (call.key, 2)


# ---- retry policies across a test clock ------------------------------------------------------------------------


def test_an_entry_action_is_retried_with_backoff_by_tick_then_becomes_an_incident(env: Env) -> None:
    env.calls.fail("notify", 3)  # the first try and both retries fail
    entry_id = env.rt.create_task("T1", "w").ledger_id
    assert env.rt.tick().items == ()  # nothing due before the backoff ran out
    assert env.rt.incidents() == []
    env.clock.advance(9)
    assert [i for i in env.rt.tick().items if i.what == "retry"] == []
    env.clock.advance(1)  # T0 + 10: the first retry
    tick = env.rt.tick()
    assert [(i.what, i.label, i.slot, i.result) for i in tick.items] == [("retry", "notify", 2, "failed")]
    assert tick.next_due == T0 + 10 + 20  # the backoff doubles
    env.clock.advance(19)
    assert [i for i in env.rt.tick().items if i.what == "retry"] == []
    env.clock.advance(1)
    assert [(i.slot, i.result) for i in env.rt.tick().items if i.what == "retry"] == [(3, "exhausted")]
    notify = env.calls.of("notify")
    assert [c.attempt for c in notify] == [1, 2, 3]
    assert {c.key for c in notify} == {f"entry:{entry_id}:0:notify"}  # one key for every try
    assert len(env.calls.of("page")) == 1  # only the failed position is retried
    assert [r.fields["attempt"] for r in env.action_failed()] == [1, 2, 3]
    assert [r.fields["result"] for r in env.records("retry")] == ["scheduled", "failed", "exhausted"]
    (incident,) = env.rt.incidents()
    assert (incident.kind, incident.attempts, incident.failures) == ("entry", 3, ((0, "notify", "chat is down"),))
    (opened,) = env.records("incident_opened")
    assert opened.level == "error"
    env.clock.advance(3600 * 24)  # exhausted: nothing more is due for it (the step's timers aside)
    assert [i for i in env.rt.tick().items if i.what == "retry"] == []
    assert len(env.calls.of("notify", "on_enter")) == 3


def test_a_retry_that_succeeds_leaves_no_incident(env: Env) -> None:
    env.calls.fail("notify", 1)
    env.rt.create_task("T1", "w")
    env.clock.advance(10)
    assert [(i.what, i.result) for i in env.rt.tick().items] == [("retry", "ok")]
    assert env.rt.incidents() == []
    assert [c.attempt for c in env.calls.of("notify")] == [1, 2]
    env.clock.advance(30)
    assert [i for i in env.rt.tick().items if i.what == "retry"] == []  # it ran once: the row is gone


class _Killed(BaseException):
    """The process dies here (a BaseException: nothing in the runtime catches it)."""


def test_a_retry_cut_off_after_its_try_failed_still_hands_the_failure_on(env: Env,
                                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    """Killed between marking a retry's try as run and scheduling the next one (or opening the incident): the next
    tick reads the position's marker and hands the failure on, instead of taking the try as done and losing it."""
    env.calls.fail("notify", 3)
    env.rt.create_task("T1", "w")
    env.clock.advance(10)
    mark = env.store.mark_operation

    def mark_then_die(operation_id: str, **kw: Any) -> bool:
        mark(operation_id, **kw)
        raise _Killed

    monkeypatch.setattr(env.store, "mark_operation", mark_then_die)
    with pytest.raises(_Killed):
        env.rt.tick()
    monkeypatch.undo()
    tick = env.rt.tick()  # the same slot again: its try already ran (attempt 2) and failed
    assert [(i.what, i.label, i.slot, i.result) for i in tick.items] == [("retry", "notify", 2, "failed")]
    assert [c.attempt for c in env.calls.of("notify")] == [1, 2]  # not run again by this tick
    env.clock.advance(20)
    assert [(i.slot, i.result) for i in env.rt.tick().items if i.what == "retry"] == [(3, "exhausted")]
    (incident,) = env.rt.incidents()  # the failure reached its end: an incident, nothing lost
    assert incident.attempts == 3


def test_a_failed_fire_is_redelivered_by_its_retry_under_its_operation_id(env: Env) -> None:
    env.rt.create_task("T1", "w")
    env.calls.fail("notify", 1)  # the handler's second action
    fired = env.rt.fire("on_comment", "T1", operation_id="comment:1", payload=COMMENT)
    assert (fired.result, fired.failed_kind) == ("error", "notify")
    (scheduled,) = env.records("retry", result="scheduled")
    assert (scheduled.fields["operation_id"], scheduled.fields["attempt"]) == ("comment:1", 2)
    env.clock.advance(9)
    assert env.rt.tick().items == ()
    env.clock.advance(1)
    (item,) = env.rt.tick().items
    assert (item.what, item.label, item.slot, item.result) == ("retry", "notify", 2, "ok")
    runs = [(c.kind, c.attempt, c.key) for c in env.calls.of(trigger="on_comment")]
    # the whole handler again, under its operation id: the keys of what ran before are the same
    assert [(k, a) for k, a, _ in runs] == [("page", 1), ("notify", 1), ("page", 2), ("notify", 2)]
    assert runs[0][2] == runs[2][2] and runs[1][2] == runs[3][2] and runs[0][2] != runs[1][2]
    assert env.rt.incidents() == []
    assert env.rt.fire("on_comment", "T1", operation_id="comment:1", payload=COMMENT).result == "idempotent"


def test_a_retry_never_runs_for_an_entry_the_task_left(env: Env) -> None:
    env.calls.fail("notify", 1)
    env.rt.create_task("T1", "w")
    env.rt.move("T1", "review")
    env.clock.advance(10)
    items = [i for i in env.rt.tick().items if i.what == "retry"]
    assert items == []  # removed with the entry (the arrival's transaction), never run
    assert len(env.calls.of("notify")) == 1
    assert [r.fields["result"] for r in env.records("retry")] == ["scheduled", "superseded"]


# ---- incidents: redrive runs only what failed, once -------------------------------------------------------------


def test_redrive_runs_only_the_failed_position_once_with_its_key(env: Env) -> None:
    env.calls.fail("page", error="pager is down")
    entry_id = env.rt.create_task("T1", "w").ledger_id
    (incident,) = env.rt.incidents()
    result = env.rt.redrive(incident)
    assert (result.status, result.ran) == ("redriven", ("page",))
    assert [(c.kind, c.attempt) for c in env.calls.of(trigger="on_enter")] == [("notify", 1), ("page", 1),
                                                                            ("page", 2)]
    assert {c.key for c in env.calls.of("page")} == {f"entry:{entry_id}:1:page"}
    assert env.rt.incidents() == []
    assert env.rt.redrive(incident).status == "resolved"  # a second redrive runs nothing
    assert env.rt.resolve(incident, "again") is False
    assert len(env.calls.of("page")) == 2
    (resolved,) = env.records("incident_resolved")
    assert resolved.fields["resolution"] == "redriven"


def test_redrive_that_fails_again_keeps_the_incident_open(env: Env) -> None:
    env.calls.fail("page", 2, error="pager is down")
    env.rt.create_task("T1", "w")
    (incident,) = env.rt.incidents()
    result = env.rt.redrive(incident)
    assert (result.status, result.error) == ("failed", "pager is down")
    (still,) = env.rt.incidents()
    assert (still.id, still.attempts) == (incident.id, 2)
    assert [r.fields["attempt"] for r in env.action_failed()] == [1, 2]
    assert env.rt.resolve(still, "paged by hand") is True
    assert env.rt.incidents() == [] and env.rt.redrive(still).status == "resolved"
    assert len(env.calls.of("page")) == 2


def test_an_incident_of_an_entry_the_task_left_is_superseded_and_nothing_runs(env: Env) -> None:
    env.calls.fail("page")
    env.rt.create_task("T1", "w")
    (incident,) = env.rt.incidents()
    env.rt.move("T1", "review")
    assert env.rt.redrive(incident).status == "superseded"
    assert len(env.calls.of("page")) == 1
    assert env.records("incident_resolved")[-1].fields["resolution"] == "superseded"
