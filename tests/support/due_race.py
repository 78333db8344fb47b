"""The work each racer does in the due-row and incident concurrency tests (threads, or spawned processes that import
this module by name): claim every incident and move every due row on, each in its own order.

The test checks that each incident was claimed, and each row's slot moved on, by exactly one racer.
"""

from __future__ import annotations

import random
from typing import Any

from interlock.runtime.store import Store
from interlock.runtime.store_due import Incident, TimerArm

TASK = "due-race"


def prepare(store: Store, incidents: int, rows: int) -> tuple[list[int], list[int]]:
    """The contested incidents and due rows: their ids."""
    ids = [store.open_incident(Incident(0, f"entry:{k}", TASK, "entry", ((0, "notify", "boom"),), "boom", 1,
                                        "open", 0.0, 0.0)).id for k in range(incidents)]
    store.arm_timers(TASK, 1, "wf", "step", None, [TimerArm(p, "every", "every 1h", 3600) for p in range(rows)])
    return ids, [r.id for r in store.due_rows(TASK)]


def race(store: Store, worker: int, incident_ids: list[int], row_ids: list[int]) -> dict[str, list[int]]:
    """One racer: its own owner; every incident claimed and every row advanced, in an order of its own."""
    owner = f"racer-{worker}"
    store.register_owner(owner, host="race", pid=worker, plan=None, lease=600.0)
    order = random.Random(worker)
    incident_ids, row_ids = list(incident_ids), list(row_ids)
    order.shuffle(incident_ids)
    order.shuffle(row_ids)
    won: dict[str, list[int]] = {"worker": [worker], "incidents": [], "rows": []}
    for i in incident_ids:
        if store.claim_incident(i, owner) is not None:
            won["incidents"].append(i)
    for r in row_ids:
        if store.advance_due(r, 1, 2, 1e10):
            won["rows"].append(r)
    return won


def process_main(url: str, worker: int, incident_ids: list[int], row_ids: list[int], barrier: Any,
                 results: Any) -> None:
    """Entry point of a spawned racer process: open the store, wait for the others, race, report."""
    from interlock.stores import SqlStore

    store = SqlStore(url)
    try:
        barrier.wait(timeout=60)
        results.put((worker, race(store, worker, incident_ids, row_ids)))
    except BaseException as exc:
        results.put((worker, {"error": repr(exc)}))
        raise
    finally:
        store.close()
