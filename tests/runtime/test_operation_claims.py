"""An operation takes effect once however its deliveries overlap (docs/runtime.md §2 and §4, ADR 0020).

A delivery claims its operation id durably before any action runs: an overlapping delivery of
the same id is discarded and counted as a redelivery, an aborted one releases its claim so a
later redelivery runs the whole list, and a claim left by a crashed process is released by
`recover` (a process of this host that is gone) or ends with its lease (any other).  Operation
ids of any length and content work on every store, and no host id can equal a key the runtime
keeps for itself.
"""

from __future__ import annotations

import multiprocessing
import os
import socket
import subprocess
import sys
import threading
import time
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
from support import conc_pg, op_race

from interlock.runtime import TaskState
from interlock.runtime.store import Participant
from interlock.stores import open_store, upgrade

pytestmark = pytest.mark.async_runtime  # each harness test runs with a Runtime and an AsyncRuntime

HERE = Path(__file__).parent
WAIT = 30.0  # seconds: a deadlock fails the test instead of hanging it

CLAIMS = """
workflow c "C" {
  step a "A" {
    start
    manual_move
    on on_comment { set_workflow_data(key: "k", value: "v")  queue_run(target: primary, reason: "commented") }
    on on_turn_complete { set_workflow_data(key: "k", value: "done")  move_to_step(b) }
  }
  step b "B" { manual_move }
}
"""
COMMENT = {"comment_id": "c1", "author_id": "u1", "body": "hello"}




def start(h: Any) -> Any:
    rt = h.start(CLAIMS)
    h.store.put_task(TaskState("T", "c", "a"))
    return rt


def fire(rt: Any, operation_id: str, trigger: str = "on_comment") -> Any:
    payload = COMMENT if trigger == "on_comment" else None
    return rt.fire(trigger, "T", session_id="S1", payload=payload, operation_id=operation_id)


def dead_pid() -> int:
    """The pid of a process of this host that has exited."""
    proc = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True,
                          check=True)
    return int(proc.stdout)


# ---- overlapping deliveries -------------------------------------------------------------------------------

@pytest.mark.parametrize("second_runtime", ["same runtime", "another runtime"])
def test_an_overlapping_delivery_of_one_operation_is_discarded_while_the_first_runs(harness: Any,
                                                                                   second_runtime: str) -> None:
    """The first delivery's executor blocks until the second delivery has returned: deterministic overlap."""
    h = harness
    rt = start(h)
    entered, release = threading.Event(), threading.Event()

    def block(ctx: Any) -> None:
        entered.set()
        assert release.wait(WAIT), "the second delivery never came back"

    h.recorder.hook("set_workflow_data", block)
    first: dict[str, Any] = {}
    runner = threading.Thread(target=lambda: first.update(result=fire(rt, "comment:1")), daemon=True)
    runner.start()
    assert entered.wait(WAIT)
    other = h.restart() if second_runtime == "another runtime" else rt  # another connection: as another process
    mark = h.mark()
    second = fire(other, "comment:1")
    release.set()
    runner.join(WAIT)
    assert not runner.is_alive()
    # not `idempotent`: it did not take effect yet — a live runtime is running it (a host that trusted `idempotent`
    # here would drop an operation whose first delivery may still fail)
    assert second.result == "in_progress" and second.actions == ()
    assert first["result"].result == "dispatched"
    assert [c.operation_id for c in h.recorder.of("set_workflow_data")] == ["comment:1"]  # one call in all
    assert h.runs("T") == [("T", "primary", "commented")]
    (discarded,) = h.since(mark, "redelivery_discarded")
    assert discarded.fields["operation_id"] == "comment:1" and discarded.fields["in_progress"] is True
    assert h.store.operation_applied("comment:1") and h.store.claimed_operations() == []
    # a later redelivery is an ordinary idempotent replay
    assert fire(other, "comment:1").result == "idempotent"
    assert len(h.recorder.of("set_workflow_data")) == 1


def test_an_aborted_delivery_releases_its_claim_and_a_redelivery_runs_the_whole_list(harness: Any) -> None:
    h = harness
    rt = start(h)
    h.recorder.fail("queue_run", error="queue down")
    failed = fire(rt, "comment:2")
    assert failed.result == "error" and h.store.claimed_operations() == []
    assert not h.store.operation_applied("comment:2")
    again = fire(rt, "comment:2")
    assert again.result == "dispatched"
    assert h.recorder.kinds() == ["set_workflow_data", "queue_run", "set_workflow_data", "queue_run"]
    assert h.store.operation_applied("comment:2")


def test_a_delivery_that_raises_releases_its_claim(harness: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    """A store fault after the claim (here: the move) raises to the host; the claim is not left behind."""
    h = harness
    rt = start(h)
    from interlock.runtime.store import StoreError

    def broken(*args: Any, **kwargs: Any) -> Any:
        raise StoreError("injected: the database went away")

    monkeypatch.setattr(type(rt.store), "move_task", broken)  # the class: units bind stores of their own
    with pytest.raises(StoreError, match="injected"):
        fire(rt, "turn:1", "on_turn_complete")
    monkeypatch.undo()
    assert h.store.claimed_operations() == []
    assert fire(rt, "turn:1", "on_turn_complete").result == "dispatched"
    assert h.store.get_task("T").step_id == "b"  # type: ignore[union-attr]


def _owner(h: Any, owner_id: str, *, alive: bool, host: str | None = None) -> str:
    """An owner row as another runtime leaves it: live (a fresh heartbeat) or dead (stopped, or its lease ran out).
    Same hostname and PID as this test's by default: liveness is the store's judgement, never a hostname's."""
    h.store.register_owner(owner_id, host=host or socket.gethostname(), pid=os.getpid(), plan=None,
                           lease=600.0 if alive else -1.0)
    return owner_id


def test_a_dead_owners_claim_is_taken_over_by_the_next_delivery_whatever_its_host(harness: Any) -> None:
    """docs/runtime.md §6: a claim belongs to a runtime owner; once its heartbeat ran out (on the store's clock) the
    next delivery takes it over at once — no waiting for a lease, no `recover` on the same hostname."""
    h = harness
    rt = start(h)
    dead = _owner(h, "owner-dead", alive=False)
    assert h.store.claim_operation("comment:3", token=f"{dead}:1", owner_id=dead, task_id="T",
                                   trigger="on_comment") == "claimed"
    mark = h.mark()
    assert fire(rt, "comment:3").result == "dispatched"
    (warning,) = [r for r in h.since(mark, "warning") if r.fields.get("code") == "operation_claim_taken_over"]
    assert warning.fields["operation_id"] == "comment:3"
    assert h.recorder.kinds() == ["set_workflow_data", "queue_run"]
    assert h.store.operation_applied("comment:3") and h.store.claimed_operations() == []


def test_recover_releases_dead_owners_claims_and_leaves_live_ones_alone(harness: Any) -> None:
    h = harness
    rt = start(h)
    dead = _owner(h, "owner-dead", alive=False)
    stopped = _owner(h, "owner-stopped", alive=True)
    h.store.stop_owner(stopped)
    live_here = _owner(h, "owner-live-here", alive=True)  # another container with this hostname and PID
    live_far = _owner(h, "owner-live-far", alive=True, host="another-host.example")
    for op, owner in (("comment:dead", dead), ("comment:stopped", stopped), ("comment:here", live_here),
                      ("comment:far", live_far)):
        assert h.store.claim_operation(op, token=f"{owner}:1", owner_id=owner) == "claimed"
    mark = h.mark()
    recovered = rt.recover()
    assert sorted(recovered.operations_released) == ["comment:dead", "comment:stopped"]
    released = [r for r in h.since(mark, "warning") if r.fields.get("code") == "operation_claim_released"]
    assert sorted(r.fields["operation_id"] for r in released) == ["comment:dead", "comment:stopped"]
    assert sorted(op for op, _ in h.store.claimed_operations()) == ["comment:far", "comment:here"]
    assert fire(rt, "comment:here").result == "in_progress" and fire(rt, "comment:far").result == "in_progress"
    assert fire(rt, "comment:dead").result == "dispatched"
    assert [c.operation_id for c in h.recorder.of("set_workflow_data")] == ["comment:dead"]


# ---- ids of any length and content ------------------------------------------------------------------------

@pytest.mark.parametrize("operation_id", ["x" * 10_000, "評" * 3_000, "a:b:" * 1_000 + "🙂"],
                         ids=["10k-ascii", "9k-bytes-cjk", "astral"])
def test_operation_ids_of_any_length_take_effect_once(harness: Any, operation_id: str) -> None:
    """PostgreSQL refused marker rows over ~2.7 kB after the executor had run: every redelivery ran it again."""
    h = harness
    rt = start(h)
    assert fire(rt, operation_id).result == "dispatched"
    assert fire(rt, operation_id).result == "idempotent"
    assert len(h.recorder.of("queue_run")) == 1
    (run,) = h.store.runs("T")
    assert run.operation_id == operation_id  # the id itself is kept for records
    assert len(run.key) < 400  # the key the store indexes is bounded
    assert h.recorder.of("queue_run")[0].key is not None and len(h.recorder.of("queue_run")[0].key) < 300


def test_an_operation_id_a_store_cannot_keep_is_refused_before_anything_runs(harness: Any) -> None:
    h = harness
    rt = start(h)
    from interlock.runtime import RuntimeFault

    for bad in ("nul\x00id", "lone\ud800surrogate"):
        with pytest.raises(RuntimeFault, match="operation_id"):
            fire(rt, bad)
    assert h.recorder.calls == [] and h.store.claimed_operations() == []


# ---- namespaces -------------------------------------------------------------------------------------------

def test_a_host_operation_id_never_equals_a_decision_mark(harness: Any) -> None:
    """`decision:T:review:1` was the runtime's own marker of decision 1's re-evaluation: a host operation with that
    id swallowed the quorum transition."""
    h = harness
    rt = h.start()  # Office Default
    h.store.put_task(TaskState("T", "office_default", "review"))
    for agent in ("rev-a", "rev-b"):
        h.store.add_participant(Participant("T", "review", "reviewer", agent))
    first = rt.record_decision("T", agent="rev-a", role="reviewer", verdict="approved")
    upcoming = first.decision_id + 1  # ids come from one sequence: the next decision's
    for op in (f"decision:T:review:{first.decision_id}", f"decision:T:review:{upcoming}"):
        assert rt.fire("on_comment", "T", payload=COMMENT, operation_id=op).result == "dispatched"
    second = rt.record_decision("T", agent="rev-b", role="reviewer", verdict="approved")
    assert second.decision_id == upcoming
    assert second.transitioned and h.store.get_task("T").step_id == "approval"  # type: ignore[union-attr]


def test_a_host_operation_id_never_shares_a_run_key_with_an_entry(harness: Any) -> None:
    """`entry:<ledger id>:<position>` was an entry position's run identity: a host operation of that id queued
    no run of its own (its key already existed), or took the entry's."""
    h = harness
    rt = start(h)
    moved = rt.move("T", "b")
    ledger_id = moved.ledger_id
    rt.move("T", "a")
    h.store.put_task(TaskState("T2", "c", "a"))
    assert rt.fire("on_comment", "T2", payload=COMMENT, operation_id=f"entry:{ledger_id}:0").result == "dispatched"
    (run,) = h.store.runs("T2")
    assert run.reason == "commented" and not run.key.startswith("entry:")


# ---- many processes, many ids ----------------------------------------------------------------------------

def _race(url: str, tmp: Path, workers: int, ids: list[str]) -> tuple[Counter[str], list[dict[str, int]]]:
    race = op_race
    ctx = multiprocessing.get_context("spawn")
    barrier = ctx.Barrier(workers)
    out = ctx.Queue()
    calls = [tmp / f"calls-{w}.txt" for w in range(workers)]
    procs = [ctx.Process(target=race.process_main, args=(url, race.plan_text(), ids, str(calls[w]), barrier, out, w))
             for w in range(workers)]
    for p in procs:
        p.start()
    try:
        deadline = time.monotonic() + 120
        results = dict(out.get(timeout=max(1.0, deadline - time.monotonic())) for _ in procs)
        for p in procs:
            p.join(timeout=max(1.0, deadline - time.monotonic()))
        assert [p.exitcode for p in procs] == [0] * workers
    finally:
        for p in procs:
            if p.is_alive():
                p.terminate()
                p.join(10)
    counted: Counter[str] = Counter()
    for path in calls:
        if path.exists():
            counted.update(path.read_text(encoding="utf-8").split())
    return counted, [results[w] for w in range(workers)]


def _check_race(url: str, tmp: Path) -> None:
    race = op_race
    store = open_store(url, create=False)
    try:
        race.prepare(store)
        ids = [f"ping:{i}" for i in range(150)]
        counted, results = _race(url, tmp, 3, ids)
        assert {op: counted[op] for op in ids} == dict.fromkeys(ids, 1)  # exactly one executor call per id
        assert all(store.operation_applied(op) for op in ids) and store.claimed_operations() == []
        assert sum(r.get("dispatched", 0) for r in results) == len(ids)
        # the others were discarded: as replays of what took effect, or while a live racer was running it
        assert sum(r.get("idempotent", 0) + r.get("in_progress", 0) for r in results) == 2 * len(ids)
        assert set().union(*results) <= {"dispatched", "idempotent", "in_progress"}
    finally:
        store.close()  # type: ignore[attr-defined]


def test_processes_racing_over_many_operation_ids_on_one_sqlite_file_call_each_executor_once(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'race.db'}"
    upgrade(url)
    _check_race(url, tmp_path)


@pytest.mark.postgres
def test_processes_racing_over_many_operation_ids_on_postgresql_call_each_executor_once(tmp_path: Path) -> None:
    pg = conc_pg
    with pg.private_schema() as schema:
        _check_race(pg.url_for(schema), tmp_path)

