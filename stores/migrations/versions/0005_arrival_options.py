"""A ledger row keeps its arrival's one-shot entry options.

Revision ID: 0005
Revises: 0004
Create Date: 2026-12-03

ADR 0043: `interlock_step_transitions.arrival_options` holds the entry options a move, a
creation or a transition gave its arrival (kandev's `instructions`, `skip_step_prompt`, …) as
the text of a JSON object, written in the row's own insert, so the options commit or roll back
with the arrival and every delivery of its entry (a redelivery, `recover`) reads the same
object.  NULL when none were given: every existing row reads as "no options".

Replayable: the column is added only when absent.  The downgrade drops it (SQLite >= 3.35 for
DROP COLUMN, as 0002), losing the options of arrivals whose entry has not run yet.

(This revision follows 0003; a 0004 written at the same time is re-chained before it on merge.)
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision: str = "0005"
down_revision: str | None = "0004"
branch_labels: str | tuple[str, ...] | None = None
depends_on: str | tuple[str, ...] | None = None

LEDGER = "interlock_step_transitions"
COLUMN = "arrival_options"


def _has_column(bind: sa.Connection) -> bool:
    return COLUMN in {c["name"] for c in sa.inspect(bind).get_columns(LEDGER)}


def upgrade() -> None:
    if not _has_column(op.get_bind()):
        op.add_column(LEDGER, sa.Column(COLUMN, sa.Text(), nullable=True))


def downgrade() -> None:
    if _has_column(op.get_bind()):
        op.execute(sa.text(f"ALTER TABLE {LEDGER} DROP COLUMN {COLUMN}"))
