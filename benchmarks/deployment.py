"""Stores of 100k and 1M completed tasks in, the durable path's scale figures out: `recover()` with nothing to do,
`interlock diff OLD NEW --store URL` at both sizes (and their ratio: ≈ 10 is linear), the query plan of every
statement those run (EXPLAIN QUERY PLAN on SQLite, EXPLAIN ANALYZE on PostgreSQL) with a verdict, and the commits
one arrival takes.

    python benchmarks/deployment.py                            # 100k and 1M, SQLite and PostgreSQL
    python benchmarks/deployment.py --backend sqlite --sizes 100000
    python benchmarks/deployment.py --only commits             # the commits per arrival alone (small stores)
    python benchmarks/deployment.py --json > deployment.json

The stores come from `benchmarks/bulk_store.py` (built on first use, reused afterwards; a 1M store takes a few
minutes to build).  Targets (issue 19): `recover()` with nothing to do ≤ 50 ms (the median of `--repeat` calls
after the first; the first, with a cold cache, is shown too); `diff --store` linear (1M / 100k ≈ 10); every query
of `recover` index-driven; an arrival whose entry runs one host action ≤ 3 commits.  Exit status 0 whether or not
a target is met (`--check`: 1 if one is missed), 2 if the benchmark could not run.

Statements are captured where the store runs them: SQLite's trace callback (the statement as executed, parameters
in place) and psycopg's `Cursor.execute` (text and parameters), on the calling thread only — the owner's heartbeat
thread writes too.  A commit is a `COMMIT` statement the store issues (it runs BEGIN and COMMIT itself, ADR 0035).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import resource
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

import sqlalchemy as sa
from sqlalchemy import event

sys.path.insert(0, str(Path(__file__).resolve().parent))

import bulk_store

RECOVER_TARGET_MS = 50.0
COMMITS_TARGET = 3
NEW_NOTHING_STRANDED = bulk_store.PLAN.replace("move_to_step(review)", "move_to_step(done)").replace(
    '  step review "Review" { manual_move on on_enter { notify } }\n', "")
"""v2 without `review` (no task stands there): the diff reads the store and strands nothing."""
NEW_ALL_STRANDED = bulk_store.PLAN.replace('step done "Done"', 'step finished "Finished"')
"""v2 with `done` renamed: every task of the store is stranded (and listed)."""


# ---- capturing the statements a call runs ---------------------------------------------------------------------


class Capture:
    """The statements run on this thread while `on`: (SQL, parameters) pairs."""

    def __init__(self) -> None:
        self.thread = threading.get_ident()
        self.on = False
        self.statements: list[tuple[str, Any]] = []

    def record(self, sql: str, params: Any = None) -> None:
        if self.on and threading.get_ident() == self.thread:
            self.statements.append((sql, params))

    @contextlib.contextmanager
    def running(self) -> Iterator[Capture]:
        self.statements = []
        self.on = True
        try:
            yield self
        finally:
            self.on = False

    def listener(self, _conn: Any, _cursor: Any, statement: str, params: Any, _context: Any, _many: bool) -> None:
        """SQLAlchemy's `before_cursor_execute` event."""
        self.record(statement, params)

    def commits(self) -> int:
        return sum(1 for sql, _ in self.statements if sql.strip().upper() == "COMMIT")

    def queries(self) -> list[tuple[str, Any]]:
        """The statements other than transaction control, each text once (first parameters kept)."""
        seen: dict[str, Any] = {}
        for sql, params in self.statements:
            head = sql.strip().split(None, 1)[0].upper() if sql.strip() else ""
            if head not in ("BEGIN", "COMMIT", "ROLLBACK", "SAVEPOINT", "RELEASE") and sql not in seen:
                seen[sql] = params
        return list(seen.items())


@contextlib.contextmanager
def captured_engine(url: str) -> Iterator[tuple[sa.Engine, Capture]]:
    """An engine for a `SqlStore` whose statements `Capture` sees (SQLite: trace callback; PostgreSQL: psycopg's
    `Cursor.execute`, patched while the engine lives)."""
    from interlock.stores.engine import make_engine

    capture = Capture()
    engine = make_engine(url)
    if engine.dialect.name == "sqlite":
        event.listen(engine, "connect", lambda dbapi, _record: dbapi.set_trace_callback(capture.record))
        yield engine, capture
        engine.dispose()
        return
    import psycopg

    original = psycopg.Cursor.execute

    def execute(self: Any, query: Any, params: Any = None, **kw: Any) -> Any:
        capture.record(query if isinstance(query, str) else str(query), params)
        return original(self, query, params, **kw)

    psycopg.Cursor.execute = execute  # type: ignore[method-assign]
    try:
        yield engine, capture
    finally:
        psycopg.Cursor.execute = original  # type: ignore[method-assign]
        engine.dispose()


# ---- query plans --------------------------------------------------------------------------------------------


def _partial_indexes() -> frozenset[str]:
    from interlock.stores import schema

    return frozenset(ix.name for t in schema.metadata.tables.values() for ix in t.indexes
                     if ix.dialect_options["sqlite"].get("where") is not None and ix.name)


def _verdict_sqlite(lines: list[str]) -> str:
    partial, full, scans = _partial_indexes(), [], []
    for ln in lines:
        words = ln.split()
        if not ln.startswith("SCAN ") or "CONSTANT ROW" in ln:
            continue  # SEARCH: an index lookup
        index = words[words.index("INDEX") + 1] if "INDEX" in words else None
        if index is None:
            full.append(words[1])
        elif index not in partial:
            scans.append(f"{words[1]} ({index})")
    return _verdict(full, scans)


def _verdict_pg(lines: list[str], sizes: dict[str, int]) -> str:
    partial, full, scans, small = _partial_indexes(), [], [], []
    for i, ln in enumerate(lines):
        if "(never executed)" in ln:
            continue  # a node the query never ran (a subplan for rows it never met)
        if "Seq Scan on " in ln:
            table = ln.split("Seq Scan on ", 1)[1].split()[0]
            if sizes.get(table, SMALL) < SMALL:
                small.append(f"{table} ({sizes[table]} rows)")
            else:
                full.append(table)
        elif " using " in ln and "Scan" in ln:
            index, table = ln.split(" using ", 1)[1].split()[0], ln.split(" on ", 1)[1].split()[0]
            depth = len(ln) - len(ln.lstrip())
            below = []
            for nxt in lines[i + 1:]:
                if len(nxt) - len(nxt.lstrip()) <= depth:
                    break
                below.append(nxt)
            if index not in partial and not any("Index Cond:" in b for b in below):
                scans.append(f"{table} ({index})")
    return _verdict(full, scans, small)


SMALL = 10_000
"""A table with fewer rows than this (PostgreSQL's estimate) read whole is the planner's cheapest way, not a scan
that grows with the store: an empty `interlock_decisions` here, a few `interlock_owners`."""


def _verdict(full: list[str], scans: list[str], small: Sequence[str] = ()) -> str:
    """`index` when every table is searched through an index or read through a partial one (of the few unfinished
    rows), `index; small table read whole: …` when the planner read a table of fewer than `SMALL` rows whole; else
    which tables are read whole: `FULL SCAN` (the table) or `full index scan` (every entry of an index)."""
    if not full and not scans:
        return "index" + (f"; small table read whole: {', '.join(sorted(set(small)))}" if small else "")
    parts = []
    if full:
        parts.append("FULL SCAN of " + ", ".join(sorted(set(full))))
    if scans:
        parts.append("full index scan of " + ", ".join(sorted(set(scans))))
    return "; ".join(parts)


def explain(engine: sa.Engine, sql: str, params: Any) -> tuple[list[str], str]:
    """The plan of `sql` (SQLite: EXPLAIN QUERY PLAN; PostgreSQL: EXPLAIN ANALYZE, BUFFERS) and its verdict."""
    raw = engine.raw_connection()
    try:
        cur = raw.cursor()
        if engine.dialect.name == "sqlite":
            cur.execute("EXPLAIN QUERY PLAN " + sql, params or ())
            lines = [str(row[3]) for row in cur.fetchall()]
            verdict = _verdict_sqlite(lines)
        else:
            cur.execute("SELECT c.relname, c.reltuples::bigint FROM pg_class c WHERE c.relname LIKE 'interlock%%' "
                        "AND c.relkind = 'r' AND pg_table_is_visible(c.oid)")
            sizes = {str(name): max(int(rows), 0) for name, rows in cur.fetchall()}
            cur.execute("EXPLAIN (ANALYZE, BUFFERS, COSTS OFF, TIMING OFF, SUMMARY OFF) " + sql, params)
            lines = [str(row[0]) for row in cur.fetchall()]
            verdict = _verdict_pg(lines, sizes)
            if "small table" in verdict:  # the plan it would take on a big table: the index is there to use
                cur.execute("SET LOCAL enable_seqscan = off")
                cur.execute("EXPLAIN (COSTS OFF) " + sql, params)
                lines += ["-- with enable_seqscan = off:"] + [str(row[0]) for row in cur.fetchall()]
        raw.rollback()
    finally:
        raw.close()
    return lines, verdict


def _plans(engine: sa.Engine, queries: list[tuple[str, Any]]) -> list[dict[str, Any]]:
    out = []
    for sql, params in queries:
        if "interlock_" not in sql or not sql.lstrip().upper().startswith(("SELECT", "WITH")):
            continue  # the catalog reads of `has_table`, PRAGMAs
        lines, verdict = explain(engine, sql, params)
        out.append({"sql": " ".join(sql.split()), "plan": lines, "verdict": verdict})
    return out


# ---- the figures --------------------------------------------------------------------------------------------


def _runtime(store: Any) -> Any:
    from interlock.runtime import ExecutorRegistry, Runtime

    registry = ExecutorRegistry()
    registry.register("notify", lambda args, ctx: None)
    return Runtime(bulk_store._plan(), store, executors=registry, sinks=[], executor_timeout=None)


def recover_figure(url: str, repeat: int) -> dict[str, Any]:
    """`recover()` with nothing to do on the store at `url`: times (ms) and the plans of the queries it runs."""
    from interlock.stores import SqlStore

    with captured_engine(url) as (engine, capture):
        store = SqlStore(engine)
        rt = _runtime(store)
        try:
            with capture.running():
                began = time.perf_counter()
                first = rt.recover()
                cold = (time.perf_counter() - began) * 1000
            if first.dispatched or first.entries or first.decisions or first.operations_released:
                raise RuntimeError(f"recover found work in a store of completed tasks: {first}")
            queries = capture.queries()
            samples = []
            with capture.running():
                for _ in range(repeat):
                    began = time.perf_counter()
                    rt.recover()
                    samples.append((time.perf_counter() - began) * 1000)
            if len(capture.statements) != repeat * len(queries):
                raise RuntimeError(f"recover ran {len(capture.statements)} statements in {repeat} calls, "
                                   f"not {len(queries)} each")
        finally:
            rt.close()
            store.close()
        plans = _plans(engine, queries)
    return {"first_ms": round(cold, 2), "median_ms": round(statistics.median(samples), 2),
            "max_ms": round(max(samples), 2), "repeat": repeat, "statements": len(queries),
            "commits": capture.commits(), "queries": plans}


def _wf(folder: Path, name: str, text: str) -> Path:
    path = folder / f"{name}.wf"
    path.write_text(text)
    return path


def _children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def diff_figure(url: str, folder: Path, repeat: int) -> dict[str, Any]:
    """`interlock diff OLD NEW --store URL` for two NEWs (nothing stranded; every task stranded): the CLI's wall
    time, the in-process `stranded()` time, and the plans of the queries it runs."""
    from interlock.compiler import compile_source
    from interlock.diffing import diff_plans
    from interlock.dsl import SourceFile
    from interlock.stores.inflight import open_readonly, stranded

    old = _wf(folder, "old", bulk_store.PLAN)
    cli = Path(sys.executable).parent / "interlock"
    out: dict[str, Any] = {}
    for name, text in (("nothing_stranded", NEW_NOTHING_STRANDED), ("all_stranded", NEW_ALL_STRANDED)):
        new = _wf(folder, name, text)
        wall, cpu, found = [], [], -1
        for _ in range(repeat):
            began, used = time.perf_counter(), _children_cpu()
            proc = subprocess.run([str(cli), "diff", str(old), str(new), "--store", url, "--format", "json"],
                                  capture_output=True, text=True)
            wall.append(time.perf_counter() - began)
            cpu.append(_children_cpu() - used)
            if proc.returncode not in (0, 1):
                raise RuntimeError(f"interlock diff failed ({proc.returncode}): {proc.stderr[-2000:]}")
            found = json.loads(proc.stdout)["summary"]["stranded"]
        plan_old = compile_source(SourceFile("old.wf", bulk_store.PLAN)).plan
        plan_new = compile_source(SourceFile(f"{name}.wf", text)).plan
        assert plan_old is not None and plan_new is not None
        changes = diff_plans(plan_old, plan_new)
        engine = open_readonly(url)
        capture = Capture()
        event.listen(engine, "before_cursor_execute", capture.listener)
        try:
            inproc, inproc_cpu = [], []
            for attempt in range(repeat):
                with capture.running():
                    began, used = time.perf_counter(), time.process_time()
                    stranded(engine, plan_old, plan_new, changes)
                    inproc.append(time.perf_counter() - began)
                    inproc_cpu.append(time.process_time() - used)
                if attempt == 0:
                    queries = capture.queries()
            plans = _plans(engine, queries)
        finally:
            engine.dispose()
        out[name] = {"cli_s": round(min(wall), 3), "cli_cpu_s": round(min(cpu), 3),
                     "stranded_s": round(min(inproc), 3), "stranded_cpu_s": round(min(inproc_cpu), 3),
                     "stranded": found, "queries": plans}
    return out


def commits_figure(backend: str) -> dict[str, Any]:
    """The commits (and statements) of each kind of arrival of the bench workflow, on a fresh small store."""
    from interlock.stores import SqlStore, upgrade

    with contextlib.ExitStack() as stack:
        if backend == "sqlite":
            folder = Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="il-commits-")))
            url = f"sqlite:///{folder / 'commits.db'}"
            upgrade(url)
        else:
            url = stack.enter_context(_pg_private())
        engine, capture = stack.enter_context(captured_engine(url))
        store = SqlStore(engine)
        rt = _runtime(store)
        stack.callback(store.close)
        stack.callback(rt.close)
        rt.create_task("warm", "w")  # plan indexes and caches filled outside the count
        rt.fire("on_turn_complete", "warm", session_id="S", payload={}, operation_id="turn:warm")
        rt.move("warm", "done")
        steps: list[tuple[str, Callable[[], Any]]] = [
            ("create_task (entry: queue_run, store-backed)", lambda: rt.create_task("T", "w")),
            ("fire on_turn_complete with an operation id → review (entry: one host action)",
             lambda: rt.fire("on_turn_complete", "T", session_id="S", payload={}, operation_id="turn:T")),
            ("move review → done (empty entry)", lambda: rt.move("T", "done")),
            ("move done → review (entry: one host action)", lambda: rt.move("T", "review")),
        ]
        out = {}
        for name, call in steps:
            with capture.running():
                call()
            out[name] = {"commits": capture.commits(), "statements": len(capture.statements),
                         "sequence": [_short(sql) for sql, _ in capture.statements]}
        return out


def _short(sql: str) -> str:
    words = " ".join(sql.split()).split()
    table = next((w for w in words if w.startswith("interlock_")), "")
    return " ".join(words[:2]) + (f" {table}" if table else "") if words else ""


@contextlib.contextmanager
def _pg_private() -> Iterator[str]:
    import uuid

    from interlock.stores import upgrade
    from interlock.stores.engine import normalise_url

    base = normalise_url(bulk_store.default_url("postgresql", 0))
    admin = sa.create_engine(base, poolclass=sa.pool.NullPool)
    name = f"il_commits_{uuid.uuid4().hex[:10]}"
    with admin.begin() as conn:
        conn.exec_driver_sql(f'CREATE SCHEMA "{name}"')
    try:
        url = sa.make_url(base).update_query_dict({"options": f"-csearch_path={name}"})
        text = url.render_as_string(hide_password=False)
        upgrade(text)
        yield text
    finally:
        with admin.begin() as conn:
            conn.exec_driver_sql(f'DROP SCHEMA IF EXISTS "{name}" CASCADE')
        admin.dispose()


# ---- the report ---------------------------------------------------------------------------------------------


def measure(backends: tuple[str, ...], sizes: tuple[int, ...], only: str | None, repeat: int,
            url: str | None = None) -> dict[str, Any]:
    """The figures; `url`: the store to use (one backend, one size) instead of bulk_store's default location."""
    report: dict[str, Any] = {"backends": {}}
    for backend in backends:
        section: dict[str, Any] = {"sizes": {}}
        report["backends"][backend] = section
        if only in (None, "commits"):
            section["commits"] = commits_figure(backend)
        if only == "commits":
            continue
        for n in sizes:
            store_url = bulk_store.build(url or bulk_store.default_url(backend, n), n)
            entry: dict[str, Any] = {}
            if only in (None, "recover"):
                entry["recover"] = recover_figure(store_url, repeat)
            if only in (None, "diff"):
                with tempfile.TemporaryDirectory(prefix="il-diff-") as folder:
                    entry["diff"] = diff_figure(store_url, Path(folder), max(1, repeat // 10))
            section["sizes"][str(n)] = entry
    return report


def verdicts(report: dict[str, Any]) -> list[tuple[str, bool]]:
    """(what, met) for every target the report can judge."""
    out = []
    for backend, section in report["backends"].items():
        for name, c in section.get("commits", {}).items():
            if "one host action" in name:
                out.append((f"{backend}: {name}: {c['commits']} commits ≤ {COMMITS_TARGET}", c["commits"] <= 3))
        sizes = section["sizes"]
        for n, entry in sizes.items():
            if "recover" in entry:
                r = entry["recover"]
                out.append((f"{backend} {int(n):,}: recover median {r['median_ms']} ms ≤ {RECOVER_TARGET_MS:g} ms",
                            r["median_ms"] <= RECOVER_TARGET_MS))
                bad = [q["sql"][:60] for q in r["queries"] if not q["verdict"].startswith("index")]
                out.append((f"{backend} {int(n):,}: recover's {len(r['queries'])} queries index-driven"
                            + (f" (not: {bad})" if bad else ""), not bad))
        diffs = [(int(n), e["diff"]) for n, e in sizes.items() if "diff" in e]
        if len(diffs) == 2:
            (small, a), (big, b) = sorted(diffs)
            want = big / small
            for name in a:
                for field in ("stranded_s", "stranded_cpu_s", "cli_cpu_s"):
                    ratio = b[name][field] / max(a[name][field], 1e-9)
                    out.append((f"{backend}: diff --store {name}: {field} {big:,}/{small:,} ratio {ratio:.1f} "
                                f"(linear: {want:g}; ≤ {1.5 * want:g})", ratio <= 1.5 * want))
    return out


def print_report(report: dict[str, Any]) -> None:
    for backend, section in report["backends"].items():
        print(f"== {backend}")
        for name, c in section.get("commits", {}).items():
            print(f"  commits: {c['commits']} ({c['statements']} statements)  {name}")
        for n, entry in section["sizes"].items():
            print(f"  -- {int(n):,} completed tasks")
            if "recover" in entry:
                r = entry["recover"]
                print(f"  recover (nothing to do): median {r['median_ms']} ms, max {r['max_ms']} ms over "
                      f"{r['repeat']}; first {r['first_ms']} ms; {r['statements']} statements, {r['commits']} "
                      "commits")
                _print_plans(r["queries"])
            for name, d in entry.get("diff", {}).items():
                print(f"  diff --store ({name}: {d['stranded']} stranded): CLI {d['cli_s']} s (CPU {d['cli_cpu_s']} s), "
                      f"stranded() in process {d['stranded_s']} s (CPU {d['stranded_cpu_s']} s)")
                _print_plans(d["queries"])
    print("== targets")
    for what, met in verdicts(report):
        print(f"  {'PASS' if met else 'FAIL'}  {what}")


def _print_plans(queries: list[dict[str, Any]]) -> None:
    for q in queries:
        print(f"    [{q['verdict']}] {q['sql'][:150]}")
        for line in q["plan"]:
            print(f"        {line}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--backend", choices=("sqlite", "postgresql", "both"), default="both")
    parser.add_argument("--sizes", type=int, nargs="+", default=[100_000, 1_000_000])
    parser.add_argument("--only", choices=("recover", "diff", "commits"))
    parser.add_argument("--repeat", type=int, default=30,
                        help="recover() calls timed (diff: a tenth, at least 1; the fastest counts)")
    parser.add_argument("--json", action="store_true", help="the report as JSON on stdout")
    parser.add_argument("--check", action="store_true", help="exit 1 if a target is missed")
    parser.add_argument("--url", help="the store URL (default: bulk_store's); one backend and one size only")
    args = parser.parse_args(argv)
    backends = ("sqlite", "postgresql") if args.backend == "both" else (args.backend,)
    try:
        report = measure(backends, tuple(args.sizes), args.only, args.repeat, args.url)
    except Exception as exc:
        print(f"deployment: could not run: {type(exc).__name__}: {exc}", file=sys.stderr)
        return 2
    if args.json:
        report["targets"] = [{"what": w, "met": m} for w, m in verdicts(report)]
        print(json.dumps(report, indent=2, default=str))
    else:
        print_report(report)
    return 1 if args.check and not all(m for _, m in verdicts(report)) else 0


if __name__ == "__main__":
    raise SystemExit(main())
