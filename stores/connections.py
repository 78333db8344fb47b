"""A SQLAlchemy engine in, pooled DBAPI connections and the store's transactions on them out: BEGIN/COMMIT/SAVEPOINT
issued by the store, driver errors as `StoreError`s, dead connections invalidated.

`Shared` is what every store over one engine shares (one per engine); `Write` joins the open unit or
runs a transaction of its own; `Savepoint` is a nested unit.  Transactions begin `BEGIN IMMEDIATE` on
SQLite (writers queue on the busy timeout instead of failing on a lock upgrade) and `BEGIN` on
PostgreSQL; an unbound read is one statement in autocommit mode.
"""

from __future__ import annotations

import os
import sqlite3
import threading
import weakref
from collections.abc import Callable
from contextlib import AbstractContextManager, nullcontext
from typing import Any, cast

from sqlalchemy import Engine, event
from sqlalchemy.engine import URL
from sqlalchemy.exc import DBAPIError

from interlock.runtime.store import StoreError

from .engine import memory_lock, store_error
from .statements import Statements

__all__ = ["IDLE_CONNECTIONS", "Tx", "Shared", "Write", "Savepoint"]

IDLE_CONNECTIONS = 4
"""Connections a store keeps checked out between its transactions (per engine), so a transaction costs no pool
checkout, no reset-on-return and (PostgreSQL) no pre-ping round trip.  More concurrent transactions than this
check out from SQLAlchemy's pool as usual and return there."""


class Tx:
    """One pooled DBAPI connection the store works on (`pooled`: the pool's proxy of it): its cursor, the savepoint
    depth of its open transaction, whether it was found dead, and (SQLite) the task row last read in that
    transaction."""

    __slots__ = ("bound", "cursor", "dbapi", "dead", "depth", "pooled", "stamped", "task_row")

    def __init__(self, pooled: Any) -> None:
        self.pooled = pooled
        self.dbapi = pooled.driver_connection
        self.cursor = pooled.cursor()
        self.depth = 0
        self.dead = False
        # SQLite: the task row `get_task` read in this transaction, until anything writes a task.  BEGIN IMMEDIATE
        # holds the database's write lock, so nothing else can change it: `move_task` need not read it again.
        self.task_row: tuple[Any, ...] | None = None
        self.bound: object = None  # the store bound to this connection's units (made once; `SqlStore._bound`)
        # the ledger row written stamped as recorded in this transaction whose entry record has not come yet
        # (`statements.I_LEDGER_STAMPED`): the stamp comes off before anything reads records or the transaction commits
        self.stamped: int | None = None


_ALL_SHARED: weakref.WeakSet[Shared] = weakref.WeakSet()


def _forget_idle_connections() -> None:
    """In a forked child: drop (never use, never close) the parent's idle connections."""
    for shared in list(_ALL_SHARED):
        shared.idle = []


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_forget_idle_connections)


class Shared:
    """What every store over one engine shares: the engine, its dialect's statements, idle connections and each
    thread's open unit.

    One per engine (`for_engine`), so two `SqlStore`s over the same engine see each
    other's open unit on a thread instead of opening a second transaction beside it."""

    _by_engine: weakref.WeakKeyDictionary[Engine, Shared] = weakref.WeakKeyDictionary()
    _by_engine_guard = threading.Lock()

    @classmethod
    def for_engine(cls, engine: Engine) -> Shared:
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
        self.dbapi = engine.dialect.loaded_dbapi
        self.error_class: type[Exception] = self.dbapi.Error
        self.returning = self.postgres or sqlite3.sqlite_version_info >= (3, 35)
        self.begin = "BEGIN" if self.postgres else "BEGIN IMMEDIATE"
        self.idle: list[Tx] = []
        _ALL_SHARED.add(self)
        event.listen(engine, "engine_disposed", self._on_dispose)
        self.stmt = Statements(self.postgres, self.returning)
        self.sql = self.stmt.sql

    def now(self) -> float | None:
        """The `now` parameter statements are given: none — the statements read the database's clock themselves
        (`statements.dialect_sql`), so every host of a deployment stamps rows with one clock."""
        return None

    def stamp(self, tx: Tx) -> float | None:
        """The `now` parameter of a statement in `tx` (see `now`)."""
        return None

    def open_unit(self) -> Tx | None:
        tx: Tx | None = getattr(self.local, "tx", None)
        return tx

    # ---- connections ----------------------------------------------------------------------------------------
    def acquire(self, doing: str) -> tuple[Tx, bool]:
        """An idle connection of the store (True: it may have died while idle), else one from the pool."""
        try:
            return self.idle.pop(), True
        except IndexError:
            pass
        try:
            pooled = self.engine.raw_connection()
        except DBAPIError as exc:
            raise store_error(exc, self.url, doing) from exc
        try:
            tx = Tx(pooled)
            if self.postgres:
                tx.dbapi.autocommit = True  # the store issues BEGIN itself; unbound reads need none
        except BaseException as exc:
            pooled.invalidate()
            pooled.close()
            if isinstance(exc, self.error_class):
                raise self.error(exc, None, doing) from exc
            raise
        return tx, False

    def release(self, tx: Tx) -> None:
        """Keep a healthy connection for the next transaction, or hand it back to the pool."""
        if not tx.dead and len(self.idle) < IDLE_CONNECTIONS:
            self.idle.append(tx)
        else:
            self.close_connection(tx)

    def close_connection(self, tx: Tx) -> None:
        try:
            tx.cursor.close()
            if self.postgres and not tx.dead:
                tx.dbapi.autocommit = False  # as SQLAlchemy's pool expects it
        except self.error_class as exc:
            tx.pooled.invalidate(exc)
        finally:
            tx.pooled.close()

    def drain(self) -> None:
        """Hand every idle connection back to the pool."""
        idle, self.idle = self.idle, []
        for tx in idle:
            self.close_connection(tx)

    def _on_dispose(self, _engine: Engine) -> None:
        # Whoever disposed of the engine wants its connections closed: the idle ones too, not only the pooled ones.
        idle, self.idle = self.idle, []
        for tx in idle:
            tx.pooled.invalidate()
            tx.pooled.close()

    # ---- transactions ---------------------------------------------------------------------------------------
    def start(self, doing: str) -> Tx:
        """A connection with a transaction begun (SQLite: BEGIN IMMEDIATE).  A connection that died while idle
        is dropped and the next one tried: nothing ran on it yet."""
        while True:
            tx, reused = self.acquire(doing)
            try:
                tx.cursor.execute(self.begin)
                tx.task_row = None
                tx.stamped = None
                return tx
            except self.error_class as exc:
                error = self.error(exc, tx, doing)
                self.release(tx)
                if reused and tx.dead:
                    continue
                raise error from exc

    def finish(self, tx: Tx, doing: str, exc: BaseException | None) -> None:
        """End `tx`'s transaction: COMMIT if `exc` is None, else ROLLBACK; a driver error raises as `StoreError`."""
        try:
            if exc is None:
                try:
                    if tx.stamped is not None:  # no record came: the row commits unrecorded (`recover` finds it)
                        self.settle(tx)
                    tx.cursor.execute("COMMIT")
                except self.error_class as failed:
                    error = self.error(failed, tx, doing)
                    self.rollback(tx)
                    raise error from failed
            else:
                wrapped = self.error(exc, tx, doing) if isinstance(exc, self.error_class) else None
                self.rollback(tx)
                if wrapped is not None:
                    raise wrapped from exc
        finally:
            self.release(tx)

    def settle(self, tx: Tx) -> None:
        """Take the recorded stamp off the row `tx` wrote stamped (its record did not come): from here on it reads
        and commits as the arrival without a record it is."""
        stamped, tx.stamped = tx.stamped, None
        tx.cursor.execute(self.stmt.u_unstamp, {"id": stamped})

    def rollback(self, tx: Tx) -> None:
        tx.stamped = None
        if tx.dead:
            return
        try:
            if self.in_transaction(tx):
                tx.cursor.execute("ROLLBACK")
        except self.error_class as exc:
            tx.dead = True
            tx.pooled.invalidate(exc)

    def in_transaction(self, tx: Tx) -> bool:
        if self.postgres:
            return bool(tx.dbapi.info.transaction_status != 0)  # psycopg.pq.TransactionStatus.IDLE
        return bool(tx.dbapi.in_transaction)

    def read(self, doing: str, fn: Callable[[Tx], Any]) -> Any:
        """Run `fn` (one read statement) in autocommit mode: no BEGIN, no COMMIT.  A connection that died while
        idle is dropped and the read retried on the next one."""
        guard: AbstractContextManager[Any] = self.lock if self.lock is not None else nullcontext()
        with guard:
            while True:
                tx, reused = self.acquire(doing)
                try:
                    return fn(tx)
                except self.error_class as exc:
                    error = self.error(exc, tx, doing)
                    if not (reused and tx.dead):
                        raise error from exc
                finally:
                    self.release(tx)

    def error(self, exc: Exception, tx: Tx | None, doing: str) -> StoreError:
        """A driver error as a `StoreError` (worded by `store_error`); a dead connection is invalidated."""
        dead = False
        if tx is not None:
            try:
                dead = bool(self.engine.dialect.is_disconnect(cast(Any, exc), tx.dbapi, tx.cursor))
            except Exception:  # pragma: no cover - a dialect that cannot tell
                dead = False
            if dead and not tx.dead:
                tx.dead = True
                tx.pooled.invalidate(exc)
        wrapped = DBAPIError.instance(None, None, exc, self.error_class, connection_invalidated=dead,
                                      dialect=self.engine.dialect)
        return store_error(cast(DBAPIError, wrapped), self.url, doing)


class Write:
    """`with store._tx(doing) as tx:` — a write that joins the open unit (its driver errors become `StoreError`s)
    or runs in a transaction of its own.  A class, not a generator: it runs on every write."""

    __slots__ = ("doing", "guard", "own", "shared", "tx")

    def __init__(self, shared: Shared, tx: Tx | None, doing: str) -> None:
        self.shared = shared
        self.tx = tx
        self.doing = doing
        self.own = tx is None
        self.guard = shared.lock if self.own else None

    def __enter__(self) -> Tx:
        if self.tx is not None:
            return self.tx
        if self.guard is not None:
            self.guard.acquire()
        try:
            self.tx = self.shared.start(self.doing)
        except BaseException:
            if self.guard is not None:
                self.guard.release()
            raise
        return self.tx

    def __exit__(self, kind: type[BaseException] | None, exc: BaseException | None, tb: Any) -> None:
        sh = self.shared
        tx = self.tx
        assert tx is not None
        if not self.own:
            if exc is not None and isinstance(exc, sh.error_class):
                raise sh.error(exc, tx, self.doing) from exc
            return
        try:
            sh.finish(tx, self.doing, exc)
        finally:
            if self.guard is not None:
                self.guard.release()


class Savepoint:
    """`with Savepoint(shared, tx, doing):` — a savepoint in `tx`, rolled back (the transaction goes on) if the
    block raises; driver errors become `StoreError`s."""

    __slots__ = ("doing", "name", "shared", "stamped", "tx")

    def __init__(self, shared: Shared, tx: Tx, doing: str) -> None:
        self.shared = shared
        self.tx = tx
        self.doing = doing
        self.name = ""
        self.stamped: int | None = None

    def __enter__(self) -> Tx:
        tx = self.tx
        tx.depth += 1
        self.name = f"interlock_sp_{tx.depth}"
        self.stamped = tx.stamped  # what a rollback to the savepoint brings back
        try:
            tx.cursor.execute(f"SAVEPOINT {self.name}")
        except BaseException as exc:
            tx.depth -= 1
            if isinstance(exc, self.shared.error_class):
                raise self.shared.error(exc, tx, self.doing) from exc
            raise
        return tx

    def __exit__(self, kind: type[BaseException] | None, exc: BaseException | None, tb: Any) -> None:
        sh, tx, name = self.shared, self.tx, self.name
        tx.depth -= 1
        try:
            if exc is None:
                tx.cursor.execute(f"RELEASE SAVEPOINT {name}")
                return
            tx.task_row = None  # it may have been read after a write the rollback undoes
            tx.stamped = self.stamped
            if not tx.dead:
                tx.cursor.execute(f"ROLLBACK TO SAVEPOINT {name}")
                tx.cursor.execute(f"RELEASE SAVEPOINT {name}")
        except sh.error_class as failed:
            raise sh.error(failed, tx, self.doing) from (exc or failed)
        if isinstance(exc, sh.error_class):
            raise sh.error(exc, tx, self.doing) from exc

