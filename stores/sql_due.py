"""Due-row calls in, rows of `interlock_timers` out: the part of `SqlStore` that keeps timers and retries (`SqlDue`),
with `rerun_marker` and the store's clock for due rows (`clock_sql`).

`SqlStore` composes one `SqlDue` and delegates each `DueWork` call to it; the calls run in the store's
transactions (`SqlStore._tx`: the open unit, or one of their own) on the DBAPI connection, like every other
statement of the store.

- **Insert-or-ignore.** `arm_timers` and `schedule_retry` are `INSERT … ON CONFLICT (dedupe) DO NOTHING`: a
  redelivered arrival arms nothing new, and two failures of one position schedule one retry.
- **Compare-and-swap.** `advance_due` and `drop_due` are one `UPDATE`/`DELETE … WHERE id = :id AND slot = :slot`
  each: of two processes that fired the same slot, one moves the row on and the other is told it lost.  Ids are
  never reused (SQLite AUTOINCREMENT, PostgreSQL's sequence), so a stale (id, slot) never hits a newer row.
- **Index-driven.** `due` reads `ix_interlock_timers_due` (due_at, id) from its start and stops at the clock or
  the limit, whatever the number of pending rows: the clock is a scalar subquery, evaluated once (PostgreSQL's
  `clock_timestamp()` is volatile: compared row by row, it would keep the index from bounding the scan).
- **The clock.** `{NOW}` in these statements is the database's clock (`{EPOCH}`), or the store's test clock
  passed as the bound parameter `:epoch` when the store was given one (`SqlStore(…, clock=…)`).  A row's
  `armed_at` and its first `due_at` come from one reading of it.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, cast

from interlock.runtime.store import Marker, MarkerState
from interlock.runtime.store_due import DueRow, TimerArm, due_row

from ._common import no_ledger_row_error
from ._due_rules import check_retry, check_timer, timer_key
from .statements import Q_MARKER

if TYPE_CHECKING:
    from .sql_host import SqlHost

__all__ = ["SqlDue", "clock_sql", "clock_params"]

_COLS = ('id, task_id, entry_id, workflow_id, step_id, kind, label, "position", period, armed_at, slot, due_at, '
         'plan, operation_id, "trigger", payload, session_id')
_NOW_ROW = "(SELECT {NOW} AS now) c"  # one reading of the clock for the whole row

I_DUE = ('INSERT INTO interlock_timers (task_id, entry_id, workflow_id, step_id, kind, label, "position", period, '
         'armed_at, slot, due_at, plan, operation_id, "trigger", payload, session_id, dedupe) '
         "SELECT :task_id, CAST(:entry_id AS BIGINT), :workflow_id, :step_id, :kind, :label, "
         "CAST(:position AS INTEGER), CAST(:period AS INTEGER), c.now, CAST(:slot AS INTEGER), "
         "COALESCE(CAST(:due_at AS DOUBLE PRECISION), c.now + :period), :plan, :operation_id, :trigger, "
         f":payload, :session_id, :dedupe FROM {_NOW_ROW} WHERE TRUE ON CONFLICT (dedupe) DO NOTHING")
Q_DUE = f"SELECT {_COLS} FROM interlock_timers WHERE due_at <= {{NOW}} ORDER BY due_at, id LIMIT :limit"
Q_NEXT_DUE = "SELECT MIN(due_at) FROM interlock_timers"
Q_DUE_OF = f"SELECT {_COLS} FROM interlock_timers WHERE task_id = :task_id ORDER BY due_at, id"
_OTHER_ENTRIES = "WHERE task_id = :task_id AND (CAST(:keep AS BIGINT) IS NULL OR entry_id <> :keep)"
D_DISARM = f"DELETE FROM interlock_timers {_OTHER_ENTRIES}"
Q_DISARM = f"SELECT {_COLS} FROM interlock_timers {_OTHER_ENTRIES}"
U_ADVANCE = "UPDATE interlock_timers SET slot = :next_slot, due_at = :due_at WHERE id = :id AND slot = :slot"
D_DROP = "DELETE FROM interlock_timers WHERE id = :id AND slot = :slot"
# Start a position again: insert its marker at attempt 2, or count the next attempt of one not done.
RERUN_MARKER = ('INSERT INTO interlock_entry_markers (entry_id, "position", kind, state, error, attempt, claimed_at, '
                "updated_at) SELECT :entry_id, :position, :kind, 'in_progress', NULL, 2, :now, :now "
                "WHERE EXISTS (SELECT 1 FROM interlock_step_transitions WHERE id = :entry_id) "
                'ON CONFLICT (entry_id, "position") DO UPDATE SET kind = excluded.kind, state = \'in_progress\', '
                "error = NULL, attempt = interlock_entry_markers.attempt + 1, updated_at = excluded.updated_at "
                "WHERE interlock_entry_markers.state <> 'done'")


def clock_sql(text: str, clocked: bool) -> str:
    """`text` with `{NOW}` put in: the test clock's bound `:epoch` (`clocked`), else one reading of the database's
    clock (`{EPOCH}`, a scalar subquery)."""
    return text.replace("{NOW}", "CAST(:epoch AS DOUBLE PRECISION)" if clocked else "(SELECT {EPOCH})")


def store_sql(store: SqlHost, text: str) -> str:
    """`text` with `{NOW}` put in for `store`'s clock, compiled once for its dialect (every SQL part's `_sql`)."""
    return store._shared.sql(clock_sql(text, store._clock is not None))


def clock_params(store: SqlHost, params: dict[str, Any]) -> dict[str, Any]:
    """`params` with the test clock's reading as `epoch` (None without a test clock: the statement reads the
    database's)."""
    clock = store._clock
    params["epoch"] = float(clock()) if clock is not None else None
    return params


class SqlDue:
    """`DueWork` on the SQL store, and `rerun_marker` (see the module's docstring)."""

    __slots__ = ("_store",)

    def __init__(self, store: SqlHost) -> None:
        self._store = store

    def _sql(self, text: str) -> str:
        return store_sql(self._store, text)

    def arm_timers(self, task_id: str, entry_id: int, workflow_id: str, step_id: str, plan: str | None,
                   timers: Sequence[TimerArm]) -> None:
        """One row per timer of the entry (slot 1, due now + its seconds); a timer armed already is left alone."""
        checked = [check_timer(t) for t in timers]
        if not checked:
            return
        base = {"task_id": task_id, "entry_id": int(entry_id), "workflow_id": workflow_id, "step_id": step_id,
                "plan": plan, "slot": 1, "due_at": None, "operation_id": None, "trigger": None, "payload": None,
                "session_id": None}
        clock_params(self._store, base)
        params = [{**base, "kind": t.kind, "label": t.label, "position": t.position, "period": t.seconds,
                   "dedupe": timer_key(entry_id, t.position)} for t in checked]
        with self._store._tx("arming timers") as tx:
            tx.cursor.executemany(self._sql(I_DUE), params)

    def schedule_retry(self, row: DueRow) -> bool:
        """Write a retry row (`armed_at`: the store's clock); False if one of its position or operation exists."""
        dedupe = check_retry(row)
        params = clock_params(self._store, {
            "task_id": row.task_id, "entry_id": int(row.entry_id), "workflow_id": row.workflow_id,
            "step_id": row.step_id, "kind": "retry", "label": row.label, "position": int(row.position),
            "period": int(row.period), "slot": int(row.slot), "due_at": float(row.due_at), "plan": row.plan,
            "operation_id": row.operation_id, "trigger": row.trigger, "payload": row.payload,
            "session_id": row.session_id, "dedupe": dedupe})
        with self._store._tx("scheduling a retry") as tx:
            tx.cursor.execute(self._sql(I_DUE), params)
            return bool(tx.cursor.rowcount == 1)

    def disarm(self, task_id: str, keep_entry: int | None) -> list[DueRow]:
        """Delete the task's rows of every entry but `keep_entry`; the rows deleted, earliest first."""
        sh = self._store._shared
        params = {"task_id": task_id, "keep": keep_entry}
        with self._store._tx("disarming timers") as tx:
            if sh.returning:
                tx.cursor.execute(sh.sql(f"{D_DISARM} RETURNING {_COLS}"), params)
                rows = tx.cursor.fetchall()
            else:  # pragma: no cover - SQLite before 3.35: read, then delete, in one transaction
                tx.cursor.execute(sh.sql(Q_DISARM), params)
                rows = tx.cursor.fetchall()
                tx.cursor.execute(sh.sql(D_DISARM), params)
        return sorted((_row(r) for r in rows), key=lambda r: (r.due_at, r.id))

    def due(self, limit: int = 1000) -> list[DueRow]:
        """The rows due now, earliest first, then by id (through `ix_interlock_timers_due`)."""
        params = clock_params(self._store, {"limit": max(limit, 0)})
        return [_row(r) for r in self._store._rows("reading due rows", self._sql(Q_DUE), params)]

    def next_due(self) -> float | None:
        rows = self._store._rows("reading the next due time", self._store._shared.sql(Q_NEXT_DUE), {})
        return None if not rows or rows[0][0] is None else float(rows[0][0])

    def due_rows(self, task_id: str) -> list[DueRow]:
        rows = self._store._rows("reading due rows", self._store._shared.sql(Q_DUE_OF), {"task_id": task_id})
        return [_row(r) for r in rows]

    def advance_due(self, row_id: int, slot: int, next_slot: int, due_at: float) -> bool:
        """Compare-and-swap on the row's slot: move it on to `next_slot`, due at `due_at`."""
        params = {"id": int(row_id), "slot": int(slot), "next_slot": int(next_slot), "due_at": float(due_at)}
        with self._store._tx("moving a due row on") as tx:
            tx.cursor.execute(self._store._shared.sql(U_ADVANCE), params)
            return bool(tx.cursor.rowcount == 1)

    def drop_due(self, row_id: int, slot: int) -> bool:
        """Compare-and-swap on the row's slot: delete it."""
        with self._store._tx("dropping a due row") as tx:
            tx.cursor.execute(self._store._shared.sql(D_DROP), {"id": int(row_id), "slot": int(slot)})
            return bool(tx.cursor.rowcount == 1)

    def rerun_marker(self, entry_id: int, position: int, kind: str) -> Marker | None:
        """Start a position of a recorded entry again (see `Store.rerun_marker`): one upsert that leaves a `done`
        marker alone, then the marker as it stands."""
        store = self._store
        sh = store._shared
        params: dict[str, Any] = {"entry_id": entry_id, "position": position, "kind": kind, "now": None}
        with store._tx("starting a position again") as tx:
            cur = tx.cursor
            cur.execute(sh.sql(RERUN_MARKER), params)
            cur.execute(sh.sql(Q_MARKER), params)
            found = cur.fetchone()
            if found is None:
                raise no_ledger_row_error(entry_id)
        kind_, state, error, attempt = found
        if state == "done":
            return None
        return Marker(entry_id, position, kind_, cast(MarkerState, state), error, int(attempt))


def _row(r: tuple[Any, ...]) -> DueRow:
    """A row of `_COLS` as a `DueRow`: the columns' types (BIGINT/INTEGER, DOUBLE PRECISION; SQLite's INTEGER and REAL
    affinities) give ints and floats on both drivers, nothing to convert."""
    return due_row(r)
