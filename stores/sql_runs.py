"""Consumer calls in, rows of `interlock_runs` out: the run queue of the SQL store (`SqlRuns`).

`SqlStore` composes one `SqlRuns` and delegates the queue's calls to it (docs/runtime.md, "Consuming queued runs";
ADR 0047).  A run is pending while `acked_at` is NULL and nobody holds an unexpired lease (`lease_until` on the
store's clock, epoch seconds).  Every call is one transaction:

- `claim_runs` selects the oldest pending ids through the partial index of runs not acknowledged
  (`ix_interlock_runs_unacked`) and stamps them with the consumer and its lease.  On PostgreSQL the select is
  `FOR UPDATE SKIP LOCKED`, so concurrent claimants take disjoint batches without waiting on each other; on SQLite
  the write transaction (`BEGIN IMMEDIATE`) holds the database's one write lock from the select to the update.  The
  update repeats the pending condition: a row is stamped only if it is still pending.
- `ack_runs` and `release_runs` are compare-and-swaps on (id, consumer, not acknowledged).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

from interlock.runtime.store import PendingRun, QueuedRun

from ._common import payload_value
from ._run_rules import MAX_BATCH, check_claim, run_ids
from .sql_due import clock_params, store_sql

if TYPE_CHECKING:
    from .connections import Tx
    from .sql_host import SqlHost

__all__ = ["SqlRuns", "SqlRunQueue", "pending_run"]

_COLS = ("id, idempotency_key, task_id, step_id, agent, reason, payload, entry_id, operation_id, consumer, "
         "lease_until, claims")
_PENDING = "acked_at IS NULL AND (lease_until IS NULL OR lease_until < {NOW})"
Q_CLAIMABLE = f"SELECT id FROM interlock_runs WHERE {_PENDING} AND id > :after ORDER BY id LIMIT :limit"
Q_QUEUED = f"SELECT {_COLS} FROM interlock_runs WHERE acked_at IS NULL AND id > :after ORDER BY id LIMIT :limit"



def _marks(ids: tuple[int, ...], params: dict[str, Any]) -> str:
    """`(:i0, :i1, …)` for an IN list of ids, their values added to `params`."""
    params.update((f"i{n}", v) for n, v in enumerate(ids))
    return "(" + ", ".join(f":i{n}" for n in range(len(ids))) + ")"


def pending_run(r: tuple[Any, ...]) -> PendingRun:
    run = QueuedRun(key=r[1], task_id=r[2], step_id=r[3], agent=r[4], reason=r[5], payload=payload_value(r[6]),
                    entry_id=None if r[7] is None else int(r[7]), operation_id=r[8])
    return PendingRun(int(r[0]), run, r[9], None if r[10] is None else float(r[10]), int(r[11]))


class SqlRuns:
    """The run queue on the SQL store (see the module's docstring)."""

    __slots__ = ("_store",)

    def __init__(self, store: SqlHost) -> None:
        self._store = store

    def _sql(self, text: str) -> str:
        return store_sql(self._store, text)

    def claim_runs(self, consumer: str, *, limit: int = 100, lease: float = 300.0,
                   after: int = 0) -> list[PendingRun]:
        """Claim up to `limit` pending runs above `after` for `consumer` (see the module's docstring)."""
        check_claim(consumer, limit, lease)
        store = self._store
        pg = store._shared.postgres
        params = clock_params(store, {"after": int(after), "limit": int(limit), "consumer": consumer,
                                      "lease": float(lease)})
        with store._tx("claiming queued runs") as tx:
            tx.cursor.execute(self._sql(Q_CLAIMABLE + (" FOR UPDATE SKIP LOCKED" if pg else "")), params)
            ids = tuple(int(r[0]) for r in tx.cursor.fetchall())
            if not ids:
                return []
            where = _marks(ids, params)
            tx.cursor.execute(self._sql(
                "UPDATE interlock_runs SET consumer = :consumer, lease_until = {NOW} + :lease, claims = claims + 1 "
                f"WHERE id IN {where} AND {_PENDING}"), params)
            return self._read(tx, f"id IN {where} AND consumer = :consumer AND acked_at IS NULL", params)

    def _read(self, tx: Tx, where: str, params: dict[str, Any]) -> list[PendingRun]:
        tx.cursor.execute(self._sql(f"SELECT {_COLS} FROM interlock_runs WHERE {where} ORDER BY id"), params)
        return [pending_run(r) for r in tx.cursor.fetchall()]

    def _settle(self, doing: str, consumer: str, ids_in: Iterable[int], assignment: str) -> list[int]:
        ids = run_ids(ids_in)
        if not ids:
            return []
        store = self._store
        params = clock_params(store, {"consumer": consumer})
        where = f"id IN {_marks(ids, params)} AND consumer = :consumer AND acked_at IS NULL"
        lock = " FOR UPDATE" if store._shared.postgres else ""
        with store._tx(doing) as tx:
            tx.cursor.execute(self._sql(f"SELECT id FROM interlock_runs WHERE {where} ORDER BY id{lock}"), params)
            held = [int(r[0]) for r in tx.cursor.fetchall()]
            if held:
                tx.cursor.execute(self._sql(f"UPDATE interlock_runs SET {assignment} WHERE {where}"), params)
        return held

    def ack_runs(self, consumer: str, run_ids: Iterable[int]) -> list[int]:
        """Acknowledge the runs `consumer` holds among `run_ids`; the ids acknowledged."""
        return self._settle("acknowledging queued runs", consumer, run_ids, "acked_at = {NOW}, lease_until = NULL")

    def release_runs(self, consumer: str, run_ids: Iterable[int]) -> list[int]:
        """Give back the runs `consumer` holds among `run_ids`; the ids released."""
        return self._settle("releasing queued runs", consumer, run_ids, "consumer = NULL, lease_until = NULL")

    def queued_runs(self, *, after: int = 0, limit: int = 1000) -> list[PendingRun]:
        """The runs not acknowledged above `after`, oldest first."""
        store = self._store
        rows = store._rows("reading queued runs", store._shared.sql(Q_QUEUED),
                           {"after": int(after), "limit": max(0, min(int(limit), MAX_BATCH))})
        return [pending_run(r) for r in rows]


class SqlRunQueue:
    """The queue's calls of `SqlStore` (a base class of it): each delegates to a `SqlRuns` on the store."""

    def claim_runs(self: SqlHost, consumer: str, *, limit: int = 100, lease: float = 300.0,
                   after: int = 0) -> list[PendingRun]:
        return SqlRuns(self).claim_runs(consumer, limit=limit, lease=lease, after=after)

    def ack_runs(self: SqlHost, consumer: str, run_ids: Iterable[int]) -> list[int]:
        return SqlRuns(self).ack_runs(consumer, run_ids)

    def release_runs(self: SqlHost, consumer: str, run_ids: Iterable[int]) -> list[int]:
        return SqlRuns(self).release_runs(consumer, run_ids)

    def queued_runs(self: SqlHost, *, after: int = 0, limit: int = 1000) -> list[PendingRun]:
        return SqlRuns(self).queued_runs(after=after, limit=limit)
