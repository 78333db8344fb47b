"""Concurrent deliveries through the `Runtime` take effect once (docs/runtime.md §1, §2, §4).

"Several OS processes deliver the same arrivals, entries and operations at once: every
effect happens exactly once, no step change is lost, no ledger row is duplicated."

The race (`support/conc_work.py`) runs once per backend — 4 spawned processes on PostgreSQL, 8
threads on one SQLite file (half share a store, half open their own), 8 threads on one
`MemoryStore` — and the tests below check its outcome from the durable state and the
records each racer saw.
"""

from __future__ import annotations

import itertools
import multiprocessing
import shutil
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
import sqlalchemy as sa
from support import conc_pg as pg
from support import conc_work as work

from interlock.runtime.api import Runtime
from interlock.runtime.errors import RuntimeFault
from interlock.runtime.executors import ActionContext, ExecutorRegistry
from interlock.runtime.records import ListSink
from interlock.runtime.store import EntryRecord, LedgerRow, Marker, QueuedRun, Store, StoreError, TaskState
from interlock.stores import MemoryStore, SqlStore, open_store
from interlock.stores.schema import metadata, operations

HERE = Path(__file__).parent
DEADLINE_S = 120.0  # a hang fails the test instead of blocking CI
ENTRY_KINDS = ("clear_decisions", "ensure_seats", "queue_run_for_each_participant")






# ---- running the race -------------------------------------------------------------------------------

@dataclass(repr=False)
class Outcome:
    """The durable state after a race, and what each racer reported."""

    backend: str
    workers: int
    tasks: int
    cas_tasks: int
    results: list[dict[str, Any]]
    final: dict[str, TaskState | None]
    ledger: list[LedgerRow]
    entries: dict[int, EntryRecord | None]
    markers: dict[int, dict[int, Marker]]
    runs: list[QueuedRun]
    unrecorded: list[LedgerRow]
    applied: dict[str, bool]
    op_rows: Counter[str] | None = None  # SQL stores: operation ids as counted in the table
    records: list[tuple[str, str, dict[str, Any]]] = field(default_factory=list)

    def __repr__(self) -> str:  # short: failing assertions print it
        return (f"Outcome({self.backend}: {self.workers} racers, {self.tasks} tasks, {self.cas_tasks} CAS tasks, "
                f"{len(self.ledger)} ledger rows, {len(self.runs)} runs)")


def _snapshot(backend: str, store: Store, workers: int, tasks: int, cas_tasks: int,
              results: list[dict[str, Any]]) -> Outcome:
    assert all("error" not in r for r in results), [r.get("error") for r in results]
    ids = work.task_ids(tasks) + work.cas_ids(cas_tasks)
    ledger = store.ledger()
    op_ids = [f"{p}:{t}" for t in work.task_ids(tasks) for p in ("tc", "comment")]
    op_rows = None
    if isinstance(store, SqlStore):
        with store.engine.connect() as conn:
            op_rows = Counter(str(r[0]) for r in conn.execute(sa.select(operations.c.operation_id)))
    return Outcome(
        backend=backend, workers=workers, tasks=tasks, cas_tasks=cas_tasks, results=results,
        final={t: store.get_task(t) for t in ids}, ledger=ledger,
        entries={row.id: store.entry_record(row.id) for row in ledger},
        markers={row.id: store.markers(row.id) for row in ledger}, runs=store.runs(),
        unrecorded=store.unrecorded_arrivals(), applied={op: store.operation_applied(op) for op in op_ids},
        op_rows=op_rows, records=[rec for r in results for rec in r["records"]])


def _run_threads(workers: int, tasks: int, cas_tasks: int, shared: Store,
                 own_store: Callable[[], Store] | None) -> list[dict[str, Any]]:
    """`workers` threads, each with its own `Runtime`; odd ones open their own store when `own_store` is given."""
    barrier = threading.Barrier(workers)
    results: list[dict[str, Any]] = [{"error": "did not finish"}] * workers

    def racer(worker: int) -> None:
        store = own_store() if own_store is not None and worker % 2 else shared
        try:
            rt, sink = work.runtime(store, atomic=(worker // 2) % 2 == 0)  # both arrival shapes race
            results[worker] = work.deliver(rt, store, sink, tasks, cas_tasks, lambda: barrier.wait(timeout=60))
        except BaseException as exc:
            results[worker] = {"error": f"{type(exc).__name__}: {exc}"}
            barrier.abort()
        finally:
            if store is not shared:
                store.close()  # type: ignore[attr-defined]

    threads = [threading.Thread(target=racer, args=(w,), daemon=True, name=f"racer-{w}") for w in range(workers)]
    for t in threads:
        t.start()
    deadline = time.monotonic() + DEADLINE_S
    for t in threads:
        t.join(timeout=max(0.0, deadline - time.monotonic()))
    assert not any(t.is_alive() for t in threads), "a racer hung"
    return results


def _run_processes(url: str, workers: int, tasks: int, cas_tasks: int) -> list[dict[str, Any]]:
    ctx = multiprocessing.get_context("spawn")
    barrier = ctx.Barrier(workers)
    results_q = ctx.Queue()
    procs = [ctx.Process(target=work.process_main, args=(url, work.plan_text(), tasks, cas_tasks, barrier,
                                                        results_q, w), name=f"racer-{w}")
             for w in range(workers)]
    for p in procs:
        p.start()
    try:
        deadline = time.monotonic() + DEADLINE_S
        got = dict(results_q.get(timeout=max(1.0, deadline - time.monotonic())) for _ in procs)
        for p in procs:
            p.join(timeout=max(1.0, deadline - time.monotonic()))
        assert [p.exitcode for p in procs] == [0] * workers, [p.exitcode for p in procs]
        return [got[w] for w in range(workers)]
    finally:
        for p in procs:
            if p.is_alive():
                p.terminate()
                p.join(timeout=10)
        results_q.close()
        results_q.join_thread()



BACKENDS = ["memory", "sqlite", pytest.param("postgresql", marks=pytest.mark.postgres)]


@pytest.fixture(scope="module", params=BACKENDS)
def race(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Outcome]:
    backend: str = request.param
    if backend == "postgresql":
        workers, tasks, cas_tasks = 4, 20, 6
        with pg.private_schema() as schema:
            url = pg.url_for(schema)
            store = open_store(url)
            try:
                work.prepare(store, tasks, cas_tasks)
                results = _run_processes(url, workers, tasks, cas_tasks)
                yield _snapshot(backend, store, workers, tasks, cas_tasks, results)
            finally:
                store.close()  # type: ignore[attr-defined]
        return
    if backend == "memory":
        workers, tasks, cas_tasks = 8, 20, 6
        memory = MemoryStore()
        work.prepare(memory, tasks, cas_tasks)
        results = _run_threads(workers, tasks, cas_tasks, memory, None)
        yield _snapshot(backend, memory, workers, tasks, cas_tasks, results)
        return
    workers, tasks, cas_tasks = 8, 12, 4
    path = tmp_path_factory.mktemp("conc") / "race.db"
    shutil.copyfile(request.getfixturevalue("sqlite_template"), path)
    url = f"sqlite:///{path}"
    sql = SqlStore(url)
    try:
        work.prepare(sql, tasks, cas_tasks)
        results = _run_threads(workers, tasks, cas_tasks, sql, lambda: open_store(url, create=False))
        yield _snapshot(backend, sql, workers, tasks, cas_tasks, results)
    finally:
        sql.close()


# ---- what the race must show ----------------------------------------------------------------------------

def test_the_race_delivered_enough_events(race: Outcome) -> None:
    events = sum(r["events"] for r in race.results)
    assert events >= 200, events
    # every racer delivered every event: each fire went through (applied or idempotent), no exception
    for r in race.results:
        assert sum(n for (trigger, _), n in r["fires"].items() if trigger == "on_turn_complete") == race.tasks


def test_each_step_change_happened_exactly_once_and_none_was_lost(race: Outcome) -> None:
    by_task: dict[str, list[LedgerRow]] = {}
    for row in race.ledger:
        by_task.setdefault(row.task_id, []).append(row)
    assert len({row.id for row in race.ledger}) == len(race.ledger), "duplicate ledger ids"
    for task in work.task_ids(race.tasks):
        moves = [(r.from_step_id, r.to_step_id, r.route) for r in by_task.get(task, [])]
        assert moves == [("work", "review", "engine_transition"), ("review", "approval", "decision")], (task, moves)
        final = race.final[task]
        assert final is not None and final.step_id == "approval", (task, final)
    for task in work.cas_ids(race.cas_tasks):
        moves = [(r.from_step_id, r.to_step_id, r.route) for r in by_task.get(task, [])]
        assert moves == [("backlog", "review", "manual_move")], (task, moves)
        final = race.final[task]
        assert final is not None and final.step_id == "review"
    assert len(race.ledger) == 2 * race.tasks + race.cas_tasks
    for rows in by_task.values():  # one unbroken chain per task
        for prev, row in itertools.pairwise(rows):
            assert row.from_step_id == prev.to_step_id
    # exactly one racer saw each move succeed, and it names the ledger row
    won = Counter((task, route) for r in race.results for task, _, route in r["moved"])
    assert all(n == 1 for n in won.values()), [k for k, n in won.items() if n != 1]
    assert len(won) == 2 * race.tasks + race.cas_tasks
    ledger_ids = {(row.task_id, row.route): row.id for row in race.ledger}
    for r in race.results:
        for task, ledger_id, route in r["moved"]:
            assert ledger_ids[(task, route)] == ledger_id


def test_concurrent_moves_with_expected_step_have_exactly_one_winner(race: Outcome) -> None:
    for task in work.cas_ids(race.cas_tasks):
        outcomes = Counter(r["cas"][task] for r in race.results)
        assert outcomes == Counter({"moved": 1, "cas_lost": race.workers - 1}), (task, outcomes)
        plain = Counter(r["plain"][task] for r in race.results)
        assert plain == Counter({"same_step": race.workers}), (task, plain)


def test_every_arrival_has_exactly_one_entry_record(race: Outcome) -> None:
    assert race.unrecorded == []
    for row in race.ledger:
        record = race.entries[row.id]
        assert record is not None, row
        assert (record.task_id, record.step_id, record.attempted, record.failed) == \
            (row.task_id, row.to_step_id, ENTRY_KINDS, ()), record
    for r in race.results:
        assert r["entry_results"]["incomplete"] == 0


def test_no_entry_of_store_backed_actions_leaves_a_marker(race: Outcome) -> None:
    """Every entry here runs store-backed actions only, so it is one transaction — in its arrival's (a racer with
    `atomic_arrivals` on a durable store) or of its own after the commit (ADR 0036) — and its record is the marker of
    every position: no marker rows, whoever of the racers dispatched it.  Racers of both kinds ran."""
    assert {r["atomic"] for r in race.results} == {True, False}
    for row in race.ledger:
        assert race.markers[row.id] == {}, (row, race.markers[row.id])


def test_each_reviewer_has_exactly_one_run_per_entry(race: Outcome) -> None:
    assert len({run.key for run in race.runs}) == len(race.runs), "duplicate run keys"
    review_entries = {row.id for row in race.ledger if row.to_step_id == "review"}
    approval_entries = {row.id for row in race.ledger if row.to_step_id == "approval"}
    per_entry_agent = Counter((run.entry_id, run.agent) for run in race.runs if run.entry_id is not None)
    assert all(n == 1 for n in per_entry_agent.values()), [k for k, n in per_entry_agent.items() if n != 1]
    for entry in review_entries:
        assert {a for (e, a) in per_entry_agent if e == entry} == set(work.REVIEWERS), entry
    for entry in approval_entries:
        assert {a for (e, a) in per_entry_agent if e == entry} == {"primary"}, entry
    comment_runs = Counter(run.operation_id for run in race.runs if run.operation_id is not None)
    assert comment_runs == Counter({f"comment:{t}": 1 for t in work.task_ids(race.tasks)})
    reasons = Counter(run.reason for run in race.runs)
    # reviewers and approvers are both assigned the task (kandev's current Office Default: reason task_assigned)
    assert reasons == Counter({"task_assigned": (race.tasks + race.cas_tasks) * len(work.REVIEWERS) + race.tasks,
                               "task_comment": race.tasks})


def test_each_operation_is_marked_once(race: Outcome) -> None:
    assert all(race.applied.values()), [op for op, ok in race.applied.items() if not ok]
    if race.op_rows is not None:
        for op in race.applied:
            assert race.op_rows[op] == 1, op
    # every racer got an answer for each operation: applied by it, or recognised as applied
    for r in race.results:
        # (or discarded while a live racer was running it: `in_progress`)
        assert set(r["fires"]) <= {("on_comment", "dispatched"), ("on_comment", "idempotent"),
                                   ("on_comment", "in_progress"), ("on_turn_complete", "dispatched"),
                                   ("on_turn_complete", "idempotent"), ("on_turn_complete", "in_progress"),
                                   ("arrival", "moved"), ("arrival", "cas_lost")}, r["fires"]


def test_every_effect_record_is_emitted_once_and_matches_the_store(race: Outcome) -> None:
    effects = [f for kind, _, f in race.records if kind == "effect"]
    keyed = Counter((f["kind"], f["task"], f.get("entry_id"), f.get("operation_id"), f.get("agent"), f.get("role"))
                    for f in effects)
    assert all(n == 1 for n in keyed.values()), [k for k, n in keyed.items() if n != 1]
    run_effects = Counter(f["key"] for f in effects if f["kind"] in ("queue_run", "queue_run_for_each_participant"))
    assert run_effects == Counter({run.key: 1 for run in race.runs})
    seats = [f for f in effects if f["kind"] == "ensure_seats"]
    assert sorted(f["task"] for f in seats) == work.task_ids(race.tasks)  # one approver seat per task
    cleared = Counter(f["entry_id"] for f in effects if f["kind"] == "clear_decisions")
    assert cleared == Counter({row.id: 1 for row in race.ledger})


def test_no_racer_saw_an_error_or_a_warning(race: Outcome) -> None:
    bad = [(kind, f) for kind, level, f in race.records if kind in ("error", "warning") or level == "error"]
    assert bad == []


def test_the_arrival_and_entry_records_of_each_ledger_row_are_emitted_once(race: Outcome) -> None:
    """One dispatch per ledger row (docs/runtime.md §1): the racers together log each arrival and each entry once."""
    arrivals = Counter(f["ledger_id"] for kind, _, f in race.records if kind == "arrival")
    assert arrivals == Counter({row.id: 1 for row in race.ledger})
    entries = Counter(f["entry_id"] for kind, _, f in race.records if kind == "entry")
    assert entries == Counter({row.id: 1 for row in race.ledger}), \
        sorted((e, n) for e, n in entries.items() if n != 1)[:5]


# ---- smaller races --------------------------------------------------------------------------------------

def _threads(n: int, target: Callable[[int], Any]) -> list[Any]:
    barrier = threading.Barrier(n)
    out: list[Any] = [None] * n

    def run(i: int) -> None:
        barrier.wait(timeout=30)
        try:
            out[i] = target(i)
        except BaseException as exc:
            out[i] = exc

    threads = [threading.Thread(target=run, args=(i,), daemon=True) for i in range(n)]
    for t in threads:
        t.start()
    deadline = time.monotonic() + 60
    for t in threads:
        t.join(timeout=max(0.0, deadline - time.monotonic()))
    assert not any(t.is_alive() for t in threads), "a thread hung"
    return out


def _sqlite_copy(template: Path, tmp_path: Path) -> SqlStore:
    shutil.copyfile(template, tmp_path / "small.db")
    return SqlStore(f"sqlite:///{tmp_path / 'small.db'}")


@pytest.fixture(params=["memory", "sqlite"])
def small_store(request: pytest.FixtureRequest, sqlite_template: Path, tmp_path: Path) -> Iterator[Store]:
    if request.param == "memory":
        yield MemoryStore()
        return
    store = _sqlite_copy(sqlite_template, tmp_path)
    yield store
    store.close()


@pytest.fixture(scope="module")
def pg_schema() -> Iterator[str]:
    with pg.private_schema() as name:
        yield name


@pytest.fixture(params=BACKENDS)
def thread_store(request: pytest.FixtureRequest) -> Iterator[Store]:
    """A fresh store of each backend for races between threads of this process (PostgreSQL: tables emptied)."""
    if request.param == "memory":
        yield MemoryStore()
        return
    if request.param == "sqlite":
        sqlite = _sqlite_copy(request.getfixturevalue("sqlite_template"), request.getfixturevalue("tmp_path"))
        yield sqlite
        sqlite.close()
        return
    store = open_store(pg.url_for(request.getfixturevalue("pg_schema")), create=False)
    assert isinstance(store, SqlStore)
    with store.engine.begin() as conn:
        for table in reversed(metadata.sorted_tables):
            conn.execute(table.delete())
    yield store
    store.close()


def test_concurrent_recover_sweeps_dispatch_each_entry_once(thread_store: Store) -> None:
    """Arrivals whose dispatch was lost (a crash after commit), then eight hosts sweep at once."""
    tasks = 12
    work.prepare(thread_store, tasks, 0)
    rt, _ = work.runtime(thread_store)
    for task in work.task_ids(tasks):
        assert rt.move(task, "review", dispatch=False).status == "moved"
    assert len(thread_store.unrecorded_arrivals()) == tasks
    racers = [work.runtime(thread_store) for _ in range(8)]
    results = _threads(8, lambda i: racers[i][0].recover())
    assert not [r for r in results if isinstance(r, BaseException)], results
    assert sum(r.dispatched for r in results) == tasks, [r.dispatched for r in results]
    assert thread_store.unrecorded_arrivals() == []
    runs = thread_store.runs()
    assert Counter((r.entry_id, r.agent) for r in runs) == Counter(
        {(row.id, agent): 1 for row in thread_store.ledger() for agent in work.REVIEWERS})
    entries = Counter(f["entry_id"] for _, sink in racers for f in (r.fields for r in sink.of("entry")))
    assert entries == Counter({row.id: 1 for row in thread_store.ledger()})


def test_concurrent_moves_between_steps_lose_no_step_change(thread_store: Store) -> None:
    """Eight threads move one task around its steps at once: every move that reports `moved` is one ledger
    row, the rows form one chain ending at the task's step, and each row's entry ran exactly once."""
    work.prepare(thread_store, 1, 0)
    task = "T000"
    steps = ("backlog", "work", "review", "approval")

    def mover(i: int) -> list[str]:
        rt, _ = work.runtime(thread_store)
        return [rt.move(task, steps[(i + k) % len(steps)], actor_id=f"mover-{i}").status for k in range(8)]

    results = _threads(8, mover)
    assert not [r for r in results if isinstance(r, BaseException)], results
    moved = sum(statuses.count("moved") for statuses in results)
    rows = thread_store.ledger(task)
    assert len(rows) == moved
    assert len({row.id for row in rows}) == len(rows)
    for prev, row in itertools.pairwise(rows):
        assert row.from_step_id == prev.to_step_id, "a lost update broke the ledger chain"
    final = thread_store.get_task(task)
    assert final is not None and final.step_id == (rows[-1].to_step_id if rows else "work")
    assert thread_store.unrecorded_arrivals() == []
    for row in rows:
        record = thread_store.entry_record(row.id)
        assert record is not None and record.failed == (), (row, record)
    per_entry = Counter(run.entry_id for run in thread_store.runs())
    expected = {row.id: len(work.REVIEWERS) if row.to_step_id == "review" else 1
                for row in rows if row.to_step_id in ("review", "approval")}
    assert per_entry == Counter(expected)


def test_concurrent_redeliveries_call_a_host_executor_once(small_store: Store) -> None:
    """A host (non-transactional) executor on entry is called once per entry position, however many
    deliveries race: a position that has a marker is not run again (docs/runtime.md §1) — here the other
    deliveries arrive while the first one's executor is still running."""
    calls: list[str | None] = []
    lock = threading.Lock()
    running, release = threading.Event(), threading.Event()

    def host_seats(args: Any, ctx: ActionContext) -> list[dict[str, Any]]:
        with lock:
            calls.append(ctx.idempotency_key)
            first = len(calls) == 1
        if first:
            running.set()
            release.wait(timeout=10)
        return []

    registry = ExecutorRegistry()
    registry.register("ensure_seats", host_seats)
    rt = Runtime(work.plan(), small_store, executors=registry, sinks=[ListSink()], executor_timeout=20.0)
    work.prepare(small_store, 1, 0)
    arrival = rt.move("T000", "review", dispatch=False)
    assert arrival.status == "moved" and arrival.ledger_id is not None
    ledger_id = arrival.ledger_id
    first = threading.Thread(target=rt.dispatch_entry, args=(ledger_id,), daemon=True)
    first.start()
    try:
        assert running.wait(timeout=10)
        redeliveries = _threads(4, lambda _: rt.dispatch_entry(ledger_id))
    finally:
        release.set()
        first.join(timeout=20)
    assert not first.is_alive()
    assert not [r for r in redeliveries if isinstance(r, BaseException)], redeliveries
    assert calls == [f"entry:{ledger_id}:1:ensure_seats"], calls
    assert len(small_store.runs()) == len(work.REVIEWERS)
    assert small_store.markers(ledger_id)[1].state == "done"


def test_a_delivery_of_an_entry_a_live_thread_is_dispatching_is_discarded_and_runs_nothing(
        small_store: Store) -> None:
    """Two deliveries of one entry overlap: the second finds it claimed by a live dispatcher and is discarded
    (`in_progress`) — it runs no position beside the first, and one `entry` record, one `dispatched` result stand
    (docs/runtime.md §6, "Recover beside live workers")."""
    work.prepare(small_store, 1, 0)
    sink = ListSink()
    # A host (non-transactional) executor in the entry makes the runtime dispatch it action by action,
    # emitting each effect as its own unit commits, which is where the first delivery pauses.  (An entry
    # whose actions are all store-backed commits as one transaction; its overlap is covered by the races.)
    executors = ExecutorRegistry()
    executors.register("ensure_seats", lambda args, ctx: [{"kind": "ensure_seats", "role": args["role"]}])
    rt = Runtime(work.plan(), small_store, sinks=[sink], executor_timeout=10.0, executors=executors)
    arrival = rt.move("T000", "review", dispatch=False)
    assert arrival.ledger_id is not None
    ledger_id = arrival.ledger_id
    paused, resume = threading.Event(), threading.Event()
    first_thread: list[threading.Thread] = []

    def pause_first_after_its_first_effect(record: Any) -> None:
        if record.kind == "effect" and threading.current_thread() in first_thread and not paused.is_set():
            paused.set()
            resume.wait(timeout=10)

    rt.add_sink(pause_first_after_its_first_effect)
    box: dict[str, Any] = {}
    first = threading.Thread(target=lambda: box.setdefault("first", rt.dispatch_entry(ledger_id)), daemon=True)
    first_thread.append(first)
    first.start()
    try:
        assert paused.wait(timeout=10)
        second = rt.dispatch_entry(ledger_id)  # runs the rest of the entry and records it
    finally:
        resume.set()
        first.join(timeout=20)
    assert not first.is_alive()
    assert second.status == "in_progress"
    assert small_store.entry_record(ledger_id) is not None
    assert len(small_store.runs()) == len(work.REVIEWERS)
    assert box["first"].status == "dispatched", box["first"]
    assert len(sink.of("entry")) == 1, [dict(r.fields) for r in sink.of("entry")]
    assert rt.counters.snapshot()["entries_dispatched"] == 1


def test_concurrent_creations_of_one_task_have_one_winner_and_refuse_the_rest(small_store: Store) -> None:
    """`create_task` racing itself: one arrival; every loser is refused with `RuntimeFault` (nothing changed),
    not a `StoreError` (which tells a host that the store failed)."""
    rt, _ = work.runtime(small_store)
    results = _threads(8, lambda _: rt.create_task("NEW", work.WF, session_id="S-new"))
    moved = [r for r in results if not isinstance(r, BaseException) and r.status == "moved"]
    assert len(moved) == 1, results
    assert [row.route for row in small_store.ledger("NEW")] == ["creation"]
    losers = [r for r in results if isinstance(r, BaseException)]
    assert len(losers) == 7
    assert all(isinstance(r, RuntimeFault) for r in losers), \
        sorted({f"{type(r).__name__}: {r}" for r in losers if not isinstance(r, RuntimeFault)})
    assert not any(isinstance(r, StoreError) for r in losers)
