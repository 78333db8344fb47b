"""Two processes redriving one incident at once (docs/runtime.md §7, issue 20): only the failed position runs, once,
on SQLite and PostgreSQL.

The first test is handshake-driven: a spawned worker redrives and is held inside the failed action while
this process redrives the same incident (`busy`, nothing runs), then let go.  The second is a race: two
spawned workers redrive at once from a barrier; one runs it, the other finds it busy or resolved.
"""

from __future__ import annotations

import multiprocessing
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from support import conc_pg as pg
from support.timer_host import T0, Calls, Clock, collect, redrive_worker, runtime

from interlock.runtime import ListSink
from interlock.stores import open_store, upgrade

WAIT = 60.0


@pytest.fixture(params=["sqlite", pytest.param("postgresql", marks=pytest.mark.postgres)])
def url(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[str]:
    if request.param == "sqlite":
        url = f"sqlite:///{tmp_path / 'redrive.db'}"
        upgrade(url)
        yield url
        return
    with pg.private_schema() as schema:
        yield pg.url_for(schema)


@pytest.fixture()
def failed(url: str) -> Iterator[tuple[Any, Calls, int, str]]:
    """A runtime of this process over `url`, and an entry whose `page` (position 1, no retry policy) failed: its
    incident's id, and the failed position's key."""
    store = open_store(url, create=False, clock=Clock())
    calls = Calls()
    rt = runtime(store, calls, sink=ListSink())
    calls.fail("page", error="pager is down")
    entry_id = rt.create_task("T1", "w").ledger_id
    (incident,) = rt.incidents()
    assert incident.failures == ((1, "page", "pager is down"),)
    try:
        yield rt, calls, incident.id, f"entry:{entry_id}:1:page"
    finally:
        rt.close()
        getattr(store, "close", lambda: None)()


def test_a_second_redrive_while_the_first_runs_is_busy_and_runs_nothing(
        url: str, failed: tuple[Any, Calls, int, str]) -> None:
    rt, calls, incident_id, key = failed
    ctx = multiprocessing.get_context("spawn")
    inside, release, results = ctx.Event(), ctx.Event(), ctx.Queue()
    worker = ctx.Process(target=redrive_worker, args=(url, T0, incident_id, "page", inside, release, results))
    worker.start()
    try:
        deadline = WAIT
        while not inside.wait(timeout=0.5):  # the handshake, or the worker's error
            assert results.empty() and worker.is_alive(), collect(results, [worker], 0)
            deadline -= 0.5
            assert deadline > 0, "the worker never reached the failed action"
        assert rt.redrive(incident_id).status == "busy"  # the other process runs it now
        assert rt.resolve(incident_id, "by hand") is False  # nor can it be closed under the redriver
    finally:
        release.set()
    ((status, ran, worker_calls),) = collect(results, [worker], WAIT)
    worker.join(timeout=WAIT)
    assert worker.exitcode == 0
    assert (status, ran) == ("redriven", ["page"])
    assert worker_calls == [("page", key, 2)]  # only the failed position, with its key, the next attempt
    assert rt.redrive(incident_id).status == "resolved"
    assert [(c.kind, c.attempt) for c in calls.calls] == [("notify", 1), ("page", 1)]  # this process: the entry only
    assert rt.incidents() == []


def test_two_processes_racing_to_redrive_run_the_failed_position_once(
        url: str, failed: tuple[Any, Calls, int, str]) -> None:
    rt, calls, incident_id, key = failed
    ctx = multiprocessing.get_context("spawn")
    barrier, results = ctx.Barrier(2), ctx.Queue()
    inside = [ctx.Event() for _ in range(2)]  # kept referenced until the workers have them
    workers = [ctx.Process(target=redrive_worker, args=(url, T0, incident_id, "page", event, None, results, barrier))
               for event in inside]
    for w in workers:
        w.start()
    outcomes = collect(results, workers, WAIT)
    for w in workers:
        w.join(timeout=WAIT)
    assert [w.exitcode for w in workers] == [0, 0]
    statuses = sorted(status for status, _, _ in outcomes)
    assert statuses in (["busy", "redriven"], ["redriven", "resolved"]), outcomes
    assert [c for _, _, cs in outcomes for c in cs] == [("page", key, 2)]  # one run, in one process
    assert rt.incidents() == [] and rt.redrive(incident_id).status == "resolved"
    assert len(calls.calls) == 2
