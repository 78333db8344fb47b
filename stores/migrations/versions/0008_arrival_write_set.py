"""Drop `interlock_tasks(workflow_id, step_id)`: every arrival changes a task's step, so every arrival paid for it.

Revision ID: 0008
Revises: 0007
Create Date: 2026-12-04

ADR 0057: 0007 added the index for the per-place counts of `interlock diff --store`.  That count reads every task
whatever the index (ADR 0047 measured the diff the same within noise with and without it), while each arrival
rewrote one of its entries: a page of the SQLite write-ahead log per arrival, and on PostgreSQL it kept the step
change from being a heap-only (HOT) update, so each arrival also inserted into the primary key.

Replayable: the index is dropped only when present.  The downgrade creates it again.
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision: str = "0008"
down_revision: str | None = "0007"
branch_labels: str | tuple[str, ...] | None = None
depends_on: str | tuple[str, ...] | None = None

TASKS = "interlock_tasks"
INDEX = "ix_interlock_tasks_workflow_step"


def _has_index(bind: sa.Connection) -> bool:
    return INDEX in {str(i["name"]) for i in sa.inspect(bind).get_indexes(TASKS)}


def upgrade() -> None:
    if _has_index(op.get_bind()):
        op.drop_index(INDEX, table_name=TASKS)


def downgrade() -> None:
    if not _has_index(op.get_bind()):
        op.create_index(INDEX, TASKS, ["workflow_id", "step_id"])
