"""Concurrent deliveries take effect once: threads on SQLite (file and memory) and MemoryStore, processes on PostgreSQL."""

from __future__ import annotations

import itertools
import multiprocessing
import queue
import threading
from pathlib import Path
from typing import Any

import pytest
from support import store_race

from interlock.runtime.store import Store
from interlock.stores import MemoryStore, SqlStore, open_store

HERE = Path(__file__).parent
KEYS = 12
ROUNDS = 15




def check(store: Store, results: list[dict[str, Any]], workers: int) -> None:
    """Each delivery won by exactly one racer; one chain of ledger rows with no duplicate."""
    race = store_race
    assert all("error" not in r for r in results), results
    for what in ("marker", "run", "op", "seat"):
        winners = sorted(k for r in results for k in r[what])
        assert winners == list(range(KEYS)), f"{what}: {winners}"
    assert sum(r["first_move"] for r in results) == 1
    steps = tuple(f"step{i}" for i in range(workers))
    for k in range(KEYS):
        assert len(store.participants(f"seat-task-{k}", steps)) == 1
        assert len(store.decisions(f"seat-task-{k}", "review")) == 1
    rows = store.ledger(race.TASK)
    moves = sum(r["moves"] for r in results)
    assert len(rows) == 1 + 1 + moves  # genesis, the first move, the won rounds
    assert len({r.id for r in rows}) == len(rows)
    for prev, row in itertools.pairwise(rows):
        assert row.from_step_id == prev.to_step_id, "a lost update broke the ledger chain"
    task = store.get_task(race.TASK)
    assert task is not None and task.step_id == rows[-1].to_step_id
    assert len(store.runs()) == KEYS
    assert len(store.markers(rows[0].id)) == KEYS


def run_threads(store: Store, workers: int) -> list[dict[str, Any]]:
    race = store_race
    entry_id = race.prepare(store)
    barrier = threading.Barrier(workers)
    results: list[dict[str, Any]] = []

    def racer(worker: int) -> None:
        barrier.wait(timeout=30)
        try:
            results.append(race.race(store, worker, workers, entry_id, KEYS, ROUNDS))
        except BaseException as exc:  # pragma: no cover - reported by check()
            results.append({"error": repr(exc)})

    threads = [threading.Thread(target=racer, args=(w,)) for w in range(workers)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=120)
    assert len(results) == workers
    return results


def test_threads_on_a_sqlite_file(sqlite_url: str) -> None:
    store = SqlStore(sqlite_url)
    try:
        check(store, run_threads(store, 8), 8)
    finally:
        store.close()


def test_threads_on_sqlite_in_memory() -> None:
    store = open_store("sqlite://")
    check(store, run_threads(store, 8), 8)
    store.close()  # type: ignore[attr-defined]


def test_threads_on_the_memory_store() -> None:
    store = MemoryStore()
    check(store, run_threads(store, 8), 8)


def test_a_unit_holds_off_other_threads_until_it_ends(sqlite_url: str) -> None:
    """A unit's writes are invisible to other threads until commit, and a rolled-back unit is never seen."""
    store = SqlStore(sqlite_url)
    seen: queue.Queue[bool] = queue.Queue()
    try:
        with pytest.raises(RuntimeError), store.unit() as unit:
            unit.mark_operation("hidden")
            reader = threading.Thread(target=lambda: seen.put(store.operation_applied("hidden")))
            reader.start()
            reader.join(timeout=10)
            raise RuntimeError("roll back")
        assert seen.get(timeout=10) is False
        assert not store.operation_applied("hidden")
    finally:
        store.close()


@pytest.mark.postgres
def test_processes_on_postgresql(pg_server: Any) -> None:
    workers = 4
    race = store_race
    url = pg_server.url_for(pg_server.new_schema())
    store = open_store(url)
    try:
        entry_id = race.prepare(store)
        ctx = multiprocessing.get_context("spawn")
        barrier = ctx.Barrier(workers)
        results_q = ctx.Queue()
        procs = [ctx.Process(target=race.process_main, args=(url, w, workers, entry_id, KEYS, ROUNDS, barrier,
                                                            results_q))
                 for w in range(workers)]
        for p in procs:
            p.start()
        results = [results_q.get(timeout=120)[1] for _ in procs]
        for p in procs:
            p.join(timeout=60)
        assert [p.exitcode for p in procs] == [0] * workers
        check(store, results, workers)
    finally:
        store.close()  # type: ignore[attr-defined]


def test_two_stores_over_one_engine_share_a_thread_s_unit() -> None:
    """A second `SqlStore` over the same engine joins the unit open on this thread (no second transaction)."""
    first = open_store("sqlite://")
    second = SqlStore(first.engine)  # type: ignore[attr-defined]
    with pytest.raises(RuntimeError), first.unit() as unit:
        assert unit.mark_operation("a")
        assert second.mark_operation("b")
        raise RuntimeError("roll back both")
    assert not second.operation_applied("a") and not second.operation_applied("b")
    first.close()  # type: ignore[attr-defined]
