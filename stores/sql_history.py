"""A task id in, every row the SQL store keeps about that task out (`read_history`: the `HistoryReader` side of
`SqlStore`, for `interlock inspect`; ADR 0046).

One read-only transaction, so the rows are one snapshot: PostgreSQL `BEGIN READ ONLY ISOLATION LEVEL REPEATABLE
READ`, SQLite a deferred `BEGIN` (a shared lock, never the write lock); it ends with ROLLBACK.  Only SELECTs
run, each driven by an index on the task (or the key a row of it names): the ledger's `(task_id, id)`, the
markers' primary key, the decisions' `(task_id, step_id, id)`, the runs' `(task_id, id)`, the seats'
`(task_id, role)`, the timers' `(task_id, entry_id)`, the incidents' `(task_id, id)`, the plans' digest.  The
operations table has no index on the task (its key is the operation id's digest): that read scans it
(benchmarks/inspect_latency.py measures it).  Times come back as epoch seconds of the database's clock.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, cast

from interlock.runtime.history import ArrivalRow, DecisionRow, OperationRow, RunRow, TaskHistory
from interlock.runtime.store import Decision, EntryRecord, Marker, MarkerState, QueuedRun

from ._common import attempted_value, failed_value, payload_value
from .sql_due import _COLS as _DUE_COLS
from .sql_due import _row as _due_row
from .sql_incidents import _COLS as _INCIDENT_COLS
from .sql_incidents import _incident
from .sql_rows import ledger as _ledger
from .sql_rows import participant as _participant
from .sql_rows import task as _task
from .statements import _DECISION_COLS, _LEDGER_COLS, _PARTICIPANT_COLS, _RUN_COLS, Q_NOW, Q_TASK, _in_list

if TYPE_CHECKING:
    from .connections import Tx
    from .sql_host import SqlHost

__all__ = ["read_history", "HISTORY_QUERIES"]

_EPOCH = {"postgresql": "CAST(EXTRACT(EPOCH FROM {c}) AS DOUBLE PRECISION)",
          "sqlite": "((julianday({c}) - 2440587.5) * 86400.0)"}

Q_ARRIVALS = (f"SELECT {_LEDGER_COLS}, entry_attempted, entry_failed, entry_recorded_at IS NOT NULL, "
              "{occurred} FROM interlock_step_transitions WHERE task_id = :task_id ORDER BY id")
Q_MARKERS = ('SELECT m.entry_id, m."position", m.kind, m.state, m.error, m.attempt FROM interlock_entry_markers m '
             "JOIN interlock_step_transitions l ON l.id = m.entry_id WHERE l.task_id = :task_id "
             'ORDER BY m.entry_id, m."position"')
Q_OPERATIONS = ('SELECT operation_id, "trigger", state, {applied} FROM interlock_operations '
                "WHERE task_id = :task_id")
Q_DECISIONS = (f"SELECT {_DECISION_COLS}, superseded_at IS NOT NULL, {{decided}} FROM interlock_decisions "
               "WHERE task_id = :task_id ORDER BY id")
Q_RUNS = f"SELECT {_RUN_COLS}, {{created}} FROM interlock_runs WHERE task_id = :task_id ORDER BY id"
Q_SEATS = f"SELECT {_PARTICIPANT_COLS} FROM interlock_participants WHERE task_id = :task_id ORDER BY id"
Q_TEMPLATE_SEATS = f"SELECT {_PARTICIPANT_COLS} FROM interlock_participants WHERE task_id = '' AND step_id IN {{steps}}"
Q_DUE = f"SELECT {_DUE_COLS} FROM interlock_timers WHERE task_id = :task_id ORDER BY due_at, id"
Q_INCIDENTS = f"SELECT {_INCIDENT_COLS} FROM interlock_incidents WHERE task_id = :task_id ORDER BY id"
Q_PLANS = "SELECT digest, plan FROM interlock_plans WHERE digest IN {digests}"

HISTORY_QUERIES: tuple[str, ...] = (Q_ARRIVALS, Q_MARKERS, Q_OPERATIONS, Q_DECISIONS, Q_RUNS, Q_SEATS, Q_DUE,
                                    Q_INCIDENTS)
"""The per-task reads (with `{…}` placeholders for the dialect's epoch of a column): what the benchmark EXPLAINs."""


def dialect_query(store: SqlHost, text: str, **extra: str) -> str:
    """`text` with each column's epoch put in for the store's dialect, in the driver's parameter style."""
    epoch = _EPOCH["postgresql" if store._shared.postgres else "sqlite"]
    cols = {"occurred": "occurred_at", "applied": "applied_at", "decided": "decided_at", "created": "created_at"}
    filled = text.format(**{k: epoch.format(c=v) for k, v in cols.items()}, **extra)
    return store._shared.sql(filled)


def read_history(store: SqlHost, task_id: str) -> TaskHistory | None:
    """Every row about `task_id` in one read-only snapshot; None when the store knows no such task."""
    shared = store._shared
    begin = "BEGIN READ ONLY ISOLATION LEVEL REPEATABLE READ" if shared.postgres else "BEGIN DEFERRED"

    def read(tx: Tx) -> TaskHistory | None:
        own = not shared.in_transaction(tx)
        if own:
            tx.cursor.execute(begin)
        elif tx.stamped is not None:  # in a unit: a row whose record has not come reads unrecorded
            shared.settle(tx)
        try:
            return _read(store, tx, task_id)
        finally:
            if own:
                tx.cursor.execute("ROLLBACK")

    return cast("TaskHistory | None", store._read("reading a task's history", read))


def _rows(store: SqlHost, tx: Tx, text: str, params: dict[str, Any], **extra: str) -> list[tuple[Any, ...]]:
    tx.cursor.execute(dialect_query(store, text, **extra), params)
    return list(tx.cursor.fetchall())


def _read(store: SqlHost, tx: Tx, task_id: str) -> TaskHistory | None:

    p = {"task_id": task_id}
    tx.cursor.execute(store._shared.sql(Q_TASK), {"id": task_id})
    found = tx.cursor.fetchone()
    ledger = _rows(store, tx, Q_ARRIVALS, p)
    if found is None and not ledger:
        return None
    markers: dict[int, list[Marker]] = {}
    for entry_id, position, kind, state, error, attempt in _rows(store, tx, Q_MARKERS, p):
        markers.setdefault(int(entry_id), []).append(Marker(int(entry_id), int(position), kind,
                                                            cast(MarkerState, state), error, int(attempt)))
    arrivals = []
    for r in ledger:
        row = _ledger(r[:12])
        entry = None
        if r[14] and row.to_workflow_id is not None and row.to_step_id is not None:
            entry = EntryRecord(row.id, row.task_id, row.to_workflow_id, row.to_step_id, attempted_value(r[12]),
                                failed_value(r[13]))
        at = None if r[15] is None else float(r[15])
        arrivals.append(ArrivalRow(row, entry, tuple(markers.get(row.id, ())), at, at or 0.0))
    operations = [OperationRow(op, trig, state, None if at is None else float(at),
                               float(at) if at is not None else float("inf"))
                  for op, trig, state, at in _rows(store, tx, Q_OPERATIONS, p)]
    operations.sort(key=lambda o: (o.seq, o.operation_id))
    decisions = [DecisionRow(Decision(task_id=t, step_id=s, decider_type=k, decider_id=d, role=role, verdict=v,
                                      id=int(i), session_id=sess, entry_id=None if e is None else int(e)),
                             bool(sup), None if at is None else float(at), float(at or 0.0))
                 for i, t, s, k, d, role, v, sess, e, sup, at in _rows(store, tx, Q_DECISIONS, p)]
    runs = [RunRow(QueuedRun(key=key, task_id=t, step_id=s, agent=a, reason=reason, payload=payload_value(pl),
                             entry_id=None if e is None else int(e), operation_id=op),
                   None if at is None else float(at), float(at or 0.0))
            for key, t, s, a, reason, pl, e, op, at in _rows(store, tx, Q_RUNS, p)]
    seats = [_participant(r) for r in _rows(store, tx, Q_SEATS, p)]
    steps = tuple(sorted({a.ledger.to_step_id for a in arrivals if a.ledger.to_step_id}
                         | ({found[2]} if found is not None and found[2] else set())))
    if steps:
        params: dict[str, Any] = {}
        seats += [_participant(r) for r in _rows(store, tx, Q_TEMPLATE_SEATS, params,
                                                   steps=_in_list("s", steps, params))]
    due = [_due_row(r) for r in _rows(store, tx, Q_DUE, p)]
    incidents = [_incident(r) for r in _rows(store, tx, Q_INCIDENTS, p)]
    digests = tuple(sorted({a.ledger.plan for a in arrivals if a.ledger.plan}))
    plans: dict[str, str] = {}
    if digests:
        params = {}
        plans = {str(d): str(t) for d, t in _rows(store, tx, Q_PLANS, params, digests=_in_list("d", digests, params))}
    if store._clock is not None:
        now = store._clock()
    else:
        tx.cursor.execute(store._shared.sql(Q_NOW))
        now = tx.cursor.fetchone()[0]
    return TaskHistory(task_id, None if found is None else _task(found), tuple(arrivals), tuple(operations),
                       tuple(decisions), tuple(runs), tuple(seats), tuple(due), tuple(incidents), plans, float(now))
