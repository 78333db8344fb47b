"""What one `Runtime.tick()` costs beyond the work of the timers it fires, with 100,000 pending timers of which 1,000 are
due, on SQLite and PostgreSQL (docs/runtime.md §7, issue 20: "index-driven: ≤ 5 ms plus the firing work").

    python benchmarks/ticks.py                          # both backends (PostgreSQL: INTERLOCK_TEST_PG_URL or local)
    python benchmarks/ticks.py --backend sqlite --repeat 3
    python benchmarks/ticks.py --check                  # exit 1 if a tick's own cost is over 5 ms

Each backend gets a fresh store (a SQLite file in a temporary folder; a private PostgreSQL schema, dropped
afterwards) on a test clock.  A workflow step has `after 30m { ping() }`; `ping` is a host kind whose
executor does nothing.  Then, per repetition:

1. 1,000 tasks arrive in that step (1,000 timers armed, due in 30 minutes) beside the pending rows: 99,000 rows
   of other entries due in 30-365 days (written once, up front, in one transaction), so 100,000 are pending;
2. `tick()` with nothing due (the clock at the arrivals): the cost of a tick that finds nothing — the due query,
   `next_due`, the owner's heartbeat — interleaved with the same on a reference store of the same backend that
   holds only 1,000 pending timers (`growth`: 1.0 means the 99,000 other rows cost nothing);
3. the clock moves 30 minutes on and one `tick()` fires the 1,000 due timers.  The firing work — for each
   row, the fence's read of its task and the timer's delivery (claim, handler, executor, mark, the row moved
   on) — is timed around each row; `own` is the tick's time minus that: what the tick costs on top.

The due query's plan is printed (SQLite `EXPLAIN QUERY PLAN`, PostgreSQL `EXPLAIN ANALYZE` after `ANALYZE`):
it reads `ix_interlock_timers_due` from its start and stops at the clock.  Medians over `--repeat`; absolute
times depend on the machine and are printed for context, with the target (≤ 5 ms) for the `own` cost.
Nothing here is asserted by the test suite (tests/test_benchmarks.py only checks that the script runs).
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import sqlalchemy as sa

from interlock.compiler import compile_source
from interlock.dsl import SourceFile
from interlock.runtime import ExecutorRegistry, Runtime
from interlock.runtime.store import Store
from interlock.runtime.store_due import TimerArm
from interlock.stores import open_store, upgrade
from interlock.stores.engine import normalise_url
from interlock.stores.sql_due import Q_DUE, clock_sql

TARGET_MS = 5.0
T0 = 1_800_000_000.0
WF = """\
task ping() on on_heartbeat
workflow bench "Bench" {
  step wait "Wait" {
    start
    manual_move
    after 30m { ping() }
  }
  step done "Done" { manual_move  terminal }
}
"""
DEFAULT_PG_URL = "postgresql+psycopg://postgres@127.0.0.1:5432/test"


class Clock:
    def __init__(self) -> None:
        self.now = T0

    def __call__(self) -> float:
        return self.now


@dataclass
class Sample:
    empty_ms: float  # a tick that finds nothing on the reference store (only the due timers pending)
    idle_ms: float  # a tick that finds nothing, with 100,000 pending
    fire_ms: float  # the tick that fires the due timers
    reading_ms: float  # its read of the due rows (the due query, 1,000 rows returned)
    firing_ms: float  # the firing work inside it (per row: the fence's read and the delivery)
    fired: int

    @property
    def own_ms(self) -> float:
        """The tick minus its firing work (what it costs on top, the read of the due rows included)."""
        return self.fire_ms - self.firing_ms

    @property
    def fixed_ms(self) -> float:
        """The tick minus its firing work and its read of the due rows: what no due row accounts for."""
        return self.fire_ms - self.firing_ms - self.reading_ms


class FiringClock:
    """Times the per-row work of one runtime's ticker (`Ticker._take`, one call per due row: the fence's read of its
    task, then the timer fired or the retry run: `seconds`) and its read of the due rows (`reading`).  One probe per
    row: its own cost (two clock reads, a call) falls outside the timed part, so `own` includes it."""

    def __init__(self, rt: Runtime) -> None:
        self.seconds = 0.0
        self.reading = 0.0
        self.parts: dict[str, float] = {"heartbeat": 0.0, "next_due": 0.0}
        ticker: Any = rt.ticker
        ticker._take = self._timed(ticker._take)
        ticker.store = _TimedReads(ticker.store, self)
        ticker.triggers.owner.beat = self._part("heartbeat", ticker.triggers.owner.beat)

    def reset(self) -> None:
        self.seconds = self.reading = 0.0
        self.parts = dict.fromkeys(self.parts, 0.0)

    def _part(self, name: str, fn: Callable[..., Any]) -> Callable[..., Any]:
        def run(*args: Any, **kwargs: Any) -> Any:
            started = time.perf_counter()
            try:
                return fn(*args, **kwargs)
            finally:
                self.parts[name] += time.perf_counter() - started

        return run

    def _timed(self, fn: Callable[[Any], Any]) -> Callable[[Any], Any]:
        clock = time.perf_counter

        def run(row: Any) -> Any:
            started = clock()
            try:
                return fn(row)
            finally:
                self.seconds += clock() - started

        return run


class _TimedReads:
    """The ticker's store, with `due` (the read of the due rows) and `next_due` timed on their own."""

    def __init__(self, store: Store, clock: FiringClock) -> None:
        self._store = store
        self._clock = clock
        self.next_due = clock._part("next_due", store.next_due)

    def due(self, limit: int = 1000) -> Any:
        started = time.perf_counter()
        try:
            return self._store.due(limit)
        finally:
            self._clock.reading += time.perf_counter() - started

    def __getattr__(self, name: str) -> Any:
        return getattr(self._store, name)


def _median_ms(fn: Callable[[], object], times: int = 20) -> float:
    samples = []
    for _ in range(times):
        started = time.perf_counter()
        fn()
        samples.append((time.perf_counter() - started) * 1000)
    return statistics.median(samples)


def _interleaved_ms(subject: Callable[[], object], reference: Callable[[], object], times: int = 40
                    ) -> tuple[float, float]:
    """The medians of `subject` and `reference`, run alternately (each goes first every other time)."""
    samples: tuple[list[float], list[float]] = ([], [])
    for k in range(times):
        order = ((0, subject), (1, reference)) if k % 2 == 0 else ((1, reference), (0, subject))
        for side, fn in order:
            started = time.perf_counter()
            fn()
            samples[side].append((time.perf_counter() - started) * 1000)
    return statistics.median(samples[0]), statistics.median(samples[1])


def _pending(store: Store, rows: int) -> None:
    """`rows` timers of other entries, due in 30 to 365 days, written in one transaction."""
    per_entry = 1000
    with store.unit() as tx:
        for k in range((rows + per_entry - 1) // per_entry):
            n = min(per_entry, rows - k * per_entry)
            arms = [TimerArm(p, "after", f"after {30 + (k * per_entry + p) % 335}d",
                             (30 + (k * per_entry + p) % 335) * 86400) for p in range(n)]
            tx.arm_timers(f"pending-{k}", 10_000_000 + k, "bench", "wait", None, arms)


def _explain(url: str, clock: Clock) -> str:
    engine = sa.create_engine(normalise_url(url))
    sqlite = engine.dialect.name == "sqlite"
    sql = clock_sql(Q_DUE, True).replace("CAST(:epoch AS DOUBLE PRECISION)", repr(clock.now))
    sql = sql.replace(":limit", "1000")
    try:
        with engine.begin() as conn:
            if sqlite:
                conn.exec_driver_sql("ANALYZE")
                rows = conn.exec_driver_sql("EXPLAIN QUERY PLAN " + sql).fetchall()
                return "\n".join(f"  {r[-1]}" for r in rows)
            conn.exec_driver_sql("ANALYZE interlock_timers")
            rows = conn.exec_driver_sql("EXPLAIN (ANALYZE, COSTS OFF, TIMING OFF, SUMMARY OFF) " + sql).fetchall()
            return "\n".join(f"  {r[0]}" for r in rows)
    finally:
        engine.dispose()


def _runtime(url: str, clock: Clock) -> tuple[Runtime, Store]:
    result = compile_source(SourceFile("bench.wf", WF))
    assert result.plan is not None, result.diagnostics
    store = open_store(url, clock=clock)
    executors = ExecutorRegistry()
    executors.register("ping", lambda a, c: [])
    # no heartbeat thread: the owner's heartbeat is the one each tick writes (timed), never one from another thread
    return Runtime(result.plan, store, executors=executors, sinks=[], executor_timeout=None, heartbeat=False), store


def run_backend(url: str, reference_url: str, args: argparse.Namespace) -> tuple[list[Sample], str, float]:
    """The samples of one backend, the due query's plan, and the due query's median time (1,000 due).  The reference
    store holds only `--due` pending timers (none due): the idle tick there is what `growth` divides by."""
    clock, reference_clock = Clock(), Clock()
    rt, store = _runtime(url, clock)
    reference, reference_store = _runtime(reference_url, reference_clock)
    timing = FiringClock(rt)
    samples: list[Sample] = []
    plan_text, due_query_ms = "", 0.0
    try:
        for i in range(args.due):
            reference.create_task(f"ref-{i}", "bench")
        _pending(store, args.pending - args.due)
        for r in range(args.repeat + 1):  # the first round warms up, untimed
            base = clock.now
            for i in range(args.due):
                rt.create_task(f"r{r}-{i}", "bench")
            idle_ms, empty_ms = _interleaved_ms(rt.tick, reference.tick)
            clock.now = base + 1800
            if r == 1:
                plan_text = _explain(url, clock)
                due_query_ms = _median_ms(lambda: store.due(args.due), 10)
            timing.reset()
            started = time.perf_counter()
            tick = rt.tick(limit=args.due + 100)
            fire_ms = (time.perf_counter() - started) * 1000
            fired = sum(1 for i in tick.items if i.result == "fired")
            sample = Sample(empty_ms, idle_ms, fire_ms, timing.reading * 1000, timing.seconds * 1000, fired)
            if r:
                samples.append(sample)
            print(f"  round {r}: idle tick {idle_ms:.2f} ms (reference {empty_ms:.2f} ms); fired {fired}, tick "
                  f"{fire_ms:.1f} ms, own {sample.own_ms:.2f} ms (reading the due rows {sample.reading_ms:.2f} ms, "
                  f"the rest {sample.fixed_ms:.2f} ms: heartbeat {timing.parts['heartbeat'] * 1000:.2f} ms, "
                  f"next_due {timing.parts['next_due'] * 1000:.2f} ms)", file=sys.stderr)
            clock.now += 1800
    finally:
        for each, each_store in ((rt, store), (reference, reference_store)):
            each.close()
            getattr(each_store, "close", lambda: None)()
    return samples, plan_text, due_query_ms


@contextmanager
def _sqlite_url() -> Iterator[str]:
    with tempfile.TemporaryDirectory() as folder:
        url = f"sqlite:///{Path(folder) / 'ticks.db'}"
        upgrade(url)
        yield url


@contextmanager
def _pg_url(base: str) -> Iterator[str]:
    schema = f"il_bench_ticks_{uuid.uuid4().hex[:10]}"
    admin = sa.create_engine(normalise_url(base), poolclass=sa.pool.NullPool)
    with admin.begin() as conn:
        conn.exec_driver_sql(f'CREATE SCHEMA "{schema}"')
    url = normalise_url(base).update_query_dict({"options": f"-csearch_path={schema}"}).render_as_string(
        hide_password=False)
    try:
        upgrade(url)
        yield url
    finally:
        with admin.begin() as conn:
            conn.exec_driver_sql(f'DROP SCHEMA IF EXISTS "{schema}" CASCADE')
        admin.dispose()


def main(argv: list[str] | None = None) -> int:
    import os

    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--backend", choices=("sqlite", "postgresql", "both"), default="both")
    parser.add_argument("--pg-url", default=os.environ.get("INTERLOCK_TEST_PG_URL", DEFAULT_PG_URL))
    parser.add_argument("--pending", type=int, default=100_000, help="pending timers (default 100,000)")
    parser.add_argument("--due", type=int, default=1000, help="of them due at the firing tick (default 1,000)")
    parser.add_argument("--repeat", type=int, default=5, metavar="N", help="timed rounds (default 5)")
    parser.add_argument("--check", action="store_true", help=f"exit 1 if a tick's own cost is over {TARGET_MS} ms")
    args = parser.parse_args(argv)
    if not 0 < args.due <= args.pending or args.repeat < 1:
        parser.error("need 0 < --due <= --pending and --repeat >= 1")
    backends = ("sqlite", "postgresql") if args.backend == "both" else (args.backend,)
    missed = 0
    rows = []
    for backend in backends:
        print(f"{backend}: {args.pending:,} pending, {args.due:,} due, {args.repeat} rounds", file=sys.stderr)
        try:
            with (_sqlite_url() if backend == "sqlite" else _pg_url(args.pg_url)) as url, \
                    (_sqlite_url() if backend == "sqlite" else _pg_url(args.pg_url)) as reference_url:
                samples, plan_text, due_query_ms = run_backend(url, reference_url, args)
        except sa.exc.OperationalError as exc:
            print(f"{backend}: skipped, the database is unreachable: {exc.orig}", file=sys.stderr)
            continue
        med = {name: statistics.median(getattr(s, name) for s in samples)
               for name in ("empty_ms", "idle_ms", "fire_ms", "reading_ms", "firing_ms", "own_ms", "fixed_ms")}
        fired = min(s.fired for s in samples)
        missed += med["fixed_ms"] > TARGET_MS or med["idle_ms"] > TARGET_MS
        rows.append((backend, med, fired, due_query_ms))
        print(f"\n{backend}: the due query's plan (1,000 due of {args.pending:,}):\n{plan_text}")
    print(f"\n{'backend':10} {'idle tick':>10} {'growth':>7} {'firing tick':>12} {'firing work':>12} {'own':>9} "
          f"{'read due':>9} {'rest':>8} {'per timer':>10}  target: idle tick and rest ≤ {TARGET_MS:g} ms")
    for backend, med, fired, due_query_ms in rows:
        verdict = "PASS" if med["fixed_ms"] <= TARGET_MS and med["idle_ms"] <= TARGET_MS else "FAIL"
        print(f"{backend:10} {med['idle_ms']:>7.2f} ms {med['idle_ms'] / med['empty_ms']:>6.2f}x "
              f"{med['fire_ms']:>9.1f} ms {med['firing_ms']:>9.1f} ms {med['own_ms']:>6.2f} ms "
              f"{med['reading_ms']:>6.2f} ms {med['fixed_ms']:>5.2f} ms {med['firing_ms'] / max(fired, 1):>7.3f} ms  "
              f"{verdict} ({fired:,} fired; the due query alone: {due_query_ms:.2f} ms)")
    print("idle tick: a tick that finds nothing due among every pending row (median of 40); growth: that over the same "
          "tick on a store without the 99,000 far rows (interleaved); firing tick: the tick that fires the due timers; "
          "firing work: "
          "its per-row work (the fence's read, the delivery); own: firing tick - firing work; read due: the due "
          "query's share of own (it returns the due rows); rest: own - read due.  Medians of the rounds.")
    return 1 if args.check and missed else 0


if __name__ == "__main__":
    raise SystemExit(main())
