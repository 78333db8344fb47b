"""Operation ids and decision re-evaluation marks on the SQL store: the part of `SqlStore` that claims, releases
and marks rows of `interlock_operations` (`SqlOperations`), with the marking statement other parts share (`mark`).

Every claim is `INSERT … ON CONFLICT DO NOTHING` on the operation's key and answers from the row count, then a
take-over of a dead owner's claim (`U_TAKE_OVER`), so a delivery made by many processes at once takes effect once.
`SqlStore` (`stores/sql.py`) takes these methods in as a base class; they name the store through the `SqlHost`
protocol (`stores/sql_host.py`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from interlock.runtime.store import Claim

from ._common import operation_key
from .sql_prune import pruned_or_busy
from .statements import D_CLAIM, I_CLAIM, Q_ALL_CLAIMS, Q_CLAIMS, Q_EVALUATED, U_TAKE_OVER

if TYPE_CHECKING:
    from .connections import Shared, Tx
    from .sql_host import SqlHost

__all__ = ["SqlOperations", "mark"]


def mark(sh: Shared, tx: Tx, operation_id: str, task_id: str | None, trigger: str | None, now: Any) -> bool:
    """Mark `operation_id` applied in `tx`; False if it already was."""
    tx.cursor.execute(sh.stmt.i_operation, {"key": operation_key(operation_id), "id": operation_id,
                                            "task_id": task_id, "trigger": trigger, "now": now})
    return bool(tx.cursor.rowcount == 1)


class SqlOperations:
    """Operation claims and marks, and decision re-evaluation marks, of `SqlStore` (see the module's docstring)."""

    __slots__ = ()

    def operation_applied(self: SqlHost, operation_id: str) -> bool:
        q = self._shared.stmt.q_operation
        key = operation_key(operation_id)

        def read(tx: Tx) -> bool:
            tx.cursor.execute(q, {"key": key})
            row = tx.cursor.fetchone()
            return row is not None and row[0] == "applied"

        return bool(self._read("reading an operation marker", read))

    def claim_operation(self: SqlHost, operation_id: str, *, token: str, owner_id: str, task_id: str | None = None,
                        trigger: str | None = None) -> Claim:
        """Claim the operation for `token` (see the protocol), in a transaction of its own."""
        sh = self._shared
        params = {"key": operation_key(operation_id), "id": operation_id, "task_id": task_id, "trigger": trigger,
                  "token": token, "owner": owner_id}
        with self._tx("claiming an operation") as tx:
            cur = tx.cursor
            cur.execute(sh.sql(I_CLAIM), params)
            if cur.rowcount == 1:
                return "claimed"
            cur.execute(sh.sql(U_TAKE_OVER), params)
            if cur.rowcount == 1:
                return "taken_over"
            cur.execute(sh.stmt.q_operation, params)
            row = cur.fetchone()
            if row is None:  # no row, and none to take over: pruned (its fingerprint kept), or released meanwhile
                return pruned_or_busy(self, tx, str(params["key"]))
        return "applied" if row[0] == "applied" else "busy"

    def release_operation(self: SqlHost, operation_id: str, token: str) -> bool:
        """Give up `token`'s claim; False if it holds none."""
        with self._tx("releasing an operation claim") as tx:
            tx.cursor.execute(self._shared.sql(D_CLAIM), {"key": operation_key(operation_id), "token": token})
            return bool(tx.cursor.rowcount == 1)

    def claimed_operations(self: SqlHost, limit: int = 1000) -> list[tuple[str, str]]:
        """Every operation claimed and not applied: (operation id, claim token)."""
        return [(str(op), str(token)) for op, token in
                self._rows("reading operation claims", self._shared.sql(Q_ALL_CLAIMS), {"limit": max(limit, 0)})]

    def abandoned_claims(self: SqlHost, limit: int = 1000, *, owner_id: str | None = None) -> list[tuple[str, str]]:
        """Operations claimed and not applied whose owner is dead (or is `owner_id`): (operation id, claim token),
        through the partial index of claimed operations."""
        return [(str(op), str(token)) for op, token in
                self._rows("reading operation claims", self._shared.sql(Q_CLAIMS),
                           {"limit": max(limit, 0), "owner": owner_id})]

    def mark_operation(self: SqlHost, operation_id: str, *, task_id: str | None = None, trigger: str | None = None) -> bool:
        """Mark applied; False if it already was."""
        with self._tx("marking an operation") as tx:
            return mark(self._shared, tx, operation_id, task_id, trigger, self._shared.stamp(tx))

    def decision_evaluated(self: SqlHost, decision_id: int) -> bool:
        q = self._shared.sql(Q_EVALUATED)

        def read(tx: Tx) -> bool:
            tx.cursor.execute(q, {"id": decision_id})
            row = tx.cursor.fetchone()
            return row is not None and bool(row[0])

        return bool(self._read("reading a decision", read))

    def mark_decision_evaluated(self: SqlHost, decision_id: int) -> bool:
        with self._tx("marking a decision evaluated") as tx:
            tx.cursor.execute(self._shared.stmt.u_evaluated, {"id": decision_id, "now": self._shared.stamp(tx)})
            return bool(tx.cursor.rowcount == 1)

