"""Runs, seats and decisions on the SQL store: the part of `SqlStore` that writes and reads `interlock_runs`,
`interlock_participants` and `interlock_decisions` (`SqlSeats`).

On PostgreSQL `ensure_seat` takes a transaction advisory lock on (task, role), so its workflow-wide existence check
and insert are one step, and `record_decision` one on the decider's key, so supersede-and-insert never races; the
unique indexes stay the backstop (`record_decision` retries in a savepoint if a writer that bypasses the lock
wins).  `SqlStore` (`stores/sql.py`) takes these methods in as a base class; they name the store through the
`SqlHost` protocol (`stores/sql_host.py`).
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import replace
from typing import TYPE_CHECKING, Any

from interlock.runtime.store import Decision, Participant, QueuedRun, StoreError

from ._common import check_decider, check_seat_task, payload_text, payload_value, steps_tuple
from .connections import Savepoint
from .engine import ADVISORY_NAMESPACE
from .sql_ledger import insert_id
from .sql_rows import participant as _participant
from .statements import (
    _PARTICIPANT_COLS,
    ADVISORY_LOCK,
    CLEAR_DECISIONS,
    I_SEAT,
    PUT_PARTICIPANT,
    Q_DECISIONS,
    Q_RUNS,
    Q_RUNS_OF,
    Q_UNEVALUATED,
    SUPERSEDE,
    _in_list,
)

if TYPE_CHECKING:
    from .connections import Shared, Tx
    from .sql_host import SqlHost

__all__ = ["SqlSeats", "SEAT_LOCK_KEY", "DECISION_LOCK_KEY", "advisory_lock"]

SEAT_LOCK_KEY = 2
"""Advisory locks of `ensure_seat` use `ADVISORY_NAMESPACE + SEAT_LOCK_KEY` and a hash of (task, role)."""

DECISION_LOCK_KEY = 3
"""Advisory locks of `record_decision` use `ADVISORY_NAMESPACE + DECISION_LOCK_KEY` and a hash of the decider key."""

_DECISION_ATTEMPTS = 3


def advisory_lock(sh: Shared, tx: Tx, space: int, *key: str) -> None:
    """PostgreSQL: serialise this transaction with others on the same key (SQLite writers are serial already)."""
    if sh.postgres:
        tx.cursor.execute(sh.sql(ADVISORY_LOCK), {"ns": ADVISORY_NAMESPACE + space, "key": "\x1f".join(key)})
        tx.cursor.fetchall()


class SqlSeats:
    """Queued runs, seats and decisions of `SqlStore` (see the module's docstring)."""

    __slots__ = ()

    def enqueue_run(self: SqlHost, run: QueuedRun) -> bool:
        """Queue a run; False (and nothing written) if a run with this key exists."""
        params: dict[str, Any] = {"key": run.key, "task_id": run.task_id, "step_id": run.step_id, "agent": run.agent,
                  "reason": run.reason, "payload": payload_text(run.payload) if run.payload else "{}", "entry_id": run.entry_id,
                  "operation_id": run.operation_id, "now": None}
        with self._tx("queueing a run") as tx:
            params["now"] = self._shared.stamp(tx)
            tx.cursor.execute(self._shared.stmt.i_run, params)
            return bool(tx.cursor.rowcount == 1)

    def runs(self: SqlHost, task_id: str | None = None) -> list[QueuedRun]:
        """Queued runs in the order they were queued (all tasks, or one)."""
        sql = self._shared.sql(Q_RUNS if task_id is None else Q_RUNS_OF)
        return [QueuedRun(key=key, task_id=task, step_id=step, agent=agent, reason=reason,
                          payload=payload_value(payload), entry_id=None if entry is None else int(entry),
                          operation_id=operation)
                for key, task, step, agent, reason, payload, entry, operation
                in self._rows("reading runs", sql, {"task_id": task_id})]

    def add_participant(self: SqlHost, participant: Participant) -> None:
        """Insert a seat, or update the one with the same (task, step, role, agent); the store assigns the id."""
        params = {"task_id": participant.task_id, "step_id": participant.step_id, "role": participant.role,
                  "agent": participant.agent, "workflow_id": participant.workflow_id,
                  "decision_required": bool(participant.decision_required), "position": participant.position}
        with self._tx("writing a participant") as tx:
            tx.cursor.execute(self._shared.sql(PUT_PARTICIPANT), params)

    def participants(self: SqlHost, task_id: str, workflow_steps: Iterator[str] | tuple[str, ...]) -> list[Participant]:
        """Per-task seats at any of `workflow_steps` plus template rows of those steps, by id."""
        steps = steps_tuple(workflow_steps)
        if not steps:
            return []
        params: dict[str, Any] = {}
        tasks_in = _in_list("t", tuple(sorted({task_id, ""})), params)
        steps_in = _in_list("s", steps, params)
        sql = self._shared.sql(f"SELECT {_PARTICIPANT_COLS} FROM interlock_participants WHERE task_id IN {tasks_in} "
                               f"AND step_id IN {steps_in} ORDER BY id")
        return [_participant(row) for row in self._rows("reading participants", sql, params)]

    def ensure_seat(self: SqlHost, task_id: str, step_id: str, role: str, agent: str,
                    workflow_steps: tuple[str, ...]) -> bool:
        """Write a per-task seat unless the task has a seat in `role` at any workflow step (or at `step_id`)."""
        check_seat_task(task_id)
        steps = tuple(dict.fromkeys((*steps_tuple(workflow_steps), step_id)))
        params: dict[str, Any] = {"task_id": task_id, "role": role}
        exists = self._shared.sql("SELECT 1 FROM interlock_participants WHERE task_id = :task_id AND role = :role "
                                  f"AND step_id IN {_in_list('s', steps, params)} LIMIT 1")
        with self._tx("ensuring a seat") as tx:
            advisory_lock(self._shared, tx, SEAT_LOCK_KEY, task_id, role)
            tx.cursor.execute(exists, params)
            if tx.cursor.fetchone() is not None:
                return False
            tx.cursor.execute(self._shared.sql(I_SEAT), {"task_id": task_id, "step_id": step_id, "role": role,
                                                         "agent": agent, "decision_required": True})
            return bool(tx.cursor.rowcount == 1)

    def record_decision(self: SqlHost, decision: Decision) -> Decision:
        """Store a decision, superseding the same decider's active one in that role; return it with its id."""
        check_decider(decision)
        sh = self._shared
        key = {"task_id": decision.task_id, "step_id": decision.step_id, "decider_type": decision.decider_type,
               "decider_id": decision.decider_id, "role": decision.role}
        with self._tx("recording a decision") as tx:
            advisory_lock(self._shared, tx, DECISION_LOCK_KEY, decision.task_id, decision.step_id, decision.decider_type,
                                decision.decider_id, decision.role)
            for attempt in range(1, _DECISION_ATTEMPTS + 1):
                now = sh.now()
                try:
                    with Savepoint(sh, tx, "recording a decision"):
                        tx.cursor.execute(sh.sql(SUPERSEDE), {**key, "now": now})
                        new_id = insert_id(self._shared, tx, sh.stmt.i_decision, {
                            **key, "verdict": decision.verdict, "session_id": decision.session_id, "now": now,
                            "entry_id": decision.entry_id})
                    return replace(decision, id=new_id)
                except StoreError as exc:
                    # A concurrent decision of the same decider won the active-row index: supersede it.
                    if attempt == _DECISION_ATTEMPTS or not isinstance(exc.__cause__, sh.dbapi.IntegrityError):
                        raise
        raise AssertionError("unreachable")  # pragma: no cover

    def decisions(self: SqlHost, task_id: str, step_id: str) -> list[Decision]:
        """Active decisions for a task at a step, oldest first."""
        rows = self._rows("reading decisions", self._shared.sql(Q_DECISIONS), {"task_id": task_id,
                                                                                 "step_id": step_id})
        return [Decision(task_id=task, step_id=step, decider_type=kind, decider_id=decider, role=role,
                         verdict=verdict, id=int(id_), session_id=session,
                         entry_id=None if entry is None else int(entry))
                for id_, task, step, kind, decider, role, verdict, session, entry in rows]

    def unevaluated_decisions(self: SqlHost, limit: int = 1000) -> list[Decision]:
        """Active decisions whose re-evaluation is not marked applied, oldest first."""
        rows = self._rows("reading decisions", self._shared.sql(Q_UNEVALUATED), {"limit": max(limit, 0)})
        return [Decision(task_id=task, step_id=step, decider_type=kind, decider_id=decider, role=role,
                         verdict=verdict, id=int(id_), session_id=session,
                         entry_id=None if entry is None else int(entry))
                for id_, task, step, kind, decider, role, verdict, session, entry in rows]

    def clear_decisions(self: SqlHost, task_id: str, step_id: str) -> int:
        """Supersede every active decision of the task at the step; return how many there were."""
        with self._tx("clearing decisions") as tx:
            tx.cursor.execute(self._shared.sql(CLEAR_DECISIONS), {"task_id": task_id, "step_id": step_id,
                                                                  "now": self._shared.now()})
            return int(tx.cursor.rowcount)

