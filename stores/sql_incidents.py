"""Incident calls in, rows of `interlock_incidents` out: the part of `SqlStore` that keeps incidents
(`SqlIncidents`).

`SqlStore` composes one `SqlIncidents` and delegates each `IncidentStore` call to it, in the store's transactions.
Every write is one statement, safe across processes:

- `open_incident` is an upsert on the incident's key (`INSERT … ON CONFLICT (key) DO UPDATE`): a new failure of
  the same entry or operation updates its row, and opens it again (a new `opened_at`) if it was resolved.
- `claim_incident` is a compare-and-swap (`UPDATE … WHERE state = 'open' OR <its redriver's owner is dead>`):
  of two redrivers, the second finds the row `redriving` by a live owner and gets None.  On PostgreSQL the second
  waits on the first's row lock and then judges the row as the first left it.  An owner is live as the operation
  claims judge it: its heartbeat plus lease has not passed on the database's clock, and it has not stopped (owner
  heartbeats keep the database's clock even when the store was given a test clock).
- `settle_incident` is a compare-and-swap on the state (and redriver) the call names.

Times (`opened_at`, `updated_at`) are the store's clock: the database's, or the test clock (`sql_due.clock_sql`).
Listing the incidents not resolved reads the partial index `ix_interlock_incidents_unresolved`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, cast

from interlock.runtime.store_due import Incident, IncidentKind, IncidentState

from ._due_rules import (
    check_failures,
    check_incident,
    check_incident_state,
    check_settle,
    failures_text,
    failures_value,
)
from .sql_due import clock_params, store_sql
from .statements import _ALIVE

if TYPE_CHECKING:
    from .sql_host import SqlHost

__all__ = ["SqlIncidents"]

_COLS = ('id, "key", task_id, kind, failures, error, attempts, state, opened_at, updated_at, entry_id, workflow_id, '
         'step_id, plan, operation_id, "trigger", payload, session_id, owner_id, resolution, note')
_WAS_RESOLVED = "interlock_incidents.state = 'resolved'"

OPEN_INCIDENT = (
    'INSERT INTO interlock_incidents ("key", task_id, kind, failures, error, attempts, state, opened_at, updated_at, '
    'entry_id, workflow_id, step_id, plan, operation_id, "trigger", payload, session_id) '
    "SELECT :key, :task_id, :kind, :failures, :error, CAST(:attempts AS INTEGER), 'open', c.now, c.now, "
    "CAST(:entry_id AS BIGINT), :workflow_id, :step_id, :plan, :operation_id, :trigger, :payload, :session_id "
    'FROM (SELECT {NOW} AS now) c WHERE TRUE ON CONFLICT ("key") DO UPDATE SET failures = excluded.failures, '
    "error = excluded.error, attempts = excluded.attempts, updated_at = excluded.updated_at, "
    f"state = CASE WHEN {_WAS_RESOLVED} THEN 'open' ELSE interlock_incidents.state END, "
    f"opened_at = CASE WHEN {_WAS_RESOLVED} THEN excluded.opened_at ELSE interlock_incidents.opened_at END, "
    f"owner_id = CASE WHEN {_WAS_RESOLVED} THEN NULL ELSE interlock_incidents.owner_id END, "
    f"resolution = CASE WHEN {_WAS_RESOLVED} THEN NULL ELSE interlock_incidents.resolution END, "
    f"note = CASE WHEN {_WAS_RESOLVED} THEN NULL ELSE interlock_incidents.note END")
Q_INCIDENT = f'SELECT {_COLS} FROM interlock_incidents WHERE id = :id'
Q_INCIDENT_KEY = f'SELECT {_COLS} FROM interlock_incidents WHERE "key" = :key'
CLAIM_INCIDENT = (
    "UPDATE interlock_incidents SET state = 'redriving', owner_id = :owner, updated_at = {NOW} WHERE id = :id AND "
    "(state = 'open' OR (state = 'redriving' AND (owner_id IS NULL OR NOT "
    + _ALIVE.format(owner="interlock_incidents.owner_id", epoch="{EPOCH}") + ")))")
_SETTLE = ("UPDATE interlock_incidents SET state = :state, updated_at = {NOW}, owner_id = :new_owner, "
           "resolution = :resolution, note = COALESCE(:note, note), error = COALESCE(:error, error), "
           "attempts = COALESCE(CAST(:attempts AS INTEGER), attempts), failures = COALESCE(:failures, failures) "
           "WHERE id = :id AND ")
SETTLE_OPEN = _SETTLE + "state = 'open'"
SETTLE_REDRIVING = _SETTLE + "state = 'redriving' AND owner_id = :owner"


def _listing(task: bool, state: IncidentState | None) -> str:
    """The SELECT of `incidents(task_id, state=…)`: a state not `resolved` reads the partial index of unresolved
    incidents (its predicate spelled out, so the planner sees the query implies it)."""
    where = []
    if task:
        where.append("task_id = :task_id")
    if state is not None:
        where.append("state = :state" + (" AND state <> 'resolved'" if state != "resolved" else ""))
    return (f"SELECT {_COLS} FROM interlock_incidents " + ("WHERE " + " AND ".join(where) + " " if where else "")
            + "ORDER BY id LIMIT :limit")


class SqlIncidents:
    """`IncidentStore` on the SQL store (see the module's docstring)."""

    __slots__ = ("_store",)

    def __init__(self, store: SqlHost) -> None:
        self._store = store

    def _sql(self, text: str) -> str:
        return store_sql(self._store, text)

    def open_incident(self, incident: Incident) -> Incident:
        """Open an incident, or update the one with its key (opened again if it was resolved); the row as stored."""
        i = check_incident(incident)
        params = clock_params(self._store, {
            "key": i.key, "task_id": i.task_id, "kind": i.kind, "failures": failures_text(i.failures),
            "error": i.error, "attempts": int(i.attempts), "entry_id": i.entry_id, "workflow_id": i.workflow_id,
            "step_id": i.step_id, "plan": i.plan, "operation_id": i.operation_id, "trigger": i.trigger,
            "payload": i.payload, "session_id": i.session_id})
        sh = self._store._shared
        with self._store._tx("opening an incident") as tx:
            tx.cursor.execute(self._sql(OPEN_INCIDENT), params)
            tx.cursor.execute(sh.sql(Q_INCIDENT_KEY), params)
            return _incident(tx.cursor.fetchone())

    def incident(self, incident_id: int) -> Incident | None:
        rows = self._store._rows("reading an incident", self._store._shared.sql(Q_INCIDENT), {"id": incident_id})
        return _incident(rows[0]) if rows else None

    def incidents(self, task_id: str | None = None, *, state: IncidentState | None = "open",
                  limit: int = 1000) -> list[Incident]:
        """Incidents in that state (None: any), oldest first; of one task when given."""
        state = check_incident_state(state)
        sql = self._store._shared.sql(_listing(task_id is not None, state))
        rows = self._store._rows("reading incidents", sql, {"task_id": task_id, "state": state,
                                                            "limit": max(limit, 0)})
        return [_incident(r) for r in rows]

    def claim_incident(self, incident_id: int, owner_id: str) -> Incident | None:
        """Hand an open incident, or one whose redriver's owner is dead, to `owner_id` (one compare-and-swap)."""
        sh = self._store._shared
        params = clock_params(self._store, {"id": incident_id, "owner": owner_id})
        with self._store._tx("claiming an incident") as tx:
            tx.cursor.execute(self._sql(CLAIM_INCIDENT), params)
            if tx.cursor.rowcount != 1:
                return None
            tx.cursor.execute(sh.sql(Q_INCIDENT), params)
            return _incident(tx.cursor.fetchone())

    def settle_incident(self, incident_id: int, *, owner_id: str | None, state: IncidentState,
                        resolution: str | None = None, note: str | None = None, error: str | None = None,
                        attempts: int | None = None,
                        failures: tuple[tuple[int, str, str], ...] | None = None) -> bool:
        """Close an incident or give it back, only from the state the call names (one compare-and-swap)."""
        target = check_settle(state, resolution)
        resolved = target == "resolved"
        params = clock_params(self._store, {
            "id": incident_id, "state": target, "owner": owner_id, "new_owner": owner_id if resolved else None,
            "resolution": resolution if resolved else None, "note": note, "error": error,
            "attempts": None if attempts is None else int(attempts),
            "failures": None if failures is None else failures_text(check_failures(failures))})
        with self._store._tx("settling an incident") as tx:
            tx.cursor.execute(self._sql(SETTLE_OPEN if owner_id is None else SETTLE_REDRIVING), params)
            return bool(tx.cursor.rowcount == 1)


def _incident(r: tuple[Any, ...]) -> Incident:
    return Incident(int(r[0]), r[1], r[2], cast(IncidentKind, r[3]), failures_value(r[4]), r[5], int(r[6]),
                    cast(IncidentState, r[7]), float(r[8]), float(r[9]), None if r[10] is None else int(r[10]),
                    *r[11:21])
