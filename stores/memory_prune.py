"""A cutoff on the store's clock in, the finished history of quiet tasks deleted out: `prune` on `MemoryStore`
(`MemoryPruning`, a base class of it), with the SQL store's rules (`stores/sql_prune.py`; docs/runtime.md,
"Pruning the store").

The memory store keeps no task row times: a task's times are its rows' (`_stamps`).  Each batch runs under the
store's lock, outside any unit (prune is not for `unit()`): what it deleted stays deleted.  The fingerprints of
pruned operations are the SHA-256 keys the SQL store keeps, so the two stores answer alike.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from interlock.runtime.store import Claim

from ._common import operation_key
from ._prune_rules import PruneBatch

__all__ = ["MemoryPruning", "claim_pruned"]


def claim_pruned(store: object, operation_id: str) -> Claim | None:
    """`pruned` if `prune` deleted this applied operation of `store` (its fingerprint is kept), else None."""
    keys = store.__dict__.get("_pruned_ops")
    return "pruned" if keys and operation_key(operation_id) in keys else None


class MemoryPruning:
    """`prune_batch`, `prune_owners` and the fingerprint check of `MemoryStore` (see the module's docstring).  It
    reads and writes the store's own tables, so it is typed loosely (`Any`): the store's tests are its contract."""

    def _pruned_keys(self) -> dict[str, str | None]:
        store: Any = self
        keys: dict[str, str | None] | None = store.__dict__.get("_pruned_ops")
        if keys is None:
            keys = store.__dict__["_pruned_ops"] = {}
        return keys

    def prune_batch(self, after: str, limit: int, cutoff: float, dry_run: bool) -> PruneBatch:
        store: Any = self
        with store._lock:
            tasks = sorted(t for t, rows in store._ledger_by_task.items() if t > after and rows)[:limit]
            out = PruneBatch(seen=len(tasks), last=tasks[-1] if tasks else None)
            quiet = [t for t in tasks if self._quiet(t, cutoff)]
            out.pruned = len(quiet)
            for task_id in quiet:
                self._prune_task(task_id, out, dry_run)
            return out

    def _stamp(self, kind: str, key: Any) -> float:
        found = self._stamps_of().get((kind, key))
        return float(found[0]) if found is not None else float("-inf")

    def _stamps_of(self) -> Any:
        return self._stamps  # type: ignore[attr-defined]

    def _quiet(self, task_id: str, cutoff: float) -> bool:
        store: Any = self
        latest = store._ledger_by_task[task_id][-1]
        if self._stamp("l", latest[0]) >= cutoff or (latest[4] is not None and latest[0] not in store._entries):
            return False
        if any(m.state == "in_progress" for m in store._markers.get(latest[0], {}).values()):
            return False
        for op, (state, _, _, task, _) in store._operations.items():
            if task == task_id and (state == "claimed" or self._stamp("o", op) >= cutoff):
                return False
        queue = store._run_queue()
        for run in store._runs_by_task.get(task_id, ()):
            if not queue.acked(run.key) or self._stamp("r", run.key) >= cutoff:
                return False
        for d in store._decision_log.values():
            if d.task_id == task_id and (self._stamp("d", d.id) >= cutoff or self._stamp("s", d.id) >= cutoff
                                         or not store._evaluated.get(d.id, True)):
                return False
        if store._due._by_task.get(task_id):
            return False
        return not any(i.task_id == task_id and (i.state != "resolved" or i.updated_at >= cutoff)
                       for i in store._due._incidents.values())

    def _prune_task(self, task_id: str, out: PruneBatch, dry_run: bool) -> None:
        store: Any = self
        rows = store._ledger_by_task[task_id]
        task = store._tasks.get(task_id)
        keep = {rows[-1][0], task.entry_id if task is not None else None}
        old = [r for r in rows if r[0] not in keep]
        count = out.deleted
        count["interlock_step_transitions"] += len(old)
        count["interlock_entry_markers"] += sum(len(store._markers.get(r[0], {})) for r in old)
        ops = [op for op, v in store._operations.items() if v[3] == task_id and v[0] == "applied"]
        count["interlock_operations"] += len(ops)
        runs = [r.key for r in store._runs_by_task.get(task_id, ())]
        count["interlock_runs"] += len(runs)
        active = {d.id for d in store._active.values() if d.task_id == task_id}
        superseded = [d.id for d in store._decision_log.values() if d.task_id == task_id and d.id not in active]
        count["interlock_decisions"] += len(superseded)
        incidents = [i for i in store._due._incidents.values() if i.task_id == task_id and i.state == "resolved"]
        count["interlock_incidents"] += len(incidents)
        out.fingerprints += len(ops)
        if dry_run:
            return
        self._drop_rows(task_id, old)
        keys = self._pruned_keys()
        for op in ops:
            keys[operation_key(op)] = task_id
            del store._operations[op]
            store._stamps.pop(("o", op), None)
        self._drop_runs(task_id, runs)
        for d in superseded:
            del store._decision_log[d]
            store._evaluated.pop(d, None)
            store._stamps.pop(("d", d), None)
            store._stamps.pop(("s", d), None)
        for i in incidents:
            del store._due._incidents[i.id]
            store._due._incident_keys.pop(i.key, None)

    def _drop_rows(self, task_id: str, old: Iterable[tuple[Any, ...]]) -> None:
        store: Any = self
        gone = {r[0] for r in old}
        if not gone:
            return
        store._ledger_by_task[task_id] = [r for r in store._ledger_by_task[task_id] if r[0] not in gone]
        for i in gone:
            del store._ledger[i]
            for table in (store._entries, store._markers, store._unrecorded, store._entry_owners):
                table.pop(i, None)
            store._stamps.pop(("l", i), None)

    def _drop_runs(self, task_id: str, keys: list[str]) -> None:
        store: Any = self
        queue = store._run_queue()
        for key in keys:
            del store._runs[key]
            store._stamps.pop(("r", key), None)
            queue.forget(key)
        store._runs_by_task.pop(task_id, None)

    def prune_owners(self, cutoff: float, dry_run: bool) -> int:
        store: Any = self
        now = store.now()
        with store._lock:
            old = [o for o, row in store._owners.items()
                   if row.heartbeat_at < cutoff and not store._alive(row, now)]
            if not dry_run:
                for o in old:
                    del store._owners[o]
            return len(old)
