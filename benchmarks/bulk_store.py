"""A store URL and a task count in, a store holding that many completed tasks out (SQLite file or PostgreSQL schema).

The scale figures (`benchmarks/deployment.py`) need stores of 100k and 1M finished tasks; writing them through
the runtime would take hours, so all but the first tasks are written by bulk SQL of the shape the store's own
writer produces.  The first `SEED` tasks go through a real `Runtime` on the target store (which also saves the
plan revision and registers the owner, as a deployment does); their rows are the template the bulk rows copy:
the same columns, the same NULLs, the same value formats (the run key, the operation key, the entry record's
JSON, the owner and revision on every ledger row).  `check_shapes` compares the two, table by table; `build`
calls it on every build, so a change of the writer that the generator does not follow stops the build.

A completed task of `PLAN` is: the creation (into `work`, whose entry queues a run: store-backed, no marker), a
turn completed with an operation id (an applied operation; the move into `review`, whose entry runs one host
action: a `done` marker), a manual move into `done` (terminal, an empty entry record).  Per task: one task row,
three ledger rows, one run (handed out: claimed and acknowledged by the consumer `bench`), one operation, one
marker.

    python benchmarks/bulk_store.py                      # 1M tasks, SQLite and PostgreSQL
    python benchmarks/bulk_store.py -n 100000 --backend sqlite
    python -c "import bulk_store; print(bulk_store.build('sqlite:////tmp/s.db', 1000))"

Idempotent: a store already holding `n` tasks is reused; one interrupted part way resumes (every chunk of
`CHUNK` tasks is one transaction).  SQLite stores default to `$INTERLOCK_BENCH_DIR` (or
`/tmp/interlock-bench`) as `bench-<n>.db`; PostgreSQL ones to the schema `interlock_bench_<n>` of
`INTERLOCK_TEST_PG_URL` (default the local `test` database) when the URL names no `search_path`.  Progress goes
to stderr.
"""

from __future__ import annotations

import argparse
import contextlib
import fcntl
import json
import os
import re
import sys
import time
from collections.abc import Iterator, Sequence
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import sqlalchemy as sa
from sqlalchemy.engine import URL, make_url

PLAN = """
task notify(text: str = "") on on_enter
entry { dispatch notify }
workflow w "W" {
  step work "Work" {
    start
    manual_move
    on on_enter { queue_run(target: primary, reason: "x") }
    on on_turn_complete { move_to_step(review) }
  }
  step review "Review" { manual_move on on_enter { notify } }
  step done "Done" { manual_move terminal }
}
"""
"""The workflow every task of a bulk store completed (`python -m interlock.cli check` clean)."""

SEED = 100
"""Tasks written through the runtime: the template of the bulk rows and what they are compared with."""

CHUNK = 20_000
"""Tasks per bulk transaction."""

DEFAULT_PG_URL = "postgresql+psycopg://postgres@127.0.0.1:5432/test"
TABLES = ("interlock_tasks", "interlock_step_transitions", "interlock_entry_markers", "interlock_runs",
          "interlock_operations", "interlock_plans", "interlock_owners")
"""The tables a completed task touches (and the revision and owner rows of the runtime that wrote the first tasks)."""

_EPOCH = datetime(2026, 1, 1, tzinfo=UTC)


def task_id(i: int) -> str:
    """The id of the `i`-th task (0-based) of a bulk store."""
    return f"bench-{i:07d}"


def label(n: int) -> str:
    """`1000000` → `1m`, `100000` → `100k`: the name part of a default store location."""
    if n % 1_000_000 == 0:
        return f"{n // 1_000_000}m"
    return f"{n // 1000}k" if n % 1000 == 0 else str(n)


def _plan() -> Any:
    from interlock.compiler import compile_source
    from interlock.dsl import SourceFile

    result = compile_source(SourceFile("bench.wf", PLAN))
    if result.plan is None:
        raise RuntimeError(f"the bench plan does not compile: {result.diagnostics}")
    return result.plan


def _progress(text: str) -> None:
    print(f"bulk_store: {text}", file=sys.stderr, flush=True)


# ---- where the store is -------------------------------------------------------------------------------------


def default_url(backend: str, n: int) -> str:
    """Where `python benchmarks/bulk_store.py -n N` puts the store of `n` tasks on `backend`."""
    if backend == "sqlite":
        folder = Path(os.environ.get("INTERLOCK_BENCH_DIR", "/tmp/interlock-bench"))
        return f"sqlite:///{folder / f'bench-{label(n)}.db'}"
    return str(os.environ.get("INTERLOCK_TEST_PG_URL", DEFAULT_PG_URL))


def _pg_schema(url: URL) -> str | None:
    found = re.search(r"search_path=([A-Za-z0-9_]+)", str(url.query.get("options", "")))
    return found.group(1) if found else None


def _target(url: str, n: int) -> tuple[str, str | None]:
    """The store URL to build at and, on PostgreSQL, its schema (the default one when `url` names none)."""
    from interlock.stores.engine import normalise_url

    u = make_url(normalise_url(url))
    if u.get_backend_name() == "sqlite":
        Path(str(u.database)).parent.mkdir(parents=True, exist_ok=True)
        return u.render_as_string(hide_password=False), None
    schema = _pg_schema(u)
    if schema is None:
        schema = f"interlock_bench_{label(n)}"
        u = u.update_query_dict({"options": f"-csearch_path={schema}"})
    return u.render_as_string(hide_password=False), schema


@contextlib.contextmanager
def _exclusive(url: str, schema: str | None) -> Iterator[None]:
    """One builder per store at a time (a file lock for SQLite, an advisory lock for PostgreSQL)."""
    u = make_url(url)
    if schema is None:
        with open(f"{u.database}.lock", "w") as fh:
            fcntl.flock(fh, fcntl.LOCK_EX)
            yield
        return
    engine = sa.create_engine(u.set(query={}), poolclass=sa.pool.NullPool)
    try:
        with engine.connect() as conn:
            conn.exec_driver_sql("SELECT pg_advisory_lock(hashtext(%(s)s))", {"s": schema})
            conn.commit()
            conn.exec_driver_sql(f'CREATE SCHEMA IF NOT EXISTS "{schema}"')
            conn.commit()
            try:
                yield
            finally:
                conn.exec_driver_sql("SELECT pg_advisory_unlock(hashtext(%(s)s))", {"s": schema})
                conn.commit()
    finally:
        engine.dispose()


# ---- the first tasks, through the runtime --------------------------------------------------------------------------


def complete_task(rt: Any, tid: str) -> None:
    """One task through the bench workflow, as a deployment would: created, a turn completed, moved to done."""
    rt.create_task(tid, "w")
    fired = rt.fire("on_turn_complete", tid, session_id="S", payload={}, operation_id=f"turn:{tid}")
    if fired.result != "dispatched":
        raise RuntimeError(f"seed task {tid}: {fired}")
    moved = rt.move(tid, "done")
    if moved.status != "moved":
        raise RuntimeError(f"seed task {tid}: {moved}")


def consume_runs(store: Any, consumer: str = "bench") -> int:
    """Hand out every queued run, as a deployment's consumer would (claim a batch, acknowledge it); how many."""
    done = 0
    while batch := store.claim_runs(consumer, limit=1000):
        done += len(store.ack_runs(consumer, [r.id for r in batch]))
    return done


def _seed(url: str, start: int, stop: int) -> None:
    from interlock.runtime import ExecutorRegistry, Runtime
    from interlock.stores import open_store

    store = open_store(url, create=False)
    registry = ExecutorRegistry()
    registry.register("notify", lambda args, ctx: None)
    rt = Runtime(_plan(), store, executors=registry, sinks=[], executor_timeout=None)
    try:
        for i in range(start, stop):
            complete_task(rt, task_id(i))
        consume_runs(store)
    finally:
        rt.close()
        store.close()  # type: ignore[attr-defined]


# ---- the bulk rows ------------------------------------------------------------------------------------------


class Template:
    """What the bulk rows copy from the first seed task's rows: the revision, the owner, the run key's digest."""

    def __init__(self, conn: sa.Connection) -> None:
        first = task_id(0)
        ledger = conn.exec_driver_sql(
            "SELECT id, plan, entry_owner FROM interlock_step_transitions WHERE task_id = ? ORDER BY id"
            if conn.dialect.name == "sqlite" else
            "SELECT id, plan, entry_owner FROM interlock_step_transitions WHERE task_id = %s ORDER BY id",
            (first,)).all()
        if len(ledger) != 3:
            raise RuntimeError(f"seed task {first} has {len(ledger)} ledger rows, not 3: the bench workflow changed")
        self.plan, self.owner = ledger[0][1], ledger[0][2]
        key = conn.exec_driver_sql("SELECT idempotency_key FROM interlock_runs ORDER BY id LIMIT 1").scalar_one()
        self.run_digest = str(key).rsplit(":", 1)[1]
        self.sqlite = conn.dialect.name == "sqlite"

    def stamp(self, i: int, step: int) -> Any:
        """The time of the `step`-th write of task `i`: a millisecond apart, in the column's stored form."""
        at = _EPOCH + timedelta(milliseconds=4 * i + step)
        return at.strftime("%Y-%m-%d %H:%M:%S.%f") if self.sqlite else at

    @staticmethod
    def epoch(i: int, step: int) -> float:
        """The time of the `step`-th write of task `i` as epoch seconds (the run queue's columns)."""
        return (_EPOCH + timedelta(milliseconds=4 * i + step)).timestamp()

    def rows(self, start: int, stop: int, ledger_base: int, run_base: int) -> dict[str, list[tuple[Any, ...]]]:
        """The rows of tasks `start`…`stop - 1`, ledger ids from `ledger_base + 1`, run ids from `run_base + 1`."""
        from interlock.stores._common import operation_key

        out: dict[str, list[tuple[Any, ...]]] = {t: [] for t in TABLES[:5]}
        tasks, ledger, markers, runs, ops = (out[t] for t in TABLES[:5])
        for n, i in enumerate(range(start, stop)):
            tid, a = task_id(i), ledger_base + 3 * n + 1
            t0, t1, t2, t3 = (self.stamp(i, s) for s in range(4))
            tasks.append((tid, "w", "done", "", False, False, False, t0, t3, a + 2))
            ledger.append((a, tid, None, None, "w", "work", "creation", "system", None, None, t0,
                           '["queue_run"]', "[]", t0, self.plan, self.owner, None))
            ledger.append((a + 1, tid, "w", "work", "w", "review", "engine_transition", "agent", "S", "S", t1,
                           '["notify"]', "[]", t2, self.plan, self.owner, None))
            ledger.append((a + 2, tid, "w", "review", "w", "done", "manual_move", "human", None, None, t3,
                           "[]", "[]", t3, self.plan, self.owner, None))
            markers.append((a + 1, 0, "notify", "done", None, t1, t2, 1))
            runs.append((run_base + n + 1, f"entry:{a}:0:work:{tid}:primary:{self.run_digest}", tid, "work",
                         "primary", "x", "{}", a, None, t0, "bench", None, 1, self.epoch(i, 1)))
            op = f"turn:{tid}"
            ops.append((operation_key(op), op, tid, "on_turn_complete", "applied", None, t1, None))
        return out


COLUMNS = {
    "interlock_tasks": ("id", "workflow_id", "step_id", "description", "is_from_office", "is_ephemeral", "archived",
                        "created_at", "updated_at", "entry_id"),
    "interlock_step_transitions": ("id", "task_id", "from_workflow_id", "from_step_id", "to_workflow_id",
                                   "to_step_id", "route", "actor_kind", "actor_id", "session_id", "occurred_at",
                                   "entry_attempted", "entry_failed", "entry_recorded_at", "plan", "entry_owner",
                                   "arrival_options"),
    "interlock_entry_markers": ("entry_id", "position", "kind", "state", "error", "claimed_at", "updated_at",
                                "attempt"),
    "interlock_runs": ("id", "idempotency_key", "task_id", "step_id", "agent", "reason", "payload", "entry_id",
                       "operation_id", "created_at", "consumer", "lease_until", "claims", "acked_at"),
    "interlock_operations": ("op_key", "operation_id", "task_id", "trigger", "state", "claim_token", "applied_at",
                             "owner_id"),
}
"""The columns of every bulk table, in the order `Template.rows` gives them (every column the table has)."""


def _column_list(table: str) -> str:
    return ", ".join(f'"{c}"' for c in COLUMNS[table])


def _write_sqlite(raw: Any, rows: dict[str, list[tuple[Any, ...]]]) -> None:
    cur = raw.cursor()
    cur.execute("BEGIN IMMEDIATE")
    try:
        for table, values in rows.items():
            marks = ", ".join("?" * len(COLUMNS[table]))
            cur.executemany(f"INSERT INTO {table} ({_column_list(table)}) VALUES ({marks})", values)
        cur.execute("COMMIT")
    except BaseException:
        cur.execute("ROLLBACK")
        raise


def _write_pg(raw: Any, rows: dict[str, list[tuple[Any, ...]]]) -> None:
    with raw.cursor() as cur:
        for table, values in rows.items():
            with cur.copy(f"COPY {table} ({_column_list(table)}) FROM STDIN") as copy:
                for row in values:
                    copy.write_row(row)
    raw.commit()


def _counts(conn: sa.Connection) -> tuple[int, int, int]:
    """(tasks, the highest ledger id, the highest run id)."""
    tasks = conn.exec_driver_sql("SELECT count(*) FROM interlock_tasks").scalar_one()
    ledger = conn.exec_driver_sql("SELECT COALESCE(max(id), 0) FROM interlock_step_transitions").scalar_one()
    runs = conn.exec_driver_sql("SELECT COALESCE(max(id), 0) FROM interlock_runs").scalar_one()
    return int(tasks), int(ledger), int(runs)


def _bulk(url: str, n: int) -> None:
    """Tasks from the store's count up to `n`, `CHUNK` per transaction; PostgreSQL's sequences moved past them."""
    from interlock.stores.engine import make_engine

    engine = make_engine(url)
    try:
        with engine.connect() as conn:
            template = Template(conn)
            have, ledger, run = _counts(conn)
            conn.rollback()
        began, first = time.perf_counter(), have
        raw = engine.raw_connection()
        try:
            driver = raw.driver_connection
            while have < n:
                stop = min(n, have + CHUNK)
                rows = template.rows(have, stop, ledger, run)
                (_write_sqlite if template.sqlite else _write_pg)(driver, rows)
                ledger, run, have = ledger + 3 * (stop - have), run + (stop - have), stop
                rate = (have - first) / max(time.perf_counter() - began, 1e-9)
                _progress(f"{have:,}/{n:,} tasks ({rate:,.0f} tasks/s)")
        finally:
            raw.close()
        if not template.sqlite:
            with engine.begin() as conn:
                for table in ("interlock_step_transitions", "interlock_runs"):
                    conn.exec_driver_sql(f"SELECT setval(pg_get_serial_sequence('{table}', 'id'), "
                                         f"(SELECT max(id) FROM {table}))")
            with engine.connect().execution_options(isolation_level="AUTOCOMMIT") as conn:
                conn.exec_driver_sql("ANALYZE")  # what autovacuum would do after a load like this one
    finally:
        engine.dispose()


# ---- the shape check ----------------------------------------------------------------------------------------

_HEX = re.compile(r"[0-9a-f]{16,}")
_DIGITS = re.compile(r"[0-9]+")


def _shape(value: Any) -> str:
    """A value with its particulars masked: its type, and text with hex runs as `H` and digit runs as `9`."""
    if value is None:
        return "NULL"
    if isinstance(value, bool):
        return f"bool:{value}"
    if isinstance(value, datetime):
        return f"datetime:tz={value.tzinfo is not None}"
    if isinstance(value, int | float):
        return type(value).__name__
    return "text:" + _DIGITS.sub("9", _HEX.sub("H", str(value)))


def shapes(url: str, tasks: Sequence[str]) -> dict[str, set[tuple[str, ...]]]:
    """Per bulk table, the masked shapes of the rows of `tasks` (every column; markers through their ledger rows)."""
    from interlock.stores.engine import make_engine

    engine = make_engine(url)
    where = {"interlock_entry_markers": "entry_id IN (SELECT id FROM interlock_step_transitions WHERE task_id "
                                        "IN ({ids}))",
             "interlock_tasks": "id IN ({ids})"}
    out: dict[str, set[tuple[str, ...]]] = {}
    try:
        with engine.connect() as conn:
            ids = ", ".join("'" + t.replace("'", "''") + "'" for t in tasks)
            for table in COLUMNS:
                cond = where.get(table, "task_id IN ({ids})").format(ids=ids)
                result = conn.exec_driver_sql(f"SELECT {_column_list(table)} FROM {table} WHERE {cond}")
                out[table] = {tuple(f"{c}={_shape(v)}" for c, v in zip(COLUMNS[table], row)) for row in result}
    finally:
        engine.dispose()
    return out


def check_shapes(url: str, seed: int, n: int) -> None:
    """Raise if the bulk rows of the store at `url` differ in shape from those of the first tasks, which the runtime wrote."""
    if n <= seed:
        return
    ours = shapes(url, [task_id(i) for i in range(seed)])
    stride = max(1, (n - seed) // seed)  # the bulk rows right after the runtime-written ones, and some from the whole range
    sample = sorted({*range(seed, min(n, 2 * seed)), *range(seed, n, stride), n - 1})
    bulk = shapes(url, [task_id(i) for i in sample])
    for table in COLUMNS:
        if ours[table] != bulk[table]:
            raise RuntimeError(f"bulk rows of {table} differ from the runtime's: only the runtime's "
                               f"{sorted(ours[table] - bulk[table])}, only the bulk's "
                               f"{sorted(bulk[table] - ours[table])}")
    for table in ("interlock_tasks", "interlock_step_transitions"):
        if not ours[table]:
            raise RuntimeError(f"the runtime-written tasks left no {table} rows")


# ---- the whole build ----------------------------------------------------------------------------------------


def build(url: str, n: int = 1_000_000, *, seed: int = SEED) -> str:
    """A store holding `n` completed tasks at `url` (built, or reused if it holds them); its URL.

    On PostgreSQL a URL with no `search_path` gets the schema `interlock_bench_<n>` (the returned URL names it)."""
    from interlock.stores import upgrade

    target, schema = _target(url, n)
    with _exclusive(target, schema):
        upgrade(target)
        have = _count_tasks(target)
        if have >= n:
            _progress(f"reusing {have:,} tasks at {_display(target)}")
            return target
        first = min(seed, n)
        if have < first:
            if have:
                raise RuntimeError(f"{_display(target)} holds {have} tasks, fewer than the {first} the runtime writes first: drop it")
            _progress(f"{first} seed tasks through the runtime")
            _seed(target, 0, first)
        _bulk(target, n)
        check_shapes(target, first, n)
        _progress(f"{n:,} tasks at {_display(target)}")
    return target


def _count_tasks(url: str) -> int:
    from interlock.stores.engine import make_engine

    engine = make_engine(url)
    try:
        with engine.connect() as conn:
            return _counts(conn)[0]
    finally:
        engine.dispose()


def _display(url: str) -> str:
    from interlock.stores.engine import display_url

    return display_url(make_url(url))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("-n", "--tasks", type=int, default=1_000_000, help="completed tasks (default 1,000,000)")
    parser.add_argument("--backend", choices=("sqlite", "postgresql", "both"), default="both")
    parser.add_argument("--url", help="the store URL (default: see the module's docstring); one backend only")
    parser.add_argument("--json", action="store_true", help="the URLs as JSON on stdout")
    args = parser.parse_args(argv)
    if args.url and args.backend == "both":
        parser.error("--url needs --backend sqlite or --backend postgresql")
    backends = ("sqlite", "postgresql") if args.backend == "both" else (args.backend,)
    urls: dict[str, str] = {}
    for backend in backends:
        try:
            urls[backend] = build(args.url or default_url(backend, args.tasks), args.tasks)
        except Exception as exc:
            print(f"bulk_store: {backend}: {type(exc).__name__}: {exc}", file=sys.stderr)
            return 2
    print(json.dumps(urls, indent=2) if args.json else "\n".join(f"{b}: {u}" for b, u in urls.items()))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
