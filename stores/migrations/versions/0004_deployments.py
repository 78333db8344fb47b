"""Deployments: plan revisions, runtime owners with heartbeats, the task's current activation, attempts, and the
indexes `recover` reads through.

Revision ID: 0004
Revises: 0003
Create Date: 2026-12-03

ADRs 0036 and 0037: `interlock_plans` keeps every plan revision a runtime ran (by digest) and
`interlock_owners` every runtime with its heartbeat on the store's clock.  A ledger row names the
revision that decided it (`plan`) and the owner dispatching its entry (`entry_owner`); a task its
current activation (`entry_id`); a decision its round (`entry_id`); a marker its attempt; an
operation claim its owner (`owner_id`, replacing the lease stamped with a host's clock).  Partial
indexes let `recover` find the few unfinished rows among millions.

Replayable: every step checks what is there.  Claims in progress are dropped by the upgrade (their
leases were judged by host clocks, and no runtime of the new schema could tell their owners); an
upgrade runs with the runtimes stopped, as every schema change does.
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision: str = "0004"
down_revision: str | None = "0003"
branch_labels: str | tuple[str, ...] | None = None
depends_on: str | tuple[str, ...] | None = None

TASKS = "interlock_tasks"
LEDGER = "interlock_step_transitions"
MARKERS = "interlock_entry_markers"
OPS = "interlock_operations"
DECISIONS = "interlock_decisions"
PLANS = "interlock_plans"
OWNERS = "interlock_owners"
_Id = sa.BigInteger().with_variant(sa.Integer(), "sqlite")

_PARTIAL = (
    ("ix_interlock_step_transitions_unrecorded", LEDGER, ["id"],
     "entry_recorded_at IS NULL AND to_step_id IS NOT NULL"),
    ("ix_interlock_operations_claimed", OPS, ["op_key"], "state = 'claimed'"),
    ("ix_interlock_decisions_unevaluated", DECISIONS, ["id"], "superseded_at IS NULL AND evaluated_at IS NULL"),
    ("ix_interlock_entry_markers_in_progress", MARKERS, ["entry_id"], "state = 'in_progress'"),
)


def _columns(bind: sa.Connection, table: str) -> set[str]:
    return {c["name"] for c in sa.inspect(bind).get_columns(table)}


def _indexes(bind: sa.Connection, table: str) -> set[str]:
    return {str(i["name"]) for i in sa.inspect(bind).get_indexes(table)}


def _add(bind: sa.Connection, table: str, column: sa.Column[object]) -> None:
    if column.name not in _columns(bind, table):
        op.add_column(table, column)


def upgrade() -> None:
    bind = op.get_bind()
    tables = set(sa.inspect(bind).get_table_names())
    _add(bind, TASKS, sa.Column("entry_id", _Id, nullable=True))
    _add(bind, LEDGER, sa.Column("plan", sa.Text(), nullable=True))
    _add(bind, LEDGER, sa.Column("entry_owner", sa.Text(), nullable=True))
    _add(bind, MARKERS, sa.Column("attempt", sa.Integer(), nullable=False, server_default=sa.text("1")))
    _add(bind, DECISIONS, sa.Column("entry_id", _Id, nullable=True))
    if "lease_until" in _columns(bind, OPS):
        op.execute(sa.text(f"DELETE FROM {OPS} WHERE state = 'claimed'"))
        op.execute(sa.text(f"ALTER TABLE {OPS} DROP COLUMN lease_until"))  # SQLite >= 3.35, as 0002
    _add(bind, OPS, sa.Column("owner_id", sa.Text(), nullable=True))
    # every task's current activation: the latest ledger row that put it where it stands
    op.execute(sa.text(
        f"UPDATE {TASKS} SET entry_id = (SELECT MAX(l.id) FROM {LEDGER} l WHERE l.task_id = {TASKS}.id AND "
        f"l.to_workflow_id IS NOT DISTINCT FROM {TASKS}.workflow_id AND l.to_step_id IS NOT DISTINCT FROM "
        f"{TASKS}.step_id) WHERE entry_id IS NULL" if bind.dialect.name == "postgresql" else
        f"UPDATE {TASKS} SET entry_id = (SELECT MAX(l.id) FROM {LEDGER} l WHERE l.task_id = {TASKS}.id AND "
        f"l.to_workflow_id IS {TASKS}.workflow_id AND l.to_step_id IS {TASKS}.step_id) WHERE entry_id IS NULL"))
    for name, table, cols, where in _PARTIAL:
        if name not in _indexes(bind, table):
            op.create_index(name, table, cols, postgresql_where=sa.text(where), sqlite_where=sa.text(where))
    if PLANS not in tables:
        op.create_table(
            PLANS,
            sa.Column("digest", sa.Text(), nullable=False),
            sa.Column("plan", sa.Text(), nullable=False),
            sa.Column("saved_at", sa.Float(), nullable=False),
            sa.PrimaryKeyConstraint("digest", name="pk_interlock_plans"),
        )
    if OWNERS not in tables:
        op.create_table(
            OWNERS,
            sa.Column("owner_id", sa.Text(), nullable=False),
            sa.Column("host", sa.Text(), nullable=False),
            sa.Column("pid", sa.Integer(), nullable=False),
            sa.Column("plan", sa.Text(), nullable=True),
            sa.Column("started_at", sa.Float(), nullable=False),
            sa.Column("heartbeat_at", sa.Float(), nullable=False),
            sa.Column("lease", sa.Float(), nullable=False),
            sa.Column("stopped", sa.Boolean(), nullable=False, server_default=sa.false()),
            sa.PrimaryKeyConstraint("owner_id", name="pk_interlock_owners"),
        )


def downgrade() -> None:
    bind = op.get_bind()
    tables = set(sa.inspect(bind).get_table_names())
    for name in (OWNERS, PLANS):
        if name in tables:
            op.drop_table(name)
    for name, table, _cols, _where in _PARTIAL:
        if name in _indexes(bind, table):
            op.drop_index(name, table_name=table)
    if "owner_id" in _columns(bind, OPS):
        op.execute(sa.text(f"DELETE FROM {OPS} WHERE state = 'claimed'"))
        op.execute(sa.text(f"ALTER TABLE {OPS} DROP COLUMN owner_id"))
        op.add_column(OPS, sa.Column("lease_until", sa.Float(), nullable=True))
    for table, column in ((DECISIONS, "entry_id"), (MARKERS, "attempt"), (LEDGER, "entry_owner"),
                          (LEDGER, "plan"), (TASKS, "entry_id")):
        if column in _columns(bind, table):
            op.execute(sa.text(f"ALTER TABLE {table} DROP COLUMN {column}"))
