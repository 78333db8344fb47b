"""Entry records move into their ledger row; the ledger's task index becomes (task_id, id).

Revision ID: 0002
Revises: 0001
Create Date: 2026-11-30

ADR 0013: an arrival's entry record is three columns of its ledger row (`entry_attempted`,
`entry_failed`, `entry_recorded_at`; NULL until the entry is recorded) instead of a row of
`interlock_entries`, so an arrival writes one B-tree fewer; `ix_interlock_step_transitions_task`
indexes (task_id, id), the order `ledger(task_id)` reads in, instead of (task_id, occurred_at, id).

Replayable like 0001: columns are added only when absent, records are copied only while
`interlock_entries` exists (then it is dropped), and the index is rebuilt only when it has other
columns.  The downgrade puts everything back (SQLite >= 3.35 for DROP COLUMN).

A record that names another task or destination than its ledger row (or a row with none) cannot be
carried over: the runtime never writes one, but the store accepted it from a host before 0002.  The
upgrade then stops with a `StoreError` naming those entries, before it changes anything (the whole
upgrade is one transaction), so they can be corrected or deleted first.
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

from interlock.runtime.store import StoreError

revision: str = "0002"
down_revision: str | None = "0001"
branch_labels: str | tuple[str, ...] | None = None
depends_on: str | tuple[str, ...] | None = None

LEDGER = "interlock_step_transitions"
ENTRIES = "interlock_entries"
INDEX = "ix_interlock_step_transitions_task"
_Id = sa.BigInteger().with_variant(sa.Integer(), "sqlite")


def _columns() -> list[sa.Column[object]]:
    return [sa.Column("entry_attempted", sa.Text(), nullable=True),
            sa.Column("entry_failed", sa.Text(), nullable=True),
            sa.Column("entry_recorded_at", sa.DateTime(timezone=True), nullable=True)]


def _index_columns(bind: sa.Connection) -> list[str] | None:
    for ix in sa.inspect(bind).get_indexes(LEDGER):
        if ix["name"] == INDEX:
            return [str(c) for c in ix["column_names"]]
    return None


def _set_index(bind: sa.Connection, columns: list[str]) -> None:
    found = _index_columns(bind)
    if found == columns:
        return
    if found is not None:
        op.drop_index(INDEX, table_name=LEDGER)
    op.create_index(INDEX, LEDGER, columns)


def upgrade() -> None:
    bind = op.get_bind()
    have = {c["name"] for c in sa.inspect(bind).get_columns(LEDGER)}
    for column in _columns():
        if column.name not in have:
            op.add_column(LEDGER, column)
    if ENTRIES in set(sa.inspect(bind).get_table_names()):
        foreign = [int(r[0]) for r in bind.execute(sa.text(
            f"SELECT e.entry_id FROM {ENTRIES} e JOIN {LEDGER} t ON t.id = e.entry_id WHERE t.to_workflow_id IS NULL "
            "OR t.to_step_id IS NULL OR e.task_id <> t.task_id OR e.workflow_id <> t.to_workflow_id "
            "OR e.step_id <> t.to_step_id ORDER BY e.entry_id LIMIT 11"))]
        if foreign:
            shown = ", ".join(map(str, foreign[:10])) + (", …" if len(foreign) > 10 else "")
            raise StoreError(f"upgrading to 0002: entry records {shown} name another task or destination than their "
                             f"ledger row (an entry record belongs to its row's task and destination); correct or "
                             f"delete them in {ENTRIES}, then upgrade again — nothing was changed")
        op.execute(sa.text(
            f"UPDATE {LEDGER} SET entry_attempted = (SELECT e.attempted FROM {ENTRIES} e WHERE e.entry_id = {LEDGER}.id), "
            f"entry_failed = (SELECT e.failed FROM {ENTRIES} e WHERE e.entry_id = {LEDGER}.id), "
            f"entry_recorded_at = (SELECT e.recorded_at FROM {ENTRIES} e WHERE e.entry_id = {LEDGER}.id) "
            f"WHERE EXISTS (SELECT 1 FROM {ENTRIES} e WHERE e.entry_id = {LEDGER}.id) AND entry_recorded_at IS NULL"))
        op.drop_table(ENTRIES)
    _set_index(bind, ["task_id", "id"])


def downgrade() -> None:
    bind = op.get_bind()
    if ENTRIES not in set(sa.inspect(bind).get_table_names()):
        op.create_table(
            ENTRIES,
            sa.Column("entry_id", _Id, autoincrement=False, nullable=False),
            sa.Column("task_id", sa.Text(), nullable=False),
            sa.Column("workflow_id", sa.Text(), nullable=False),
            sa.Column("step_id", sa.Text(), nullable=False),
            sa.Column("attempted", sa.Text(), nullable=False),
            sa.Column("failed", sa.Text(), nullable=False),
            sa.Column("recorded_at", sa.DateTime(timezone=True), nullable=False),
            sa.ForeignKeyConstraint(["entry_id"], [f"{LEDGER}.id"], ondelete="CASCADE",
                                    name="fk_interlock_entries_ledger"),
            sa.PrimaryKeyConstraint("entry_id"),
        )
    have = {c["name"] for c in sa.inspect(bind).get_columns(LEDGER)}
    if "entry_recorded_at" in have:
        op.execute(sa.text(
            f"INSERT INTO {ENTRIES} (entry_id, task_id, workflow_id, step_id, attempted, failed, recorded_at) "
            f"SELECT id, task_id, to_workflow_id, to_step_id, entry_attempted, entry_failed, entry_recorded_at "
            f"FROM {LEDGER} WHERE entry_recorded_at IS NOT NULL AND to_workflow_id IS NOT NULL "
            f"AND to_step_id IS NOT NULL AND NOT EXISTS (SELECT 1 FROM {ENTRIES} e WHERE e.entry_id = {LEDGER}.id)"))
    _set_index(bind, ["task_id", "occurred_at", "id"])
    for column in reversed(_columns()):
        if column.name in have:
            op.execute(sa.text(f"ALTER TABLE {LEDGER} DROP COLUMN {column.name}"))
