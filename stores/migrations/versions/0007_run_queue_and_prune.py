"""The run queue, the fingerprints of pruned operations, and the indexes `inspect`, `diff --store` and `prune` read.

Revision ID: 0007
Revises: 0006
Create Date: 2026-12-06

ADR 0047:

- `interlock_runs` gains the consumer's columns: `consumer` and `lease_until` (the store's clock, epoch seconds)
  of the claim holding a run, `claims` (how many claims it has had) and `acked_at` (when a consumer acknowledged
  it; NULL: pending or claimed), with a partial index of the runs not acknowledged, which `claim_runs` reads.
  Runs queued before this revision had no consumer API: a host read them with `runs()`.  They are marked
  acknowledged at the upgrade (`consumer` '(before 0007)'), so a consumer started after the upgrade does not
  hand every run ever queued to its agents again; a host that still owed some of them reads them with `runs()`.
- `interlock_pruned_operations`: the key (SHA-256 of the id) of every applied operation `interlock db prune`
  deleted, so a redelivery of the id is refused (`pruned`) instead of run again.
- Indexes: `interlock_operations(task_id)` (a task's operations: `inspect`, `prune`) and
  `interlock_tasks(workflow_id, step_id)` (the counts of `diff --store`).

Replayable: each column, table and index is created only when absent.  The downgrade drops them (SQLite >= 3.35
for DROP COLUMN, as 0002), losing the queue's state and the fingerprints.
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision: str = "0007"
down_revision: str | None = "0006"
branch_labels: str | tuple[str, ...] | None = None
depends_on: str | tuple[str, ...] | None = None

RUNS = "interlock_runs"
PRUNED = "interlock_pruned_operations"
_COLUMNS = (
    ("consumer", sa.Text(), True, None),
    ("lease_until", sa.Float(), True, None),
    ("claims", sa.Integer(), False, sa.text("0")),
    ("acked_at", sa.Float(), True, None),
)
_INDEXES: tuple[tuple[str, str, list[str], str | None], ...] = (
    ("ix_interlock_runs_unacked", RUNS, ["id"], "acked_at IS NULL"),
    ("ix_interlock_operations_task", "interlock_operations", ["task_id"], None),
    ("ix_interlock_tasks_workflow_step", "interlock_tasks", ["workflow_id", "step_id"], None),
)
_EPOCH = {
    "postgresql": "CAST(EXTRACT(EPOCH FROM clock_timestamp()) AS DOUBLE PRECISION)",
    "sqlite": "((julianday('now') - 2440587.5) * 86400.0)",
}


def _columns(bind: sa.Connection) -> set[str]:
    return {str(c["name"]) for c in sa.inspect(bind).get_columns(RUNS)}


def _indexes(bind: sa.Connection, table: str) -> set[str]:
    return {str(i["name"]) for i in sa.inspect(bind).get_indexes(table)}


def upgrade() -> None:
    bind = op.get_bind()
    had = _columns(bind)
    for name, type_, nullable, default in _COLUMNS:
        if name not in had:
            op.add_column(RUNS, sa.Column(name, type_, nullable=nullable, server_default=default))
    if "acked_at" not in had:  # the runs queued before the queue existed count as consumed (see above)
        op.execute(sa.text(f"UPDATE {RUNS} SET acked_at = {_EPOCH[bind.dialect.name]}, "
                           "consumer = '(before 0007)' WHERE acked_at IS NULL"))
    if PRUNED not in set(sa.inspect(bind).get_table_names()):
        op.create_table(
            PRUNED,
            sa.Column("op_key", sa.Text(), nullable=False),
            sa.Column("task_id", sa.Text(), nullable=True),
            sa.Column("pruned_at", sa.Float(), nullable=False),
            sa.PrimaryKeyConstraint("op_key", name="pk_interlock_pruned_operations"),
        )
    for name, table, cols, where in _INDEXES:
        if name not in _indexes(bind, table):
            clause = None if where is None else sa.text(where)
            op.create_index(name, table, cols, postgresql_where=clause, sqlite_where=clause)


def downgrade() -> None:
    bind = op.get_bind()
    for name, table, _, _ in _INDEXES:
        if name in _indexes(bind, table):
            op.drop_index(name, table_name=table)
    if PRUNED in set(sa.inspect(bind).get_table_names()):
        op.drop_table(PRUNED)
    have = _columns(bind)
    for name, _, _, _ in reversed(_COLUMNS):
        if name in have:
            op.execute(sa.text(f"ALTER TABLE {RUNS} DROP COLUMN {name}"))
