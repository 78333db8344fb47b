"""What every store checks of the run queue's calls (`stores/sql_runs.py`, `stores/memory_runs.py`): a consumer's
name, a limit, a lease, a list of run ids.  Pure functions: no database library."""

from __future__ import annotations

from collections.abc import Iterable

from interlock.runtime.store import StoreError

__all__ = ["MAX_BATCH", "check_claim", "run_ids"]

MAX_BATCH = 10_000
"""The most runs one call claims, acknowledges or releases."""

def run_ids(ids: Iterable[int]) -> tuple[int, ...]:
    """The ids of a call, each once (`StoreError` past `MAX_BATCH`)."""
    ids = tuple(dict.fromkeys(int(i) for i in ids))
    if len(ids) > MAX_BATCH:
        raise StoreError(f"{len(ids)} run ids in one call: at most {MAX_BATCH}", permanent=True)
    return ids


def check_claim(consumer: str, limit: int, lease: float) -> None:
    """`StoreError` for a claim no store can make: no consumer name, a lease or a limit out of range."""
    if not isinstance(consumer, str) or not consumer:
        raise StoreError("a consumer is named by a non-empty string", permanent=True)
    if not 0 < lease < 10 * 365 * 86_400:
        raise StoreError(f"a lease of {lease!r} s: give a positive number of seconds", permanent=True)
    if not 0 <= limit <= MAX_BATCH:
        raise StoreError(f"a limit of {limit!r} runs: give 0 to {MAX_BATCH}", permanent=True)
