"""A store of N completed tasks in, `prune`'s throughput on it out: rows deleted per second, the time of each batch
(bounded: one transaction of `--batch` tasks), a rerun with nothing left to delete, and the query plan of each
statement of a batch (index-driven: no batch scans a table).

    python benchmarks/prune_throughput.py                        # 1M tasks, SQLite and PostgreSQL
    python benchmarks/prune_throughput.py --tasks 100000 --backend sqlite

Pruning deletes, so it never runs on the stores the other benchmarks share: the store is a copy (SQLite: the bulk
store's file copied to `bench-<n>-prune.db`; PostgreSQL: the schema `interlock_bench_<n>_prune`, built by
`benchmarks/bulk_store.py`), or the `--url` given (which it prunes).  The bulk tasks were completed on 2026-01-01
(`bulk_store`), so a window of 90 days makes each of them quiet (five rows to delete, one fingerprint to keep); the
first tasks, written through the runtime when the store was built, stay.  Printed, never asserted; exit 0 (2 if the
benchmark could not run).
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

import bulk_store

DAY = 86_400.0


def prune_url(backend: str, n: int) -> str:
    """Where the pruned copy lives (see the module's docstring)."""
    base = bulk_store.default_url(backend, n)
    if backend == "sqlite":
        source = bulk_store.build(base, n).removeprefix("sqlite:///")
        target = source.removesuffix(".db") + "-prune.db"
        for suffix in ("-wal", "-shm"):
            Path(target + suffix).unlink(missing_ok=True)
        shutil.copyfile(source, target)  # a fresh copy each run
        return f"sqlite:///{target}"
    url = bulk_store.default_url("postgresql", n).replace(f"interlock_bench_{bulk_store.label(n)}",
                                                           f"interlock_bench_{bulk_store.label(n)}_prune")
    return bulk_store.build(url, n)


def explain(store: Any, cutoff: float, limit: int) -> list[tuple[str, str]]:
    """(statement, plan) of each statement of the first batch, with its real parameters (a dry run's SELECTs)."""
    from interlock.stores import sql_prune as p
    from interlock.stores.sql_due import clock_sql

    sh = store._shared
    tx, _ = sh.acquire("explaining prune")
    out = []
    try:
        cur = tx.cursor
        prefix = "EXPLAIN (COSTS OFF) " if sh.postgres else "EXPLAIN QUERY PLAN "

        def plan(text: str, params: dict[str, Any]) -> None:
            sql = sh.sql(clock_sql(text, False))
            cur.execute(prefix + sql, params)
            out.append((text[:90], " | ".join(str(r[-1]) for r in cur.fetchall())))

        cur.execute(sh.sql(p.Q_TASKS), {"after": "", "limit": limit})
        latest = {str(t): int(i) for t, i in cur.fetchall()}
        plan(p.Q_TASKS, {"after": "", "limit": limit})
        params = p.SqlPrune(store)._params(cutoff)
        t = p._marks("t", sorted(latest), params)
        ids = p._marks("l", sorted(latest.values()), params)
        plan(p._fill(p.Q_OLD_LATEST, L=ids), params)
        for sql in p._BUSY:
            plan(p._fill(sql, T=t, L=ids), params)
        plan(p._fill(p.Q_KEEP, Q=t), params)
        k = p._marks("k", sorted(latest.values()), params)
        plan(p._fill(p.Q_OLD_ROWS, Q=t, K=k), params)
        cur.execute(sh.sql(p._fill(p.Q_OLD_ROWS, Q=t, K=k)), params)
        o = p._marks("o", sorted(int(r[0]) for r in cur.fetchall()), params)
        for where in p._WHERE.values():
            plan("SELECT count(*) " + p._fill(where, Q=t, O=o), params)
    finally:
        sh.release(tx)
    return out


def fingerprint_bytes(store: Any) -> float:
    """The bytes `interlock_pruned_operations` takes (table and index) per row."""
    sh = store._shared
    tx, _ = sh.acquire("measuring the fingerprints")
    try:
        cur = tx.cursor
        cur.execute("SELECT count(*) FROM interlock_pruned_operations")
        rows = int(cur.fetchone()[0])
        if sh.postgres:
            cur.execute("SELECT pg_total_relation_size('interlock_pruned_operations')")
        else:
            cur.execute("SELECT SUM(pgsize) FROM dbstat WHERE name IN ('interlock_pruned_operations', "
                        "'sqlite_autoindex_interlock_pruned_operations_1')")
        size = int(cur.fetchone()[0] or 0)
    finally:
        sh.release(tx)
    return size / max(rows, 1)


def measure(url: str, batch: int, window: float) -> dict[str, Any]:
    from interlock.stores import open_store, prune

    store = open_store(url, create=False)
    try:
        began = time.perf_counter()
        dry = prune(store, older_than=window, dry_run=True, batch=batch)
        dry_s = time.perf_counter() - began
        plans = explain(store, dry.cutoff, batch)
        times: list[float] = []
        last = [time.perf_counter()]

        def tick(_report: Any) -> None:
            now = time.perf_counter()
            times.append(now - last[0])
            last[0] = now

        began = last[0] = time.perf_counter()
        real = prune(store, older_than=window, batch=batch, progress=tick)
        real_s = time.perf_counter() - began
        began = time.perf_counter()
        again = prune(store, older_than=window, batch=batch)
        again_s = time.perf_counter() - began
        per_fingerprint = fingerprint_bytes(store)
    finally:
        store.close()  # type: ignore[attr-defined]
    return {"dry": dry, "dry_s": dry_s, "real": real, "real_s": real_s, "again": again, "again_s": again_s,
            "batch_median_s": statistics.median(times), "batch_max_s": max(times), "plans": plans,
            "fingerprint_bytes": per_fingerprint}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("-n", "--tasks", type=int, default=1_000_000, help="completed tasks (default 1,000,000)")
    parser.add_argument("--backend", choices=("sqlite", "postgresql", "both"), default="both")
    parser.add_argument("--url", help="the store to prune (it is pruned!); one backend only")
    parser.add_argument("--batch", type=int, default=1000, help="tasks per batch (default 1000)")
    parser.add_argument("--older-than-days", type=float, default=90.0, help="the window (default 90 days)")
    args = parser.parse_args(argv)
    backends = ("sqlite", "postgresql") if args.backend == "both" else (args.backend,)
    for backend in backends:
        try:
            url = bulk_store.build(args.url, args.tasks) if args.url else prune_url(backend, args.tasks)
            fig = measure(url, args.batch, args.older_than_days * DAY)
        except Exception as exc:
            print(f"prune_throughput: {backend}: {type(exc).__name__}: {exc}", file=sys.stderr)
            return 2
        real, dry = fig["real"], fig["dry"]
        print(f"{backend} {args.tasks:,} tasks, batch {args.batch}: pruned {real.tasks_pruned:,} of "
              f"{real.tasks_seen:,} tasks, {real.rows:,} rows + {real.fingerprints:,} fingerprints in "
              f"{fig['real_s']:.1f} s = {real.rows / fig['real_s']:,.0f} rows/s "
              f"({real.tasks_pruned / fig['real_s']:,.0f} tasks/s); {real.batches} batches, median "
              f"{fig['batch_median_s'] * 1000:.0f} ms, worst {fig['batch_max_s'] * 1000:.0f} ms")
        print(f"  per table: {real.deleted}")
        print(f"  dry run first: {dry.rows:,} rows counted in {fig['dry_s']:.1f} s "
              f"({'the same' if dry.deleted == real.deleted else 'DIFFERENT'} counts)")
        print(f"  rerun (nothing left): {fig['again'].rows} rows in {fig['again_s']:.1f} s")
        print(f"  interlock_pruned_operations: {fig['fingerprint_bytes']:.0f} bytes per fingerprint (table and index)")
        for sql, plan in fig["plans"]:
            print(f"  {sql}\n      {plan}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
