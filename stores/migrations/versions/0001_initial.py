"""The initial interlock schema: tasks, the step-transition ledger, entry records and markers, operations, runs,
participants and decisions.

Revision ID: 0001
Revises:
Create Date: 2026-12-01

Replayable (ADR-0027): every table and index is created only when absent, so the
upgrade succeeds on a fresh database, on one that is up to date, and on one whose
tables exist without a version row (created by `metadata.create_all`, or by an
interrupted run on a database without transactional DDL).  The definitions are frozen
here on purpose; `interlock.stores.schema` must match them (a test compares the two).
"""

from __future__ import annotations

from typing import Any

import sqlalchemy as sa
from alembic import op

revision: str = "0001"
down_revision: str | None = None
branch_labels: str | tuple[str, ...] | None = None
depends_on: str | tuple[str, ...] | None = None

_Id = sa.BigInteger().with_variant(sa.Integer(), "sqlite")


def _ts(name: str, *, nullable: bool = False) -> sa.Column[object]:
    return sa.Column(name, sa.DateTime(timezone=True), nullable=nullable)


def _tables() -> list[tuple[str, list[sa.schema.SchemaItem], dict[str, Any]]]:
    return [
        ("interlock_tasks", [
            sa.Column("id", sa.Text(), primary_key=True),
            sa.Column("workflow_id", sa.Text(), nullable=True),
            sa.Column("step_id", sa.Text(), nullable=True),
            sa.Column("description", sa.Text(), nullable=False, server_default=""),
            sa.Column("is_from_office", sa.Boolean(), nullable=False, server_default=sa.false()),
            sa.Column("is_ephemeral", sa.Boolean(), nullable=False, server_default=sa.false()),
            sa.Column("archived", sa.Boolean(), nullable=False, server_default=sa.false()),
            _ts("created_at"),
            _ts("updated_at"),
        ], {}),
        ("interlock_step_transitions", [
            sa.Column("id", _Id, primary_key=True, autoincrement=True),
            sa.Column("task_id", sa.Text(), nullable=False),
            sa.Column("from_workflow_id", sa.Text(), nullable=True),
            sa.Column("from_step_id", sa.Text(), nullable=True),
            sa.Column("to_workflow_id", sa.Text(), nullable=True),
            sa.Column("to_step_id", sa.Text(), nullable=True),
            sa.Column("route", sa.Text(), nullable=False),
            sa.Column("actor_kind", sa.Text(), nullable=False),
            sa.Column("actor_id", sa.Text(), nullable=True),
            sa.Column("session_id", sa.Text(), nullable=True),
            _ts("occurred_at"),
        ], {"sqlite_autoincrement": True}),
        ("interlock_entries", [
            sa.Column("entry_id", _Id, primary_key=True, autoincrement=False),
            sa.Column("task_id", sa.Text(), nullable=False),
            sa.Column("workflow_id", sa.Text(), nullable=False),
            sa.Column("step_id", sa.Text(), nullable=False),
            sa.Column("attempted", sa.Text(), nullable=False),
            sa.Column("failed", sa.Text(), nullable=False),
            _ts("recorded_at"),
            sa.ForeignKeyConstraint(["entry_id"], ["interlock_step_transitions.id"], ondelete="CASCADE",
                                    name="fk_interlock_entries_ledger"),
        ], {}),
        ("interlock_entry_markers", [
            sa.Column("entry_id", _Id, nullable=False, autoincrement=False),
            sa.Column("position", sa.Integer(), nullable=False, autoincrement=False),
            sa.Column("kind", sa.Text(), nullable=False),
            sa.Column("state", sa.Text(), nullable=False),
            sa.Column("error", sa.Text(), nullable=True),
            _ts("claimed_at"),
            _ts("updated_at"),
            sa.PrimaryKeyConstraint("entry_id", "position", name="pk_interlock_entry_markers"),
            sa.CheckConstraint("state IN ('in_progress', 'done', 'failed')", name="ck_interlock_entry_markers_state"),
            sa.ForeignKeyConstraint(["entry_id"], ["interlock_step_transitions.id"], ondelete="CASCADE",
                                    name="fk_interlock_entry_markers_ledger"),
        ], {}),
        ("interlock_operations", [
            sa.Column("operation_id", sa.Text(), primary_key=True),
            sa.Column("task_id", sa.Text(), nullable=True),
            sa.Column("trigger", sa.Text(), nullable=True),
            _ts("applied_at"),
        ], {}),
        ("interlock_runs", [
            sa.Column("id", _Id, primary_key=True, autoincrement=True),
            sa.Column("idempotency_key", sa.Text(), nullable=False),
            sa.Column("task_id", sa.Text(), nullable=False),
            sa.Column("step_id", sa.Text(), nullable=True),
            sa.Column("agent", sa.Text(), nullable=False),
            sa.Column("reason", sa.Text(), nullable=False),
            sa.Column("payload", sa.Text(), nullable=False),
            sa.Column("entry_id", _Id, nullable=True),
            sa.Column("operation_id", sa.Text(), nullable=True),
            _ts("created_at"),
            sa.UniqueConstraint("idempotency_key", name="uq_interlock_runs_key"),
        ], {}),
        ("interlock_participants", [
            sa.Column("id", _Id, primary_key=True, autoincrement=True),
            sa.Column("task_id", sa.Text(), nullable=False),
            sa.Column("workflow_id", sa.Text(), nullable=False, server_default=""),
            sa.Column("step_id", sa.Text(), nullable=False),
            sa.Column("role", sa.Text(), nullable=False),
            sa.Column("agent", sa.Text(), nullable=False),
            sa.Column("decision_required", sa.Boolean(), nullable=False, server_default=sa.true()),
            sa.Column("position", sa.Integer(), nullable=False, server_default=sa.text("0")),
            sa.UniqueConstraint("task_id", "step_id", "role", "agent", name="uq_interlock_participants_seat"),
        ], {}),
        ("interlock_decisions", [
            sa.Column("id", _Id, primary_key=True, autoincrement=True),
            sa.Column("task_id", sa.Text(), nullable=False),
            sa.Column("step_id", sa.Text(), nullable=False),
            sa.Column("decider_type", sa.Text(), nullable=False),
            sa.Column("decider_id", sa.Text(), nullable=False),
            sa.Column("role", sa.Text(), nullable=False),
            sa.Column("verdict", sa.Text(), nullable=False),
            sa.Column("session_id", sa.Text(), nullable=True),
            _ts("decided_at"),
            _ts("superseded_at", nullable=True),
            sa.CheckConstraint("decider_type IN ('agent', 'user')", name="ck_interlock_decisions_decider_type"),
        ], {}),
    ]


_WHERE_ACTIVE = "superseded_at IS NULL"

_INDEXES: list[tuple[str, str, list[str], dict[str, Any]]] = [
    ("ix_interlock_step_transitions_task", "interlock_step_transitions", ["task_id", "occurred_at", "id"], {}),
    ("ix_interlock_runs_task", "interlock_runs", ["task_id", "id"], {}),
    ("ix_interlock_participants_task_role", "interlock_participants", ["task_id", "role"], {}),
    ("ix_interlock_decisions_task_step", "interlock_decisions", ["task_id", "step_id", "id"], {}),
    ("uq_interlock_decisions_active", "interlock_decisions",
     ["task_id", "step_id", "decider_type", "decider_id", "role"],
     {"unique": True, "postgresql_where": sa.text(_WHERE_ACTIVE), "sqlite_where": sa.text(_WHERE_ACTIVE)}),
]


def upgrade() -> None:
    bind = op.get_bind()
    existing = set(sa.inspect(bind).get_table_names())
    for name, items, kw in _tables():
        if name not in existing:
            op.create_table(name, *items, **kw)
    for name, table, columns, kw in _INDEXES:
        if name not in {ix["name"] for ix in sa.inspect(bind).get_indexes(table)}:
            op.create_index(name, table, columns, **kw)


def downgrade() -> None:
    bind = op.get_bind()
    existing = set(sa.inspect(bind).get_table_names())
    for name, _items, _kw in reversed(_tables()):
        if name in existing:
            op.drop_table(name)
