"""A step change in, one ledger row (`interlock_step_transitions`) inside the caller's transaction out, with its id.

For hosts that keep their own tasks table: the host changes the task's step and calls
`LedgerWriter.write_arrival` on the same SQLAlchemy `Connection`, inside the same
transaction, so the ledger row commits or rolls back with the step change (docs/runtime.md
§1, §4).  After its commit the host hands the returned id to the runtime, which
dispatches the destination's entry handler; `recover` finds rows whose dispatch was lost.
The writer never commits, never begins and never reads the host's tables.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable, Mapping
from datetime import UTC, datetime
from typing import Any

from sqlalchemy import Connection

from interlock.runtime.options import check_options
from interlock.runtime.store import LedgerRow

from ._common import check_route, clean_id, is_arrival
from .schema import step_transitions

__all__ = ["LedgerWriter", "insert_ledger_row", "supports_returning"]


def supports_returning(connection: Connection) -> bool:
    """`INSERT … RETURNING` works: PostgreSQL, SQLite 3.35 and later (else `lastrowid`)."""
    if connection.dialect.name == "sqlite" and sqlite3.sqlite_version_info < (3, 35):
        return False
    return bool(connection.dialect.insert_returning)


def insert_ledger_row(connection: Connection, row: LedgerRow, occurred_at: datetime, *,
                      returning: bool | None = None) -> int:
    """Insert `row` (its `id` is ignored) and return the id the database allocated."""
    stmt = step_transitions.insert().values(
        task_id=row.task_id, from_workflow_id=row.from_workflow_id, from_step_id=row.from_step_id,
        to_workflow_id=row.to_workflow_id, to_step_id=row.to_step_id, route=row.route,
        actor_kind=row.actor_kind, actor_id=row.actor_id, session_id=row.session_id,
        arrival_options=row.arrival_options, occurred_at=occurred_at)
    if returning if returning is not None else supports_returning(connection):
        return int(connection.execute(stmt.returning(step_transitions.c.id)).scalar_one())
    result = connection.execute(stmt)
    rowid = result.lastrowid
    if rowid is None:  # pragma: no cover - only drivers without RETURNING and lastrowid
        raise RuntimeError("the database driver reported no id for the ledger row")
    return int(rowid)


def _utcnow() -> datetime:
    return datetime.now(UTC)


class LedgerWriter:
    """Writes ledger rows on a host's connection, inside the host's own transaction.

    The interlock tables must exist in the host's database (`interlock db upgrade`).
    `clock` returns the `occurred_at` timestamp (default: now, UTC)."""

    def __init__(self, *, clock: Callable[[], datetime] | None = None) -> None:
        self._clock = clock or _utcnow

    def write_arrival(self, connection: Connection, *, task_id: str, from_workflow_id: str | None,
                      from_step_id: str | None, to_workflow_id: str | None, to_step_id: str | None,
                      route: str, actor_kind: str = "system", actor_id: str | None = None,
                      session_id: str | None = None, options: Mapping[str, Any] | None = None) -> int | None:
        """Insert the ledger row of a step change and return its id (the entry identity).

        None, and nothing written, when the step does not change (see `is_arrival`).
        Empty ids are stored as NULL.  `options`: the arrival's one-shot entry options (kandev's
        `instructions`, `skip_step_prompt`, …), plain JSON data its entry's executors read as
        `ctx.arrival_options` (ADR 0043); a `PayloadError` if they are not.  Nothing is committed:
        the row is the host's to commit or roll back with its step change."""
        fw, fs, tw, ts = (clean_id(from_workflow_id), clean_id(from_step_id), clean_id(to_workflow_id),
                          clean_id(to_step_id))
        if not is_arrival(fw, fs, tw, ts):
            return None
        check_route(route)
        text = check_options(options)
        now = self._clock()
        row = LedgerRow(id=0, task_id=task_id, from_workflow_id=fw, from_step_id=fs, to_workflow_id=tw,
                        to_step_id=ts, route=route, actor_kind=actor_kind or "system", actor_id=actor_id,
                        session_id=session_id, arrival_options=text)
        return insert_ledger_row(connection, row, now)
