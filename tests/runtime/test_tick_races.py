"""Two runtimes ticking one store, forced into the race where one reads a due row and the other runs it first
(docs/runtime.md §7): the row runs once, and only the tick that ran it reports it (`fired`, or a retry `ok`, with
its record); the other reports `idempotent` and records nothing.  Handshake-driven: the second runtime's read of
the due rows returns, then waits until the first runtime's tick is over.

Memory and SQLite (PostgreSQL: tests/runtime/test_tick_processes.py races four processes over 1,000 timers).
"""

from __future__ import annotations

import threading
from typing import Any

import pytest
from support.timer_host import Calls, Clock, clocked_store, runtime

from interlock.runtime import ListSink, Runtime
from interlock.runtime.ticks import TickResult


class HeldReads:
    """A ticker's store whose `due` returns, says so (`read`), and waits for `go` before the tick goes on."""

    def __init__(self, store: Any) -> None:
        self._store = store
        self.read, self.go = threading.Event(), threading.Event()

    def due(self, limit: int = 1000) -> Any:
        rows = self._store.due(limit)
        self.read.set()
        assert self.go.wait(timeout=60), "never let go"
        return rows

    def __getattr__(self, name: str) -> Any:
        return getattr(self._store, name)


def late_tick(first: Runtime, second: Runtime) -> tuple[TickResult, TickResult]:
    """`second` reads the due rows, then `first` ticks to the end, then `second` goes on: both results."""
    held = HeldReads(second.ticker.store)
    second.ticker.store = held  # type: ignore[assignment]
    out: list[TickResult] = []
    thread = threading.Thread(target=lambda: out.append(second.tick()))
    thread.start()
    try:
        assert held.read.wait(timeout=60), "the second tick never read the due rows"
        first_result = first.tick()
    finally:
        held.go.set()
        thread.join(timeout=60)
    second.ticker.store = held._store
    (second_result,) = out
    return first_result, second_result


@pytest.fixture(params=["memory", "sqlite"])
def two(request: pytest.FixtureRequest) -> Any:
    clock = Clock()
    store, _ = clocked_store(request, clock)
    calls, sink = Calls(), ListSink()
    first, second = runtime(store, calls, sink=sink), runtime(store, calls, sink=sink)
    yield clock, calls, sink, first, second
    first.close()
    second.close()


def test_a_timer_the_other_tick_fired_is_reported_once(two: Any) -> None:
    clock, calls, sink, first, second = two
    first.create_task("T1", "w", "review")  # `after 30m { page }`
    clock.advance(1800)
    a, b = late_tick(first, second)
    assert [(i.label, i.result) for i in a.items] == [("after 30m", "fired")]
    assert [(i.label, i.result) for i in b.items] == [("after 30m", "idempotent")]
    assert a.timers_fired + b.timers_fired == 1
    assert len(calls.of("page", "after 30m")) == 1
    assert [r.fields["result"] for r in sink.of("timer")] == ["fired"]


def test_a_retry_the_other_tick_ran_is_recorded_once(two: Any) -> None:
    clock, calls, sink, first, second = two
    calls.fail("notify", 1)
    first.create_task("T1", "w")
    clock.advance(10)  # the retry of `notify` is due
    a, b = late_tick(first, second)
    assert [(i.what, i.result) for i in a.items] == [("retry", "ok")]
    assert [(i.what, i.result) for i in b.items] == [("retry", "idempotent")]
    assert a.retries + b.retries == 1
    assert [c.attempt for c in calls.of("notify")] == [1, 2]
    assert [r.fields["result"] for r in sink.of("retry")] == ["scheduled", "ok"]


def test_a_retried_delivery_the_other_tick_ran_is_recorded_once(two: Any) -> None:
    clock, calls, sink, first, second = two
    first.create_task("T1", "w")
    calls.fail("notify", 1)
    comment = {"comment_id": "c1", "author_id": "u1", "body": "hi"}
    assert first.fire("on_comment", "T1", operation_id="comment:1", payload=comment).result == "error"
    clock.advance(10)  # the retry of the delivery is due
    a, b = late_tick(first, second)
    assert [(i.what, i.result) for i in a.items] == [("retry", "ok")]
    assert [(i.what, i.result) for i in b.items] == [("retry", "idempotent")]
    assert [c.attempt for c in calls.of("notify", "on_comment")] == [1, 2]
    assert [r.fields["result"] for r in sink.of("retry")] == ["scheduled", "ok"]
