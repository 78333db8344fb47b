"""What every racer delivers in the runtime concurrency tests (threads, or spawned processes importing this by name).

The plan is `examples/office_default.wf`.  `TASKS` tasks wait at `work`, the review step has
template reviewer seats (`REVIEWERS`), and `CAS_TASKS` tasks wait at `backlog`.  Every racer
delivers the SAME events, phase by phase (a barrier starts each phase):

1. for each task: `on_comment` (operation `comment:T`), `on_turn_complete` (operation `tc:T`,
   which moves the task to review), then a redelivery (`dispatch_entry`) of every arrival of
   the task it can see;
2. for each task: both reviewers approve (the task moves on to approval), then the
   arrivals are redelivered again;
3. for each CAS task: `move(T, review, expected_step=backlog)`, a plain `move(T, review)`,
   and a redelivery of its arrivals.

A racer returns plain data (picklable): what each call returned and the records it saw.
"""

from __future__ import annotations

import functools
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

from interlock.runtime.api import Runtime
from interlock.runtime.plan import Plan, dump_plan, load_plan
from interlock.runtime.records import ListSink
from interlock.runtime.store import Participant, Store, TaskState

WF = "office_default"
REVIEWERS = ("rev-a", "rev-b")
EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "office_default.wf"


@functools.cache
def plan_text() -> str:
    """The example plan as JSON (what a host ships; workers load it with `load_plan`)."""
    from interlock.compiler import compile_path

    plan = compile_path(EXAMPLE).plan
    assert plan is not None
    return dump_plan(plan)


@functools.cache
def plan() -> Plan:
    return load_plan(plan_text())


def task_ids(tasks: int) -> list[str]:
    return [f"T{i:03d}" for i in range(tasks)]


def cas_ids(cas_tasks: int) -> list[str]:
    return [f"C{i:02d}" for i in range(cas_tasks)]


def prepare(store: Store, tasks: int, cas_tasks: int) -> None:
    """Pre-existing state (no arrivals): the template reviewer seats and the tasks."""
    for position, agent in enumerate(REVIEWERS):
        store.add_participant(Participant("", "review", "reviewer", agent, position=position))
    for task in task_ids(tasks):
        store.put_task(TaskState(task, WF, "work", description=f"task {task}"))
    for task in cas_ids(cas_tasks):
        store.put_task(TaskState(task, WF, "backlog"))


def runtime(store: Store, plan_obj: Plan | None = None, *, atomic: bool = True) -> tuple[Runtime, ListSink]:
    """`atomic`: arrivals commit with their store-backed entry (ADR 0010); False: the entry after the commit."""
    sink = ListSink()
    rt = Runtime(plan_obj or plan(), store, sinks=[sink], executor_timeout=30.0, atomic_arrivals=atomic)
    # the race is the subject: not the construction's `runtime_misconfigured` warning (these racers register no
    # loaders and no host executors, and deliver nothing that needs them)
    sink.records.clear()
    return rt, sink


def _redeliver(rt: Runtime, store: Store, task: str, out: dict[str, Any]) -> None:
    for row in store.ledger(task):
        if row.to_step_id is not None:
            out["entry_results"][rt.dispatch_entry(row.id).status] += 1
            out["events"] += 1


def deliver(rt: Runtime, store: Store, sink: ListSink, tasks: int, cas_tasks: int,
            phase: Callable[[], None]) -> dict[str, Any]:
    """One racer's deliveries (see the module docstring); `phase()` waits for the other racers."""
    out: dict[str, Any] = {"events": 0, "fires": Counter(), "moved": [], "entry_results": Counter(),
                           "decisions": [], "cas": {}, "plain": {}, "atomic": rt.atomic_arrivals}
    phase()
    for task in task_ids(tasks):
        comment = rt.fire("on_comment", task, session_id=f"S-{task}", operation_id=f"comment:{task}",
                          payload={"comment_id": f"c-{task}", "author_id": "u1", "body": "please look"})
        turn = rt.fire("on_turn_complete", task, session_id=f"S-{task}", operation_id=f"tc:{task}")
        out["events"] += 2
        out["fires"][("on_comment", comment.result)] += 1
        out["fires"][("on_turn_complete", turn.result)] += 1
        if turn.arrival is not None:
            out["fires"][("arrival", turn.arrival.status)] += 1
            if turn.arrival.status == "moved":
                out["moved"].append((task, turn.arrival.ledger_id, "engine_transition"))
        _redeliver(rt, store, task, out)
    phase()
    for task in task_ids(tasks):
        for agent in REVIEWERS:
            result = rt.record_decision(task, verdict="approved", agent=agent, role="reviewer")
            out["events"] += 1
            out["decisions"].append((task, result.step_id, result.transitioned, result.abandoned))
            if result.arrival is not None and result.arrival.status == "moved":
                out["moved"].append((task, result.arrival.ledger_id, "decision"))
        _redeliver(rt, store, task, out)
    phase()
    for task in cas_ids(cas_tasks):
        cas = rt.move(task, "review", expected_step="backlog", actor_id="racer")
        plain = rt.move(task, "review", actor_id="racer")
        out["events"] += 2
        out["cas"][task] = cas.status
        out["plain"][task] = plain.status
        if cas.status == "moved":
            out["moved"].append((task, cas.ledger_id, "manual_move"))
        _redeliver(rt, store, task, out)
    out["records"] = [(r.kind, r.level, dict(r.fields)) for r in sink.records
                      if r.kind in ("effect", "entry", "arrival", "error", "warning")]
    out["counters"] = rt.counters.snapshot()
    return out


def process_main(url: str, text: str, tasks: int, cas_tasks: int, barrier: Any, results: Any, worker: int) -> None:
    """Entry point of a spawned racer: open its own store and runtime, race, report (or report the error)."""
    from interlock.stores import open_store

    store = open_store(url, create=False)
    try:
        rt, sink = runtime(store, load_plan(text), atomic=worker % 2 == 0)
        results.put((worker, deliver(rt, store, sink, tasks, cas_tasks, lambda: barrier.wait(timeout=60))))
    except BaseException as exc:
        results.put((worker, {"error": f"{type(exc).__name__}: {exc}"}))
        raise
    finally:
        store.close()  # type: ignore[attr-defined]
