"""The work each racer does in the concurrency tests (threads, or spawned processes that import this module by name).

Every racer delivers the same entries, operations, runs, seats and decisions, then
fights over one task's step with compare-and-swap moves; the test checks that each
delivery took effect exactly once and that the task's ledger is one unbroken chain.
"""

from __future__ import annotations

from typing import Any

from interlock.runtime.store import Decision, QueuedRun, Store, TaskState

TASK = "race-task"
START = "start"


def prepare(store: Store) -> int:
    """Create the contested task; return the entry id (its genesis row) the racers claim markers of."""
    result = store.create_task(TaskState(TASK, "wf", START))
    assert result.ledger is not None
    return result.ledger.id


def race(store: Store, worker: int, workers: int, entry_id: int, keys: int, rounds: int) -> dict[str, Any]:
    """One racer's deliveries; returns what it won."""
    steps = tuple(f"step{i}" for i in range(workers))
    won: dict[str, Any] = {"marker": [], "run": [], "op": [], "seat": [], "first_move": False, "moves": 0}
    first = store.move_task(TASK, "wf", f"first-{worker}", route="engine_transition", expected_step_id=START)
    won["first_move"] = first.status == "moved"
    for k in range(keys):
        if store.claim_marker(entry_id, k, "queue_run"):
            won["marker"].append(k)
        if store.enqueue_run(QueuedRun(f"{entry_id}:{k}:rev", TASK, START, f"agent{worker}", "race")):
            won["run"].append(k)
        if store.mark_operation(f"race-op:{k}", task_id=TASK, trigger="on_comment"):
            won["op"].append(k)
        # Different agents at different steps of one workflow: the workflow-wide check must hold.
        if store.ensure_seat(f"seat-task-{k}", steps[worker], "reviewer", f"agent{worker}", steps):
            won["seat"].append(k)
        store.record_decision(Decision(f"seat-task-{k}", "review", "agent", "same-decider", "reviewer",
                                       f"verdict-{worker}"))
    for r in range(rounds):
        task = store.get_task(TASK)
        assert task is not None
        result = store.move_task(TASK, "wf", f"s{worker}-{r}", route="engine_transition",
                                 expected_step_id=task.step_id)
        if result.status == "moved":
            won["moves"] += 1
    return won


def process_main(url: str, worker: int, workers: int, entry_id: int, keys: int, rounds: int, barrier: Any,
                 results: Any) -> None:
    """Entry point of a spawned racer process: open the store, wait for the others, race, report."""
    from interlock.stores import SqlStore

    store = SqlStore(url)
    try:
        barrier.wait(timeout=60)
        results.put((worker, race(store, worker, workers, entry_id, keys, rounds)))
    except BaseException as exc:
        results.put((worker, {"error": repr(exc)}))
        raise
    finally:
        store.close()
