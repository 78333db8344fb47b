"""Tasks and the ledger on the SQL store: the part of `SqlStore` that reads and writes `interlock_tasks` and
`interlock_step_transitions` (`SqlLedger`: `get_task`, `put_task`, `create_task`, `move_task`, the ledger's reads and
`claim_entry`), with the writers other parts share (`insert_id`, `write_ledger`).

`SqlStore` (`stores/sql.py`) takes these methods in as a base class; they name the store through the `SqlHost`
protocol (`stores/sql_host.py`), never by importing `stores/sql.py`.  `move_task` reads the task row `FOR UPDATE` on
PostgreSQL (SQLite write units begin IMMEDIATE, which serialises writers), so the compare-and-swap is exact and
every ledger row's `from` is the previous row's `to`; in a SQLite unit the row `get_task` read is kept on the
transaction (`Tx.task_row`) and `move_task` reuses it.
"""

from __future__ import annotations

from dataclasses import replace
from typing import TYPE_CHECKING, Any, cast

from interlock.runtime.frozen import builder
from interlock.runtime.store import EntryClaim, LedgerRow, MoveResult, StoreError, TaskState

from ._common import check_arrival_options, check_route, clean_id, exists_error, is_arrival
from .sql_operations import mark
from .sql_rows import ledger as _ledger
from .sql_rows import ledger_row as _ledger_row
from .sql_rows import task as _task
from .sql_rows import task_state as _task_state
from .statements import PUT_TASK, Q_ENTRY_CLAIM, Q_LEDGER, Q_LEDGER_OF, Q_UNRECORDED, U_ENTRY_CLAIM, U_TASK_ENTRY

if TYPE_CHECKING:
    from .connections import Shared, Tx
    from .sql_host import SqlHost

__all__ = ["SqlLedger", "insert_id", "write_ledger", "settle"]

_move_result = builder(MoveResult)


def settle(store: SqlHost) -> None:
    """Before a read of entry records in the store's open unit: the stamp of a row whose record has not come is
    taken off (`Shared.settle`), so the read sees the row as it would commit."""
    tx = store._conn if store._conn is not None else store._shared.open_unit()
    if tx is not None and tx.stamped is not None:
        store._shared.settle(tx)


def insert_id(sh: Shared, tx: Tx, sql: str, params: dict[str, Any]) -> int:
    """Run an INSERT (its RETURNING id where the database has it) and return the new row's id."""
    cur = tx.cursor
    cur.execute(sql, params)
    if sh.returning:
        return int(cur.fetchone()[0])
    rowid = cur.lastrowid
    if rowid is None:  # pragma: no cover - drivers with neither RETURNING nor lastrowid
        raise StoreError("the database driver reported no id for an inserted row")
    return int(rowid)


def write_ledger(sh: Shared, tx: Tx, task_id: str, from_wf: str | None, from_step: str | None, to_wf: str | None,
                 to_step: str | None, route: str, actor_kind: str, actor_id: str | None, session_id: str | None,
                 now: Any, plan: str | None = None, entry_owner: str | None = None,
                 arrival_options: str | None = None, stamped: bool = False) -> LedgerRow:
    """Insert a ledger row; `stamped`: as recorded already, its record to come in this transaction (`Tx.stamped`)."""
    ledger_id = insert_id(sh, tx, sh.stmt.i_ledger_stamped if stamped else sh.stmt.i_ledger, {
        "task_id": task_id, "from_workflow_id": from_wf, "from_step_id": from_step, "to_workflow_id": to_wf,
        "to_step_id": to_step, "route": route, "actor_kind": actor_kind, "actor_id": actor_id,
        "session_id": session_id, "now": now, "plan": plan, "entry_owner": entry_owner,
        "arrival_options": arrival_options})
    if stamped:
        tx.stamped = ledger_id
    return _ledger_row(ledger_id, task_id, from_wf, from_step, to_wf, to_step, route, actor_kind, actor_id,
                       session_id, plan, arrival_options)


def task_params(task: TaskState, now: Any) -> dict[str, Any]:
    return {"id": task.id, "workflow_id": clean_id(task.workflow_id), "step_id": clean_id(task.step_id),
            "description": task.description, "is_from_office": bool(task.is_from_office),
            "is_ephemeral": bool(task.is_ephemeral), "archived": bool(task.archived),
            "now": now, "entry_id": task.entry_id}


def _marks(sh: Shared, tx: Tx, task_id: str, operation_id: str | None, operation_trigger: str | None,
           decision_id: int | None) -> None:
    """What a move marks in its transaction: its operation applied, its decision evaluated."""
    if operation_id is not None:
        mark(sh, tx, operation_id, task_id, operation_trigger, None)
    if decision_id is not None:
        tx.cursor.execute(sh.stmt.u_evaluated, {"id": decision_id, "now": None})


def _move_seen(sh: Shared, tx: Tx, seen: tuple[Any, ...], task_id: str, to_wf: str | None, to_step: str | None,
               expected_step_id: str | None, expected_entry_id: int | None, ledger: dict[str, Any],
               stamped: bool) -> tuple[LedgerRow, TaskState] | None:
    """PostgreSQL: an arrival of the task `seen` (read unlocked earlier in this transaction) in one statement, a
    compare-and-swap on that row (`statements.MOVE_SEEN`); None when it does not apply (another task, no arrival, a
    compare-and-swap of the caller's to judge on the locked row) or the task changed meanwhile: nothing was written."""
    from_wf, from_step = seen[1], seen[2]
    if (seen[0] != task_id or (from_wf, from_step) == (to_wf, to_step) or not is_arrival(from_wf, from_step, to_wf,
                                                                                          to_step)
            or (expected_step_id is not None and from_step != expected_step_id)
            or (expected_entry_id is not None and seen[7] != expected_entry_id)):
        return None
    params = {**ledger, "task_id": task_id, "from_workflow_id": from_wf, "from_step_id": from_step,
              "to_workflow_id": to_wf, "to_step_id": to_step, "now": None, "seen_entry_id": seen[7],
              "seen_description": seen[3], "seen_is_from_office": seen[4], "seen_is_ephemeral": seen[5],
              "seen_archived": seen[6]}
    cur = tx.cursor
    cur.execute(sh.stmt.move_seen_stamped if stamped else sh.stmt.move_seen, params)
    got = cur.fetchone()
    if got is None:
        return None
    ledger_id = int(got[0])
    if stamped:
        tx.stamped = ledger_id
    row = _ledger_row(ledger_id, task_id, from_wf, from_step, to_wf, to_step, ledger["route"], ledger["actor_kind"],
                      ledger["actor_id"], ledger["session_id"], ledger["plan"], ledger["arrival_options"])
    return row, _task_state(task_id, to_wf, to_step, seen[3], bool(seen[4]), bool(seen[5]), bool(seen[6]), ledger_id)


class SqlLedger:
    """Tasks, the ledger and entry claims of `SqlStore` (see the module's docstring)."""

    __slots__ = ()

    def get_task(self: SqlHost, task_id: str) -> TaskState | None:
        sh = self._shared
        tx = self._conn if self._conn is not None else sh.open_unit()
        if tx is None:
            q = sh.stmt.q_task

            def read(tx: Tx) -> TaskState | None:
                tx.cursor.execute(q, {"id": task_id})
                row = tx.cursor.fetchone()
                return _task(row) if row is not None else None

            return cast("TaskState | None", self._read("reading a task", read))
        try:  # in a transaction: the row is kept for `move_task` (SQLite: locked; PostgreSQL: its compare-and-swap)
            tx.cursor.execute(sh.stmt.q_task, {"id": task_id})
            row = tx.cursor.fetchone()
        except sh.error_class as exc:
            raise sh.error(exc, tx, "reading a task") from exc
        tx.task_row = row
        return _task(row) if row is not None else None

    def _task_params(self: SqlHost, task: TaskState, now: Any) -> dict[str, Any]:
        return {"id": task.id, "workflow_id": clean_id(task.workflow_id), "step_id": clean_id(task.step_id),
                "description": task.description, "is_from_office": bool(task.is_from_office),
                "is_ephemeral": bool(task.is_ephemeral), "archived": bool(task.archived),
                "now": now, "entry_id": task.entry_id}

    def put_task(self: SqlHost, task: TaskState) -> None:
        """Insert or replace a task as pre-existing state: no ledger row, no arrival."""
        params = task_params(task, self._shared.now())
        with self._tx("writing a task") as tx:
            tx.task_row = None
            tx.cursor.execute(self._shared.sql(PUT_TASK), params)

    def create_task(self: SqlHost, task: TaskState, *, actor_kind: str = "system", actor_id: str | None = None,
                    session_id: str | None = None, plan: str | None = None, entry_owner: str | None = None,
                    operation_id: str | None = None, arrival_options: str | None = None,
                    record_in_unit: bool = False) -> MoveResult:
        """Insert a new task and write its genesis ledger row when it has a step (`StoreError` if it exists)."""
        check_arrival_options(arrival_options)
        params = task_params(task, None)
        params["entry_id"] = None
        created = replace(task, workflow_id=params["workflow_id"], step_id=params["step_id"], entry_id=None)
        write = self._tx("creating a task")
        with write as tx:
            tx.task_row = None
            row = None
            tx.cursor.execute(self._shared.stmt.create_task, params)
            if tx.cursor.rowcount != 1:
                raise exists_error(task.id)
            if created.step_id is not None:  # the genesis row, and the task's activation is that row
                row = write_ledger(self._shared, tx, task.id, None, None, created.workflow_id, created.step_id, "creation",
                                         actor_kind or "system", actor_id, session_id, None, plan, entry_owner,
                                         arrival_options, record_in_unit and not write.own and tx.stamped is None)
                tx.cursor.execute(self._shared.sql(U_TASK_ENTRY), {"id": task.id, "entry_id": row.id})
                created = replace(created, entry_id=row.id)
            if operation_id is not None:
                mark(self._shared, tx, operation_id, task.id, "creation", None)
        return MoveResult("moved" if row is not None else "same_step", row, created)

    def move_task(self: SqlHost, task_id: str, to_workflow_id: str | None, to_step_id: str | None, *, route: str,
                  actor_kind: str = "system", actor_id: str | None = None, session_id: str | None = None,
                  expected_step_id: str | None = None, operation_id: str | None = None,
                  operation_trigger: str | None = None, decision_id: int | None = None,
                  expected_entry_id: int | None = None, plan: str | None = None,
                  entry_owner: str | None = None, arrival_options: str | None = None,
                  record_in_unit: bool = False) -> MoveResult:
        """Change a task's step and write the ledger row in one transaction (see the protocol)."""
        check_route(route)
        check_arrival_options(arrival_options)
        to_wf, to_step = clean_id(to_workflow_id), clean_id(to_step_id)
        sh = self._shared
        write = self._tx("moving a task")
        with write as tx:
            cur = tx.cursor
            found = tx.task_row
            if sh.postgres and found is not None:  # read unlocked: moved by a compare-and-swap on it, or read again
                tx.task_row = None
                seen = _move_seen(sh, tx, found, task_id, to_wf, to_step, expected_step_id, expected_entry_id, {
                    "route": route, "actor_kind": actor_kind or "system", "actor_id": actor_id,
                    "session_id": session_id, "plan": plan, "entry_owner": entry_owner,
                    "arrival_options": arrival_options}, record_in_unit and not write.own and tx.stamped is None)
                if seen is not None:
                    _marks(sh, tx, task_id, operation_id, operation_trigger, decision_id)
                    return _move_result("moved", *seen)
                found = None
            if found is None or found[0] != task_id:
                cur.execute(sh.stmt.q_task_lock, {"id": task_id})
                found = cur.fetchone()
            if found is None:
                return MoveResult("unknown_task")
            from_wf, from_step = found[1], found[2]
            if ((expected_step_id is not None and from_step != expected_step_id)
                    or (expected_entry_id is not None and found[7] != expected_entry_id)):
                return MoveResult("cas_lost", None, _task(found))
            now = None  # the database's clock (`:now` in the statements)
            row = None
            if (from_wf, from_step) != (to_wf, to_step):
                tx.task_row = None
                if is_arrival(from_wf, from_step, to_wf, to_step):
                    row = write_ledger(self._shared, tx, task_id, from_wf, from_step, to_wf, to_step, route,
                                       actor_kind or "system", actor_id, session_id, now, plan, entry_owner,
                                       arrival_options, record_in_unit and not write.own and tx.stamped is None)
                entry_id = row.id if row is not None else found[7]
                cur.execute(sh.stmt.u_task_step, {"id": task_id, "workflow_id": to_wf, "step_id": to_step, "now": now,
                                                  "entry_id": entry_id})
                task = _task_state(found[0], to_wf, to_step, found[3], bool(found[4]), bool(found[5]),
                                   bool(found[6]), entry_id)
            else:
                task = _task(found)
            _marks(sh, tx, task_id, operation_id, operation_trigger, decision_id)
        return _move_result("moved" if row is not None else "same_step", row, task)

    def ledger_row(self: SqlHost, ledger_id: int) -> LedgerRow | None:
        q = self._shared.stmt.q_ledger_row

        def read(tx: Tx) -> LedgerRow | None:
            tx.cursor.execute(q, {"id": ledger_id})
            row = tx.cursor.fetchone()
            return _ledger(row) if row is not None else None

        return cast("LedgerRow | None", self._read("reading the ledger", read))

    def ledger(self: SqlHost, task_id: str | None = None) -> list[LedgerRow]:
        """Ledger rows, oldest first (all tasks, or one)."""
        sql = self._shared.sql(Q_LEDGER if task_id is None else Q_LEDGER_OF)
        return [_ledger(row) for row in self._rows("reading the ledger", sql, {"task_id": task_id})]

    def unrecorded_arrivals(self: SqlHost, limit: int = 1000, *, after_id: int = 0,
                            owner_id: str | None = None) -> list[LedgerRow]:
        """Ledger rows after `after_id` with a destination, no entry record and no live owner but `owner_id`,
        oldest first (through the partial index of unrecorded rows)."""
        settle(self)
        rows = self._rows("reading the ledger", self._shared.sql(Q_UNRECORDED),
                          {"limit": max(limit, 0), "after": after_id, "owner": owner_id})
        return [_ledger(row) for row in rows]

    def claim_entry(self: SqlHost, entry_id: int, owner_id: str, plan: str | None) -> EntryClaim:
        """Claim the dispatch of a row's entry for `owner_id` (see the protocol)."""
        sh = self._shared
        with self._tx("claiming an entry") as tx:
            if tx.stamped is not None:
                sh.settle(tx)
            cur = tx.cursor
            cur.execute(sh.sql(Q_ENTRY_CLAIM + (" FOR UPDATE" if sh.postgres else "")), {"id": entry_id})
            found = cur.fetchone()
            if found is None:
                return EntryClaim("missing")
            row = _ledger(found)
            recorded, owner, alive = found[12], found[13], found[14]
            if recorded:
                return EntryClaim("recorded", row)
            if owner is not None and owner != owner_id and alive:
                return EntryClaim("busy", row, owner)
            cur.execute(sh.sql(U_ENTRY_CLAIM), {"id": entry_id, "owner": owner_id, "plan": plan})
            if row.plan is None and plan is not None:
                row = replace(row, plan=plan)
        return EntryClaim("claimed" if owner in (None, owner_id) else "taken_over", row)

