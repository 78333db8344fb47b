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
- JSON values are stored as text (`attempted`, `failed`, `payload`, `arrival_options`): the
  same bytes on both dialects, no JSON operator is ever needed in a query.
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
    "participants", "decisions", "plans", "owners", "timers", "incidents", "pruned_operations", "VERSION_TABLE",
    "TABLE_NAMES",
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
    # the task's current activation: the ledger id of the arrival that put it on its step (ADR 0037's fence);
    # NULL for a task written as pre-existing state
    Column("entry_id", Id, nullable=True),
    # no index on (workflow_id, step_id): every arrival would rewrite it, and what reads by place (`diff --store`)
    # reads every task anyway (ADR 0057)
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
    # the arrival's one-shot entry options (ADR 0043): a JSON object as text, NULL when none were given
    Column("arrival_options", Text, nullable=True),
    # the entry record (ADR 0013): the kinds attempted and failed (JSON text), when it was recorded
    Column("entry_attempted", Text, nullable=True),
    Column("entry_failed", Text, nullable=True),
    _ts("entry_recorded_at", nullable=True),
    # the plan revision that decided the row and under which its entry runs to the end (ADR 0037); NULL for a
    # row a host wrote whose entry no runtime has taken up yet
    Column("plan", Text, nullable=True),
    # the runtime owner dispatching the entry (ADR 0036): NULL when nobody is; `recover` takes up a row whose
    # owner's heartbeat ran out
    Column("entry_owner", Text, nullable=True),
    # A→B→A→B is four rows: no unique constraint on purpose.
    Index("ix_interlock_step_transitions_task", "task_id", "id"),
    # what `recover` reads: the rows whose entry is not recorded, a handful among millions
    Index("ix_interlock_step_transitions_unrecorded", "id",
          postgresql_where=text("entry_recorded_at IS NULL AND to_step_id IS NOT NULL"),
          sqlite_where=text("entry_recorded_at IS NULL AND to_step_id IS NOT NULL")),
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
    Column("attempt", Integer, nullable=False, server_default=text("1")),  # 1-based: the tries started
    _ts("claimed_at"),
    _ts("updated_at"),
    PrimaryKeyConstraint("entry_id", "position", name="pk_interlock_entry_markers"),
    CheckConstraint("state IN ('in_progress', 'done', 'failed')", name="ck_interlock_entry_markers_state"),
    Index("ix_interlock_entry_markers_in_progress", "entry_id", postgresql_where=text("state = 'in_progress'"),
          sqlite_where=text("state = 'in_progress'")),
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
    Column("owner_id", Text, nullable=True),  # the runtime owner of the claim: live while its heartbeat is
    _ts("applied_at", nullable=True),
    PrimaryKeyConstraint("op_key", name="pk_interlock_operations"),
    CheckConstraint("state IN ('claimed', 'applied')", name="ck_interlock_operations_state"),
    Index("ix_interlock_operations_claimed", "op_key", postgresql_where=text("state = 'claimed'"),
          sqlite_where=text("state = 'claimed'")),
    Index("ix_interlock_operations_task", "task_id"),  # what `inspect` and `prune` read a task's operations by
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
    # the run queue (ADR 0047): the consumer holding the run and until when (the store's clock, epoch seconds),
    # how many claims it has had, and when it was acknowledged (NULL: pending or claimed)
    Column("consumer", Text, nullable=True),
    Column("lease_until", Float, nullable=True),
    Column("claims", Integer, nullable=False, server_default=text("0")),
    Column("acked_at", Float, nullable=True),
    UniqueConstraint("idempotency_key", name="uq_interlock_runs_key"),
    Index("ix_interlock_runs_task", "task_id", "id"),
    # what `claim_runs` reads: the runs not acknowledged, a handful among millions
    Index("ix_interlock_runs_unacked", "id", postgresql_where=text("acked_at IS NULL"),
          sqlite_where=text("acked_at IS NULL")),
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
    Column("entry_id", Id, nullable=True),  # the round: the task's activation the decision was made in
    CheckConstraint("decider_type IN ('agent', 'user')", name="ck_interlock_decisions_decider_type"),
    Index("ix_interlock_decisions_task_step", "task_id", "step_id", "id"),
    Index("ix_interlock_decisions_unevaluated", "id",
          postgresql_where=text("superseded_at IS NULL AND evaluated_at IS NULL"),
          sqlite_where=text("superseded_at IS NULL AND evaluated_at IS NULL")),
    # One active decision per decider and role: the backstop of `record_decision`'s supersede.
    Index("uq_interlock_decisions_active", "task_id", "step_id", "decider_type", "decider_id", "role",
          unique=True, postgresql_where=text("superseded_at IS NULL"),
          sqlite_where=text("superseded_at IS NULL")),
)

plans = Table(
    "interlock_plans", metadata,
    # every plan revision a runtime ran on this store, by digest: an entry finishes under its own (ADR 0037)
    Column("digest", Text, primary_key=True),
    Column("plan", Text, nullable=False),  # the plan's JSON as `dump_plan` writes it
    Column("saved_at", Float, nullable=False),  # the store's clock, epoch seconds
)

owners = Table(
    "interlock_owners", metadata,
    # one row per `Runtime`: claims name their owner, which is live while its heartbeat is (ADR 0036)
    Column("owner_id", Text, primary_key=True),
    Column("host", Text, nullable=False),  # for people reading the table: never used to judge liveness
    Column("pid", Integer, nullable=False),
    Column("plan", Text, nullable=True),
    Column("started_at", Float, nullable=False),  # the store's clock, epoch seconds
    Column("heartbeat_at", Float, nullable=False),
    Column("lease", Float, nullable=False),  # seconds after the last heartbeat that the owner counts as live
    Column("stopped", Boolean, nullable=False, server_default=false()),
)

timers = Table(
    "interlock_timers", metadata,
    # due rows (docs/runtime.md §7): a step's `after`/`every` timer of one entry, or a retry of an entry position or
    # an operation; times are the store's clock, epoch seconds.  Ids are never reused (a compare-and-swap on
    # (id, slot) must not hit a newer row).
    Column("id", Id, primary_key=True, autoincrement=True),
    Column("task_id", Text, nullable=False),
    Column("entry_id", Id, nullable=False),  # the activation the row belongs to: it never fires for another
    Column("workflow_id", Text, nullable=False),
    Column("step_id", Text, nullable=False),
    Column("kind", Text, nullable=False),  # after | every | retry
    Column("label", Text, nullable=False),
    Column("position", Integer, nullable=False),  # the timer's index, the retried entry position, or -1 (operation)
    Column("period", Integer, nullable=False),
    Column("armed_at", Float, nullable=False),
    Column("slot", Integer, nullable=False),  # the next slot (timers) or attempt (retries): the compare-and-swap's
    Column("due_at", Float, nullable=False),
    Column("plan", Text, nullable=True),
    Column("operation_id", Text, nullable=True),  # a retried operation, as the host gave it
    Column("trigger", Text, nullable=True),
    Column("payload", Text, nullable=True),  # JSON object text
    Column("session_id", Text, nullable=True),
    # what makes arming and scheduling insert-or-ignore: t:<entry>:<position>, r:e:<entry>:<position>,
    # r:o:<SHA-256 of the operation id> (stores/_due_rules.py)
    Column("dedupe", Text, nullable=False),
    CheckConstraint("kind IN ('after', 'every', 'retry')", name="ck_interlock_timers_kind"),
    UniqueConstraint("dedupe", name="uq_interlock_timers_dedupe"),
    Index("ix_interlock_timers_due", "due_at", "id"),  # what `due` and `next_due` read
    Index("ix_interlock_timers_task", "task_id", "entry_id"),  # what `disarm` and `due_rows` read
    sqlite_autoincrement=True,
)

incidents = Table(
    "interlock_incidents", metadata,
    # failures nothing will retry (docs/runtime.md §7): one row per entry (`entry:<id>`) or operation (`op:<id>`)
    Column("id", Id, primary_key=True, autoincrement=True),
    Column("key", Text, nullable=False),
    Column("task_id", Text, nullable=False),
    Column("kind", Text, nullable=False),  # entry | operation
    Column("failures", Text, nullable=False),  # JSON text: [[position, kind, error], ...]
    Column("error", Text, nullable=False),
    Column("attempts", Integer, nullable=False),
    Column("state", Text, nullable=False),  # open | redriving (by `owner_id`) | resolved
    Column("opened_at", Float, nullable=False),  # the store's clock, epoch seconds
    Column("updated_at", Float, nullable=False),
    Column("entry_id", Id, nullable=True),
    Column("workflow_id", Text, nullable=True),
    Column("step_id", Text, nullable=True),
    Column("plan", Text, nullable=True),
    Column("operation_id", Text, nullable=True),
    Column("trigger", Text, nullable=True),
    Column("payload", Text, nullable=True),
    Column("session_id", Text, nullable=True),
    Column("owner_id", Text, nullable=True),
    Column("resolution", Text, nullable=True),
    Column("note", Text, nullable=True),
    CheckConstraint("kind IN ('entry', 'operation')", name="ck_interlock_incidents_kind"),
    CheckConstraint("state IN ('open', 'redriving', 'resolved')", name="ck_interlock_incidents_state"),
    UniqueConstraint("key", name="uq_interlock_incidents_key"),
    # the incidents not resolved: a handful among millions
    Index("ix_interlock_incidents_unresolved", "id", postgresql_where=text("state <> 'resolved'"),
          sqlite_where=text("state <> 'resolved'")),
    Index("ix_interlock_incidents_task", "task_id", "id"),
    sqlite_autoincrement=True,
)

pruned_operations = Table(
    "interlock_pruned_operations", metadata,
    # what `prune` leaves of an applied operation it deleted (ADR 0047): its key (the SHA-256 of the id), so that a
    # redelivery of the id is refused (`pruned`), never run again
    Column("op_key", Text, nullable=False),
    Column("task_id", Text, nullable=True),
    Column("pruned_at", Float, nullable=False),  # the store's clock, epoch seconds
    PrimaryKeyConstraint("op_key", name="pk_interlock_pruned_operations"),
)

TABLE_NAMES: tuple[str, ...] = tuple(t.name for t in metadata.sorted_tables)
"""Every interlock table, parents before children."""
