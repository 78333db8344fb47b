"""Operations are keyed on a digest and claimed before they run; decisions carry their own re-evaluation mark.

Revision ID: 0003
Revises: 0002
Create Date: 2026-12-01

ADR 0020: `interlock_operations` is keyed on `op_key`, the SHA-256 of the host's operation id
(hex), so an id of any length fits a B-tree on both dialects; the id itself is kept in
`operation_id` for records.  A row is `claimed` (by `claim_token`, until `lease_until`,
epoch seconds) while a delivery runs the operation's actions, `applied` once it took effect.
The runtime's own decision markers (`decision:<task>:<step>:<id>` rows, which shared the
host's namespace) become `interlock_decisions.evaluated_at`.

The table is rebuilt (its key changes): the old one is renamed, its rows copied in batches
with their digests computed here, then dropped.  Replayable: each step checks what is there.
The downgrade puts the old shape back with the applied rows and the decision markers (claims
in progress are dropped: the old schema cannot hold them).
"""

from __future__ import annotations

import hashlib
import re

import sqlalchemy as sa
from alembic import op

revision: str = "0003"
down_revision: str | None = "0002"
branch_labels: str | tuple[str, ...] | None = None
depends_on: str | tuple[str, ...] | None = None

OPS = "interlock_operations"
OLD = "interlock_operations_0002"
NEW = "interlock_operations_0003"
DECISIONS = "interlock_decisions"
BATCH = 1000
_DECISION_MARKER = re.compile(r"^decision:(?P<task>.*):(?P<step>[A-Za-z_][A-Za-z0-9_-]*):(?P<id>[0-9]+)$", re.S)


def _key(operation_id: str) -> str:
    return hashlib.sha256(operation_id.encode("utf-8", "surrogatepass")).hexdigest()


def _new_table(name: str) -> None:
    op.create_table(
        name,
        sa.Column("op_key", sa.Text(), nullable=False),
        sa.Column("operation_id", sa.Text(), nullable=False),
        sa.Column("task_id", sa.Text(), nullable=True),
        sa.Column("trigger", sa.Text(), nullable=True),
        sa.Column("state", sa.Text(), nullable=False),
        sa.Column("claim_token", sa.Text(), nullable=True),
        sa.Column("lease_until", sa.Float(), nullable=True),
        sa.Column("applied_at", sa.DateTime(timezone=True), nullable=True),
        sa.PrimaryKeyConstraint("op_key", name="pk_interlock_operations"),
        sa.CheckConstraint("state IN ('claimed', 'applied')", name="ck_interlock_operations_state"),
    )


def _columns(bind: sa.Connection, table: str) -> set[str]:
    return {c["name"] for c in sa.inspect(bind).get_columns(table)}


def upgrade() -> None:
    bind = op.get_bind()
    tables = set(sa.inspect(bind).get_table_names())
    if "evaluated_at" not in _columns(bind, DECISIONS):
        op.add_column(DECISIONS, sa.Column("evaluated_at", sa.DateTime(timezone=True), nullable=True))
    if OPS in tables and "op_key" in _columns(bind, OPS):
        return  # already at 0003
    if OPS in tables:
        op.rename_table(OPS, OLD)
    _new_table(OPS)
    if OPS not in tables and OLD not in tables:
        return
    last = ""
    while True:
        rows = bind.execute(sa.text(
            f'SELECT operation_id, task_id, "trigger", applied_at FROM {OLD} WHERE operation_id > :last '
            "ORDER BY operation_id LIMIT :n"), {"last": last, "n": BATCH}).all()
        if not rows:
            break
        last = rows[-1][0]
        host = []
        for operation_id, task_id, trigger, applied_at in rows:
            marker = _DECISION_MARKER.match(operation_id) if trigger == "decision" else None
            if marker is not None:
                bind.execute(sa.text(
                    f"UPDATE {DECISIONS} SET evaluated_at = :at WHERE id = :id AND evaluated_at IS NULL"),
                    {"at": applied_at, "id": int(marker["id"])})
                continue
            host.append({"key": _key(operation_id), "id": operation_id, "task_id": task_id, "trigger": trigger,
                         "at": applied_at})
        if host:
            bind.execute(sa.text(
                f'INSERT INTO {OPS} (op_key, operation_id, task_id, "trigger", state, applied_at) '
                "VALUES (:key, :id, :task_id, :trigger, 'applied', :at)"), host)
    op.drop_table(OLD)


def downgrade() -> None:
    bind = op.get_bind()
    tables = set(sa.inspect(bind).get_table_names())
    if OPS in tables and "op_key" in _columns(bind, OPS):
        op.rename_table(OPS, NEW)
        op.create_table(
            OPS,
            sa.Column("operation_id", sa.Text(), primary_key=True),
            sa.Column("task_id", sa.Text(), nullable=True),
            sa.Column("trigger", sa.Text(), nullable=True),
            sa.Column("applied_at", sa.DateTime(timezone=True), nullable=False),
        )
        op.execute(sa.text(
            f'INSERT INTO {OPS} (operation_id, task_id, "trigger", applied_at) '
            f"SELECT operation_id, task_id, \"trigger\", applied_at FROM {NEW} WHERE state = 'applied'"))
        op.drop_table(NEW)
    if "evaluated_at" in _columns(bind, DECISIONS):
        op.execute(sa.text(
            f'INSERT INTO {OPS} (operation_id, task_id, "trigger", applied_at) '
            f"SELECT 'decision:' || task_id || ':' || step_id || ':' || CAST(id AS TEXT), task_id, 'decision', "
            f"evaluated_at FROM {DECISIONS} d WHERE evaluated_at IS NOT NULL AND NOT EXISTS (SELECT 1 FROM {OPS} o "
            f"WHERE o.operation_id = 'decision:' || d.task_id || ':' || d.step_id || ':' || CAST(d.id AS TEXT))"))
        op.execute(sa.text(f"ALTER TABLE {DECISIONS} DROP COLUMN evaluated_at"))  # SQLite >= 3.35, as 0002
