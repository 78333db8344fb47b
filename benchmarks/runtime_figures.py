"""Runtime benchmark figures (issue 4): arrivals on SQLite and PostgreSQL, flat memory, `fire` vs `transitions`.

    python benchmarks/runtime_figures.py [--only NAME ...] [--repeat N] [--json]

Contract with `benchmarks/run.py` (the lead wires these in with `@figure`)
---------------------------------------------------------------------------
`FIGURES` maps a figure name to a `Spec`: `run(repeat) -> Result`, plus the description,
the meaning of the ratio and the targets as plain tuples `(op, value, on, unit)`
(`op` "<=" or ">=", `on` "ratio" or "measured", `unit` "x" for ratios or the measured
unit).  `Result` has exactly the fields of `run.Measurement` (measured, reference, ratio,
unit, samples, reference_samples, details), so `Measurement(**dataclasses.asdict(result))`
adapts it.  Units: `arrivals/s` and `fires/s` are rates (higher is better; `run.py`'s
formatter prints non-"s" units as "1234.5 arrivals/s"); `B/task` is a memory slope.
Samples are per-repetition values in the same unit.  Nothing here imports `run.py`.

Method (as in run.py): subject and reference alternate which runs first in each round,
medians are reported, the ratio is ours/reference on rates (higher is better); every
figure warms up both sides untimed first.  Progress goes to stderr.

Figures
-------
- `sqlite-arrivals`: `rt.move(task, other_step)` with entry dispatch (a ledger row, an entry
  record and one queued run per arrival, one transaction: ADR 0010) on a SQLite *file* store, vs a raw
  `sqlite3` INSERT of a ledger-shaped row + COMMIT per row.  Both sides: `journal_mode=WAL`,
  `synchronous=NORMAL` (what `stores.engine.make_engine` sets on every file database).
  Details include the WAL frames (B-tree pages) one commit writes on each side, counted over
  100 untimed arrivals/rows after the timed runs.  Target ≥ 0.25x.
- `pg-arrivals`: the same workflow on PostgreSQL with 1, 2 and 4 spawned OS processes, each
  moving its own tasks; a fixed total of arrivals is split between the processes; the
  rate is total arrivals / (last process end - first process start), set-up excluded.
  Ratio = 4-process rate / 1-process rate, target ≥ 1.5x.  Runs in a private schema
  (dropped afterwards) of `INTERLOCK_TEST_PG_URL` (default the local `test` database) with
  the server's own `synchronous_commit` unless `INTERLOCK_BENCH_PG_SYNC=off`.  Afterwards
  every ledger row is checked: exactly one entry record, no marker (ADR 0010) and one queued
  run per arrival, and each task's rows form an unbroken chain (no duplicate, none lost).
  Read it with the machine's load in mind: the clients are CPU-bound (about 0.8 ms of
  client CPU per arrival, most of it in the driver and socket round trips), so on a
  2-core machine the ratio says more about free cores than about the store: on an idle
  machine one process also pays the wake-up latency of every round trip and 4 processes
  reach ~2.5x; with another job holding a core, 4 processes fall to ~0.8x of 1.
- `runtime-memory-flat`: 100,000 tasks through a SQLite file store (create, then two moves:
  three arrivals with entry dispatch per task); tracemalloc runs from task 5,000 on; after a
  10,000-task warm-up, its current size and the process RSS are sampled every 10,000 tasks; the figure is the
  least-squares slope of the tracemalloc samples in bytes per task.  Target < 10 B/task
  (flat: a leak of one small object per task is ~50-100 B/task; the threshold leaves room
  for allocator noise over 90,000 tasks, about 0.9 MB in all).  RSS slope is reported too
  but not judged (allocator arenas make it step-shaped).
- `aio-loop-lag` (issue 21): 4 asyncio tasks each move a task of their own between two steps
  (an arrival with its entry, a queued run, on a SQLite file store) through an `AsyncRuntime`,
  while a ticker on the same loop sleeps 1 ms at a time and records how late it wakes; the
  figure is the p99 lateness in ms (median over the repetitions), target ≤ 5 ms. The reference
  is the same with a `Runtime` called on the loop itself (what an asyncio host without
  `AsyncRuntime` gets).
- `fire-vs-transitions`: `rt.fire("on_turn_complete", task)` on a `MemoryStore` — one host
  executor (`notify`) and a transition, ping-pong between two steps, no operation id, so
  every call is a fresh delivery with an arrival and an (empty) entry — vs the
  `transitions` library: a 5-state ring, one `after` callback per transition, one trigger
  per call.  Ratio = our rate / theirs, target ≥ 1.0x.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import multiprocessing as mp
import os
import statistics
import sys
import tempfile
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

TIMES = "\N{MULTIPLICATION SIGN}"

WORKFLOW = """
workflow w "W" {
  step a "A" { start manual_move on on_enter { queue_run(target: primary, reason: "x") } }
  step b "B" { manual_move on on_enter { queue_run(target: primary, reason: "x") } }
  step c "C" { manual_move on on_enter { queue_run(target: primary, reason: "x") } }
}
"""

PING_PONG = """
task notify on on_turn_complete
workflow p "P" {
  step a "A" { start on on_turn_complete { notify move_to_step(b) } }
  step b "B" { on on_turn_complete { notify move_to_step(a) } }
}
"""

SQLITE_ARRIVALS = 2_000  # arrivals per timed sample
SQLITE_RAW_ROWS = 5_000  # raw INSERT+COMMIT per timed sample
PG_TOTAL_ARRIVALS = 2_000  # per configuration and repetition, split between the processes
PG_TASKS_PER_PROCESS = 16
PG_PROCESSES = (1, 2, 4)
MEMORY_TASKS = 100_000
MEMORY_WARMUP = 10_000
MEMORY_EVERY = 10_000
MEMORY_LIMIT = 10.0  # bytes per task (tracemalloc slope)
FIRES = 5_000
TRANSITION_TRIGGERS = 50_000


@dataclass
class Result:
    """Same fields as `run.Measurement`."""

    measured: float
    reference: float | None
    ratio: float | None
    unit: str = "s"
    samples: list[float] = field(default_factory=list)
    reference_samples: list[float] = field(default_factory=list)
    details: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class Spec:
    name: str
    description: str
    ratio_meaning: str
    targets: tuple[tuple[str, float, str, str], ...]  # (op, value, on, unit)
    run: Callable[[int], Result]


def progress(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


def interleave(subject: Callable[[], float], reference: Callable[[], float], repeat: int) -> tuple[list[float],
                                                                                                  list[float]]:
    """Each callable returns one sample; the order alternates every round (as `run.interleave`)."""
    ours: list[float] = []
    theirs: list[float] = []
    for i in range(repeat):
        if i % 2 == 0:
            ours.append(subject())
            theirs.append(reference())
        else:
            theirs.append(reference())
            ours.append(subject())
    return ours, theirs


def _plan(text: str) -> Any:
    from interlock.compiler import compile_source
    from interlock.dsl import SourceFile

    result = compile_source(SourceFile("bench.wf", text))
    if result.plan is None:
        raise SystemExit("benchmark workflow does not compile:\n" + "\n".join(map(str, result.diagnostics)))
    return result.plan


def _rate(count: int, fn: Callable[[], object]) -> float:
    start = time.perf_counter()
    fn()
    return count / (time.perf_counter() - start)


# ---- sqlite-arrivals ----------------------------------------------------------------------------------

RAW_SCHEMA = """CREATE TABLE IF NOT EXISTS ledger (
    id INTEGER PRIMARY KEY AUTOINCREMENT, task_id TEXT NOT NULL, from_workflow_id TEXT, from_step_id TEXT,
    to_workflow_id TEXT, to_step_id TEXT, route TEXT NOT NULL, actor_kind TEXT NOT NULL, actor_id TEXT,
    session_id TEXT, occurred_at DATETIME NOT NULL)"""
RAW_INSERT = ("INSERT INTO ledger (task_id, from_workflow_id, from_step_id, to_workflow_id, to_step_id, route, "
              "actor_kind, actor_id, session_id, occurred_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)")


class RawSqlite:
    """The reference: one ledger-shaped INSERT and one COMMIT per row, WAL + synchronous=NORMAL."""

    def __init__(self, path: Path) -> None:
        import sqlite3

        self.conn = sqlite3.connect(path)
        self.conn.execute("PRAGMA journal_mode = WAL").fetchall()
        self.conn.execute("PRAGMA synchronous = NORMAL")
        self.conn.execute(RAW_SCHEMA)
        self.conn.commit()
        self.journal = self.conn.execute("PRAGMA journal_mode").fetchone()[0]
        self.synchronous = self.conn.execute("PRAGMA synchronous").fetchone()[0]

    def rows(self, n: int) -> None:
        from datetime import UTC, datetime

        conn = self.conn
        for i in range(n):
            now = datetime.now(UTC).strftime("%Y-%m-%d %H:%M:%S.%f")
            step, other = ("b", "a") if i % 2 else ("a", "b")
            conn.execute(RAW_INSERT, ("T", "w", step, "w", other, "manual_move", "human", None, None, now))
            conn.commit()

    def close(self) -> None:
        self.conn.close()


class SqlFloor:
    """Context, not judged: the statements one arrival costs in the store (one transaction: the look at the task,
    the step change, the ledger row, the queued run, the entry record; ADR 0010), replayed through raw sqlite3 on
    the interlock schema in a tight loop: what a store with no Python overhead at all would reach."""

    def __init__(self, path: Path) -> None:
        import sqlite3

        from interlock.stores import upgrade
        from interlock.stores.statements import Statements

        upgrade(f"sqlite:///{path}")
        self.q = Statements(postgres=False, returning=True)  # the store's own statements, the database's clock
        self.conn = sqlite3.connect(path, isolation_level=None)
        for pragma in ("journal_mode = WAL", "synchronous = NORMAL", "foreign_keys = ON"):
            self.conn.execute(f"PRAGMA {pragma}").fetchall()
        self.conn.execute(self.q.create_task, {"id": "T", "workflow_id": "w", "step_id": "a", "description": "",
                                               "is_from_office": 0, "is_ephemeral": 0, "archived": 0,
                                               "entry_id": None})
        self.at = "a"

    def arrivals(self, n: int) -> None:
        c, q = self.conn, self.q
        for _ in range(n):
            at = self.at
            to = "b" if at == "a" else "a"
            c.execute("BEGIN IMMEDIATE")
            c.execute(q.q_task, {"id": "T"}).fetchone()  # the look at the task (move_task reuses it on SQLite)
            # the row stamped for its record, which comes in this transaction (ADR 0057)
            ledger = c.execute(q.i_ledger_stamped, {
                "task_id": "T", "from_workflow_id": "w", "from_step_id": at, "to_workflow_id": "w", "to_step_id": to,
                "route": "manual_move", "actor_kind": "human", "actor_id": None, "session_id": None,
                "plan": None, "entry_owner": None, "arrival_options": None}).fetchone()[0]
            c.execute(q.u_task_step, {"id": "T", "workflow_id": "w", "step_id": to, "entry_id": ledger})
            c.execute(q.i_run, {"key": f"entry:{ledger}:0:{to}:T:primary:0123456789abcdef", "task_id": "T",
                                "step_id": to, "agent": "primary", "reason": "x", "payload": "{}", "entry_id": ledger,
                                "operation_id": None})
            c.execute(q.u_entry_stamped, {"entry_id": ledger, "task_id": "T", "workflow_id": "w", "step_id": to,
                                  "attempted": '["queue_run"]', "failed": "[]"})
            c.execute("COMMIT")
            self.at = to

    def close(self) -> None:
        self.conn.close()


class SqliteArrivals:
    """A runtime over a SQLite file store, one task ping-ponging between steps a and b."""

    def __init__(self, path: Path, tasks: int = 1) -> None:
        from interlock.runtime import Runtime
        from interlock.stores import open_store

        self.store = open_store(f"sqlite:///{path}")
        self.rt = Runtime(_plan(WORKFLOW), self.store, sinks=[], executor_timeout=None)
        self.tasks = [f"T{i}" for i in range(tasks)]
        for t in self.tasks:
            self.rt.create_task(t, "w")
        self.at = dict.fromkeys(self.tasks, "a")

    def moves(self, n: int) -> None:
        rt, at, tasks = self.rt, self.at, self.tasks
        for i in range(n):
            task = tasks[i % len(tasks)]
            to = "b" if at[task] == "a" else "a"
            result = rt.move(task, to)
            if result.entry is None or result.entry.status != "dispatched":
                raise RuntimeError(f"arrival not dispatched: {result}")
            at[task] = to

    def pragmas(self) -> tuple[str, int]:
        with self.store.engine.connect() as conn:  # type: ignore[attr-defined]
            journal = conn.exec_driver_sql("PRAGMA journal_mode").scalar_one()
            sync = conn.exec_driver_sql("PRAGMA synchronous").scalar_one()
        return str(journal), int(sync)

    def close(self) -> None:
        self.store.close()  # type: ignore[attr-defined]


WAL_SAMPLE = 100  # arrivals (or raw rows) whose WAL frames are counted: fewer frames than an auto-checkpoint's 1,000


def _wal_frames(path: Path, work: Callable[[], None]) -> int:
    """The WAL frames (pages written) that `work` commits to the database at `path`: the WAL is checkpointed
    and truncated first (from a connection of its own), then `wal_checkpoint(PASSIVE)` reports the log's size."""
    import sqlite3

    conn = sqlite3.connect(path, isolation_level=None)
    try:
        conn.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchall()
        work()
        _busy, frames, _done = conn.execute("PRAGMA wal_checkpoint(PASSIVE)").fetchone()
        return int(frames)
    finally:
        conn.close()


def sqlite_arrivals(repeat: int) -> Result:
    with tempfile.TemporaryDirectory(prefix="il-bench-") as tmp:
        ours = SqliteArrivals(Path(tmp) / "store.db")
        raw = RawSqlite(Path(tmp) / "raw.db")
        journal, sync = ours.pragmas()
        if (journal.lower(), sync) != (str(raw.journal).lower(), int(raw.synchronous)):
            raise SystemExit(f"settings differ: store {journal}/{sync}, raw {raw.journal}/{raw.synchronous}")
        floor = SqlFloor(Path(tmp) / "floor.db")
        ours.moves(200)  # warm-up: imports, statement caches, page cache
        raw.rows(500)
        floor.arrivals(200)
        floors: list[float] = []

        def reference() -> float:
            rate = _rate(SQLITE_RAW_ROWS, lambda: raw.rows(SQLITE_RAW_ROWS))
            floors.append(_rate(SQLITE_ARRIVALS, lambda: floor.arrivals(SQLITE_ARRIVALS)))
            return rate

        samples, ref = interleave(lambda: _rate(SQLITE_ARRIVALS, lambda: ours.moves(SQLITE_ARRIVALS)), reference,
                                  repeat)
        frames_ours = _wal_frames(Path(tmp) / "store.db", lambda: ours.moves(WAL_SAMPLE))
        frames_raw = _wal_frames(Path(tmp) / "raw.db", lambda: raw.rows(WAL_SAMPLE))
        runs = len(ours.store.runs())
        ours.close()
        raw.close()
        floor.close()
    m, r, f = statistics.median(samples), statistics.median(ref), statistics.median(floors)
    return Result(m, r, m / r, unit="arrivals/s", samples=samples, reference_samples=ref,
                  details={"arrivals_per_sample": SQLITE_ARRIVALS, "raw_rows_per_sample": SQLITE_RAW_ROWS,
                           "journal_mode": journal, "synchronous": {1: "NORMAL", 2: "FULL"}.get(sync, sync),
                           "queued_runs": runs, "sql_floor_arrivals_per_s": round(f, 1),
                           "sql_floor_ratio": round(f / r, 3), "share_of_floor": round(m / f, 3),
                           "wal_frames_per_arrival": round(frames_ours / WAL_SAMPLE, 2),
                           "wal_frames_per_raw_row": round(frames_raw / WAL_SAMPLE, 2)})


# ---- pg-arrivals --------------------------------------------------------------------------------------

DEFAULT_PG_URL = "postgresql+psycopg://postgres@127.0.0.1:5432/test"


def _pg_base() -> str:
    return os.environ.get("INTERLOCK_TEST_PG_URL", DEFAULT_PG_URL)


def _pg_url(schema: str) -> str:
    from interlock.stores.engine import normalise_url

    options = f"-csearch_path={schema}"
    if os.environ.get("INTERLOCK_BENCH_PG_SYNC") == "off":
        options += " -csynchronous_commit=off"
    return normalise_url(_pg_base()).update_query_dict({"options": options}).render_as_string(hide_password=False)


def _pg_worker(url: str, index: int, commands: Any, ready: Any, results: Any, go: Any) -> None:
    """A process of its own: set up once, then per command create fresh tasks, wait for `go`, move them."""
    from interlock.runtime import Runtime
    from interlock.stores import open_store

    store = open_store(url, create=False)
    rt = Runtime(_plan(WORKFLOW), store, sinks=[], executor_timeout=None)
    try:
        while True:
            command = commands.get()
            if command is None:
                break
            tag, arrivals = command
            tasks = [f"p{index}-{tag}-{i}" for i in range(PG_TASKS_PER_PROCESS)]
            for t in tasks:
                rt.create_task(t, "w")
            at = dict.fromkeys(tasks, "a")
            ready.put(index)
            go.wait()
            start = time.time()
            bad = 0
            for i in range(arrivals):
                task = tasks[i % len(tasks)]
                to = "b" if at[task] == "a" else "a"
                result = rt.move(task, to)
                if result.entry is None or result.entry.status != "dispatched":
                    bad += 1
                at[task] = to
            results.put((index, start, time.time(), arrivals, bad))
    finally:
        store.close()  # type: ignore[attr-defined]


class PgPool:
    def __init__(self, url: str, size: int) -> None:
        ctx = mp.get_context("spawn")
        self.ready = ctx.Queue()
        self.results = ctx.Queue()
        self.go = ctx.Event()
        self.commands = [ctx.Queue() for _ in range(size)]
        self.procs = [ctx.Process(target=_pg_worker, args=(url, i, self.commands[i], self.ready, self.results,
                                                          self.go), daemon=True) for i in range(size)]
        for p in self.procs:
            p.start()
        self.rounds = 0
        self.arrivals = 0
        self.creations = 0

    def run(self, processes: int, total: int) -> float:
        """Arrivals per second of `processes` workers moving `total` arrivals between them."""
        self.rounds += 1
        share = total // processes
        self.go.clear()
        for i in range(processes):
            self.commands[i].put((f"r{self.rounds}", share))
        for _ in range(processes):
            self.ready.get(timeout=300)
        self.go.set()
        got = [self.results.get(timeout=600) for _ in range(processes)]
        self.go.clear()
        if any(g[4] for g in got):
            raise SystemExit(f"pg-arrivals: {sum(g[4] for g in got)} arrivals were not dispatched")
        self.arrivals += share * processes
        self.creations += PG_TASKS_PER_PROCESS * processes
        start = min(g[1] for g in got)
        end = max(g[2] for g in got)
        return share * processes / (end - start)

    def close(self) -> None:
        for q in self.commands:
            q.put(None)
        for p in self.procs:
            p.join(timeout=60)


def _pg_verify(url: str, arrivals: int, creations: int) -> dict[str, Any]:
    """Every ledger row has exactly one entry record (and no marker: ADR 0010) and one run; chains are unbroken."""
    import sqlalchemy as sa

    from interlock.stores.engine import make_engine

    engine = make_engine(url, poolclass=sa.pool.NullPool)
    try:
        with engine.connect() as conn:
            def one(sql: str) -> int:
                return int(conn.exec_driver_sql(sql).scalar_one())

            ledger = one("SELECT count(*) FROM interlock_step_transitions")
            # an entry record is three columns of its ledger row (ADR 0013)
            entries = one("SELECT count(*) FROM interlock_step_transitions WHERE entry_recorded_at IS NOT NULL")
            orphan_runs = one("SELECT count(*) FROM interlock_runs r LEFT JOIN interlock_step_transitions t "
                              "ON t.id = r.entry_id WHERE t.id IS NULL")
            unrecorded = one("SELECT count(*) FROM interlock_step_transitions WHERE to_step_id IS NOT NULL "
                             "AND entry_recorded_at IS NULL")
            markers = one("SELECT count(*) FROM interlock_entry_markers")
            runs = one("SELECT count(*) FROM interlock_runs")
            runs_per_entry = one("SELECT count(*) FROM (SELECT entry_id FROM interlock_runs GROUP BY entry_id "
                                 "HAVING count(*) <> 1) x")
            # each task's rows, in id order, form a chain: a row's `from` is the previous row's `to`
            broken = one("SELECT count(*) FROM (SELECT from_step_id, lag(to_step_id) OVER (PARTITION BY task_id "
                         "ORDER BY id) AS prev, row_number() OVER (PARTITION BY task_id ORDER BY id) AS n "
                         "FROM interlock_step_transitions) x WHERE n > 1 AND from_step_id IS DISTINCT FROM prev")
            tasks_off = one("SELECT count(*) FROM interlock_tasks t WHERE t.step_id IS DISTINCT FROM (SELECT "
                            "s.to_step_id FROM interlock_step_transitions s WHERE s.task_id = t.id "
                            "ORDER BY s.id DESC LIMIT 1)")
    finally:
        engine.dispose()
    expected = arrivals + creations
    # markers: none, since each arrival commits with its entry (ADR 0010: the entry record stands for them)
    ok = (ledger == entries == runs == expected and markers == 0 and not orphan_runs and not unrecorded
          and not runs_per_entry and not broken and not tasks_off)
    return {"ok": ok, "ledger_rows": ledger, "expected_rows": expected, "entry_records": entries,
            "markers": markers, "runs": runs, "unrecorded": unrecorded, "runs_without_row": orphan_runs,
            "entries_with_runs_not_1": runs_per_entry, "broken_chain_links": broken, "tasks_not_at_last_row": tasks_off}


def pg_arrivals(repeat: int) -> Result:
    import sqlalchemy as sa

    from interlock.stores import upgrade
    from interlock.stores.engine import normalise_url

    admin = sa.create_engine(normalise_url(_pg_base()), poolclass=sa.pool.NullPool)
    schema = f"il_bench_{uuid.uuid4().hex[:12]}"
    with admin.begin() as conn:
        conn.exec_driver_sql(f'CREATE SCHEMA "{schema}"')
    try:
        url = _pg_url(schema)
        upgrade(url)
        with admin.connect() as conn:
            sync = conn.exec_driver_sql("SHOW synchronous_commit").scalar_one()
        if os.environ.get("INTERLOCK_BENCH_PG_SYNC") == "off":
            sync = "off"
        pool = PgPool(url, max(PG_PROCESSES))
        try:
            progress("pg-arrivals: warm-up")
            for n in PG_PROCESSES:
                pool.run(n, 200 * n)
            rates: dict[int, list[float]] = {n: [] for n in PG_PROCESSES}
            for i in range(repeat):
                order = PG_PROCESSES if i % 2 == 0 else tuple(reversed(PG_PROCESSES))
                for n in order:
                    rates[n].append(pool.run(n, PG_TOTAL_ARRIVALS))
                progress(f"pg-arrivals: round {i + 1}/{repeat}: " + ", ".join(
                    f"{n}p {rates[n][-1]:.0f}/s" for n in PG_PROCESSES))
        finally:
            pool.close()
        check = _pg_verify(url, pool.arrivals, pool.creations)
    finally:
        with admin.begin() as conn:
            conn.exec_driver_sql(f'DROP SCHEMA IF EXISTS "{schema}" CASCADE')
        admin.dispose()
    med = {n: statistics.median(r) for n, r in rates.items()}
    top, one = max(PG_PROCESSES), min(PG_PROCESSES)
    details: dict[str, Any] = {f"{n}p_arrivals_per_s": round(med[n], 1) for n in PG_PROCESSES}
    details.update({"arrivals_per_sample": PG_TOTAL_ARRIVALS, "synchronous_commit": sync,
                    "duplicates_check": "PASS" if check["ok"] else "FAIL", **check})
    if not check["ok"]:
        progress(f"pg-arrivals: DUPLICATE/LOSS CHECK FAILED: {check}")
    return Result(med[top], med[one], med[top] / med[one], unit="arrivals/s", samples=rates[top],
                  reference_samples=rates[one], details=details)


# ---- runtime-memory-flat ----------------------------------------------------------------------------------

def _rss_bytes() -> int:
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


def _slope(xs: list[float], ys: list[float]) -> float:
    mx, my = statistics.fmean(xs), statistics.fmean(ys)
    den = sum((x - mx) ** 2 for x in xs)
    return sum((x - mx) * (y - my) for x, y in zip(xs, ys)) / den if den else 0.0


def runtime_memory_flat(repeat: int) -> Result:
    import gc
    import tracemalloc

    from interlock.runtime import Runtime
    from interlock.stores import open_store

    del repeat  # one long run
    with tempfile.TemporaryDirectory(prefix="il-bench-") as tmp:
        store = open_store(f"sqlite:///{Path(tmp) / 'memory.db'}")
        rt = Runtime(_plan(WORKFLOW), store, sinks=[], executor_timeout=None)
        xs: list[float] = []
        traced: list[float] = []
        rss: list[float] = []
        started = window = time.perf_counter()
        for n in range(1, MEMORY_TASKS + 1):
            task = f"task-{n:06d}"
            ok = rt.create_task(task, "w").entry
            b = rt.move(task, "b").entry
            c = rt.move(task, "c").entry
            if not (ok and b and c) or {ok.status, b.status, c.status} != {"dispatched"}:
                raise SystemExit(f"runtime-memory-flat: task {task} was not dispatched")
            if n == MEMORY_WARMUP // 2:  # traced from mid-warm-up on, so the first sample is a real one
                gc.collect()
                tracemalloc.start()
            if n >= MEMORY_WARMUP and n % MEMORY_EVERY == 0:
                gc.collect()
                xs.append(n)
                traced.append(tracemalloc.get_traced_memory()[0])
                rss.append(_rss_bytes())
                now = time.perf_counter()
                progress(f"runtime-memory-flat: {n:,} tasks, tracemalloc {traced[-1] / 1e6:.3f} MB, "
                         f"RSS {rss[-1] / 1e6:.1f} MB ({MEMORY_EVERY * 3 / (now - window):.0f} arrivals/s, traced)")
                window = now
        peak = tracemalloc.get_traced_memory()[1]
        tracemalloc.stop()
        runs = len(store.runs(f"task-{MEMORY_TASKS:06d}"))
        store.close()  # type: ignore[attr-defined]
    slope = _slope(xs, traced)
    rss_slope = _slope(xs, rss)
    return Result(slope, None, None, unit="B/task", samples=traced, reference_samples=[],
                  details={"tasks": MEMORY_TASKS, "arrivals_per_task": 3, "warmup_tasks": MEMORY_WARMUP,
                           "tracemalloc_slope_B_per_task": round(slope, 2),
                           "rss_slope_B_per_task": round(rss_slope, 1),
                           "tracemalloc_MB": [round(t / 1e6, 3) for t in traced],
                           "rss_MB": [round(r / 1e6, 1) for r in rss],
                           "tracemalloc_peak_MB": round(peak / 1e6, 2), "last_task_runs": runs,
                           "seconds": round(time.perf_counter() - started, 1)})


# ---- fire-vs-transitions ---------------------------------------------------------------------------------

class PingPong:
    def __init__(self) -> None:
        from interlock.runtime import ExecutorRegistry, Runtime
        from interlock.stores import MemoryStore

        registry = ExecutorRegistry()
        self.calls = 0

        def notify(args: Any, ctx: Any) -> None:
            self.calls += 1

        registry.register("notify", notify)
        self.rt = Runtime(_plan(PING_PONG), MemoryStore(), executors=registry, sinks=[], executor_timeout=None)
        self.rt.create_task("T", "p")

    def fires(self, n: int) -> None:
        fire = self.rt.fire
        for _ in range(n):
            result = fire("on_turn_complete", "T")
            if result.result != "dispatched":
                raise RuntimeError(f"fire not dispatched: {result}")


class Ring:
    """transitions: five states in a ring, one `after` callback on every transition."""

    def __init__(self) -> None:
        from transitions import Machine

        self.calls = 0
        states = [f"s{i}" for i in range(5)]
        transitions = [{"trigger": "next", "source": s, "dest": states[(i + 1) % 5], "after": "done"}
                       for i, s in enumerate(states)]
        self.machine = Machine(model=self, states=states, transitions=transitions, initial="s0")

    def done(self) -> None:
        self.calls += 1

    def triggers(self, n: int) -> None:
        step: Callable[[], bool] = self.next  # type: ignore[attr-defined]
        for _ in range(n):
            step()


def fire_vs_transitions(repeat: int) -> Result:
    ours, ring = PingPong(), Ring()
    ours.fires(500)
    ring.triggers(5_000)
    samples, ref = interleave(lambda: _rate(FIRES, lambda: ours.fires(FIRES)),
                              lambda: _rate(TRANSITION_TRIGGERS, lambda: ring.triggers(TRANSITION_TRIGGERS)), repeat)
    m, r = statistics.median(samples), statistics.median(ref)
    return Result(m, r, m / r, unit="fires/s", samples=samples, reference_samples=ref,
                  details={"fires_per_sample": FIRES, "triggers_per_sample": TRANSITION_TRIGGERS,
                           "executor_calls": ours.calls, "after_callbacks": ring.calls})


# ---- aio-loop-lag ---------------------------------------------------------------------------------------

LAG_MOVERS = 4  # asyncio tasks, each moving a task of its own
LAG_ARRIVALS = 1_000  # arrivals per mover and sample
LAG_TICK = 0.001  # seconds the ticker sleeps between wake-ups
LAG_LIMIT_MS = 5.0


def _p99(values: list[float]) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(0.99 * len(ordered)))]


async def _idle_lag(ticks: int) -> float:
    """The p99 lateness (ms) of the same ticker with nothing else running: what the machine alone costs."""
    import asyncio

    late = []
    for _ in range(ticks):
        start = time.perf_counter()
        await asyncio.sleep(LAG_TICK)
        late.append((time.perf_counter() - start - LAG_TICK) * 1000)
    return _p99(late)


async def _lag_sample(rt: Any, calls_off_loop: bool, tasks: list[str]) -> tuple[float, int]:
    """The p99 lateness (ms) of a 1 ms ticker on the loop while `LAG_MOVERS` tasks deliver arrivals, and the arrivals
    delivered.  `calls_off_loop`: `rt` is an AsyncRuntime (awaited); else a Runtime called on the loop itself."""
    import asyncio

    late: list[float] = []
    done = asyncio.Event()

    async def ticker() -> None:
        while not done.is_set():
            start = time.perf_counter()
            await asyncio.sleep(LAG_TICK)
            late.append((time.perf_counter() - start - LAG_TICK) * 1000)

    async def mover(task: str) -> int:
        at = "a"
        for _ in range(LAG_ARRIVALS):
            to = "b" if at == "a" else "a"
            result = await rt.move(task, to) if calls_off_loop else rt.move(task, to)
            if result.entry is None or result.entry.status != "dispatched":
                raise RuntimeError(f"arrival not dispatched: {result}")
            at = to
            await asyncio.sleep(0)  # a host's task yields between its own deliveries
        if at != "a":  # back where it started, for the next sample
            await rt.move(task, "a") if calls_off_loop else rt.move(task, "a")
        return LAG_ARRIVALS

    tick = asyncio.create_task(ticker())
    counts = await asyncio.gather(*(mover(t) for t in tasks))
    done.set()
    await tick
    return _p99(late), sum(counts)


def aio_loop_lag(repeat: int) -> Result:
    """`AsyncRuntime` (subject) vs a `Runtime` called on the loop (reference: what the issue measured), each with 4
    movers on a SQLite file store and a ticker measuring the loop's lateness."""
    import asyncio

    from interlock.runtime import AsyncRuntime, Runtime
    from interlock.stores import open_store

    tasks = [f"T{i}" for i in range(LAG_MOVERS)]
    with tempfile.TemporaryDirectory(prefix="il-bench-") as tmp:
        store = open_store(f"sqlite:///{Path(tmp) / 'store.db'}")
        ours = AsyncRuntime(_plan(WORKFLOW), store, sinks=[], executor_timeout=None)
        theirs = Runtime(_plan(WORKFLOW), store, sinks=[], executor_timeout=None)
        loop = asyncio.new_event_loop()
        try:
            for t in tasks:
                theirs.create_task(t, "w")
            loop.run_until_complete(_lag_sample(ours, True, tasks))  # warm-up, untimed
            samples, ref = interleave(lambda: loop.run_until_complete(_lag_sample(ours, True, tasks))[0],
                                      lambda: loop.run_until_complete(_lag_sample(theirs, False, tasks))[0], repeat)
            idle = loop.run_until_complete(_idle_lag(2_000))
            loop.run_until_complete(ours.aclose())
        finally:
            loop.close()
            store.close()  # type: ignore[attr-defined]
    m, r = statistics.median(samples), statistics.median(ref)
    return Result(m, r, m / r if r else None, unit="ms", samples=samples, reference_samples=ref,
                  details={"movers": LAG_MOVERS, "arrivals_per_mover": LAG_ARRIVALS, "tick_ms": LAG_TICK * 1000,
                           "idle_p99_ms": round(idle, 2),
                           "reference": "a Runtime called on the event loop (p99 lateness, ms)"})


# ---- registry and command line ---------------------------------------------------------------------------

FIGURES: dict[str, Spec] = {s.name: s for s in (
    Spec("sqlite-arrivals",
         "rt.move with entry dispatch (ledger row + one queued run) on a SQLite file store vs raw sqlite3 "
         "INSERT+COMMIT per row (both WAL, synchronous=NORMAL)",
         "our arrivals/s / raw rows/s (higher is better)", ((">=", 0.25, "ratio", TIMES),), sqlite_arrivals),
    Spec("pg-arrivals",
         "rt.move with entry dispatch on PostgreSQL, 4 spawned processes vs 1 (each moves its own tasks); "
         "duplicates checked afterwards",
         "4-process arrivals/s / 1-process arrivals/s (higher is better)", ((">=", 1.5, "ratio", TIMES),),
         pg_arrivals),
    Spec("runtime-memory-flat",
         f"{MEMORY_TASKS:,} tasks x 3 arrivals through a SQLite file store: tracemalloc slope after a "
         f"{MEMORY_WARMUP:,}-task warm-up",
         "no ratio: the measured slope is judged", (("<=", MEMORY_LIMIT, "measured", "B/task"),),
         runtime_memory_flat),
    Spec("fire-vs-transitions",
         "fire(on_turn_complete): one executor + a transition on a MemoryStore vs transitions: 5-state ring "
         "with one `after` callback",
         "our fires/s / transitions' triggers/s (higher is better)", ((">=", 1.0, "ratio", TIMES),),
         fire_vs_transitions),
    Spec("aio-loop-lag",
         f"p99 lateness of a 1 ms ticker on the event loop while {LAG_MOVERS} tasks deliver arrivals through an "
         "AsyncRuntime (SQLite file store) vs the same with a Runtime called on the loop",
         "no ratio judged: the measured p99 is (lower is better); ratio = ours / on-the-loop's",
         (("<=", LAG_LIMIT_MS, "measured", "ms"),), aio_loop_lag),
)}


def met(spec: Spec, result: Result) -> bool:
    for op, value, on, _unit in spec.targets:
        x = result.ratio if on == "ratio" else result.measured
        if x is None or not (x <= value if op == "<=" else x >= value):
            return False
    return True


def _fmt(value: float | None, unit: str) -> str:
    if value is None:
        return "—"
    return f"{value * 1000:.1f} ms" if unit == "s" else f"{value:,.1f} {unit}"


def render(results: list[tuple[Spec, Result]], repeat: int) -> str:
    rows = [["figure", "measured", "reference", "ratio", "target", "result"]]
    for spec, r in results:
        target = " ".join(f"{'≤' if op == '<=' else '≥'}{value:g}{'' if unit == TIMES else ' '}{unit}"
                          for op, value, _on, unit in spec.targets)
        rows.append([spec.name, _fmt(r.measured, r.unit), _fmt(r.reference, r.unit),
                     "—" if r.ratio is None else f"{r.ratio:.2f}{TIMES}", target, "PASS" if met(spec, r) else "FAIL"])
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    lines = ["  ".join(c.ljust(w) for c, w in zip(row, widths)).rstrip() for row in rows]
    lines.insert(1, "  ".join("-" * w for w in widths))
    notes = [f"medians of {repeat} interleaved runs"]
    for spec, r in results:
        notes.append(f"{spec.name}: {spec.description}; ratio = {spec.ratio_meaning}")
        notes.append("    " + ", ".join(f"{k} {v:,}" if isinstance(v, int) and not isinstance(v, bool) else f"{k} {v}"
                                        for k, v in r.details.items()))
    return "\n".join([*lines, "", *notes])


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    p.add_argument("--only", nargs="+", choices=list(FIGURES), metavar="NAME", help=f"figures: {list(FIGURES)}")
    p.add_argument("--repeat", type=int, default=5, metavar="N", help="interleaved repetitions (default 5)")
    p.add_argument("--json", action="store_true", help="JSON on stdout, the table on stderr")
    args = p.parse_args(argv)
    results = []
    for name, spec in FIGURES.items():
        if args.only and name not in args.only:
            continue
        progress(f"measuring {name} ...")
        results.append((spec, spec.run(max(1, args.repeat))))
    table = render(results, args.repeat)
    if args.json:
        print(table, file=sys.stderr)
        json.dump([{"name": s.name, "passed": met(s, r), **dataclasses.asdict(r)} for s, r in results], sys.stdout,
                  indent=2)
        print()
    else:
        print(table)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
