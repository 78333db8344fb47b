"""A process SIGKILLed inside a host action (docs/runtime.md §7, issue 20): the action is never lost — `recover` runs
an interrupted entry action again, the next `tick` an interrupted timer action — with the same
`ctx.idempotency_key` and the next `ctx.attempt`, on SQLite and PostgreSQL.

Handshakes, never sleeps: the worker (support/timer_host.py `hang_inside`, a spawned process) writes the key
to a file when it is inside the action and hangs; the test kills it then.  The killed worker's lease is one
second: the test polls `recover`/`tick` (bounded) until the store counts the owner dead.
"""

from __future__ import annotations

import multiprocessing
import os
import signal
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TypeVar

import pytest
from support import conc_pg as pg
from support.timer_host import T0, Calls, Clock, hang_inside, read_signal, runtime

from interlock.runtime import ListSink
from interlock.stores import open_store, upgrade

WAIT = 60.0
R = TypeVar("R")


@pytest.fixture(params=["sqlite", pytest.param("postgresql", marks=pytest.mark.postgres)])
def url(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[str]:
    if request.param == "sqlite":
        url = f"sqlite:///{tmp_path / 'crash.db'}"
        upgrade(url)
        yield url
        return
    with pg.private_schema() as schema:
        yield pg.url_for(schema)


def kill_inside(url: str, clock_at: float, kind: str, what: str, tmp_path: Path) -> tuple[str, int, str]:
    """Run `what` in a worker until it is inside `kind`, SIGKILL it there; the (key, attempt, trigger) it saw."""
    signal_file = tmp_path / "inside.txt"
    ctx = multiprocessing.get_context("spawn")
    worker = ctx.Process(target=hang_inside, args=(url, clock_at, kind, str(signal_file), what))
    worker.start()
    try:
        deadline = time.monotonic() + WAIT
        while not read_signal(signal_file):
            assert worker.is_alive(), f"the worker exited ({worker.exitcode}) before it reached `{kind}`"
            assert time.monotonic() < deadline, f"the worker never reached `{kind}`"
            time.sleep(0.02)
    finally:
        os.kill(worker.pid or 0, signal.SIGKILL)
        worker.join(timeout=WAIT)
    assert worker.exitcode == -signal.SIGKILL
    (line,) = read_signal(signal_file)
    key, attempt, trigger = line.split(" ", 2)
    return key, int(attempt), trigger


def until(call: Callable[[], R], done: Callable[[R], bool]) -> R:
    """`call()` again until `done` says so (the killed owner's one-second lease running out), within WAIT."""
    deadline = time.monotonic() + WAIT
    while True:
        result = call()
        if done(result):
            return result
        assert time.monotonic() < deadline, f"still not done: {result}"
        time.sleep(0.05)


def test_an_entry_action_killed_midway_is_run_again_by_recover_with_its_key(url: str, tmp_path: Path) -> None:
    key, attempt, trigger = kill_inside(url, T0, "notify", "create", tmp_path)
    assert (attempt, trigger) == (1, "on_enter")
    store = open_store(url, create=False, clock=Clock())
    calls, sink = Calls(), ListSink()
    rt = runtime(store, calls, sink=sink)
    try:
        task = store.get_task("T1")
        assert task is not None and task.entry_id is not None
        entry_id = task.entry_id
        assert store.entry_record(entry_id) is None  # killed before the entry was recorded
        recovered = until(rt.recover, lambda r: r.dispatched > 0)
        assert recovered.dispatched == 1
        # the lost action ran again with the same key, as attempt 2; the rest of the entry ran once
        assert [(c.kind, c.key, c.attempt) for c in calls.calls] == [
            ("notify", key, 2), ("page", f"entry:{entry_id}:1:page", 1)]
        markers = store.markers(entry_id)
        assert [(m.kind, m.state, m.attempt) for m in markers.values()] == [("notify", "done", 2), ("page", "done", 1)]
        record = store.entry_record(entry_id)
        assert record is not None and record.failed == ()
        assert rt.recover().dispatched == 0 and len(calls.calls) == 2  # nothing runs twice
        assert rt.incidents() == []
    finally:
        rt.close()
        getattr(store, "close", lambda: None)()


def test_a_timer_action_killed_midway_is_run_again_by_the_next_tick_with_its_key(url: str, tmp_path: Path) -> None:
    clock = Clock()
    store = open_store(url, create=False, clock=clock)
    calls, sink = Calls(), ListSink()
    rt = runtime(store, calls, sink=sink)
    try:
        entry_id = rt.create_task("T1", "w", "review").ledger_id  # review: `after 30m { page }`
        due = T0 + 30 * 60
        key, attempt, trigger = kill_inside(url, due, "page", "tick", tmp_path)
        assert (attempt, trigger) == (1, "after 30m")
        clock.now = due
        tick = until(rt.tick, lambda t: any(i.result != "in_progress" for i in t.items))
        assert [(i.label, i.result) for i in tick.items] == [("after 30m", "fired")]
        assert [(c.kind, c.key, c.attempt, c.entry_id) for c in calls.calls] == [("page", key, 2, entry_id)]
        assert store.due_rows("T1") == []  # the slot moved on only once its delivery took effect
        clock.advance(24 * 3600)
        assert rt.tick().items == () and len(calls.calls) == 1
    finally:
        rt.close()
        getattr(store, "close", lambda: None)()
