"""What each process of the run queue's race runs (tests/stores/test_run_queue.py): open the store, wait for the
others, claim and acknowledge batches until nothing is left, report the ids it acknowledged."""

from __future__ import annotations

from typing import Any


def drain(store: Any, name: str) -> list[int]:
    """Claim and acknowledge batches of 7 until none is left; the ids acknowledged."""
    acked: list[int] = []
    while batch := store.claim_runs(name, limit=7):
        acked += store.ack_runs(name, [p.id for p in batch])
    return acked


def process_main(url: str, name: str, start: Any, out: Any) -> None:
    from interlock.stores import open_store

    store = open_store(url, create=False)
    try:
        start.wait()
        out.put((name, drain(store, name)))
    finally:
        store.close()
