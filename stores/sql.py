"""Store calls in, rows of the interlock tables out: the `Store` protocol on SQLAlchemy Core (`SqlStore`), durable.

SQLite (file or in-memory) and PostgreSQL.  Every call is one short transaction unless
it runs on a store bound by `unit()`; calls on the unbound store from the thread that
holds an open unit join that unit (the in-memory store behaves the same), so a callback
inside a unit cannot deadlock against it.

Concurrency (RUNTIME.md §4): every insert-if-absent is `INSERT … ON CONFLICT DO NOTHING`
on the natural key and answers from the row count, so a delivery made by many processes
at once takes effect once.  `move_task` reads the task row `FOR UPDATE` on PostgreSQL
(SQLite write units begin IMMEDIATE, which serialises writers), so the compare-and-swap
is exact and every ledger row's `from` is the previous row's `to`.  On PostgreSQL
`ensure_seat` takes a transaction advisory lock on (task, role), so its workflow-wide
existence check and insert are one step, and `record_decision` one on the decider's
key, so supersede-and-insert never races; the unique indexes stay the backstop
(`record_decision` retries in a savepoint if a writer that bypasses the lock wins).
"""

from __future__ import annotations

import threading
import weakref
from collections.abc import Iterator
from contextlib import AbstractContextManager, contextmanager, nullcontext
from dataclasses import replace
from datetime import UTC, datetime
from typing import Any, cast

from sqlalchemy import Column, Connection, Engine, Executable, Insert, Row, Table, and_, select, text
from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.engine import URL
from sqlalchemy.exc import DBAPIError, IntegrityError

from interlock.runtime.store import (
    Decision,
    EntryRecord,
    LedgerRow,
    Marker,
    MarkerState,
    MoveResult,
    Participant,
    QueuedRun,
    StoreError,
    TaskState,
)

from ._common import (
    attempted_text,
    attempted_value,
    check_decider,
    check_route,
    check_seat_task,
    check_state,
    clean_id,
    exists_error,
    failed_text,
    failed_value,
    is_arrival,
    no_ledger_row_error,
    payload_text,
    payload_value,
    steps_tuple,
)
from .engine import ADVISORY_NAMESPACE, BEGIN_OPTION, make_engine, memory_lock, store_error
from .ledger import insert_ledger_row, supports_returning
from .migrate import check_schema
from .schema import decisions, entries, entry_markers, operations, participants, runs, step_transitions, tasks

__all__ = ["SqlStore"]

SEAT_LOCK_KEY = 2
"""Advisory locks of `ensure_seat` use `ADVISORY_NAMESPACE + SEAT_LOCK_KEY` and a hash of (task, role)."""

DECISION_LOCK_KEY = 3
"""Advisory locks of `record_decision` use `ADVISORY_NAMESPACE + DECISION_LOCK_KEY` and a hash of the decider key."""

_DECISION_ATTEMPTS = 3


def _now() -> datetime:
    return datetime.now(UTC)


class _Shared:
    """What every store over one engine shares: the engine, its dialect facts and each thread's open unit.

    One per engine (`for_engine`), so two `SqlStore`s over the same engine see each
    other's open unit on a thread instead of opening a second transaction beside it."""

    _by_engine: weakref.WeakKeyDictionary[Engine, _Shared] = weakref.WeakKeyDictionary()
    _by_engine_guard = threading.Lock()

    @classmethod
    def for_engine(cls, engine: Engine) -> _Shared:
        with cls._by_engine_guard:
            shared = cls._by_engine.get(engine)
            if shared is None:
                shared = cls._by_engine[engine] = cls(engine)
            return shared

    def __init__(self, engine: Engine) -> None:
        self.engine = engine
        self.url: URL = engine.url
        self.dialect = engine.dialect.name
        if self.dialect not in ("sqlite", "postgresql"):
            raise StoreError(f"interlock stores support SQLite and PostgreSQL, not {self.dialect}")
        self.postgres = self.dialect == "postgresql"
        self.lock = memory_lock(engine)
        self.local = threading.local()
        self.returning: bool | None = None  # learnt on the first connection

    def open_unit(self) -> Connection | None:
        conn: Connection | None = getattr(self.local, "conn", None)
        return conn

    @contextmanager
    def transaction(self, doing: str, *, write: bool) -> Iterator[Connection]:
        """One connection and one transaction (SQLite: BEGIN IMMEDIATE when `write`); DB errors become StoreError."""
        guard: AbstractContextManager[Any] = self.lock if self.lock is not None else nullcontext()
        with guard:
            try:
                with self.engine.connect() as conn:
                    if write and not self.postgres:
                        conn.execution_options(**{BEGIN_OPTION: "IMMEDIATE"})
                    if self.returning is None:
                        self.returning = supports_returning(conn)
                    with conn.begin():
                        yield conn
            except DBAPIError as exc:
                raise store_error(exc, self.url, doing) from exc

    def insert(self, table: Table) -> postgresql.Insert | sqlite.Insert:
        return postgresql.insert(table) if self.postgres else sqlite.insert(table)


class SqlStore:
    """The `interlock.runtime.store.Store` protocol on SQLAlchemy Core; durable.

    `SqlStore(url_or_engine)` checks once that the database is at this interlock's
    schema head (`check=False` skips it) and raises `StoreError` naming the upgrade
    command otherwise.  An engine passed in stays the caller's (`close()` leaves it
    open unless `owns_engine=True`); make it with `interlock.stores.engine.make_engine`
    to get the SQLite settings the store relies on (WAL, busy timeout, `BEGIN
    IMMEDIATE`, one shared connection for `sqlite://`).

    Use the store that `unit()` yields from the thread that opened the unit only."""

    durable: bool = True

    def __init__(self, engine: Engine | str | URL, *, check: bool = True, owns_engine: bool | None = None) -> None:
        owns = not isinstance(engine, Engine) if owns_engine is None else owns_engine
        bound_engine = make_engine(engine) if not isinstance(engine, Engine) else engine
        self._owns_engine = owns
        self._conn: Connection | None = None
        try:
            self._shared = _Shared.for_engine(bound_engine)
            if check:
                check_schema(bound_engine)
        except BaseException:
            if owns:
                bound_engine.dispose()
            raise

    @classmethod
    def _bound(cls, shared: _Shared, conn: Connection) -> SqlStore:
        store = cls.__new__(cls)
        store._shared = shared
        store._conn = conn
        store._owns_engine = False
        return store

    @property
    def engine(self) -> Engine:
        return self._shared.engine

    def close(self) -> None:
        """Release the engine's connections if this store made the engine."""
        if self._owns_engine and self._conn is None:
            self._shared.engine.dispose()

    def __repr__(self) -> str:
        bound = " (unit)" if self._conn is not None else ""
        return f"SqlStore({self._shared.url.render_as_string(hide_password=True)!r}){bound}"

    # ---- transactions ---------------------------------------------------------------------------
    @contextmanager
    def unit(self) -> Iterator[SqlStore]:
        """A transaction: calls on the yielded store commit together or not at all.

        Nested on a bound store (or on the thread of an open unit) it is a savepoint: a
        nested unit that raises is rolled back and the outer one goes on."""
        conn = self._conn if self._conn is not None else self._shared.open_unit()
        if conn is not None:
            try:
                with conn.begin_nested():
                    yield SqlStore._bound(self._shared, conn)
            except DBAPIError as exc:
                raise store_error(exc, self._shared.url, "in a nested unit") from exc
            return
        with self._shared.transaction("in a unit", write=True) as conn:
            self._shared.local.conn = conn
            try:
                yield SqlStore._bound(self._shared, conn)
            finally:
                self._shared.local.conn = None

    @contextmanager
    def _tx(self, doing: str, *, write: bool = True) -> Iterator[Connection]:
        conn = self._conn if self._conn is not None else self._shared.open_unit()
        if conn is None:
            with self._shared.transaction(doing, write=write) as conn:
                yield conn
            return
        try:
            yield conn
        except DBAPIError as exc:
            raise store_error(exc, self._shared.url, doing) from exc

    # ---- tasks and the ledger -------------------------------------------------------------------
    def get_task(self, task_id: str) -> TaskState | None:
        with self._tx("reading a task", write=False) as conn:
            row = conn.execute(select(tasks).where(tasks.c.id == task_id)).first()
        return _task(row) if row is not None else None

    def put_task(self, task: TaskState) -> None:
        """Insert or replace a task as pre-existing state: no ledger row, no arrival."""
        now = _now()
        values = _task_values(task)
        stmt = self._shared.insert(tasks).values(id=task.id, created_at=now, updated_at=now, **values)
        stmt = stmt.on_conflict_do_update(index_elements=[tasks.c.id], set_={**values, "updated_at": now})
        with self._tx("writing a task") as conn:
            conn.execute(stmt)

    def create_task(self, task: TaskState, *, actor_kind: str = "system", actor_id: str | None = None,
                    session_id: str | None = None) -> MoveResult:
        """Insert a new task and write its genesis ledger row when it has a step (`StoreError` if it exists)."""
        now = _now()
        values = _task_values(task)
        created = replace(task, workflow_id=values["workflow_id"], step_id=values["step_id"])
        stmt = self._shared.insert(tasks).values(id=task.id, created_at=now, updated_at=now, **values)
        with self._tx("creating a task") as conn:
            if not _inserted(conn, stmt.on_conflict_do_nothing(index_elements=[tasks.c.id])):
                raise exists_error(task.id)
            if created.step_id is None:
                return MoveResult("same_step", None, created)
            row = self._write_ledger(conn, LedgerRow(
                id=0, task_id=task.id, from_workflow_id=None, from_step_id=None,
                to_workflow_id=created.workflow_id, to_step_id=created.step_id, route="creation",
                actor_kind=actor_kind or "system", actor_id=actor_id, session_id=session_id), now)
        return MoveResult("moved", row, created)

    def move_task(self, task_id: str, to_workflow_id: str | None, to_step_id: str | None, *, route: str,
                  actor_kind: str = "system", actor_id: str | None = None, session_id: str | None = None,
                  expected_step_id: str | None = None, operation_id: str | None = None,
                  operation_trigger: str | None = None) -> MoveResult:
        """Change a task's step and write the ledger row in one transaction (see the protocol)."""
        check_route(route)
        to_wf, to_step = clean_id(to_workflow_id), clean_id(to_step_id)
        query = select(tasks).where(tasks.c.id == task_id)
        if self._shared.postgres:
            query = query.with_for_update()
        with self._tx("moving a task") as conn:
            found = conn.execute(query).first()
            if found is None:
                return MoveResult("unknown_task")
            task = _task(found)
            if expected_step_id is not None and task.step_id != expected_step_id:
                return MoveResult("cas_lost", None, task)
            now = _now()
            row = None
            if (task.workflow_id, task.step_id) != (to_wf, to_step):
                conn.execute(tasks.update().where(tasks.c.id == task_id)
                             .values(workflow_id=to_wf, step_id=to_step, updated_at=now))
                if is_arrival(task.workflow_id, task.step_id, to_wf, to_step):
                    row = self._write_ledger(conn, LedgerRow(
                        id=0, task_id=task_id, from_workflow_id=task.workflow_id, from_step_id=task.step_id,
                        to_workflow_id=to_wf, to_step_id=to_step, route=route, actor_kind=actor_kind or "system",
                        actor_id=actor_id, session_id=session_id), now)
                task = replace(task, workflow_id=to_wf, step_id=to_step)
            if operation_id is not None:
                self._mark(conn, operation_id, task_id, operation_trigger, now)
        return MoveResult("moved" if row is not None else "same_step", row, task)

    def _insert_id(self, conn: Connection, stmt: Insert, id_column: Column[Any]) -> int:
        returning = self._shared.returning
        if returning if returning is not None else supports_returning(conn):
            return int(conn.execute(stmt.returning(id_column)).scalar_one())
        rowid = conn.execute(stmt).lastrowid
        if rowid is None:  # pragma: no cover - drivers with neither RETURNING nor lastrowid
            raise StoreError("the database driver reported no id for an inserted row")
        return int(rowid)

    def _advisory_lock(self, conn: Connection, space: int, *key: str) -> None:
        """PostgreSQL: serialise this transaction with others on the same key (SQLite writers are serial already)."""
        if self._shared.postgres:
            conn.execute(text("SELECT pg_advisory_xact_lock(CAST(:ns AS integer), hashtext(:key))"),
                         {"ns": ADVISORY_NAMESPACE + space, "key": "\x1f".join(key)})

    def _write_ledger(self, conn: Connection, row: LedgerRow, now: datetime) -> LedgerRow:
        ledger_id = insert_ledger_row(conn, row, now, returning=self._shared.returning)
        return replace(row, id=ledger_id)

    def ledger_row(self, ledger_id: int) -> LedgerRow | None:
        with self._tx("reading the ledger", write=False) as conn:
            row = conn.execute(select(step_transitions).where(step_transitions.c.id == ledger_id)).first()
        return _ledger(row) if row is not None else None

    def ledger(self, task_id: str | None = None) -> list[LedgerRow]:
        """Ledger rows, oldest first (all tasks, or one)."""
        query = select(step_transitions).order_by(step_transitions.c.id)
        if task_id is not None:
            query = query.where(step_transitions.c.task_id == task_id)
        with self._tx("reading the ledger", write=False) as conn:
            return [_ledger(row) for row in conn.execute(query)]

    def unrecorded_arrivals(self, limit: int = 1000) -> list[LedgerRow]:
        """Ledger rows that name a destination and have no entry record, oldest first."""
        t = step_transitions
        query = (select(t).outerjoin(entries, entries.c.entry_id == t.c.id)
                 .where(and_(t.c.to_step_id.is_not(None), entries.c.entry_id.is_(None)))
                 .order_by(t.c.id).limit(max(limit, 0)))
        with self._tx("reading the ledger", write=False) as conn:
            return [_ledger(row) for row in conn.execute(query)]

    # ---- step entry -------------------------------------------------------------------------------
    def entry_record(self, entry_id: int) -> EntryRecord | None:
        with self._tx("reading an entry record", write=False) as conn:
            row = conn.execute(select(entries).where(entries.c.entry_id == entry_id)).first()
        if row is None:
            return None
        return EntryRecord(entry_id=int(row.entry_id), task_id=row.task_id, workflow_id=row.workflow_id,
                           step_id=row.step_id, attempted=attempted_value(row.attempted),
                           failed=failed_value(row.failed))

    def record_entry(self, record: EntryRecord) -> bool:
        """Insert the entry record; False if one exists already (nothing changed)."""
        stmt = self._shared.insert(entries).values(
            entry_id=record.entry_id, task_id=record.task_id, workflow_id=record.workflow_id,
            step_id=record.step_id, attempted=attempted_text(record.attempted), failed=failed_text(record.failed),
            recorded_at=_now()).on_conflict_do_nothing(index_elements=[entries.c.entry_id])
        with self._tx("recording an entry") as conn:
            self._require_ledger_row(conn, record.entry_id)
            return _inserted(conn, stmt)

    def _require_ledger_row(self, conn: Connection, entry_id: int) -> None:
        # Checked before the insert so a bad id is a StoreError that leaves the transaction usable
        # (a foreign-key violation would abort a PostgreSQL transaction); the FK is the backstop.
        if conn.execute(select(step_transitions.c.id).where(step_transitions.c.id == entry_id)).first() is None:
            raise no_ledger_row_error(entry_id)

    def markers(self, entry_id: int) -> dict[int, Marker]:
        m = entry_markers
        query = select(m).where(m.c.entry_id == entry_id).order_by(m.c.position)
        with self._tx("reading markers", write=False) as conn:
            return {int(row.position): Marker(entry_id=int(row.entry_id), position=int(row.position), kind=row.kind,
                                              state=cast(MarkerState, row.state), error=row.error)
                    for row in conn.execute(query)}

    def claim_marker(self, entry_id: int, position: int, kind: str) -> bool:
        """Insert an `in_progress` marker; False if this position has a marker already."""
        now = _now()
        stmt = self._shared.insert(entry_markers).values(
            entry_id=entry_id, position=position, kind=kind, state="in_progress", error=None, claimed_at=now,
            updated_at=now).on_conflict_do_nothing(index_elements=[entry_markers.c.entry_id,
                                                                   entry_markers.c.position])
        with self._tx("claiming a marker") as conn:
            self._require_ledger_row(conn, entry_id)
            return _inserted(conn, stmt)

    def finish_marker(self, entry_id: int, position: int, state: MarkerState, error: str | None = None) -> None:
        """Set a marker's state (and error); a position with no marker is left alone."""
        state = check_state(state)
        m = entry_markers
        stmt = (m.update().where(and_(m.c.entry_id == entry_id, m.c.position == position))
                .values(state=state, error=error, updated_at=_now()))
        with self._tx("finishing a marker") as conn:
            conn.execute(stmt)

    # ---- operations -------------------------------------------------------------------------------
    def operation_applied(self, operation_id: str) -> bool:
        query = select(operations.c.operation_id).where(operations.c.operation_id == operation_id)
        with self._tx("reading an operation marker", write=False) as conn:
            return conn.execute(query).first() is not None

    def mark_operation(self, operation_id: str, *, task_id: str | None = None, trigger: str | None = None) -> bool:
        """Mark applied; False if it already was."""
        with self._tx("marking an operation") as conn:
            return self._mark(conn, operation_id, task_id, trigger, _now())

    def _mark(self, conn: Connection, operation_id: str, task_id: str | None, trigger: str | None,
              now: datetime) -> bool:
        stmt = self._shared.insert(operations).values(
            operation_id=operation_id, task_id=task_id, trigger=trigger, applied_at=now,
        ).on_conflict_do_nothing(index_elements=[operations.c.operation_id])
        return _inserted(conn, stmt)

    # ---- runs, seats, decisions -------------------------------------------------------------------
    def enqueue_run(self, run: QueuedRun) -> bool:
        """Queue a run; False (and nothing written) if a run with this key exists."""
        stmt = self._shared.insert(runs).values(
            idempotency_key=run.key, task_id=run.task_id, step_id=run.step_id, agent=run.agent, reason=run.reason,
            payload=payload_text(run.payload), entry_id=run.entry_id, operation_id=run.operation_id,
            created_at=_now()).on_conflict_do_nothing(index_elements=[runs.c.idempotency_key])
        with self._tx("queueing a run") as conn:
            return _inserted(conn, stmt)

    def runs(self, task_id: str | None = None) -> list[QueuedRun]:
        """Queued runs in the order they were queued (all tasks, or one)."""
        query = select(runs).order_by(runs.c.id)
        if task_id is not None:
            query = query.where(runs.c.task_id == task_id)
        with self._tx("reading runs", write=False) as conn:
            return [QueuedRun(key=row.idempotency_key, task_id=row.task_id, step_id=row.step_id, agent=row.agent,
                              reason=row.reason, payload=payload_value(row.payload),
                              entry_id=None if row.entry_id is None else int(row.entry_id),
                              operation_id=row.operation_id)
                    for row in conn.execute(query)]

    def add_participant(self, participant: Participant) -> None:
        """Insert a seat, or update the one with the same (task, step, role, agent); the store assigns the id."""
        p = participants
        values = {"workflow_id": participant.workflow_id, "decision_required": participant.decision_required,
                  "position": participant.position}
        stmt = self._shared.insert(p).values(task_id=participant.task_id, step_id=participant.step_id,
                                             role=participant.role, agent=participant.agent, **values)
        stmt = stmt.on_conflict_do_update(index_elements=[p.c.task_id, p.c.step_id, p.c.role, p.c.agent],
                                          set_=values)
        with self._tx("writing a participant") as conn:
            conn.execute(stmt)

    def participants(self, task_id: str, workflow_steps: Iterator[str] | tuple[str, ...]) -> list[Participant]:
        """Per-task seats at any of `workflow_steps` plus template rows of those steps, by id."""
        steps = steps_tuple(workflow_steps)
        if not steps:
            return []
        p = participants
        query = (select(p).where(and_(p.c.task_id.in_(sorted({task_id, ""})), p.c.step_id.in_(steps)))
                 .order_by(p.c.id))
        with self._tx("reading participants", write=False) as conn:
            return [_participant(row) for row in conn.execute(query)]

    def ensure_seat(self, task_id: str, step_id: str, role: str, agent: str,
                    workflow_steps: tuple[str, ...]) -> bool:
        """Write a per-task seat unless the task has a seat in `role` at any workflow step (or at `step_id`)."""
        check_seat_task(task_id)
        p = participants
        steps = tuple(dict.fromkeys((*steps_tuple(workflow_steps), step_id)))
        exists = select(p.c.id).where(and_(p.c.task_id == task_id, p.c.role == role, p.c.step_id.in_(steps))).limit(1)
        stmt = self._shared.insert(p).values(
            task_id=task_id, workflow_id="", step_id=step_id, role=role, agent=agent, decision_required=True,
            position=0).on_conflict_do_nothing(index_elements=[p.c.task_id, p.c.step_id, p.c.role, p.c.agent])
        with self._tx("ensuring a seat") as conn:
            self._advisory_lock(conn, SEAT_LOCK_KEY, task_id, role)
            if conn.execute(exists).first() is not None:
                return False
            return _inserted(conn, stmt)

    def record_decision(self, decision: Decision) -> Decision:
        """Store a decision, superseding the same decider's active one in that role; return it with its id."""
        check_decider(decision)
        d = decisions
        same = and_(d.c.task_id == decision.task_id, d.c.step_id == decision.step_id,
                    d.c.decider_type == decision.decider_type, d.c.decider_id == decision.decider_id,
                    d.c.role == decision.role, d.c.superseded_at.is_(None))
        with self._tx("recording a decision") as conn:
            self._advisory_lock(conn, DECISION_LOCK_KEY, decision.task_id, decision.step_id, decision.decider_type,
                                decision.decider_id, decision.role)
            for attempt in range(1, _DECISION_ATTEMPTS + 1):
                now = _now()
                insert = d.insert().values(
                    task_id=decision.task_id, step_id=decision.step_id, decider_type=decision.decider_type,
                    decider_id=decision.decider_id, role=decision.role, verdict=decision.verdict,
                    session_id=decision.session_id, decided_at=now)
                try:
                    with conn.begin_nested():
                        conn.execute(d.update().where(same).values(superseded_at=now))
                        new_id = self._insert_id(conn, insert, d.c.id)
                    return replace(decision, id=new_id)
                except IntegrityError:
                    # A concurrent decision of the same decider won the active-row index: supersede it.
                    if attempt == _DECISION_ATTEMPTS:
                        raise
        raise AssertionError("unreachable")  # pragma: no cover

    def decisions(self, task_id: str, step_id: str) -> list[Decision]:
        """Active decisions for a task at a step, oldest first."""
        d = decisions
        query = (select(d).where(and_(d.c.task_id == task_id, d.c.step_id == step_id, d.c.superseded_at.is_(None)))
                 .order_by(d.c.id))
        with self._tx("reading decisions", write=False) as conn:
            return [Decision(task_id=row.task_id, step_id=row.step_id, decider_type=row.decider_type,
                             decider_id=row.decider_id, role=row.role, verdict=row.verdict, id=int(row.id),
                             session_id=row.session_id) for row in conn.execute(query)]

    def clear_decisions(self, task_id: str, step_id: str) -> int:
        """Supersede every active decision of the task at the step; return how many there were."""
        d = decisions
        stmt = (d.update().where(and_(d.c.task_id == task_id, d.c.step_id == step_id, d.c.superseded_at.is_(None)))
                .values(superseded_at=_now()))
        with self._tx("clearing decisions") as conn:
            return _count(conn, stmt)


def _inserted(conn: Connection, stmt: Executable) -> bool:
    """Run an insert-if-absent; True if it wrote its row."""
    return _count(conn, stmt) == 1


def _count(conn: Connection, stmt: Executable) -> int:
    # SQLAlchemy keeps the row count of an INSERT only when asked (psycopg closes the cursor).
    return int(conn.execute(stmt, execution_options={"preserve_rowcount": True}).rowcount)


def _task_values(task: TaskState) -> dict[str, Any]:
    return {"workflow_id": clean_id(task.workflow_id), "step_id": clean_id(task.step_id),
            "description": task.description, "is_from_office": task.is_from_office,
            "is_ephemeral": task.is_ephemeral, "archived": task.archived}


def _task(row: Row[Any]) -> TaskState:
    return TaskState(id=row.id, workflow_id=row.workflow_id, step_id=row.step_id, description=row.description,
                     is_from_office=bool(row.is_from_office), is_ephemeral=bool(row.is_ephemeral),
                     archived=bool(row.archived))


def _ledger(row: Row[Any]) -> LedgerRow:
    return LedgerRow(id=int(row.id), task_id=row.task_id, from_workflow_id=row.from_workflow_id,
                     from_step_id=row.from_step_id, to_workflow_id=row.to_workflow_id, to_step_id=row.to_step_id,
                     route=row.route, actor_kind=row.actor_kind, actor_id=row.actor_id, session_id=row.session_id)


def _participant(row: Row[Any]) -> Participant:
    return Participant(task_id=row.task_id, step_id=row.step_id, role=row.role, agent=row.agent,
                       decision_required=bool(row.decision_required), position=int(row.position), id=int(row.id),
                       workflow_id=row.workflow_id)
