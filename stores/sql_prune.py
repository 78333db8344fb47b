"""A cutoff on the store's clock in, the finished history of quiet tasks deleted out: `prune` on the SQL store
(`SqlPrune`), one batch of tasks per transaction.

docs/runtime.md ("Pruning the store") and ADR 0047 say what is deleted and why it is safe.  A batch:

1. takes the next `limit` task ids of the ledger after `after`, each with its latest row (one index range of
   `ix_interlock_step_transitions_task`);
2. keeps the tasks that are **quiet**: the latest row is older than the cutoff and its entry recorded (or it
   enters no step), the task row was not written since, and the task has no claimed operation, no run not
   acknowledged, no decision `recover` has yet to re-evaluate, no incident not resolved, no due row (timer or
   retry), no position in progress, and nothing of any of these written since the cutoff — each one lookup per
   table by the table's task index;
3. reads the ids of those tasks' ledger rows other than the current entry (the latest row, and the row the task
   row names) and deletes those rows and their markers by id, the applied operations (keeping each one's key in
   `interlock_pruned_operations`, so a redelivery is refused as `pruned`), the acknowledged runs, the superseded
   decisions and the resolved incidents.

A dry run counts the same rows and writes nothing.  `owners` deletes the owner rows whose heartbeat is older than
the cutoff and that are not live.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from interlock.runtime.store import Claim

from ._prune_rules import PruneBatch
from .sql_due import clock_params, store_sql

if TYPE_CHECKING:
    from .connections import Tx
    from .sql_host import SqlHost

__all__ = ["SqlPrune", "SqlPruning", "pruned_or_busy"]

Q_TASKS = ("SELECT task_id, MAX(id) FROM interlock_step_transitions WHERE task_id > :after GROUP BY task_id "
           "ORDER BY task_id LIMIT :limit")
Q_OLD_LATEST = ("SELECT task_id FROM interlock_step_transitions WHERE id IN {L} AND occurred_at < :cut_ts "
                "AND (to_step_id IS NULL OR (entry_recorded_at IS NOT NULL AND entry_recorded_at < :cut_ts))")
_BUSY = (
    "SELECT id FROM interlock_tasks WHERE id IN {T} AND updated_at >= :cut_ts",
    "SELECT task_id FROM interlock_operations WHERE task_id IN {T} AND (state = 'claimed' OR applied_at >= :cut_ts)",
    "SELECT task_id FROM interlock_runs WHERE task_id IN {T} AND (acked_at IS NULL OR acked_at >= :cut "
    "OR created_at >= :cut_ts)",
    "SELECT task_id FROM interlock_decisions WHERE task_id IN {T} AND ((superseded_at IS NULL AND evaluated_at IS "
    "NULL) OR decided_at >= :cut_ts OR superseded_at >= :cut_ts)",
    "SELECT task_id FROM interlock_incidents WHERE task_id IN {T} AND (state <> 'resolved' OR updated_at >= :cut)",
    "SELECT task_id FROM interlock_timers WHERE task_id IN {T}",
    "SELECT l.task_id FROM interlock_entry_markers m JOIN interlock_step_transitions l ON l.id = m.entry_id "
    "WHERE m.entry_id IN {L} AND m.state = 'in_progress'",
)
"""Each names tasks of the batch that are not quiet (see the module's docstring)."""
Q_KEEP = "SELECT entry_id FROM interlock_tasks WHERE id IN {Q} AND entry_id IS NOT NULL"
Q_OLD_ROWS = "SELECT id FROM interlock_step_transitions WHERE task_id IN {Q} AND id NOT IN {K}"
_WHERE = {
    # by the ids read first: a subquery here let PostgreSQL's planner hash-join a scan of every marker
    "interlock_entry_markers": "FROM interlock_entry_markers WHERE entry_id IN {O}",
    "interlock_step_transitions": "FROM interlock_step_transitions WHERE id IN {O}",
    "interlock_operations": "FROM interlock_operations WHERE task_id IN {Q} AND state = 'applied'",
    "interlock_runs": "FROM interlock_runs WHERE task_id IN {Q} AND acked_at IS NOT NULL",
    "interlock_decisions": "FROM interlock_decisions WHERE task_id IN {Q} AND superseded_at IS NOT NULL",
    "interlock_incidents": "FROM interlock_incidents WHERE task_id IN {Q} AND state = 'resolved'",
}
"""The rows a batch deletes, per table, in the order it deletes them (markers before their ledger rows)."""
I_FINGERPRINTS = ("INSERT INTO interlock_pruned_operations (op_key, task_id, pruned_at) SELECT op_key, task_id, {NOW} "
                  + _WHERE["interlock_operations"] + " ON CONFLICT (op_key) DO NOTHING")
_OLD_OWNERS = ("FROM interlock_owners WHERE heartbeat_at < :cut AND (stopped OR heartbeat_at + lease < {NOW})")
Q_PRUNED = "SELECT 1 FROM interlock_pruned_operations WHERE op_key = :key"


def _marks(name: str, values: Sequence[Any], params: dict[str, Any]) -> str:
    """`(:name0, :name1, …)` for an IN list, its values added to `params` (`(NULL)` when empty)."""
    if not values:
        return "(NULL)"
    params.update((f"{name}{n}", v) for n, v in enumerate(values))
    return "(" + ", ".join(f":{name}{n}" for n in range(len(values))) + ")"


def _fill(text: str, **lists: str) -> str:
    """`text` with its `{Q}`, `{K}`, `{L}`, `{O}`, `{T}` lists put in (`{NOW}` is left for the clock)."""
    for name, value in lists.items():
        text = text.replace("{" + name + "}", value)
    return text


def pruned_or_busy(store: SqlHost, tx: Tx, key: str) -> Claim:
    """What `claim_operation` answers when its insert found a row and, a moment later, there was none: `pruned` if
    the operation's fingerprint is kept, else `busy` (its claim was released meanwhile)."""
    tx.cursor.execute(store._shared.sql(Q_PRUNED), {"key": key})
    return "pruned" if tx.cursor.fetchone() is not None else "busy"


class SqlPrune:
    """`prune`'s batches on the SQL store (see the module's docstring)."""

    __slots__ = ("_store",)

    def __init__(self, store: SqlHost) -> None:
        self._store = store

    def _sql(self, text: str) -> str:
        return store_sql(self._store, text)

    def _params(self, cutoff: float) -> dict[str, Any]:
        """The cutoff as epoch seconds (`:cut`) and as the DATETIME columns keep it (`:cut_ts`)."""
        at = datetime.fromtimestamp(cutoff, UTC)
        stamp: Any = at if self._store._shared.postgres else at.strftime("%Y-%m-%d %H:%M:%S.%f")
        return clock_params(self._store, {"cut": float(cutoff), "cut_ts": stamp})

    def batch(self, after: str, limit: int, cutoff: float, dry_run: bool) -> PruneBatch:
        """One batch of up to `limit` tasks after `after` (one transaction; a dry run writes nothing)."""
        if dry_run:
            return self._store._read("counting what prune would delete",  # type: ignore[no-any-return]
                                     lambda tx: self._batch(tx, after, limit, cutoff, True))
        with self._store._tx("pruning") as tx:
            return self._batch(tx, after, limit, cutoff, False)

    def _batch(self, tx: Tx, after: str, limit: int, cutoff: float, dry_run: bool) -> PruneBatch:
        cur = tx.cursor
        cur.execute(self._sql(Q_TASKS), {"after": after, "limit": limit})
        latest = {str(t): int(i) for t, i in cur.fetchall()}
        out = PruneBatch(seen=len(latest), last=max(latest) if latest else None)
        quiet = self._quiet(tx, latest, cutoff)
        if not quiet:
            return out
        params = self._params(cutoff)
        q = _marks("q", sorted(quiet), params)
        cur.execute(self._sql(_fill(Q_KEEP, Q=q)), params)
        keep = sorted({latest[t] for t in quiet} | {int(r[0]) for r in cur.fetchall()})
        cur.execute(self._sql(_fill(Q_OLD_ROWS, Q=q, K=_marks("k", keep, params))), params)
        o = _marks("o", sorted(int(r[0]) for r in cur.fetchall()), params)
        out.pruned = len(quiet)
        if not dry_run:
            cur.execute(self._sql(_fill(I_FINGERPRINTS, Q=q)), params)
            out.fingerprints = max(int(cur.rowcount), 0)
        for table, where in _WHERE.items():
            sql = _fill(where, Q=q, O=o)
            if dry_run:
                cur.execute(self._sql("SELECT count(*) " + sql), params)
                out.deleted[table] = int(cur.fetchone()[0])
            else:
                cur.execute(self._sql("DELETE " + sql), params)
                out.deleted[table] = int(cur.rowcount)
        if dry_run:
            out.fingerprints = out.deleted["interlock_operations"]
        return out

    def _quiet(self, tx: Tx, latest: dict[str, int], cutoff: float) -> set[str]:
        """The tasks of `latest` (task id -> its latest ledger id) that are quiet at `cutoff`."""
        if not latest:
            return set()
        cur = tx.cursor
        params = self._params(cutoff)
        ids = _marks("l", sorted(latest.values()), params)
        cur.execute(self._sql(_fill(Q_OLD_LATEST, L=ids)), params)
        quiet = {str(r[0]) for r in cur.fetchall()}
        if not quiet:
            return quiet
        params = self._params(cutoff)
        t = _marks("t", sorted(quiet), params)
        ids = _marks("l", sorted(latest[x] for x in quiet), params)
        for sql in _BUSY:
            cur.execute(self._sql(_fill(sql, T=t, L=ids)), params)
            quiet.difference_update(str(r[0]) for r in cur.fetchall())
        return quiet

    def owners(self, cutoff: float, dry_run: bool) -> int:
        """Delete (or count) the owner rows not live whose heartbeat is older than the cutoff."""
        params = self._params(cutoff)
        if dry_run:
            rows = self._store._rows("counting old owners", self._sql("SELECT count(*) " + _OLD_OWNERS), params)
            return int(rows[0][0])
        with self._store._tx("pruning old owners") as tx:
            tx.cursor.execute(self._sql("DELETE " + _OLD_OWNERS), params)
            return int(tx.cursor.rowcount)


class SqlPruning:
    """`prune`'s calls of `SqlStore` (a base class of it): each delegates to a `SqlPrune` on the store."""

    def prune_batch(self: SqlHost, after: str, limit: int, cutoff: float, dry_run: bool) -> PruneBatch:
        return SqlPrune(self).batch(after, limit, cutoff, dry_run)

    def prune_owners(self: SqlHost, cutoff: float, dry_run: bool) -> int:
        return SqlPrune(self).owners(cutoff, dry_run)
