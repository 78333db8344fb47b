"""Store calls in, rows of the interlock tables out: the `Store` protocol on SQLite and PostgreSQL (`SqlStore`), durable.

The repository methods.  Connections and transactions are `stores.connections`' (BEGIN IMMEDIATE on
SQLite, BEGIN on PostgreSQL, savepoints for nested units, driver errors as `StoreError`s); the SQL
texts are `stores.statements`' (names from `stores.schema`, turned into the dialect's parameter
style once per engine) and run on the pooled DBAPI connection directly: an arrival with entry
dispatch is about seventeen statements, and SQLAlchemy's per-statement execution machinery cost ten
times the statement itself (profiled: statement construction, cache keys, result wrapping).  Every
call is one short transaction unless it runs on a store bound by `unit()`; calls on the unbound
store from the thread that holds an open unit join that unit (the in-memory store behaves the
same), so a callback inside a unit cannot deadlock against it.

Concurrency (docs/runtime.md §4): every insert-if-absent is `INSERT … ON CONFLICT DO NOTHING`
on the natural key and answers from the row count, so a delivery made by many processes
at once takes effect once.  Entry records and markers are inserted only if their ledger
row exists (`INSERT … SELECT … WHERE EXISTS`): one statement, and a bad entry id is a
`StoreError` that leaves a PostgreSQL transaction usable; the foreign key stays the
backstop.  `move_task` reads the task row `FOR UPDATE` on PostgreSQL (SQLite write units
begin IMMEDIATE, which serialises writers), so the compare-and-swap is exact and every
ledger row's `from` is the previous row's `to`.  On PostgreSQL `ensure_seat` takes a
transaction advisory lock on (task, role), so its workflow-wide existence check and
insert are one step, and `record_decision` one on the decider's key, so
supersede-and-insert never races; the unique indexes stay the backstop
(`record_decision` retries in a savepoint if a writer that bypasses the lock wins).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from dataclasses import replace
from typing import Any, cast

from sqlalchemy import Engine
from sqlalchemy.engine import URL

from interlock.runtime.frozen import builder
from interlock.runtime.history import TaskHistory
from interlock.runtime.store import (
    Claim,
    Decision,
    EntryClaim,
    EntryRecord,
    LedgerRow,
    Marker,
    MarkerState,
    MoveResult,
    OwnerRow,
    Participant,
    QueuedRun,
    StoreError,
    TaskState,
)
from interlock.runtime.store_due import DueRow, Incident, IncidentState, TimerArm

from ._common import (
    attempted_value,
    cached_attempted_text,
    check_arrival_options,
    check_decider,
    check_route,
    check_seat_task,
    check_state,
    clean_id,
    exists_error,
    failed_text,
    failed_value,
    foreign_entry_error,
    is_arrival,
    no_destination_error,
    no_ledger_row_error,
    operation_key,
    payload_text,
    payload_value,
    steps_tuple,
)
from .connections import Savepoint, Shared, Tx, Write
from .engine import ADVISORY_NAMESPACE, display_url, make_engine
from .migrate import check_schema
from .sql_due import SqlDue
from .sql_incidents import SqlIncidents
from .sql_prune import SqlPruning, pruned_or_busy
from .sql_rows import ledger as _ledger
from .sql_rows import ledger_row as _ledger_row
from .sql_rows import participant as _participant
from .sql_rows import task as _task
from .sql_rows import task_state as _task_state
from .sql_runs import SqlRunQueue
from .statements import (
    _PARTICIPANT_COLS,
    ADVISORY_LOCK,
    CLEAR_DECISIONS,
    D_CLAIM,
    I_CLAIM,
    I_OWNER,
    I_PLAN,
    I_SEAT,
    PUT_PARTICIPANT,
    PUT_TASK,
    Q_ALL_CLAIMS,
    Q_CLAIMS,
    Q_DECISIONS,
    Q_ENTRY_CLAIM,
    Q_EVALUATED,
    Q_LEDGER,
    Q_LEDGER_OF,
    Q_MARKER,
    Q_NOW,
    Q_OWNERS,
    Q_PLAN,
    Q_RUNS,
    Q_RUNS_OF,
    Q_UNEVALUATED,
    Q_UNRECORDED,
    SUPERSEDE,
    U_ENTRY_CLAIM,
    U_HEARTBEAT,
    U_MARKER_RETRY,
    U_STOP_OWNER,
    U_TAKE_OVER,
    U_TASK_ENTRY,
    _in_list,
)

_move_result = builder(MoveResult)

__all__ = ["SqlStore"]

SEAT_LOCK_KEY = 2
"""Advisory locks of `ensure_seat` use `ADVISORY_NAMESPACE + SEAT_LOCK_KEY` and a hash of (task, role)."""

DECISION_LOCK_KEY = 3
"""Advisory locks of `record_decision` use `ADVISORY_NAMESPACE + DECISION_LOCK_KEY` and a hash of the decider key."""

_DECISION_ATTEMPTS = 3


class _Unit:
    """What `SqlStore.unit()` returns: a transaction of its own (this thread's unit while it is open), or a
    savepoint in the open one."""

    __slots__ = ("clock", "inner", "shared", "tx")

    def __init__(self, shared: Shared, tx: Tx | None, clock: Callable[[], float] | None = None) -> None:
        self.shared = shared
        self.tx = tx
        self.clock = clock
        self.inner: Write | Savepoint = Write(shared, None, "in a unit") if tx is None else \
            Savepoint(shared, tx, "in a nested unit")

    def __enter__(self) -> SqlStore:
        tx = self.inner.__enter__()
        if self.tx is None:
            self.shared.local.tx = tx
        return SqlStore._bound(self.shared, tx, self.clock)

    def __exit__(self, kind: type[BaseException] | None, exc: BaseException | None, tb: Any) -> None:
        if self.tx is None:
            self.shared.local.tx = None
        self.inner.__exit__(kind, exc, tb)


class SqlStore(SqlRunQueue, SqlPruning):
    """The `interlock.runtime.store.Store` protocol on SQLite and PostgreSQL; durable.

    `SqlStore(url_or_engine)` checks once that the database is at this interlock's
    schema head (`check=False` skips it) and raises `StoreError` naming the upgrade
    command otherwise.  An engine passed in stays the caller's (`close()` leaves it
    open unless `owns_engine=True`); make it with `interlock.stores.engine.make_engine`
    to get the SQLite settings the store relies on (WAL, busy timeout, one shared
    connection for `sqlite://`, the driver's own transaction handling off).

    Use the store that `unit()` yields from the thread that opened the unit only.

    `clock` (epoch seconds), when given, is the store's clock for due rows and incidents (what `arm_timers`,
    `due`, `next_due` and incident times read) and for `now()`, passed to the database as a parameter: a test
    moves time with it.  Owner heartbeats, leases and row stamps keep the database's clock.  Without it, every
    clock is the database's, one for every host."""

    durable: bool = True

    def __init__(self, engine: Engine | str | URL, *, check: bool = True, owns_engine: bool | None = None,
                 clock: Callable[[], float] | None = None) -> None:
        owns = not isinstance(engine, Engine) if owns_engine is None else owns_engine
        bound_engine = make_engine(engine) if not isinstance(engine, Engine) else engine
        self._owns_engine = owns
        self._conn: Tx | None = None
        self._components(clock)
        try:
            self._shared = Shared.for_engine(bound_engine)
            if check:
                check_schema(bound_engine)
        except BaseException:
            if owns:
                bound_engine.dispose()
            raise

    def _components(self, clock: Callable[[], float] | None) -> None:
        self._clock = clock
        self._due = SqlDue(self)  # timers, retries, rerun_marker (stores/sql_due.py)
        self._incidents = SqlIncidents(self)  # stores/sql_incidents.py

    @classmethod
    def _bound(cls, shared: Shared, tx: Tx, clock: Callable[[], float] | None = None) -> SqlStore:
        store = cast("SqlStore | None", tx.bound)  # only `_bound` sets it: a `SqlStore` or None
        if store is not None and store._clock is clock:
            return store
        store = tx.bound = cls.__new__(cls)
        store._shared = shared
        store._conn = tx
        store._owns_engine = False
        store._components(clock)
        return store

    @property
    def engine(self) -> Engine:
        return self._shared.engine

    def close(self) -> None:
        """Hand the store's idle connections back to the pool; dispose of the engine if this store made it."""
        if self._conn is None:
            if self._owns_engine:
                self._shared.engine.dispose()  # closes the idle connections too (`_on_dispose`)
            else:
                self._shared.drain()

    def __repr__(self) -> str:
        bound = " (unit)" if self._conn is not None else ""
        return f"SqlStore({display_url(self._shared.url)!r}){bound}"

    # ---- transactions ---------------------------------------------------------------------------
    def unit(self) -> _Unit:
        """A transaction: calls on the yielded store commit together or not at all.

        Nested on a bound store (or on the thread of an open unit) it is a savepoint: a
        nested unit that raises is rolled back and the outer one goes on."""
        return _Unit(self._shared, self._conn if self._conn is not None else self._shared.open_unit(), self._clock)

    def _tx(self, doing: str) -> Write:
        """A write: joins the bound or thread's unit, else one transaction of its own."""
        return Write(self._shared, self._conn if self._conn is not None else self._shared.open_unit(), doing)

    def _read(self, doing: str, fn: Callable[[Tx], Any]) -> Any:
        """A read: joins the bound or thread's unit, else one autocommit statement (no BEGIN, no COMMIT)."""
        sh = self._shared
        tx = self._conn if self._conn is not None else sh.open_unit()
        if tx is None:
            return sh.read(doing, fn)
        try:
            return fn(tx)
        except sh.error_class as exc:
            raise sh.error(exc, tx, doing) from exc

    def now(self) -> float:
        """The database's clock, epoch seconds (the test clock, when the store was given one)."""
        if self._clock is not None:
            return float(self._clock())
        rows = self._rows("reading the clock", self._shared.sql(Q_NOW), {})
        return float(rows[0][0])

    # ---- plan revisions and owners ---------------------------------------------------------------
    def save_plan(self, digest: str, text: str) -> bool:
        with self._tx("keeping a plan revision") as tx:
            tx.cursor.execute(self._shared.sql(I_PLAN), {"digest": digest, "plan": text})
            return bool(tx.cursor.rowcount == 1)

    def plan_text(self, digest: str) -> str | None:
        rows = self._rows("reading a plan revision", self._shared.sql(Q_PLAN), {"digest": digest})
        return str(rows[0][0]) if rows else None

    def register_owner(self, owner_id: str, *, host: str, pid: int, plan: str | None, lease: float) -> None:
        with self._tx("registering a runtime owner") as tx:
            tx.cursor.execute(self._shared.sql(I_OWNER), {"owner": owner_id, "host": host, "pid": int(pid),
                                                          "plan": plan, "lease": float(lease), "stopped": False})

    def heartbeat(self, owner_id: str) -> bool:
        with self._tx("a runtime owner's heartbeat") as tx:
            tx.cursor.execute(self._shared.sql(U_HEARTBEAT), {"owner": owner_id})
            return bool(tx.cursor.rowcount == 1)

    def stop_owner(self, owner_id: str) -> None:
        with self._tx("stopping a runtime owner") as tx:
            tx.cursor.execute(self._shared.sql(U_STOP_OWNER), {"owner": owner_id, "stopped": True})

    def owners(self) -> list[OwnerRow]:
        return [OwnerRow(str(o), str(h), int(p), pl, float(st), float(hb), float(le), bool(sp), bool(al))
                for o, h, p, pl, st, hb, le, sp, al in self._rows("reading runtime owners", self._shared.sql(Q_OWNERS),
                                                                   {})]

    # ---- tasks and the ledger -------------------------------------------------------------------
    def get_task(self, task_id: str) -> TaskState | None:
        sh = self._shared
        tx = self._conn if self._conn is not None else sh.open_unit()
        if tx is None or sh.postgres:
            q = sh.stmt.q_task

            def read(tx: Tx) -> TaskState | None:
                tx.cursor.execute(q, {"id": task_id})
                row = tx.cursor.fetchone()
                return _task(row) if row is not None else None

            return cast("TaskState | None", self._read("reading a task", read))
        try:  # in a SQLite transaction: the row is kept for `move_task`
            tx.cursor.execute(sh.stmt.q_task, {"id": task_id})
            row = tx.cursor.fetchone()
        except sh.error_class as exc:
            raise sh.error(exc, tx, "reading a task") from exc
        tx.task_row = row
        return _task(row) if row is not None else None

    def _task_params(self, task: TaskState, now: Any) -> dict[str, Any]:
        return {"id": task.id, "workflow_id": clean_id(task.workflow_id), "step_id": clean_id(task.step_id),
                "description": task.description, "is_from_office": bool(task.is_from_office),
                "is_ephemeral": bool(task.is_ephemeral), "archived": bool(task.archived),
                "now": now, "entry_id": task.entry_id}

    def put_task(self, task: TaskState) -> None:
        """Insert or replace a task as pre-existing state: no ledger row, no arrival."""
        params = self._task_params(task, self._shared.now())
        with self._tx("writing a task") as tx:
            tx.task_row = None
            tx.cursor.execute(self._shared.sql(PUT_TASK), params)

    def create_task(self, task: TaskState, *, actor_kind: str = "system", actor_id: str | None = None,
                    session_id: str | None = None, plan: str | None = None, entry_owner: str | None = None,
                    operation_id: str | None = None, arrival_options: str | None = None) -> MoveResult:
        """Insert a new task and write its genesis ledger row when it has a step (`StoreError` if it exists)."""
        check_arrival_options(arrival_options)
        params = self._task_params(task, None)
        params["entry_id"] = None
        created = replace(task, workflow_id=params["workflow_id"], step_id=params["step_id"], entry_id=None)
        with self._tx("creating a task") as tx:
            tx.task_row = None
            row = None
            tx.cursor.execute(self._shared.stmt.create_task, params)
            if tx.cursor.rowcount != 1:
                raise exists_error(task.id)
            if created.step_id is not None:  # the genesis row, and the task's activation is that row
                row = self._write_ledger(tx, task.id, None, None, created.workflow_id, created.step_id, "creation",
                                         actor_kind or "system", actor_id, session_id, None, plan, entry_owner,
                                         arrival_options)
                tx.cursor.execute(self._shared.sql(U_TASK_ENTRY), {"id": task.id, "entry_id": row.id})
                created = replace(created, entry_id=row.id)
            if operation_id is not None:
                self._mark(tx, operation_id, task.id, "creation", None)
        return MoveResult("moved" if row is not None else "same_step", row, created)

    def move_task(self, task_id: str, to_workflow_id: str | None, to_step_id: str | None, *, route: str,
                  actor_kind: str = "system", actor_id: str | None = None, session_id: str | None = None,
                  expected_step_id: str | None = None, operation_id: str | None = None,
                  operation_trigger: str | None = None, decision_id: int | None = None,
                  expected_entry_id: int | None = None, plan: str | None = None,
                  entry_owner: str | None = None, arrival_options: str | None = None) -> MoveResult:
        """Change a task's step and write the ledger row in one transaction (see the protocol)."""
        check_route(route)
        check_arrival_options(arrival_options)
        to_wf, to_step = clean_id(to_workflow_id), clean_id(to_step_id)
        sh = self._shared
        with self._tx("moving a task") as tx:
            cur = tx.cursor
            found = tx.task_row
            if found is None or found[0] != task_id:
                cur.execute(sh.stmt.q_task_lock, {"id": task_id})
                found = cur.fetchone()
            if found is None:
                return MoveResult("unknown_task")
            from_wf, from_step = found[1], found[2]
            if ((expected_step_id is not None and from_step != expected_step_id)
                    or (expected_entry_id is not None and found[7] != expected_entry_id)):
                return MoveResult("cas_lost", None, _task(found))
            now = None  # the database's clock (`:now` in the statements)
            row = None
            if (from_wf, from_step) != (to_wf, to_step):
                tx.task_row = None
                if is_arrival(from_wf, from_step, to_wf, to_step):
                    row = self._write_ledger(tx, task_id, from_wf, from_step, to_wf, to_step, route,
                                             actor_kind or "system", actor_id, session_id, now, plan, entry_owner,
                                             arrival_options)
                entry_id = row.id if row is not None else found[7]
                cur.execute(sh.stmt.u_task_step, {"id": task_id, "workflow_id": to_wf, "step_id": to_step, "now": now,
                                                  "entry_id": entry_id})
                task = _task_state(found[0], to_wf, to_step, found[3], bool(found[4]), bool(found[5]),
                                   bool(found[6]), entry_id)
            else:
                task = _task(found)
            if operation_id is not None:
                self._mark(tx, operation_id, task_id, operation_trigger, now)
            if decision_id is not None:
                cur.execute(sh.stmt.u_evaluated, {"id": decision_id, "now": now})
        return _move_result("moved" if row is not None else "same_step", row, task)

    def _advisory_lock(self, tx: Tx, space: int, *key: str) -> None:
        """PostgreSQL: serialise this transaction with others on the same key (SQLite writers are serial already)."""
        if self._shared.postgres:
            tx.cursor.execute(self._shared.sql(ADVISORY_LOCK), {"ns": ADVISORY_NAMESPACE + space,
                                                                "key": "\x1f".join(key)})
            tx.cursor.fetchall()

    def _insert_id(self, tx: Tx, sql: str, params: dict[str, Any]) -> int:
        """Run an INSERT (its RETURNING id where the database has it) and return the new row's id."""
        cur = tx.cursor
        cur.execute(sql, params)
        if self._shared.returning:
            return int(cur.fetchone()[0])
        rowid = cur.lastrowid
        if rowid is None:  # pragma: no cover - drivers with neither RETURNING nor lastrowid
            raise StoreError("the database driver reported no id for an inserted row")
        return int(rowid)

    def _write_ledger(self, tx: Tx, task_id: str, from_wf: str | None, from_step: str | None, to_wf: str | None,
                      to_step: str | None, route: str, actor_kind: str, actor_id: str | None, session_id: str | None,
                      now: Any, plan: str | None = None, entry_owner: str | None = None,
                      arrival_options: str | None = None) -> LedgerRow:
        ledger_id = self._insert_id(tx, self._shared.stmt.i_ledger, {
            "task_id": task_id, "from_workflow_id": from_wf, "from_step_id": from_step, "to_workflow_id": to_wf,
            "to_step_id": to_step, "route": route, "actor_kind": actor_kind, "actor_id": actor_id,
            "session_id": session_id, "now": now, "plan": plan, "entry_owner": entry_owner,
            "arrival_options": arrival_options})
        return _ledger_row(ledger_id, task_id, from_wf, from_step, to_wf, to_step, route, actor_kind, actor_id,
                           session_id, plan, arrival_options)

    def ledger_row(self, ledger_id: int) -> LedgerRow | None:
        q = self._shared.stmt.q_ledger_row

        def read(tx: Tx) -> LedgerRow | None:
            tx.cursor.execute(q, {"id": ledger_id})
            row = tx.cursor.fetchone()
            return _ledger(row) if row is not None else None

        return cast("LedgerRow | None", self._read("reading the ledger", read))

    def _rows(self, doing: str, sql: str, params: dict[str, Any]) -> list[tuple[Any, ...]]:
        def read(tx: Tx) -> list[tuple[Any, ...]]:
            tx.cursor.execute(sql, params)
            return list(tx.cursor.fetchall())

        return cast("list[tuple[Any, ...]]", self._read(doing, read))

    def ledger(self, task_id: str | None = None) -> list[LedgerRow]:
        """Ledger rows, oldest first (all tasks, or one)."""
        sql = self._shared.sql(Q_LEDGER if task_id is None else Q_LEDGER_OF)
        return [_ledger(row) for row in self._rows("reading the ledger", sql, {"task_id": task_id})]

    def unrecorded_arrivals(self, limit: int = 1000, *, after_id: int = 0,
                            owner_id: str | None = None) -> list[LedgerRow]:
        """Ledger rows after `after_id` with a destination, no entry record and no live owner but `owner_id`,
        oldest first (through the partial index of unrecorded rows)."""
        rows = self._rows("reading the ledger", self._shared.sql(Q_UNRECORDED),
                          {"limit": max(limit, 0), "after": after_id, "owner": owner_id})
        return [_ledger(row) for row in rows]

    def claim_entry(self, entry_id: int, owner_id: str, plan: str | None) -> EntryClaim:
        """Claim the dispatch of a row's entry for `owner_id` (see the protocol)."""
        sh = self._shared
        with self._tx("claiming an entry") as tx:
            cur = tx.cursor
            cur.execute(sh.sql(Q_ENTRY_CLAIM + (" FOR UPDATE" if sh.postgres else "")), {"id": entry_id})
            found = cur.fetchone()
            if found is None:
                return EntryClaim("missing")
            row = _ledger(found)
            recorded, owner, alive = found[12], found[13], found[14]
            if recorded:
                return EntryClaim("recorded", row)
            if owner is not None and owner != owner_id and alive:
                return EntryClaim("busy", row, owner)
            cur.execute(sh.sql(U_ENTRY_CLAIM), {"id": entry_id, "owner": owner_id, "plan": plan})
            if row.plan is None and plan is not None:
                row = replace(row, plan=plan)
        return EntryClaim("claimed" if owner in (None, owner_id) else "taken_over", row)

    # ---- step entry -------------------------------------------------------------------------------
    def entry_record(self, entry_id: int) -> EntryRecord | None:
        q = self._shared.stmt.q_entry

        def read(tx: Tx) -> EntryRecord | None:
            tx.cursor.execute(q, {"id": entry_id})
            row = tx.cursor.fetchone()
            if row is None:
                return None
            return EntryRecord(entry_id=entry_id, task_id=row[0], workflow_id=row[1], step_id=row[2],
                               attempted=attempted_value(row[3]), failed=failed_value(row[4]))

        return cast("EntryRecord | None", self._read("reading an entry record", read))

    def _insert_for_entry(self, tx: Tx, sql: str, params: dict[str, Any], entry_id: int) -> bool:
        """An insert-if-absent that also requires the ledger row `entry_id`: True if written, False if the row
        was there already, `StoreError` if the ledger row is missing (the transaction stays usable)."""
        cur = tx.cursor
        cur.execute(sql, params)
        if cur.rowcount == 1:
            return True
        cur.execute(self._shared.stmt.q_ledger_id, {"id": entry_id})
        if cur.fetchone() is None:
            raise no_ledger_row_error(entry_id)
        return False

    def record_entry(self, record: EntryRecord) -> bool:
        """Record the entry (see the protocol): False if the row has one already (nothing changed)."""
        params = {"entry_id": record.entry_id, "task_id": record.task_id, "workflow_id": record.workflow_id,
                  "step_id": record.step_id, "attempted": cached_attempted_text(record.attempted),
                  "failed": failed_text(record.failed) if record.failed else "[]"}
        with self._tx("recording an entry") as tx:
            params["now"] = self._shared.stamp(tx)
            cur = tx.cursor
            cur.execute(self._shared.stmt.i_entry, params)
            if cur.rowcount == 1:
                return True
            cur.execute(self._shared.stmt.q_entry_row, {"id": record.entry_id})
            row = cur.fetchone()
            if row is None:
                raise no_ledger_row_error(record.entry_id)
            if row[3]:
                return False  # recorded already: nothing changed
            if row[1] is None or row[2] is None:
                raise no_destination_error(record.entry_id)
            if (row[0], row[1], row[2]) != (record.task_id, record.workflow_id, record.step_id):
                raise foreign_entry_error(record.entry_id, (record.task_id, record.workflow_id, record.step_id),
                                          (row[0], row[1], row[2]))
            raise StoreError(f"recording entry {record.entry_id}: the database changed no row")  # pragma: no cover

    def markers(self, entry_id: int) -> dict[int, Marker]:
        q = self._shared.stmt.q_markers

        def read(tx: Tx) -> dict[int, Marker]:
            tx.cursor.execute(q, {"id": entry_id})
            return {int(position): Marker(entry_id=entry_id, position=int(position), kind=kind,
                                          state=cast(MarkerState, state), error=error, attempt=int(attempt))
                    for position, kind, state, error, attempt in tx.cursor.fetchall()}

        return cast("dict[int, Marker]", self._read("reading markers", read))

    def claim_marker(self, entry_id: int, position: int, kind: str) -> bool:
        """Insert an `in_progress` marker; False if this position has a marker already."""
        params: dict[str, Any] = {"entry_id": entry_id, "position": position, "kind": kind}
        with self._tx("claiming a marker") as tx:
            params["now"] = self._shared.stamp(tx)
            return self._insert_for_entry(tx, self._shared.stmt.i_marker, params, entry_id)

    def start_marker(self, entry_id: int, position: int, kind: str) -> Marker:
        """Start a try of a position (see the protocol)."""
        sh = self._shared
        params: dict[str, Any] = {"entry_id": entry_id, "position": position, "kind": kind, "now": None}
        with self._tx("starting a marker") as tx:
            if not self._insert_for_entry(tx, sh.stmt.i_marker, params, entry_id):
                tx.cursor.execute(sh.sql(U_MARKER_RETRY), params)
            tx.cursor.execute(sh.sql(Q_MARKER), params)
            kind_, state, error, attempt = tx.cursor.fetchone()
        return Marker(entry_id, position, kind_, cast(MarkerState, state), error, int(attempt))

    def finish_marker(self, entry_id: int, position: int, state: MarkerState, error: str | None = None) -> None:
        """Set a marker's state (and error); a position with no marker is left alone."""
        state = check_state(state)
        params: dict[str, Any] = {"entry_id": entry_id, "position": position, "state": state, "error": error,
                                  "now": None}
        with self._tx("finishing a marker") as tx:
            params["now"] = self._shared.stamp(tx)
            tx.cursor.execute(self._shared.stmt.u_marker, params)

    def rerun_marker(self, entry_id: int, position: int, kind: str) -> Marker | None:
        return self._due.rerun_marker(entry_id, position, kind)

    # ---- operations -------------------------------------------------------------------------------
    def operation_applied(self, operation_id: str) -> bool:
        q = self._shared.stmt.q_operation
        key = operation_key(operation_id)

        def read(tx: Tx) -> bool:
            tx.cursor.execute(q, {"key": key})
            row = tx.cursor.fetchone()
            return row is not None and row[0] == "applied"

        return bool(self._read("reading an operation marker", read))

    def claim_operation(self, operation_id: str, *, token: str, owner_id: str, task_id: str | None = None,
                        trigger: str | None = None) -> Claim:
        """Claim the operation for `token` (see the protocol), in a transaction of its own."""
        sh = self._shared
        params = {"key": operation_key(operation_id), "id": operation_id, "task_id": task_id, "trigger": trigger,
                  "token": token, "owner": owner_id}
        with self._tx("claiming an operation") as tx:
            cur = tx.cursor
            cur.execute(sh.sql(I_CLAIM), params)
            if cur.rowcount == 1:
                return "claimed"
            cur.execute(sh.sql(U_TAKE_OVER), params)
            if cur.rowcount == 1:
                return "taken_over"
            cur.execute(sh.stmt.q_operation, params)
            row = cur.fetchone()
            if row is None:
                return pruned_or_busy(self, tx, str(params["key"]))
        return "applied" if row[0] == "applied" else "busy"

    def release_operation(self, operation_id: str, token: str) -> bool:
        """Give up `token`'s claim; False if it holds none."""
        with self._tx("releasing an operation claim") as tx:
            tx.cursor.execute(self._shared.sql(D_CLAIM), {"key": operation_key(operation_id), "token": token})
            return bool(tx.cursor.rowcount == 1)

    def claimed_operations(self, limit: int = 1000) -> list[tuple[str, str]]:
        """Every operation claimed and not applied: (operation id, claim token)."""
        return [(str(op), str(token)) for op, token in
                self._rows("reading operation claims", self._shared.sql(Q_ALL_CLAIMS), {"limit": max(limit, 0)})]

    def abandoned_claims(self, limit: int = 1000, *, owner_id: str | None = None) -> list[tuple[str, str]]:
        """Operations claimed and not applied whose owner is dead (or is `owner_id`): (operation id, claim token),
        through the partial index of claimed operations."""
        return [(str(op), str(token)) for op, token in
                self._rows("reading operation claims", self._shared.sql(Q_CLAIMS),
                           {"limit": max(limit, 0), "owner": owner_id})]

    def mark_operation(self, operation_id: str, *, task_id: str | None = None, trigger: str | None = None) -> bool:
        """Mark applied; False if it already was."""
        with self._tx("marking an operation") as tx:
            return self._mark(tx, operation_id, task_id, trigger, self._shared.stamp(tx))

    def _mark(self, tx: Tx, operation_id: str, task_id: str | None, trigger: str | None, now: Any) -> bool:
        tx.cursor.execute(self._shared.stmt.i_operation, {"key": operation_key(operation_id), "id": operation_id,
                                                     "task_id": task_id, "trigger": trigger, "now": now})
        return bool(tx.cursor.rowcount == 1)

    def decision_evaluated(self, decision_id: int) -> bool:
        q = self._shared.sql(Q_EVALUATED)

        def read(tx: Tx) -> bool:
            tx.cursor.execute(q, {"id": decision_id})
            row = tx.cursor.fetchone()
            return row is not None and bool(row[0])

        return bool(self._read("reading a decision", read))

    def mark_decision_evaluated(self, decision_id: int) -> bool:
        with self._tx("marking a decision evaluated") as tx:
            tx.cursor.execute(self._shared.stmt.u_evaluated, {"id": decision_id, "now": self._shared.stamp(tx)})
            return bool(tx.cursor.rowcount == 1)

    # ---- runs, seats, decisions -------------------------------------------------------------------
    def enqueue_run(self, run: QueuedRun) -> bool:
        """Queue a run; False (and nothing written) if a run with this key exists."""
        params: dict[str, Any] = {"key": run.key, "task_id": run.task_id, "step_id": run.step_id, "agent": run.agent,
                  "reason": run.reason, "payload": payload_text(run.payload) if run.payload else "{}", "entry_id": run.entry_id,
                  "operation_id": run.operation_id, "now": None}
        with self._tx("queueing a run") as tx:
            params["now"] = self._shared.stamp(tx)
            tx.cursor.execute(self._shared.stmt.i_run, params)
            return bool(tx.cursor.rowcount == 1)

    def runs(self, task_id: str | None = None) -> list[QueuedRun]:
        """Queued runs in the order they were queued (all tasks, or one)."""
        sql = self._shared.sql(Q_RUNS if task_id is None else Q_RUNS_OF)
        return [QueuedRun(key=key, task_id=task, step_id=step, agent=agent, reason=reason,
                          payload=payload_value(payload), entry_id=None if entry is None else int(entry),
                          operation_id=operation)
                for key, task, step, agent, reason, payload, entry, operation
                in self._rows("reading runs", sql, {"task_id": task_id})]

    def add_participant(self, participant: Participant) -> None:
        """Insert a seat, or update the one with the same (task, step, role, agent); the store assigns the id."""
        params = {"task_id": participant.task_id, "step_id": participant.step_id, "role": participant.role,
                  "agent": participant.agent, "workflow_id": participant.workflow_id,
                  "decision_required": bool(participant.decision_required), "position": participant.position}
        with self._tx("writing a participant") as tx:
            tx.cursor.execute(self._shared.sql(PUT_PARTICIPANT), params)

    def participants(self, task_id: str, workflow_steps: Iterator[str] | tuple[str, ...]) -> list[Participant]:
        """Per-task seats at any of `workflow_steps` plus template rows of those steps, by id."""
        steps = steps_tuple(workflow_steps)
        if not steps:
            return []
        params: dict[str, Any] = {}
        tasks_in = _in_list("t", tuple(sorted({task_id, ""})), params)
        steps_in = _in_list("s", steps, params)
        sql = self._shared.sql(f"SELECT {_PARTICIPANT_COLS} FROM interlock_participants WHERE task_id IN {tasks_in} "
                               f"AND step_id IN {steps_in} ORDER BY id")
        return [_participant(row) for row in self._rows("reading participants", sql, params)]

    def ensure_seat(self, task_id: str, step_id: str, role: str, agent: str,
                    workflow_steps: tuple[str, ...]) -> bool:
        """Write a per-task seat unless the task has a seat in `role` at any workflow step (or at `step_id`)."""
        check_seat_task(task_id)
        steps = tuple(dict.fromkeys((*steps_tuple(workflow_steps), step_id)))
        params: dict[str, Any] = {"task_id": task_id, "role": role}
        exists = self._shared.sql("SELECT 1 FROM interlock_participants WHERE task_id = :task_id AND role = :role "
                                  f"AND step_id IN {_in_list('s', steps, params)} LIMIT 1")
        with self._tx("ensuring a seat") as tx:
            self._advisory_lock(tx, SEAT_LOCK_KEY, task_id, role)
            tx.cursor.execute(exists, params)
            if tx.cursor.fetchone() is not None:
                return False
            tx.cursor.execute(self._shared.sql(I_SEAT), {"task_id": task_id, "step_id": step_id, "role": role,
                                                         "agent": agent, "decision_required": True})
            return bool(tx.cursor.rowcount == 1)

    def record_decision(self, decision: Decision) -> Decision:
        """Store a decision, superseding the same decider's active one in that role; return it with its id."""
        check_decider(decision)
        sh = self._shared
        key = {"task_id": decision.task_id, "step_id": decision.step_id, "decider_type": decision.decider_type,
               "decider_id": decision.decider_id, "role": decision.role}
        with self._tx("recording a decision") as tx:
            self._advisory_lock(tx, DECISION_LOCK_KEY, decision.task_id, decision.step_id, decision.decider_type,
                                decision.decider_id, decision.role)
            for attempt in range(1, _DECISION_ATTEMPTS + 1):
                now = sh.now()
                try:
                    with Savepoint(sh, tx, "recording a decision"):
                        tx.cursor.execute(sh.sql(SUPERSEDE), {**key, "now": now})
                        new_id = self._insert_id(tx, sh.stmt.i_decision, {
                            **key, "verdict": decision.verdict, "session_id": decision.session_id, "now": now,
                            "entry_id": decision.entry_id})
                    return replace(decision, id=new_id)
                except StoreError as exc:
                    # A concurrent decision of the same decider won the active-row index: supersede it.
                    if attempt == _DECISION_ATTEMPTS or not isinstance(exc.__cause__, sh.dbapi.IntegrityError):
                        raise
        raise AssertionError("unreachable")  # pragma: no cover

    def decisions(self, task_id: str, step_id: str) -> list[Decision]:
        """Active decisions for a task at a step, oldest first."""
        rows = self._rows("reading decisions", self._shared.sql(Q_DECISIONS), {"task_id": task_id,
                                                                                 "step_id": step_id})
        return [Decision(task_id=task, step_id=step, decider_type=kind, decider_id=decider, role=role,
                         verdict=verdict, id=int(id_), session_id=session,
                         entry_id=None if entry is None else int(entry))
                for id_, task, step, kind, decider, role, verdict, session, entry in rows]

    def unevaluated_decisions(self, limit: int = 1000) -> list[Decision]:
        """Active decisions whose re-evaluation is not marked applied, oldest first."""
        rows = self._rows("reading decisions", self._shared.sql(Q_UNEVALUATED), {"limit": max(limit, 0)})
        return [Decision(task_id=task, step_id=step, decider_type=kind, decider_id=decider, role=role,
                         verdict=verdict, id=int(id_), session_id=session,
                         entry_id=None if entry is None else int(entry))
                for id_, task, step, kind, decider, role, verdict, session, entry in rows]

    def clear_decisions(self, task_id: str, step_id: str) -> int:
        """Supersede every active decision of the task at the step; return how many there were."""
        with self._tx("clearing decisions") as tx:
            tx.cursor.execute(self._shared.sql(CLEAR_DECISIONS), {"task_id": task_id, "step_id": step_id,
                                                                  "now": self._shared.now()})
            return int(tx.cursor.rowcount)

    def task_history(self, task_id: str) -> TaskHistory | None:
        """Every row about `task_id` in one read-only snapshot (stores/sql_history.py); None: no such task."""
        from .sql_history import read_history

        return read_history(self, task_id)

    # ---- due rows and incidents (stores/sql_due.py, stores/sql_incidents.py) --------------------------
    def arm_timers(self, task_id: str, entry_id: int, workflow_id: str, step_id: str, plan: str | None,
                   timers: Sequence[TimerArm]) -> None:
        self._due.arm_timers(task_id, entry_id, workflow_id, step_id, plan, timers)

    def schedule_retry(self, row: DueRow) -> bool:
        return self._due.schedule_retry(row)

    def disarm(self, task_id: str, keep_entry: int | None) -> list[DueRow]:
        return self._due.disarm(task_id, keep_entry)

    def due(self, limit: int = 1000) -> list[DueRow]:
        return self._due.due(limit)

    def next_due(self) -> float | None:
        return self._due.next_due()

    def due_rows(self, task_id: str) -> list[DueRow]:
        return self._due.due_rows(task_id)

    def advance_due(self, row_id: int, slot: int, next_slot: int, due_at: float) -> bool:
        return self._due.advance_due(row_id, slot, next_slot, due_at)

    def drop_due(self, row_id: int, slot: int) -> bool:
        return self._due.drop_due(row_id, slot)

    def open_incident(self, incident: Incident) -> Incident:
        return self._incidents.open_incident(incident)

    def incident(self, incident_id: int) -> Incident | None:
        return self._incidents.incident(incident_id)

    def incidents(self, task_id: str | None = None, *, state: IncidentState | None = "open",
                  limit: int = 1000) -> list[Incident]:
        return self._incidents.incidents(task_id, state=state, limit=limit)

    def claim_incident(self, incident_id: int, owner_id: str) -> Incident | None:
        return self._incidents.claim_incident(incident_id, owner_id)

    def settle_incident(self, incident_id: int, *, owner_id: str | None, state: IncidentState,
                        resolution: str | None = None, note: str | None = None, error: str | None = None,
                        attempts: int | None = None,
                        failures: tuple[tuple[int, str, str], ...] | None = None) -> bool:
        return self._incidents.settle_incident(incident_id, owner_id=owner_id, state=state, resolution=resolution,
                                               note=note, error=error, attempts=attempts, failures=failures)

