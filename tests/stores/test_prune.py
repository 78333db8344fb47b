"""`prune` (issue 21, item 3; ADR 0047) on every backend: what goes and what stays for a quiet task, that a task
with anything unfinished or recent is kept whole, that a pruned operation's redelivery is refused (`pruned`), that a
dry run writes nothing, and that an interrupted prune resumes.

The SQL stores stamp DATETIME columns with the database's clock and everything else with the store's clock (the
test clock here, real time plus an offset the test moves): moving the offset by 100 days makes every row 100 days
old on both."""

from __future__ import annotations

import time
from typing import Any

import pytest

from interlock.runtime.store import Decision, EntryRecord, QueuedRun, Store, StoreError, TaskState
from interlock.runtime.store_due import Incident, TimerArm
from interlock.stores import prune
from interlock.stores.pruning import TABLES

DAY = 86_400.0
BACKENDS = ["memory", "sqlite", pytest.param("postgresql", marks=pytest.mark.postgres)]


class Clock:
    """Real time plus an offset the test moves (the SQL stores' DATETIME stamps keep the database's real clock)."""

    def __init__(self) -> None:
        self.offset = 0.0

    def __call__(self) -> float:
        return time.time() + self.offset


@pytest.fixture()
def clock() -> Clock:
    return Clock()


@pytest.fixture()
def store(clocked_store: Store) -> Store:
    """A fresh, empty store of each backend on this module's clock (tests/stores/conftest.py)."""
    return clocked_store


def finished(store: Store, tid: str, *, ack: bool = True, evaluate: bool = True, record_last: bool = True) -> int:
    """A task through three steps, as the runtime leaves one: created into `work` (a queued run), moved to `review`
    by operation `turn:TID` (a `done` marker; a rejection superseded by an approval; a resolved incident), moved to
    `done`.  Its current entry's ledger id."""
    created = store.create_task(TaskState(tid, "w", "work"))
    assert created.ledger is not None
    store.record_entry(EntryRecord(created.ledger.id, tid, "w", "work", ("queue_run",)))
    store.enqueue_run(QueuedRun(f"run:{tid}", tid, "work", "agent", "x", entry_id=created.ledger.id))
    review = store.move_task(tid, "w", "review", route="engine_transition", operation_id=f"turn:{tid}")
    assert review.ledger is not None
    rid = review.ledger.id
    store.start_marker(rid, 0, "notify")
    store.finish_marker(rid, 0, "done")
    store.record_entry(EntryRecord(rid, tid, "w", "review", ("notify",)))
    for verdict in ("rejected", "approved"):
        d = store.record_decision(Decision(tid, "review", "agent", "rev", "reviewer", verdict, entry_id=rid))
        if evaluate:
            store.mark_decision_evaluated(d.id)
    incident = store.open_incident(Incident(0, f"entry:{rid}", tid, "entry", ((0, "notify", "down"),), "down", 1,
                                            "open", 0.0, 0.0, entry_id=rid))
    store.settle_incident(incident.id, owner_id=None, state="resolved", resolution="resolved")
    done = store.move_task(tid, "w", "done", route="manual_move")
    assert done.ledger is not None
    if record_last:
        store.record_entry(EntryRecord(done.ledger.id, tid, "w", "done", ()))
    if ack:
        claimed = store.claim_runs("host")
        store.ack_runs("host", [p.id for p in claimed])
    return done.ledger.id


def state_of(store: Store, tid: str) -> dict[str, Any]:
    """What a host or `inspect` reads of a task."""
    return {"task": store.get_task(tid), "ledger": store.ledger(tid), "runs": store.runs(tid),
            "decisions": store.decisions(tid, "review"),
            "markers": {r.id: store.markers(r.id) for r in store.ledger(tid)},
            "entries": {r.id: store.entry_record(r.id) for r in store.ledger(tid)},
            "incidents": store.incidents(tid, state=None), "due": store.due_rows(tid)}


def test_a_quiet_task_keeps_its_current_entry_and_loses_its_finished_history(store: Store, clock: Clock) -> None:
    current = finished(store, "T1")
    clock.offset = 100 * DAY
    report = prune(store, older_than=90 * DAY)
    assert (report.tasks_seen, report.tasks_pruned, report.fingerprints) == (1, 1, 1)
    assert {t: n for t, n in report.deleted.items() if t != "interlock_owners"} == {
        "interlock_step_transitions": 2, "interlock_entry_markers": 1, "interlock_operations": 1,
        "interlock_runs": 1, "interlock_decisions": 1, "interlock_incidents": 1}
    assert [r.id for r in store.ledger("T1")] == [current]  # the current entry stays, with its record
    assert store.entry_record(current) is not None
    assert store.get_task("T1") == TaskState("T1", "w", "done", entry_id=current)
    assert [d.verdict for d in store.decisions("T1", "review")] == ["approved"]  # active decisions stay
    assert store.runs("T1") == [] and store.incidents("T1", state=None) == []
    assert not store.operation_applied("turn:T1")
    assert store.claim_operation("turn:T1", token="x", owner_id="o") == "pruned"  # refused, never claimed again
    assert store.claim_operation("turn:T2", token="x", owner_id="o") == "claimed"  # another id is not
    again = prune(store, older_than=90 * DAY)
    assert (again.tasks_pruned, again.rows) == (1, 0)  # nothing left to delete: a rerun is a no-op


@pytest.mark.parametrize("case", ["unacked_run", "unevaluated_decision", "unrecorded_entry", "open_incident",
                                  "armed_timer", "claimed_operation", "within_window"])
def test_a_task_with_anything_unfinished_or_recent_is_kept_whole(store: Store, clock: Clock, case: str) -> None:
    current = finished(store, "T1", ack=case != "unacked_run", evaluate=case != "unevaluated_decision",
                       record_last=case != "unrecorded_entry")
    if case == "open_incident":
        store.open_incident(Incident(0, "op:x", "T1", "operation", ((-1, "notify", "down"),), "down", 1, "open", 0.0,
                                     0.0, operation_id="x"))
    elif case == "armed_timer":
        store.arm_timers("T1", current, "w", "done", None, (TimerArm(0, "after", "after 1h", 3600),))
    elif case == "claimed_operation":
        assert store.claim_operation("late:T1", token="t", owner_id="o", task_id="T1") == "claimed"
    before = state_of(store, "T1")
    clock.offset = 100 * DAY
    report = prune(store, older_than=(200 if case == "within_window" else 90) * DAY)
    assert (report.tasks_seen, report.tasks_pruned, report.fingerprints) == (1, 0, 0)
    assert state_of(store, "T1") == before
    assert store.operation_applied("turn:T1")


def _dump(store: Store, tids: list[str]) -> list[Any]:
    return [state_of(store, t) for t in tids] + [store.queued_runs(), len(store.owners())]


def test_a_dry_run_counts_and_writes_nothing(store: Store, clock: Clock) -> None:
    tids = [f"T{i}" for i in range(5)]
    for t in tids:
        finished(store, t)
    clock.offset = 100 * DAY
    before = _dump(store, tids)
    dry = prune(store, older_than=90 * DAY, dry_run=True, batch=2)
    assert _dump(store, tids) == before
    assert store.claim_operation("turn:T0", token="x", owner_id="o") == "applied"
    real = prune(store, older_than=90 * DAY, batch=2)
    assert dry.deleted == real.deleted and dry.fingerprints == real.fingerprints == 5
    assert (dry.tasks_pruned, dry.batches, real.batches) == (5, 3, 3)


def test_an_interrupted_prune_loses_nothing_and_a_rerun_goes_on(store: Store, clock: Clock) -> None:
    tids = [f"T{i}" for i in range(4)]
    for t in tids:
        finished(store, t)
    clock.offset = 100 * DAY

    def interrupt(report: Any) -> None:
        if report.batches == 2:
            raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        prune(store, older_than=90 * DAY, batch=1, progress=interrupt)
    assert [len(store.ledger(t)) for t in tids] == [1, 1, 3, 3]  # two batches committed, the rest untouched
    assert store.claim_operation("turn:T1", token="x", owner_id="o") == "pruned"
    rest = prune(store, older_than=90 * DAY, batch=1)
    assert [len(store.ledger(t)) for t in tids] == [1, 1, 1, 1]
    assert (rest.tasks_pruned, rest.deleted["interlock_step_transitions"], rest.fingerprints) == (4, 4, 2)


def test_bad_arguments_are_refused(store: Store) -> None:
    for kwargs in ({"older_than": 0}, {"older_than": -1.0}, {"older_than": DAY, "batch": 0},
                   {"older_than": DAY, "batch": 5001}):
        with pytest.raises(StoreError):
            prune(store, **kwargs)
    with pytest.raises(StoreError, match="cannot be pruned"):
        prune(object(), older_than=DAY)


def test_the_tables_reported() -> None:
    assert TABLES[0] == "interlock_step_transitions" and "interlock_owners" in TABLES


_KILLED_AFTER_TWO_BATCHES = """
import os, signal, sys
from interlock.stores import open_store, prune
store = open_store(sys.argv[1], create=False, clock=lambda: __import__("time").time() + 100 * 86400)
def progress(report):
    if report.batches == 2:
        os.kill(os.getpid(), signal.SIGKILL)
prune(store, older_than=90 * 86400, batch=1, progress=progress)
"""


@pytest.mark.parametrize("backend", ["sqlite", pytest.param("postgresql", marks=pytest.mark.postgres)])
def test_a_prune_killed_between_batches_loses_nothing(backend: str, request: pytest.FixtureRequest,
                                                      tmp_path: Any) -> None:
    """SIGKILL after the second batch committed: those two tasks are pruned (fingerprints kept), the others are
    whole, and a rerun finishes the job."""
    import signal
    import subprocess
    import sys

    from interlock.stores import open_store

    if backend == "sqlite":
        url = request.getfixturevalue("sqlite_url")
    else:
        server = request.getfixturevalue("pg_server")
        url = str(server.url_for(server.new_schema()))
    clock = Clock()
    store = open_store(url, clock=clock)
    try:
        tids = [f"T{i}" for i in range(4)]
        for t in tids:
            finished(store, t)
        (tmp_path / "kill.py").write_text(_KILLED_AFTER_TWO_BATCHES, encoding="utf-8")
        proc = subprocess.run([sys.executable, str(tmp_path / "kill.py"), url], capture_output=True, text=True,
                              timeout=120)
        assert proc.returncode == -signal.SIGKILL, proc.stderr
        assert [len(store.ledger(t)) for t in tids] == [1, 1, 3, 3]
        assert [store.claim_operation(f"turn:{t}", token="x", owner_id="o") for t in tids[:2]] == ["pruned"] * 2
        assert [store.operation_applied(f"turn:{t}") for t in tids[2:]] == [True, True]
        clock.offset = 100 * DAY
        rest = prune(store, older_than=90 * DAY, batch=1)
        assert (rest.tasks_pruned, rest.fingerprints) == (4, 2)
        assert [len(store.ledger(t)) for t in tids] == [1, 1, 1, 1]
    finally:
        store.close()  # type: ignore[attr-defined]
