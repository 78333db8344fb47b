"""A store of N completed tasks in, `inspect` latency on it out: the time `inspect_task` takes for one task (the
history read in one read-only snapshot and the timeline built from it), and the query plan of each read.

    python benchmarks/inspect_latency.py                         # 1M tasks, SQLite and PostgreSQL
    python benchmarks/inspect_latency.py --backend sqlite -n 100000

The store comes from `benchmarks/bulk_store.py` (built on first use, reused afterwards).  Target (issue 21):
≤ 100 ms per task on a 1M-task store.  The figure is the median and the worst of `--repeat` tasks picked evenly
across the store (each task read once: no warm repeat of one task), opened read-only as `interlock inspect`
opens it.  Printed, never asserted; exit 0 (2 if the benchmark could not run).
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

import bulk_store


def _explain(store: Any, task_id: str) -> list[tuple[str, str]]:
    """(query, plan) of each per-task read of the history."""
    from interlock.stores import sql_history as h

    shared = store._shared
    out = []
    for text in h.HISTORY_QUERIES:
        sql = h.dialect_query(store, text)
        tx, _ = shared.acquire("explain")
        try:
            cur = tx.cursor
            if shared.postgres:
                cur.execute("EXPLAIN (COSTS OFF) " + sql, {"task_id": task_id})
            else:
                cur.execute("EXPLAIN QUERY PLAN " + sql, {"task_id": task_id})
            plan = " | ".join(str(r[-1]) for r in cur.fetchall())
        finally:
            shared.release(tx)
        out.append((text.split(" FROM ")[1].split()[0], plan))
    return out


def measure(url: str, n: int, repeat: int) -> dict[str, Any]:
    from interlock.runtime import inspect_task
    from interlock.tools.inspect import open_readonly_store

    store = open_readonly_store(url)
    try:
        picks = [bulk_store.task_id(i * (n // repeat)) for i in range(repeat)]
        times = []
        for tid in picks:
            start = time.perf_counter()
            timeline = inspect_task(store, tid)
            times.append((time.perf_counter() - start) * 1000)
            assert timeline.document["events"], tid
        plans = _explain(store, picks[-1])
    finally:
        store.close()
    return {"median_ms": statistics.median(times), "max_ms": max(times), "first_ms": times[0], "plans": plans}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("-n", "--tasks", type=int, default=1_000_000)
    parser.add_argument("--backend", choices=("sqlite", "postgresql", "both"), default="both")
    parser.add_argument("--repeat", type=int, default=50)
    parser.add_argument("--url", help="the store URL (default: bulk_store's for the backend); one backend only")
    args = parser.parse_args(argv)
    backends = ("sqlite", "postgresql") if args.backend == "both" else (args.backend,)
    for backend in backends:
        try:
            url = bulk_store.build(args.url or bulk_store.default_url(backend, args.tasks), args.tasks)
            fig = measure(url, args.tasks, args.repeat)
        except Exception as exc:
            print(f"inspect_latency: {backend}: {type(exc).__name__}: {exc}", file=sys.stderr)
            return 2
        print(f"{backend} {args.tasks:,} tasks: inspect median {fig['median_ms']:.1f} ms, worst "
              f"{fig['max_ms']:.1f} ms, first {fig['first_ms']:.1f} ms over {args.repeat} tasks (target ≤ 100 ms)")
        for table, plan in fig["plans"]:
            print(f"  {table}: {plan}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
