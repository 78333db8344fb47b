"""`after` and `every` handlers fired by `tick` (docs/runtime.md §7, issue 20): `after` fires once, and never after
the task left its entry; `every` fires at each period while the task stays, and slots missed while nobody ticked
fire once, with `missed`; `next_due` says when to tick again.

Every backend (memory, SQLite, PostgreSQL), each on a test clock the test moves.  The workflow is
support/timer_host.py's: `open` has `after 1h { notify }` and `every 10m { page }`, `review` has `after 30m { page }`.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from support.timer_host import T0, Calls, Clock, clocked_store, runtime

from interlock.runtime import ListSink, Runtime
from interlock.runtime.records import Record

BACKENDS = ["memory", "sqlite", pytest.param("postgresql", marks=pytest.mark.postgres)]
HOUR = 3600


pytestmark = pytest.mark.async_runtime  # each test also runs through AsyncRuntime (tests/runtime/conftest.py)


class Env:
    def __init__(self, request: pytest.FixtureRequest, build: Callable[..., Runtime]) -> None:
        self.clock = Clock()
        self.store, _ = clocked_store(request, self.clock)
        self.calls, self.sink = Calls(), ListSink()
        self.rt: Runtime = runtime(self.store, self.calls, sink=self.sink, build=build)

    def timers(self, **fields: Any) -> list[Record]:
        return [r for r in self.sink.records
                if r.kind == "timer" and all(r.fields.get(k) == v for k, v in fields.items())]

    def fired(self, kind: str, trigger: str) -> list[tuple[str, int | None, int]]:
        """(task, entry the call ran for, attempt) of each call of `kind` by `trigger`."""
        return [(c.task, c.entry_id, c.attempt) for c in self.calls.of(kind, trigger)]


@pytest.fixture(params=BACKENDS)
def env(request: pytest.FixtureRequest, build_runtime: Callable[..., Runtime]) -> Any:
    return Env(request, build_runtime)  # build_runtime closes it


def test_after_fires_once_when_due_and_never_again(env: Env) -> None:
    entry = env.rt.create_task("T1", "w").ledger_id
    env.clock.advance(HOUR - 1)
    assert env.fired("notify", "after 1h") == [] and [i.label for i in env.rt.tick().items] == ["every 10m"]
    env.clock.advance(1)
    items = [(i.label, i.result) for i in env.rt.tick().items]
    assert ("after 1h", "fired") in items
    assert env.fired("notify", "after 1h") == [("T1", entry, 1)]
    for _ in range(3):  # ticks later, and much later: it fired, it never fires again
        env.clock.advance(HOUR)
        assert "after 1h" not in [i.label for i in env.rt.tick().items]
    assert env.fired("notify", "after 1h") == [("T1", entry, 1)]
    (record,) = env.timers(timer="after 1h")
    assert (record.fields["result"], record.fields["entry_id"], record.fields["slot"]) == ("fired", entry, 1)
    assert env.rt.counters.snapshot()["timers_fired"] >= 1


def test_after_never_fires_once_the_task_left_the_entry(env: Env) -> None:
    entry = env.rt.create_task("T1", "w").ledger_id
    env.clock.advance(HOUR / 2)
    env.rt.move("T1", "review")
    cancelled = env.timers(result="cancelled")
    assert sorted(r.fields["timer"] for r in cancelled) == ["after 1h", "every 10m"]
    assert {r.fields["entry_id"] for r in cancelled} == {entry}
    env.clock.advance(10 * HOUR)
    labels = [(i.task_id, i.label, i.result) for i in env.rt.tick().items]
    assert labels == [("T1", "after 30m", "fired")]  # review's own timer; none of open's
    assert env.fired("notify", "after 1h") == [] and env.calls.of("page", "every 10m") == []


def test_a_task_back_on_the_step_gets_new_timers_for_its_new_entry(env: Env) -> None:
    first = env.rt.create_task("T1", "w").ledger_id
    env.clock.advance(HOUR / 2)
    env.rt.move("T1", "review")
    second = env.rt.move("T1", "open").ledger_id
    env.clock.advance(HOUR / 2)  # an hour after the first entry: only half an hour after the second
    assert env.fired("notify", "after 1h") == [] and "after 1h" not in [i.label for i in env.rt.tick().items]
    env.clock.advance(HOUR / 2)
    env.rt.tick()
    assert env.fired("notify", "after 1h") == [("T1", second, 1)] and first != second


def test_a_row_that_outlived_its_entry_is_dropped_by_the_fence(env: Env) -> None:
    from interlock.runtime.store_due import TimerArm

    first = env.rt.create_task("T1", "w").ledger_id
    assert first is not None
    env.rt.move("T1", "review")
    # a row of the old entry the arrival could not remove (another revision armed it after the move)
    env.store.arm_timers("T1", first, "w", "open", None, [TimerArm(0, "after", "after 1h", HOUR)])
    env.clock.advance(HOUR)
    items = [(i.label, i.result) for i in env.rt.tick().items]
    assert ("after 1h", "cancelled") in items
    assert env.fired("notify", "after 1h") == []
    assert env.store.due_rows("T1") == []  # review's `after 30m` fired; the stale row is gone


def test_every_fires_each_period_while_the_task_stays(env: Env) -> None:
    entry = env.rt.create_task("T1", "w").ledger_id
    tick = env.rt.tick()
    assert tick.items == () and tick.next_due == T0 + 600
    for slot in (1, 2, 3):
        env.clock.advance(600)
        tick = env.rt.tick()
        assert [(i.label, i.slot, i.missed, i.result) for i in tick.items] == [("every 10m", slot, 0, "fired")]
        assert tick.next_due == T0 + 600 * (slot + 1)
        assert env.rt.tick().items == ()  # the same moment again: nothing more
    beats = env.calls.of("page", "every 10m")
    assert [(c.entry_id, c.attempt) for c in beats] == [(entry, 1)] * 3
    assert len({c.key for c in beats}) == 3  # one operation per slot
    assert [r.fields["slot"] for r in env.timers(timer="every 10m")] == [1, 2, 3]
    env.rt.move("T1", "closed")
    env.clock.advance(HOUR)
    assert env.rt.tick().items == () and len(env.calls.of("page", "every 10m")) == 3


def test_every_with_missed_slots_fires_once_with_missed(env: Env) -> None:
    env.rt.create_task("T1", "w")
    env.clock.advance(35 * 60)  # nobody ticked through slots 1 (10m), 2 (20m) and 3 (30m)
    tick = env.rt.tick()
    assert [(i.label, i.slot, i.missed, i.result) for i in tick.items] == [("every 10m", 1, 2, "fired")]
    assert tick.next_due == T0 + 40 * 60  # the first slot still ahead
    assert len(env.calls.of("page", "every 10m")) == 1
    (record,) = env.timers(timer="every 10m")
    assert (record.fields["result"], record.fields["slot"], record.fields["missed"]) == ("fired", 1, 2)
    env.clock.advance(5 * 60)
    assert [(i.slot, i.missed) for i in env.rt.tick().items] == [(4, 0)]
    assert len(env.calls.of("page", "every 10m")) == 2


def test_next_due_is_none_when_nothing_is_pending(env: Env) -> None:
    assert env.rt.tick().next_due is None
    env.rt.create_task("T1", "w", "closed")  # a terminal step arms nothing
    assert env.rt.tick().next_due is None
    env.rt.create_task("T2", "w", "review")
    assert env.rt.tick().next_due == T0 + 30 * 60
