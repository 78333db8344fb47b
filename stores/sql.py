"""Store calls in, rows of the interlock tables out: the `Store` protocol on SQLite and PostgreSQL (`SqlStore`), durable.

The store itself: its engine, units and reads, plan revisions and owners.  Its tables' methods live in parts it
takes in as base classes, one module per concern, each naming the store through the `SqlHost` protocol
(`stores/sql_host.py`) and never importing this module: tasks and the ledger (`stores/sql_ledger.py`), entry
records and markers (`stores/sql_entries.py`), operation claims and marks (`stores/sql_operations.py`), runs, seats
and decisions (`stores/sql_seats.py`); it composes the due rows (`stores/sql_due.py`) and incidents
(`stores/sql_incidents.py`) and delegates to them.

Connections and transactions are `stores.connections`' (BEGIN IMMEDIATE on
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
at once takes effect once (the parts' docstrings say how each of them keeps that).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, cast

from sqlalchemy import Engine
from sqlalchemy.engine import URL

from interlock.runtime.history import TaskHistory
from interlock.runtime.store import Marker, OwnerRow
from interlock.runtime.store_due import DueRow, Incident, IncidentState, TimerArm

from .connections import Savepoint, Shared, Tx, Write
from .engine import display_url, make_engine
from .migrate import check_schema
from .sql_due import SqlDue
from .sql_entries import SqlEntries
from .sql_incidents import SqlIncidents
from .sql_ledger import SqlLedger
from .sql_operations import SqlOperations
from .sql_prune import SqlPruning
from .sql_runs import SqlRunQueue
from .sql_seats import DECISION_LOCK_KEY, SEAT_LOCK_KEY, SqlSeats
from .statements import I_OWNER, I_PLAN, Q_NOW, Q_OWNERS, Q_PLAN, U_HEARTBEAT, U_STOP_OWNER

__all__ = ["SqlStore", "SEAT_LOCK_KEY", "DECISION_LOCK_KEY"]


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


class SqlStore(SqlLedger, SqlEntries, SqlOperations, SqlSeats, SqlRunQueue, SqlPruning):
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

    def _rows(self, doing: str, sql: str, params: dict[str, Any]) -> list[tuple[Any, ...]]:
        def read(tx: Tx) -> list[tuple[Any, ...]]:
            tx.cursor.execute(sql, params)
            return list(tx.cursor.fetchall())

        return cast("list[tuple[Any, ...]]", self._read(doing, read))

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

    # ---- history (stores/sql_history.py), reruns (stores/sql_due.py) --------------------------------
    def rerun_marker(self, entry_id: int, position: int, kind: str) -> Marker | None:
        return self._due.rerun_marker(entry_id, position, kind)

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

