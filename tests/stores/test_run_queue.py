"""The run queue's contract (issue 21, item 4; ADR 0047), on every backend: a consumer claims a batch of queued runs,
acknowledges or releases them; of consumers claiming at once each run goes to one; a claim whose lease ran out (on
the store's clock) is claimable again; each run is acknowledged exactly once, also across threads and processes."""

from __future__ import annotations

import multiprocessing
import threading

import pytest
from support import run_queue_race

from interlock.runtime.store import QueuedRun, Store, StoreError
from interlock.stores import open_store

T0 = 1_800_000_000.0
BACKENDS = ["memory", "sqlite", pytest.param("postgresql", marks=pytest.mark.postgres)]


class Clock:
    def __init__(self) -> None:
        self.now = T0

    def __call__(self) -> float:
        return self.now


@pytest.fixture()
def clock() -> Clock:
    return Clock()


@pytest.fixture()
def store(clocked_store: Store) -> Store:
    """A fresh, empty store of each backend on this module's clock (tests/stores/conftest.py)."""
    return clocked_store


def queue(store: Store, n: int, task: str = "T1") -> None:
    for i in range(n):
        assert store.enqueue_run(QueuedRun(f"k{task}{i}", task, "work", f"agent-{i}", "r", {"i": i}))


def test_claim_ack_and_the_cursor(store: Store) -> None:
    queue(store, 5)
    pending = store.queued_runs()
    assert [p.run.agent for p in pending] == [f"agent-{i}" for i in range(5)]
    assert all(p.consumer is None and p.claims == 0 for p in pending)
    ids = [p.id for p in pending]
    assert ids == sorted(ids)
    first = store.claim_runs("a", limit=3)
    assert [p.id for p in first] == ids[:3]  # oldest first
    assert all(p.consumer == "a" and p.claims == 1 and p.run.payload == {"i": p.run.payload["i"]} for p in first)
    second = store.claim_runs("b", limit=10)
    assert [p.id for p in second] == ids[3:]  # what `a` holds is not handed out again
    assert store.claim_runs("c") == []
    assert store.ack_runs("b", ids[:3]) == []  # not b's
    assert store.ack_runs("a", ids[:3]) == ids[:3]
    assert store.ack_runs("a", ids[:3]) == []  # acknowledged once
    assert [p.id for p in store.queued_runs()] == ids[3:]
    assert [p.id for p in store.queued_runs(after=ids[3])] == ids[4:]  # the cursor
    assert len(store.runs()) == 5  # `runs()` still lists every run, acknowledged or not
    queue(store, 1, "T2")
    assert [p.run.task_id for p in store.claim_runs("a", after=ids[-1])] == ["T2"]


def test_release_and_a_lapsed_lease(store: Store, clock: Clock) -> None:
    queue(store, 2)
    a = store.claim_runs("a", lease=60)
    ids = [p.id for p in a]
    assert store.release_runs("a", ids[:1]) == ids[:1]
    again = store.claim_runs("b", lease=600)
    assert [(p.id, p.claims) for p in again] == [(ids[0], 2)]  # claimed before: it may have been started
    clock.now += 61  # `a` died holding the second run: its lease runs out on the store's clock
    taken = store.claim_runs("c", lease=60)
    assert [(p.id, p.consumer, p.claims) for p in taken] == [(ids[1], "c", 2)]
    assert store.ack_runs("a", ids) == []  # `a` learns it lost the run
    assert store.ack_runs("c", ids) == [ids[1]]
    clock.now += 600  # `b`'s lease ran out, nobody claimed the run since: its acknowledgement still counts
    assert store.ack_runs("b", ids) == [ids[0]]
    assert store.queued_runs() == []


def test_bad_calls_are_refused(store: Store) -> None:
    for call in (lambda: store.claim_runs(""), lambda: store.claim_runs("a", lease=0),
                 lambda: store.claim_runs("a", limit=-1), lambda: store.ack_runs("a", range(10_001))):
        with pytest.raises(StoreError):
            call()


def test_concurrent_consumers_threads(store: Store) -> None:
    """Four threads claim at once until nothing is left: every run is acknowledged exactly once."""
    queue(store, 200)
    start = threading.Barrier(4)
    results: list[list[int]] = [[] for _ in range(4)]

    def work(n: int) -> None:
        start.wait()
        results[n] = run_queue_race.drain(store, f"t{n}")

    threads = [threading.Thread(target=work, args=(n,)) for n in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    acked = sorted(i for r in results for i in r)
    assert len(acked) == 200 and len(set(acked)) == 200
    assert store.queued_runs() == []


@pytest.mark.parametrize("backend", ["sqlite", pytest.param("postgresql", marks=pytest.mark.postgres)])
def test_concurrent_consumers_processes(backend: str, request: pytest.FixtureRequest) -> None:
    """Four processes claim at once (PostgreSQL: `FOR UPDATE SKIP LOCKED`; SQLite: one writer at a time): every
    run is acknowledged exactly once, by one of them."""
    if backend == "sqlite":
        url = request.getfixturevalue("sqlite_url")
    else:
        server = request.getfixturevalue("pg_server")
        url = server.url_for(server.new_schema())
    store = open_store(url)
    try:
        queue(store, 300)
        ctx = multiprocessing.get_context("spawn")
        start, out = ctx.Barrier(4), ctx.Queue()
        procs = [ctx.Process(target=run_queue_race.process_main, args=(url, f"p{n}", start, out)) for n in range(4)]
        for p in procs:
            p.start()
        got = dict(out.get(timeout=120) for _ in procs)
        for p in procs:
            p.join(timeout=60)
            assert p.exitcode == 0
        acked = [i for ids in got.values() for i in ids]
        assert len(acked) == 300 and len(set(acked)) == 300
        assert store.queued_runs() == []
    finally:
        store.close()  # type: ignore[attr-defined]
