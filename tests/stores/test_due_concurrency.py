"""Due rows and incidents under contention: each incident claimed, and each due row's slot moved on, by exactly one
racer — threads on a SQLite file and on MemoryStore, four processes on PostgreSQL."""

from __future__ import annotations

import multiprocessing
import threading
from typing import Any

import pytest
from support import due_race

from interlock.runtime.store import Store
from interlock.stores import MemoryStore, SqlStore, open_store

INCIDENTS = 200
ROWS = 200


def check(store: Store, results: list[dict[str, Any]], incident_ids: list[int], row_ids: list[int]) -> None:
    assert all("error" not in r for r in results), results
    claimed = sorted(i for r in results for i in r["incidents"])
    assert claimed == sorted(incident_ids), "an incident claimed twice, or by nobody"
    moved = sorted(i for r in results for i in r["rows"])
    assert moved == sorted(row_ids), "a due row moved on twice, or by nobody"
    for r in results:
        (worker,) = r["worker"]
        for i in r["incidents"]:
            found = store.incident(i)
            assert found is not None and (found.state, found.owner_id) == ("redriving", f"racer-{worker}")
    assert {row.slot for row in store.due_rows(due_race.TASK)} == {2}


def run_threads(store: Store, workers: int) -> None:
    incident_ids, row_ids = due_race.prepare(store, INCIDENTS, ROWS)
    barrier = threading.Barrier(workers)
    results: list[dict[str, Any]] = []

    def racer(worker: int) -> None:
        barrier.wait(timeout=30)
        try:
            results.append(due_race.race(store, worker, incident_ids, row_ids))
        except BaseException as exc:  # pragma: no cover - reported by check()
            results.append({"error": repr(exc)})

    threads = [threading.Thread(target=racer, args=(w,)) for w in range(workers)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=120)
    assert len(results) == workers
    check(store, results, incident_ids, row_ids)


def test_threads_on_a_sqlite_file(sqlite_url: str) -> None:
    store = SqlStore(sqlite_url)
    try:
        run_threads(store, 4)
    finally:
        store.close()


def test_threads_on_the_memory_store() -> None:
    run_threads(MemoryStore(), 4)


@pytest.mark.postgres
def test_four_processes_on_postgresql_claim_each_incident_once(pg_server: Any) -> None:
    workers = 4
    url = pg_server.url_for(pg_server.new_schema())
    store = open_store(url)
    try:
        incident_ids, row_ids = due_race.prepare(store, INCIDENTS, ROWS)
        ctx = multiprocessing.get_context("spawn")
        barrier = ctx.Barrier(workers)
        results_q = ctx.Queue()
        procs = [ctx.Process(target=due_race.process_main, args=(url, w, incident_ids, row_ids, barrier, results_q))
                 for w in range(workers)]
        for p in procs:
            p.start()
        results = [results_q.get(timeout=120)[1] for _ in procs]
        for p in procs:
            p.join(timeout=60)
        assert [p.exitcode for p in procs] == [0] * workers
        check(store, results, incident_ids, row_ids)
    finally:
        store.close()  # type: ignore[attr-defined]
