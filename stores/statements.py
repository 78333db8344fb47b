"""The interlock tables in, the store's SQL statements out: fixed texts whose table and column names come from
`stores.schema`, turned into a dialect's parameter style once per engine (`Statements`).

`:name` parameters; PostgreSQL gets `%(name)s`.  Column lists are spelled out so rows come back as
plain tuples in a known order; "position" and "trigger" are quoted (keywords on some dialects).
Raw DBAPI execution of these texts is the store's speed device: an insert costs about 1.2 µs where
SQLAlchemy Core's `insert()` costs about 18 µs.
"""

from __future__ import annotations

import re
from typing import Any

from sqlalchemy import Table

from .schema import decisions, participants, runs, step_transitions, tasks

__all__ = ["Statements"]


def _columns(table: Table, *names: str) -> str:
    """A column list of `table`, checked against the schema (a name it does not have is an error here, at import,
    not a failing statement later); keywords quoted."""
    have = {c.name for c in table.c}
    missing = [n for n in names if n not in have]
    if missing:
        raise AssertionError(f"{table.name} has no column {missing}")
    return ", ".join(f'"{n}"' if n in ("position", "trigger") else n for n in names)

# come back as plain tuples in a known order.  "position" and "trigger" are quoted: keywords on some dialects.

_TASK_COLS = _columns(tasks, "id", "workflow_id", "step_id", "description", "is_from_office", "is_ephemeral", "archived",
                      "entry_id")
_LEDGER_COLS = _columns(step_transitions, "id", "task_id", "from_workflow_id", "from_step_id", "to_workflow_id",
                        "to_step_id", "route", "actor_kind", "actor_id", "session_id", "plan", "arrival_options")
_PARTICIPANT_COLS = _columns(participants, "id", "task_id", "workflow_id", "step_id", "role", "agent",
                             "decision_required", "position")
_DECISION_COLS = _columns(decisions, "id", "task_id", "step_id", "decider_type", "decider_id", "role", "verdict",
                          "session_id", "entry_id")

Q_TASK = f"SELECT {_TASK_COLS} FROM interlock_tasks WHERE id = :id"
I_TASK = ("INSERT INTO interlock_tasks (id, workflow_id, step_id, description, is_from_office, is_ephemeral, "
          "archived, created_at, updated_at, entry_id) VALUES (:id, :workflow_id, :step_id, :description, "
          ":is_from_office, :is_ephemeral, :archived, :now, :now, :entry_id)")
PUT_TASK = (I_TASK + " ON CONFLICT (id) DO UPDATE SET workflow_id = excluded.workflow_id, step_id = "
            "excluded.step_id, description = excluded.description, is_from_office = excluded.is_from_office, "
            "is_ephemeral = excluded.is_ephemeral, archived = excluded.archived, updated_at = excluded.updated_at, "
            "entry_id = excluded.entry_id")
CREATE_TASK = I_TASK + " ON CONFLICT (id) DO NOTHING"
U_TASK_ENTRY = "UPDATE interlock_tasks SET entry_id = :entry_id WHERE id = :id"
U_TASK_STEP = ("UPDATE interlock_tasks SET workflow_id = :workflow_id, step_id = :step_id, updated_at = :now, "
               "entry_id = :entry_id WHERE id = :id")

I_LEDGER = ("INSERT INTO interlock_step_transitions (task_id, from_workflow_id, from_step_id, to_workflow_id, "
            "to_step_id, route, actor_kind, actor_id, session_id, occurred_at, plan, entry_owner, arrival_options) "
            "VALUES (:task_id, :from_workflow_id, :from_step_id, :to_workflow_id, :to_step_id, :route, :actor_kind, "
            ":actor_id, :session_id, :now, :plan, :entry_owner, :arrival_options)")
# The row of an arrival whose entry record the caller writes in the same unit (`record_in_unit`): stamped as recorded
# already, so it never enters the partial index of unrecorded rows that the record would take it out of again, and the
# record itself changes no indexed column (PostgreSQL: a heap-only update).  Its `entry_attempted` stays NULL until the
# record; a unit that commits without the record takes the stamp off first (`U_UNSTAMP`, `Shared.settle`): no
# committed row is stamped without its record (ADR 0057).
I_LEDGER_STAMPED = I_LEDGER.replace("arrival_options) VALUES", "arrival_options, entry_recorded_at) VALUES").replace(
    ":arrival_options)", ":arrival_options, :now)")
U_ENTRY_STAMPED = ("UPDATE interlock_step_transitions SET entry_attempted = :attempted, entry_failed = :failed "
                   "WHERE id = :entry_id AND entry_attempted IS NULL AND entry_recorded_at IS NOT NULL "
                   "AND task_id = :task_id AND to_workflow_id = :workflow_id AND to_step_id = :step_id")
U_UNSTAMP = "UPDATE interlock_step_transitions SET entry_recorded_at = NULL WHERE id = :id AND entry_attempted IS NULL"
# PostgreSQL, a move of a task read earlier in the same transaction (unlocked): the step change is a compare-and-swap
# on that row, and the ledger row is inserted from it under an id drawn for both; one statement where the locked read,
# the insert and the update were three.  No row comes back when the task changed meanwhile: the caller reads it
# locked and moves it as before (ADR 0057).
_SEEN = ("WITH t AS (UPDATE interlock_tasks SET workflow_id = :to_workflow_id, step_id = :to_step_id, updated_at = :now, "
         "entry_id = nextval(pg_get_serial_sequence('interlock_step_transitions', 'id')) WHERE id = :task_id "
         "AND workflow_id IS NOT DISTINCT FROM :from_workflow_id AND step_id IS NOT DISTINCT FROM :from_step_id "
         "AND entry_id IS NOT DISTINCT FROM :seen_entry_id AND description = :seen_description "
         "AND is_from_office = :seen_is_from_office AND is_ephemeral = :seen_is_ephemeral "
         "AND archived = :seen_archived RETURNING entry_id) "
         "INSERT INTO interlock_step_transitions (id, task_id, from_workflow_id, from_step_id, to_workflow_id, "
         "to_step_id, route, actor_kind, actor_id, session_id, occurred_at, plan, entry_owner, arrival_options{cols}) "
         "SELECT entry_id, :task_id, :from_workflow_id, :from_step_id, :to_workflow_id, :to_step_id, :route, "
         ":actor_kind, :actor_id, :session_id, :now, :plan, :entry_owner, :arrival_options{values} FROM t RETURNING id")
MOVE_SEEN = _SEEN.format(cols="", values="")
MOVE_SEEN_STAMPED = _SEEN.format(cols=", entry_recorded_at", values=", :now")
Q_LEDGER_ROW = f"SELECT {_LEDGER_COLS} FROM interlock_step_transitions WHERE id = :id"
Q_LEDGER_ID = "SELECT 1 FROM interlock_step_transitions WHERE id = :id"
Q_LEDGER = f"SELECT {_LEDGER_COLS} FROM interlock_step_transitions ORDER BY id"
Q_LEDGER_OF = f"SELECT {_LEDGER_COLS} FROM interlock_step_transitions WHERE task_id = :task_id ORDER BY id"
_ALIVE = ("EXISTS (SELECT 1 FROM interlock_owners w WHERE w.owner_id = {owner} AND NOT w.stopped "
          "AND w.heartbeat_at + w.lease >= {epoch})")
"""Whether the owner named by the SQL expression `{owner}` is live on the store's clock."""
Q_UNRECORDED = (f"SELECT {_LEDGER_COLS} FROM interlock_step_transitions WHERE entry_recorded_at IS NULL "
                "AND to_step_id IS NOT NULL AND to_workflow_id IS NOT NULL AND id > :after "
                "AND (entry_owner IS NULL OR entry_owner = :owner OR NOT "
                + _ALIVE.format(owner="entry_owner", epoch="{EPOCH}") + ") ORDER BY id LIMIT :limit")
Q_ENTRY_CLAIM = (f"SELECT {_LEDGER_COLS}, entry_recorded_at IS NOT NULL, entry_owner, "
                 "CASE WHEN entry_owner IS NULL THEN 0 WHEN " + _ALIVE.format(owner="entry_owner", epoch="{EPOCH}")
                 + " THEN 1 ELSE 0 END FROM interlock_step_transitions WHERE id = :id")
U_ENTRY_CLAIM = ("UPDATE interlock_step_transitions SET entry_owner = :owner, plan = COALESCE(plan, :plan) "
                 "WHERE id = :id AND entry_recorded_at IS NULL")

_IF_LEDGER_ROW = "WHERE EXISTS (SELECT 1 FROM interlock_step_transitions WHERE id = :entry_id)"
# An entry record is three columns of its ledger row (ADR 0013), written once: NULL until recorded.
Q_ENTRY = ("SELECT task_id, to_workflow_id, to_step_id, entry_attempted, entry_failed FROM interlock_step_transitions "
           "WHERE id = :id AND entry_recorded_at IS NOT NULL")
I_ENTRY = ("UPDATE interlock_step_transitions SET entry_attempted = :attempted, entry_failed = :failed, "
           "entry_recorded_at = :now WHERE id = :entry_id AND entry_recorded_at IS NULL AND task_id = :task_id "
           "AND to_workflow_id = :workflow_id AND to_step_id = :step_id")
Q_ENTRY_ROW = ("SELECT task_id, to_workflow_id, to_step_id, entry_recorded_at IS NOT NULL "
               "FROM interlock_step_transitions WHERE id = :id")
Q_MARKERS = ('SELECT "position", kind, state, error, attempt FROM interlock_entry_markers WHERE entry_id = :id '
             'ORDER BY "position"')
I_MARKER = ('INSERT INTO interlock_entry_markers (entry_id, "position", kind, state, error, claimed_at, updated_at) '
            f"SELECT :entry_id, :position, :kind, 'in_progress', NULL, :now, :now {_IF_LEDGER_ROW} "
            'ON CONFLICT (entry_id, "position") DO NOTHING')
U_MARKER = ("UPDATE interlock_entry_markers SET state = :state, error = :error, updated_at = :now "
            'WHERE entry_id = :entry_id AND "position" = :position')
Q_MARKER = ('SELECT kind, state, error, attempt FROM interlock_entry_markers WHERE entry_id = :entry_id '
            'AND "position" = :position')
U_MARKER_RETRY = ("UPDATE interlock_entry_markers SET attempt = attempt + 1, updated_at = :now "
                  "WHERE entry_id = :entry_id AND \"position\" = :position AND state = 'in_progress'")

Q_OPERATION = "SELECT state FROM interlock_operations WHERE op_key = :key"
I_OPERATION = ('INSERT INTO interlock_operations (op_key, operation_id, task_id, "trigger", state, applied_at) '
               "VALUES (:key, :id, :task_id, :trigger, 'applied', :now) ON CONFLICT (op_key) DO UPDATE SET "
               "state = 'applied', applied_at = excluded.applied_at, claim_token = NULL, owner_id = NULL "
               "WHERE interlock_operations.state = 'claimed'")
I_CLAIM = ('INSERT INTO interlock_operations (op_key, operation_id, task_id, "trigger", state, claim_token, '
           "owner_id) SELECT :key, :id, :task_id, :trigger, 'claimed', :token, :owner "
           # an operation `prune` deleted keeps its fingerprint: never claimed again (ADR 0047)
           "WHERE NOT EXISTS (SELECT 1 FROM interlock_pruned_operations p WHERE p.op_key = :key) "
           "ON CONFLICT (op_key) DO NOTHING")
U_TAKE_OVER = ("UPDATE interlock_operations SET claim_token = :token, owner_id = :owner "
               "WHERE op_key = :key AND state = 'claimed' AND (owner_id IS NULL OR NOT "
               + _ALIVE.format(owner="interlock_operations.owner_id", epoch="{EPOCH}") + ")")
Q_ALL_CLAIMS = "SELECT operation_id, claim_token FROM interlock_operations WHERE state = 'claimed' LIMIT :limit"
Q_CLAIMS = ("SELECT operation_id, claim_token FROM interlock_operations WHERE state = 'claimed' "
            "AND (owner_id IS NULL OR owner_id = :owner OR NOT "
            + _ALIVE.format(owner="interlock_operations.owner_id", epoch="{EPOCH}") + ") LIMIT :limit")
D_CLAIM = "DELETE FROM interlock_operations WHERE op_key = :key AND state = 'claimed' AND claim_token = :token"
Q_EVALUATED = "SELECT evaluated_at IS NOT NULL FROM interlock_decisions WHERE id = :id"
U_EVALUATED = "UPDATE interlock_decisions SET evaluated_at = :now WHERE id = :id AND evaluated_at IS NULL"

I_RUN = ("INSERT INTO interlock_runs (idempotency_key, task_id, step_id, agent, reason, payload, entry_id, "
         "operation_id, created_at) VALUES (:key, :task_id, :step_id, :agent, :reason, :payload, :entry_id, "
         ":operation_id, :now) ON CONFLICT (idempotency_key) DO NOTHING")
_RUN_COLS = _columns(runs, "idempotency_key", "task_id", "step_id", "agent", "reason", "payload", "entry_id",
                     "operation_id")
Q_RUNS = f"SELECT {_RUN_COLS} FROM interlock_runs ORDER BY id"
Q_RUNS_OF = f"SELECT {_RUN_COLS} FROM interlock_runs WHERE task_id = :task_id ORDER BY id"

PUT_PARTICIPANT = ('INSERT INTO interlock_participants (task_id, step_id, role, agent, workflow_id, '
                   'decision_required, "position") VALUES (:task_id, :step_id, :role, :agent, :workflow_id, '
                   ':decision_required, :position) ON CONFLICT (task_id, step_id, role, agent) DO UPDATE SET '
                   'workflow_id = excluded.workflow_id, decision_required = excluded.decision_required, '
                   '"position" = excluded."position"')
I_SEAT = ('INSERT INTO interlock_participants (task_id, workflow_id, step_id, role, agent, decision_required, '
          "\"position\") VALUES (:task_id, '', :step_id, :role, :agent, :decision_required, 0) "
          "ON CONFLICT (task_id, step_id, role, agent) DO NOTHING")
ADVISORY_LOCK = "SELECT pg_advisory_xact_lock(CAST(:ns AS integer), hashtext(:key))"

_SAME_DECIDER = ("task_id = :task_id AND step_id = :step_id AND decider_type = :decider_type AND "
                 "decider_id = :decider_id AND role = :role AND superseded_at IS NULL")
SUPERSEDE = f"UPDATE interlock_decisions SET superseded_at = :now WHERE {_SAME_DECIDER}"
I_DECISION = ("INSERT INTO interlock_decisions (task_id, step_id, decider_type, decider_id, role, verdict, "
              "session_id, decided_at, entry_id) VALUES (:task_id, :step_id, :decider_type, :decider_id, :role, "
              ":verdict, :session_id, :now, :entry_id)")
Q_DECISIONS = (f"SELECT {_DECISION_COLS} FROM interlock_decisions WHERE task_id = :task_id AND step_id = :step_id "
               "AND superseded_at IS NULL ORDER BY id")
Q_UNEVALUATED = (f"SELECT {_DECISION_COLS} FROM interlock_decisions WHERE superseded_at IS NULL AND evaluated_at "
                 "IS NULL ORDER BY id LIMIT :limit")
I_PLAN = "INSERT INTO interlock_plans (digest, plan, saved_at) VALUES (:digest, :plan, {EPOCH}) " \
         "ON CONFLICT (digest) DO NOTHING"
Q_PLAN = "SELECT plan FROM interlock_plans WHERE digest = :digest"
I_OWNER = ("INSERT INTO interlock_owners (owner_id, host, pid, plan, started_at, heartbeat_at, lease, stopped) "
           "VALUES (:owner, :host, :pid, :plan, {EPOCH}, {EPOCH}, :lease, :stopped) ON CONFLICT (owner_id) DO UPDATE "
           "SET heartbeat_at = excluded.heartbeat_at, lease = excluded.lease, stopped = excluded.stopped")
U_HEARTBEAT = ("UPDATE interlock_owners SET heartbeat_at = {EPOCH} WHERE owner_id = :owner AND NOT stopped")
U_STOP_OWNER = "UPDATE interlock_owners SET stopped = :stopped WHERE owner_id = :owner"
Q_OWNERS = ("SELECT owner_id, host, pid, plan, started_at, heartbeat_at, lease, stopped, "
            "CASE WHEN NOT stopped AND heartbeat_at + lease >= {EPOCH} THEN 1 ELSE 0 END "
            "FROM interlock_owners ORDER BY started_at, owner_id")
Q_NOW = "SELECT {EPOCH}"
CLEAR_DECISIONS = ("UPDATE interlock_decisions SET superseded_at = :now WHERE task_id = :task_id AND "
                   "step_id = :step_id AND superseded_at IS NULL")

_PARAM = re.compile(r"(?<![:\w]):(\w+)")
_NOW_PARAM = re.compile(r"(?<![:\w]):now\b")

CLOCK = {
    # the store's clock as epoch seconds, and as the timestamp the DATETIME columns keep: the database's, so that
    # every host of a deployment reads one clock (docs/runtime.md, "Deployments")
    "postgresql": ("CAST(EXTRACT(EPOCH FROM clock_timestamp()) AS DOUBLE PRECISION)", "now()"),
    "sqlite": ("((julianday('now') - 2440587.5) * 86400.0)", "(strftime('%Y-%m-%d %H:%M:%f', 'now') || '000')"),
}
"""Per dialect: (epoch seconds, timestamp) SQL expressions of the database's clock."""


def dialect_sql(text: str, postgres: bool) -> str:
    """`text` with the store's clock put in (`{EPOCH}`, and `:now` as the timestamp) for the dialect."""
    epoch, stamp = CLOCK["postgresql" if postgres else "sqlite"]
    return _NOW_PARAM.sub(stamp, text.replace("{EPOCH}", epoch))


def _in_list(prefix: str, values: tuple[str, ...], params: dict[str, Any]) -> str:
    """`(:prefix0, :prefix1, …)` for an IN list, its values added to `params`."""
    names = [f"{prefix}{i}" for i in range(len(values))]
    params.update(zip(names, values))
    return "(" + ", ".join(":" + n for n in names) + ")"



class Statements:
    """Every statement of the store in one dialect's parameter style, turned once per engine (sqlite3 takes
    `:name` as written; psycopg `%(name)s`)."""

    def __init__(self, postgres: bool, returning: bool) -> None:
        self.postgres = postgres
        self._cache: dict[str, str] = {}
        sql = self.sql
        self.q_task = sql(Q_TASK)
        self.q_task_lock = sql(Q_TASK + (" FOR UPDATE" if self.postgres else ""))
        self.create_task = sql(CREATE_TASK)
        self.u_task_step = sql(U_TASK_STEP)
        self.i_ledger = sql(I_LEDGER + (" RETURNING id" if returning else ""))
        self.i_ledger_stamped = sql(I_LEDGER_STAMPED + (" RETURNING id" if returning else ""))
        self.u_entry_stamped = sql(U_ENTRY_STAMPED)
        self.u_unstamp = sql(U_UNSTAMP)
        self.move_seen = sql(MOVE_SEEN) if postgres else ""
        self.move_seen_stamped = sql(MOVE_SEEN_STAMPED) if postgres else ""
        self.q_ledger_row = sql(Q_LEDGER_ROW)
        self.q_ledger_id = sql(Q_LEDGER_ID)
        self.q_entry = sql(Q_ENTRY)
        self.i_entry = sql(I_ENTRY)
        self.q_entry_row = sql(Q_ENTRY_ROW)
        self.q_markers = sql(Q_MARKERS)
        self.i_marker = sql(I_MARKER)
        self.u_marker = sql(U_MARKER)
        self.q_operation = sql(Q_OPERATION)
        self.i_operation = sql(I_OPERATION)
        self.u_evaluated = sql(U_EVALUATED)
        self.i_run = sql(I_RUN)
        self.i_decision = sql(I_DECISION + (" RETURNING id" if returning else ""))

    def sql(self, text: str) -> str:
        """`text` with the store's clock put in, in the driver's parameter style."""
        done = self._cache.get(text)
        if done is None:
            done = dialect_sql(text, self.postgres)
            if self.postgres:
                done = _PARAM.sub(r"%(\1)s", done.replace("%", "%%"))
            self._cache[text] = done
        return done
