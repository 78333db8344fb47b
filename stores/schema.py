"""The interlock tables as one SQLAlchemy `MetaData`: names in, `Table` objects out (every name starts `interlock_`).

This module is the schema the code reads and writes; `migrations/versions/` holds the
frozen history that creates it (a test compares the two).  Design notes:

- Task ids, step ids and workflow ids are text: hosts choose them.  Only the ledger and
  the markers reference each other; nothing references `interlock_tasks`, so hosts that
  keep their own tasks table use every other table.
- An arrival's entry record is three columns of its ledger row, NULL until the entry is
  recorded (ADR 0013): the record names the row's own task and destination.
- The ledger id is the entry identity: BIGINT on PostgreSQL (BIGSERIAL), INTEGER PRIMARY
  KEY AUTOINCREMENT on SQLite (the rowid alias, never reused even after a delete).
- JSON values are stored as text (`attempted`, `failed`, `payload`): the same bytes on
  both dialects, no JSON operator is ever needed in a query.
"""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import (
    BigInteger,
    Boolean,
    CheckConstraint,
    Column,
    DateTime,
    Float,
    ForeignKey,
    Index,
    Integer,
    MetaData,
    PrimaryKeyConstraint,
    Table,
    Text,
    UniqueConstraint,
    false,
    text,
    true,
)

__all__ = [
    "metadata", "Id", "tasks", "step_transitions", "entry_markers", "operations", "runs",
    "participants", "decisions", "VERSION_TABLE", "TABLE_NAMES",
]

VERSION_TABLE = "interlock_alembic_version"
"""Alembic's version table for interlock's own history (a host's alembic history is untouched)."""

Id = BigInteger().with_variant(Integer(), "sqlite")
"""Surrogate keys: BIGINT on PostgreSQL, INTEGER on SQLite so the column is the rowid alias."""

metadata = MetaData()


def _ts(name: str, *, nullable: bool = False) -> Column[datetime]:
    return Column(name, DateTime(timezone=True), nullable=nullable)


tasks = Table(
    "interlock_tasks", metadata,
    Column("id", Text, primary_key=True),
    Column("workflow_id", Text, nullable=True),
    Column("step_id", Text, nullable=True),
    Column("description", Text, nullable=False, server_default=""),
    Column("is_from_office", Boolean, nullable=False, server_default=false()),
    Column("is_ephemeral", Boolean, nullable=False, server_default=false()),
    Column("archived", Boolean, nullable=False, server_default=false()),
    _ts("created_at"),
    _ts("updated_at"),
)

step_transitions = Table(
    "interlock_step_transitions", metadata,
    Column("id", Id, primary_key=True, autoincrement=True),
    Column("task_id", Text, nullable=False),
    Column("from_workflow_id", Text, nullable=True),
    Column("from_step_id", Text, nullable=True),
    Column("to_workflow_id", Text, nullable=True),
    Column("to_step_id", Text, nullable=True),
    Column("route", Text, nullable=False),
    Column("actor_kind", Text, nullable=False),
    Column("actor_id", Text, nullable=True),
    Column("session_id", Text, nullable=True),
    _ts("occurred_at"),
    # the entry record (ADR 0013): the kinds attempted and failed (JSON text), when it was recorded
    Column("entry_attempted", Text, nullable=True),
    Column("entry_failed", Text, nullable=True),
    _ts("entry_recorded_at", nullable=True),
    # A→B→A→B is four rows: no unique constraint on purpose.
    Index("ix_interlock_step_transitions_task", "task_id", "id"),
    sqlite_autoincrement=True,
)

entry_markers = Table(
    "interlock_entry_markers", metadata,
    Column("entry_id", Id, ForeignKey("interlock_step_transitions.id", ondelete="CASCADE",
                                      name="fk_interlock_entry_markers_ledger"),
           nullable=False, autoincrement=False),
    Column("position", Integer, nullable=False, autoincrement=False),
    Column("kind", Text, nullable=False),
    Column("state", Text, nullable=False),
    Column("error", Text, nullable=True),
    _ts("claimed_at"),
    _ts("updated_at"),
    PrimaryKeyConstraint("entry_id", "position", name="pk_interlock_entry_markers"),
    CheckConstraint("state IN ('in_progress', 'done', 'failed')", name="ck_interlock_entry_markers_state"),
)

operations = Table(
    "interlock_operations", metadata,
    # ADR 0020: keyed on the SHA-256 (hex) of the host's operation id, so an id of any length fits a B-tree
    Column("op_key", Text, nullable=False),
    Column("operation_id", Text, nullable=False),  # the id as the host gave it (records; never indexed)
    Column("task_id", Text, nullable=True),
    Column("trigger", Text, nullable=True),
    Column("state", Text, nullable=False),  # claimed (a delivery is running it) | applied
    Column("claim_token", Text, nullable=True),  # the claiming delivery
    Column("lease_until", Float, nullable=True),  # epoch seconds: a claim past it may be taken over
    _ts("applied_at", nullable=True),
    PrimaryKeyConstraint("op_key", name="pk_interlock_operations"),
    CheckConstraint("state IN ('claimed', 'applied')", name="ck_interlock_operations_state"),
)

runs = Table(
    "interlock_runs", metadata,
    Column("id", Id, primary_key=True, autoincrement=True),
    Column("idempotency_key", Text, nullable=False),
    Column("task_id", Text, nullable=False),
    Column("step_id", Text, nullable=True),
    Column("agent", Text, nullable=False),
    Column("reason", Text, nullable=False),
    Column("payload", Text, nullable=False),
    Column("entry_id", Id, nullable=True),
    Column("operation_id", Text, nullable=True),
    _ts("created_at"),
    UniqueConstraint("idempotency_key", name="uq_interlock_runs_key"),
    Index("ix_interlock_runs_task", "task_id", "id"),
)

participants = Table(
    "interlock_participants", metadata,
    Column("id", Id, primary_key=True, autoincrement=True),
    Column("task_id", Text, nullable=False),  # "" = a template row of the step
    Column("workflow_id", Text, nullable=False, server_default=""),
    Column("step_id", Text, nullable=False),
    Column("role", Text, nullable=False),
    Column("agent", Text, nullable=False),
    Column("decision_required", Boolean, nullable=False, server_default=true()),
    Column("position", Integer, nullable=False, server_default=text("0")),
    UniqueConstraint("task_id", "step_id", "role", "agent", name="uq_interlock_participants_seat"),
    Index("ix_interlock_participants_task_role", "task_id", "role"),
)

decisions = Table(
    "interlock_decisions", metadata,
    Column("id", Id, primary_key=True, autoincrement=True),
    Column("task_id", Text, nullable=False),
    Column("step_id", Text, nullable=False),
    Column("decider_type", Text, nullable=False),
    Column("decider_id", Text, nullable=False),
    Column("role", Text, nullable=False),
    Column("verdict", Text, nullable=False),
    Column("session_id", Text, nullable=True),
    _ts("decided_at"),
    _ts("superseded_at", nullable=True),
    _ts("evaluated_at", nullable=True),  # when `recover` need not re-evaluate it any more (ADR 0020)
    CheckConstraint("decider_type IN ('agent', 'user')", name="ck_interlock_decisions_decider_type"),
    Index("ix_interlock_decisions_task_step", "task_id", "step_id", "id"),
    # One active decision per decider and role: the backstop of `record_decision`'s supersede.
    Index("uq_interlock_decisions_active", "task_id", "step_id", "decider_type", "decider_id", "role",
          unique=True, postgresql_where=text("superseded_at IS NULL"),
          sqlite_where=text("superseded_at IS NULL")),
)

TABLE_NAMES: tuple[str, ...] = tuple(t.name for t in metadata.sorted_tables)
"""Every interlock table, parents before children."""
