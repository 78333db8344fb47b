"""Entry records and markers on the SQL store: the part of `SqlStore` that reads and writes
`interlock_entry_records` and `interlock_entry_markers` (`SqlEntries`).

Entry records and markers are inserted only if their ledger row exists (`INSERT … SELECT … WHERE EXISTS`): one
statement, and a bad entry id is a `StoreError` that leaves a PostgreSQL transaction usable; the foreign key stays
the backstop.  `SqlStore` (`stores/sql.py`) takes these methods in as a base class; they name the store through
the `SqlHost` protocol (`stores/sql_host.py`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, cast

from interlock.runtime.store import EntryRecord, Marker, MarkerState, StoreError

from ._common import (
    attempted_value,
    cached_attempted_text,
    check_state,
    failed_text,
    failed_value,
    foreign_entry_error,
    no_destination_error,
    no_ledger_row_error,
)
from .statements import Q_MARKER, U_MARKER_RETRY

if TYPE_CHECKING:
    from .connections import Shared, Tx
    from .sql_host import SqlHost

__all__ = ["SqlEntries", "insert_for_entry"]


def insert_for_entry(sh: Shared, tx: Tx, sql: str, params: dict[str, Any], entry_id: int) -> bool:
    """An insert-if-absent that also requires the ledger row `entry_id`: True if written, False if the row
    was there already, `StoreError` if the ledger row is missing (the transaction stays usable)."""
    cur = tx.cursor
    cur.execute(sql, params)
    if cur.rowcount == 1:
        return True
    cur.execute(sh.stmt.q_ledger_id, {"id": entry_id})
    if cur.fetchone() is None:
        raise no_ledger_row_error(entry_id)
    return False


class SqlEntries:
    """Entry records and markers of `SqlStore` (see the module's docstring)."""

    __slots__ = ()

    def entry_record(self: SqlHost, entry_id: int) -> EntryRecord | None:
        q = self._shared.stmt.q_entry

        def read(tx: Tx) -> EntryRecord | None:
            if tx.stamped is not None:  # its record has not come: the row reads unrecorded (`Shared.settle`)
                self._shared.settle(tx)
            tx.cursor.execute(q, {"id": entry_id})
            row = tx.cursor.fetchone()
            if row is None:
                return None
            return EntryRecord(entry_id=entry_id, task_id=row[0], workflow_id=row[1], step_id=row[2],
                               attempted=attempted_value(row[3]), failed=failed_value(row[4]))

        return cast("EntryRecord | None", self._read("reading an entry record", read))

    def record_entry(self: SqlHost, record: EntryRecord) -> bool:
        """Record the entry (see the protocol): False if the row has one already (nothing changed)."""
        params = {"entry_id": record.entry_id, "task_id": record.task_id, "workflow_id": record.workflow_id,
                  "step_id": record.step_id, "attempted": cached_attempted_text(record.attempted),
                  "failed": failed_text(record.failed) if record.failed else "[]"}
        with self._tx("recording an entry") as tx:
            params["now"] = self._shared.stamp(tx)
            cur = tx.cursor
            if tx.stamped is not None:
                if tx.stamped == record.entry_id:  # the row written stamped in this unit: its record completes it
                    cur.execute(self._shared.stmt.u_entry_stamped, params)
                    if cur.rowcount == 1:
                        tx.stamped = None
                        return True
                self._shared.settle(tx)  # the general path below judges it, unstamped
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

    def markers(self: SqlHost, entry_id: int) -> dict[int, Marker]:
        q = self._shared.stmt.q_markers

        def read(tx: Tx) -> dict[int, Marker]:
            tx.cursor.execute(q, {"id": entry_id})
            return {int(position): Marker(entry_id=entry_id, position=int(position), kind=kind,
                                          state=cast(MarkerState, state), error=error, attempt=int(attempt))
                    for position, kind, state, error, attempt in tx.cursor.fetchall()}

        return cast("dict[int, Marker]", self._read("reading markers", read))

    def claim_marker(self: SqlHost, entry_id: int, position: int, kind: str) -> bool:
        """Insert an `in_progress` marker; False if this position has a marker already."""
        params: dict[str, Any] = {"entry_id": entry_id, "position": position, "kind": kind}
        with self._tx("claiming a marker") as tx:
            params["now"] = self._shared.stamp(tx)
            return insert_for_entry(self._shared, tx, self._shared.stmt.i_marker, params, entry_id)

    def start_marker(self: SqlHost, entry_id: int, position: int, kind: str) -> Marker:
        """Start a try of a position (see the protocol)."""
        sh = self._shared
        params: dict[str, Any] = {"entry_id": entry_id, "position": position, "kind": kind, "now": None}
        with self._tx("starting a marker") as tx:
            if not insert_for_entry(self._shared, tx, sh.stmt.i_marker, params, entry_id):
                tx.cursor.execute(sh.sql(U_MARKER_RETRY), params)
            tx.cursor.execute(sh.sql(Q_MARKER), params)
            kind_, state, error, attempt = tx.cursor.fetchone()
        return Marker(entry_id, position, kind_, cast(MarkerState, state), error, int(attempt))

    def finish_marker(self: SqlHost, entry_id: int, position: int, state: MarkerState, error: str | None = None) -> None:
        """Set a marker's state (and error); a position with no marker is left alone."""
        state = check_state(state)
        params: dict[str, Any] = {"entry_id": entry_id, "position": position, "state": state, "error": error,
                                  "now": None}
        with self._tx("finishing a marker") as tx:
            params["now"] = self._shared.stamp(tx)
            tx.cursor.execute(self._shared.stmt.u_marker, params)

