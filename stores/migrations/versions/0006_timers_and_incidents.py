"""Due rows (timers and retries) and incidents.

Revision ID: 0006
Revises: 0005
Create Date: 2026-12-05

docs/runtime.md §7 (ADR 0050): `interlock_timers` holds work that becomes due at a time on the
store's clock — a step's `after`/`every` timer of one entry, armed in the arrival's transaction,
or a retry of a failed entry position or operation — with its next slot (the compare-and-swap two
ticking processes race on) and a `dedupe` key that makes arming and scheduling insert-or-ignore.
`interlock_incidents` holds failures nothing will retry, one row per entry or operation (`key`),
open, being redriven by an owner, or resolved.  Indexes: due rows by (due_at, id), which `tick`
reads, and by (task_id, entry_id), which a task's departure deletes by; incidents not resolved
through a partial index, and by task.

Replayable: each table and index is created only when absent (a database made by `create_all`
has them already).  The downgrade drops both tables, losing pending timers and incidents.

(This revision follows 0005; a 0007 written at the same time is re-chained after it on merge.)
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision: str = "0006"
down_revision: str | None = "0005"
branch_labels: str | tuple[str, ...] | None = None
depends_on: str | tuple[str, ...] | None = None

TIMERS = "interlock_timers"
INCIDENTS = "interlock_incidents"
_Id = sa.BigInteger().with_variant(sa.Integer(), "sqlite")
_UNRESOLVED = "state <> 'resolved'"

_INDEXES: tuple[tuple[str, str, list[str], str | None], ...] = (
    ("ix_interlock_timers_due", TIMERS, ["due_at", "id"], None),
    ("ix_interlock_timers_task", TIMERS, ["task_id", "entry_id"], None),
    ("ix_interlock_incidents_unresolved", INCIDENTS, ["id"], _UNRESOLVED),
    ("ix_interlock_incidents_task", INCIDENTS, ["task_id", "id"], None),
)


def _timers() -> None:
    op.create_table(
        TIMERS,
        sa.Column("id", _Id, primary_key=True, autoincrement=True),
        sa.Column("task_id", sa.Text(), nullable=False),
        sa.Column("entry_id", _Id, nullable=False),
        sa.Column("workflow_id", sa.Text(), nullable=False),
        sa.Column("step_id", sa.Text(), nullable=False),
        sa.Column("kind", sa.Text(), nullable=False),
        sa.Column("label", sa.Text(), nullable=False),
        sa.Column("position", sa.Integer(), nullable=False),
        sa.Column("period", sa.Integer(), nullable=False),
        sa.Column("armed_at", sa.Float(), nullable=False),
        sa.Column("slot", sa.Integer(), nullable=False),
        sa.Column("due_at", sa.Float(), nullable=False),
        sa.Column("plan", sa.Text(), nullable=True),
        sa.Column("operation_id", sa.Text(), nullable=True),
        sa.Column("trigger", sa.Text(), nullable=True),
        sa.Column("payload", sa.Text(), nullable=True),
        sa.Column("session_id", sa.Text(), nullable=True),
        sa.Column("dedupe", sa.Text(), nullable=False),
        sa.CheckConstraint("kind IN ('after', 'every', 'retry')", name="ck_interlock_timers_kind"),
        sa.UniqueConstraint("dedupe", name="uq_interlock_timers_dedupe"),
        sqlite_autoincrement=True,
    )


def _incidents() -> None:
    op.create_table(
        INCIDENTS,
        sa.Column("id", _Id, primary_key=True, autoincrement=True),
        sa.Column("key", sa.Text(), nullable=False),
        sa.Column("task_id", sa.Text(), nullable=False),
        sa.Column("kind", sa.Text(), nullable=False),
        sa.Column("failures", sa.Text(), nullable=False),
        sa.Column("error", sa.Text(), nullable=False),
        sa.Column("attempts", sa.Integer(), nullable=False),
        sa.Column("state", sa.Text(), nullable=False),
        sa.Column("opened_at", sa.Float(), nullable=False),
        sa.Column("updated_at", sa.Float(), nullable=False),
        sa.Column("entry_id", _Id, nullable=True),
        *(sa.Column(name, sa.Text(), nullable=True) for name in (
            "workflow_id", "step_id", "plan", "operation_id", "trigger", "payload", "session_id", "owner_id",
            "resolution", "note")),
        sa.CheckConstraint("kind IN ('entry', 'operation')", name="ck_interlock_incidents_kind"),
        sa.CheckConstraint("state IN ('open', 'redriving', 'resolved')", name="ck_interlock_incidents_state"),
        sa.UniqueConstraint("key", name="uq_interlock_incidents_key"),
        sqlite_autoincrement=True,
    )


def _indexes(bind: sa.Connection, table: str) -> set[str]:
    return {str(i["name"]) for i in sa.inspect(bind).get_indexes(table)}


def upgrade() -> None:
    bind = op.get_bind()
    tables = set(sa.inspect(bind).get_table_names())
    if TIMERS not in tables:
        _timers()
    if INCIDENTS not in tables:
        _incidents()
    for name, table, cols, where in _INDEXES:
        if name not in _indexes(bind, table):
            clause = None if where is None else sa.text(where)
            op.create_index(name, table, cols, postgresql_where=clause, sqlite_where=clause)


def downgrade() -> None:
    tables = set(sa.inspect(op.get_bind()).get_table_names())
    for name in (INCIDENTS, TIMERS):
        if name in tables:
            op.drop_table(name)  # its indexes go with it
