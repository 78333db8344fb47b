"""A store and a deduplication window in, the finished history of quiet tasks deleted out: `prune` (what
`interlock db prune` runs).  docs/runtime.md, "Pruning the store", has the table of what goes and what stays; ADR
0047 says why.

A task is **quiet** when nothing of it was written within the window (on the store's clock) and nothing of it is
unfinished: its current entry recorded, no operation claimed, no queued run unacknowledged, no decision waiting for
`recover`, no open incident, no armed timer or retry.  For quiet tasks `prune` deletes the ledger rows other than
the current entry (with their markers), the applied operations (keeping each id's fingerprint, so a redelivery is
refused as `pruned` instead of run again), the acknowledged runs, the superseded decisions and the resolved
incidents; then the owner rows not live whose heartbeat is older than the window.  Tasks are taken `batch` at a
time in task id order, each batch one transaction: an interrupted prune loses nothing, and running it again goes
on where it stopped (the tasks it pruned have nothing left to delete).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from interlock.runtime.store import StoreError

from ._prune_rules import MAX_PRUNE_BATCH, TABLES, PruneBatch, check_batch

__all__ = ["prune", "PruneReport", "TABLES", "MAX_PRUNE_BATCH", "DEFAULT_BATCH"]

DEFAULT_BATCH = 1000
"""Tasks per batch (one transaction) unless told otherwise."""


@dataclass
class PruneReport:
    """What `prune` did (or, with `dry_run`, would do): the window and the cutoff it judged by (the store's clock,
    epoch seconds), the tasks looked at and found quiet, the rows deleted per table, the fingerprints kept, the
    batches run and the last task id looked at."""

    window: float
    cutoff: float
    dry_run: bool
    tasks_seen: int = 0
    tasks_pruned: int = 0
    deleted: dict[str, int] = field(default_factory=lambda: dict.fromkeys(TABLES, 0))
    fingerprints: int = 0
    batches: int = 0
    last_task: str | None = None

    @property
    def rows(self) -> int:
        """Rows deleted (or that would be), every table."""
        return sum(self.deleted.values())

    def add(self, batch: PruneBatch) -> None:
        self.batches += 1
        self.tasks_seen += batch.seen
        self.tasks_pruned += batch.pruned
        self.fingerprints += batch.fingerprints
        for table, n in batch.deleted.items():
            self.deleted[table] += n
        if batch.last is not None:
            self.last_task = batch.last


def prune(store: Any, *, older_than: float, dry_run: bool = False, batch: int = DEFAULT_BATCH,
          progress: Callable[[PruneReport], None] | None = None, after: str = "") -> PruneReport:
    """Delete the finished history of the tasks quiet for `older_than` seconds (see the module's docstring);
    `dry_run`: count it and write nothing.  `progress` is called after each batch with the report so far; `after`:
    start after this task id.  `StoreError` for a store that cannot be pruned or bad arguments."""
    if isinstance(older_than, bool) or not isinstance(older_than, int | float) or not older_than > 0:
        raise StoreError(f"a window of {older_than!r} seconds: give a positive number", permanent=True)
    check_batch(batch)
    if not callable(getattr(store, "prune_batch", None)):
        raise StoreError(f"{type(store).__name__} cannot be pruned (interlock's stores can)", permanent=True)
    cutoff = float(store.now()) - float(older_than)
    report = PruneReport(float(older_than), cutoff, bool(dry_run))
    while True:
        done: PruneBatch = store.prune_batch(after, batch, cutoff, bool(dry_run))
        report.add(done)
        if progress is not None:
            progress(report)
        if done.last is None or done.seen < batch:
            break
        after = done.last
    report.deleted["interlock_owners"] += int(store.prune_owners(cutoff, bool(dry_run)))
    return report
