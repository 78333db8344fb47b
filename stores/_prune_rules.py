"""What `prune` does, shared by the stores: the tables it deletes from in the order they are reported, a batch's
result, and the limits of a call.  Pure: no database library (docs/runtime.md, "Pruning the store"; ADR 0047)."""

from __future__ import annotations

from dataclasses import dataclass, field

from interlock.runtime.store import StoreError

__all__ = ["TABLES", "PruneBatch", "MAX_PRUNE_BATCH", "check_batch"]

TABLES = ("interlock_step_transitions", "interlock_entry_markers", "interlock_operations", "interlock_runs",
          "interlock_decisions", "interlock_incidents", "interlock_owners")
"""The tables `prune` deletes rows of, in the order its summary names them."""

MAX_PRUNE_BATCH = 5000
"""The most tasks one batch (one transaction) looks at."""


@dataclass
class PruneBatch:
    """One batch: the tasks looked at (`seen`, after `after`, in task id order) and found quiet (`pruned`), the rows
    deleted (or, in a dry run, that would be) per table, the fingerprints kept, and the last task id looked at (the
    next batch's `after`; None: no task was left)."""

    seen: int = 0
    pruned: int = 0
    deleted: dict[str, int] = field(default_factory=lambda: dict.fromkeys(TABLES, 0))
    fingerprints: int = 0
    last: str | None = None


def check_batch(batch: int) -> int:
    if isinstance(batch, bool) or not isinstance(batch, int) or not 1 <= batch <= MAX_PRUNE_BATCH:
        raise StoreError(f"a batch of {batch!r} tasks: give 1 to {MAX_PRUNE_BATCH}", permanent=True)
    return batch
