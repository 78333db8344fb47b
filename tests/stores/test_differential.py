"""MemoryStore and SqlStore answer every call sequence alike (hypothesis: random programs, run on both, compared).

Ids are compared by order, not by value: a rolled-back SQLite unit gives its ids back,
the memory store never does, and neither is part of the contract.  Entry ids are picked
as "the i-th ledger row" so both stores address the same arrival.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import fields, is_dataclass, replace
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from interlock.runtime.store import Decision, EntryRecord, Participant, QueuedRun, Store, StoreError, TaskState
from interlock.stores import MemoryStore, SqlStore
from interlock.stores.engine import make_engine
from interlock.stores.schema import metadata

TASKS = ("T1", "T2")
WFS = ("wf", "kanban", None)
STEPS = ("a", "b", "c", None)
ALL_STEPS = ("a", "b", "c")
ROLES = ("reviewer", "approver")
AGENTS = ("x", "y")
OPS = ("op1", "op2")


def _call(name: str, *args: Any, **kwargs: Any) -> Callable[[Store], Any]:
    def run(store: Store) -> Any:
        return getattr(store, name)(*args, **kwargs)
    run.__name__ = f"{name}{args}{kwargs}"
    return run


def _entry_call(name: str, index: int, *args: Any) -> Callable[[Store], Any]:
    def run(store: Store) -> Any:
        rows = store.ledger()
        entry_id = rows[index % len(rows)].id if rows else 10_000
        if name == "record_entry":
            return store.record_entry(EntryRecord(entry_id, *args))
        return getattr(store, name)(entry_id, *args)
    run.__name__ = f"{name}[{index}]{args}"
    return run


tasks = st.sampled_from(TASKS)
steps = st.sampled_from(STEPS)
wfs = st.sampled_from(WFS)

entry_ops = st.one_of(
    st.builds(lambda i, s: _entry_call("record_entry", i, "T1", "wf", s, ("queue_run",), (("k", "e"),)),
              st.integers(0, 5), st.sampled_from(ALL_STEPS)),
    st.builds(lambda i, p: _entry_call("claim_marker", i, p, "queue_run"), st.integers(0, 5), st.integers(0, 2)),
    st.builds(lambda i, p, s: _entry_call("finish_marker", i, p, s), st.integers(0, 5), st.integers(0, 2),
              st.sampled_from(("done", "failed", "bogus"))),
)

simple_ops = st.one_of(
    entry_ops,
    st.builds(lambda t, w, s: _call("create_task", TaskState(t, w, s)), tasks, wfs, steps),
    st.builds(lambda t, w, s: _call("put_task", TaskState(t, w, s, description="d")), tasks, wfs, steps),
    st.builds(lambda t, w, s, e, o: _call("move_task", t, w, s, route="manual_move", expected_step_id=e,
                                          operation_id=o),
              tasks, wfs, steps, st.sampled_from((None, "a", "b")), st.sampled_from((None, *OPS))),
    st.builds(lambda o: _call("mark_operation", o, task_id="T1"), st.sampled_from(OPS)),
    st.builds(lambda k, t, p: _call("enqueue_run", QueuedRun(k, t, "a", "x", "r", p)),
              st.sampled_from(("k1", "k2")), tasks, st.sampled_from(({}, {"n": 1}, {"bad": {1, 2}}))),
    st.builds(lambda t, s, r, a, d: _call("add_participant", Participant(t, s, r, a, decision_required=d)),
              st.sampled_from(("", *TASKS)), st.sampled_from(ALL_STEPS), st.sampled_from(ROLES),
              st.sampled_from(AGENTS), st.booleans()),
    st.builds(lambda t, s, r, a, ws: _call("ensure_seat", t, s, r, a, ws), st.sampled_from(("", *TASKS)),
              st.sampled_from(ALL_STEPS), st.sampled_from(ROLES), st.sampled_from(AGENTS),
              st.sampled_from((ALL_STEPS, ("a",), ()))),
    st.builds(lambda t, s, dt, di, r, v: _call("record_decision", Decision(t, s, dt, di, r, v)), tasks,
              st.sampled_from(("a", "b")), st.sampled_from(("agent", "agent", "user", "robot")),
              st.sampled_from(AGENTS), st.sampled_from(ROLES), st.sampled_from(("approved", "rejected", "", "x"))),
    st.builds(lambda t, s: _call("clear_decisions", t, s), tasks, st.sampled_from(("a", "b"))),
)


def _unit(body: list[Callable[[Store], Any]], fail: bool) -> Callable[[Store], Any]:
    def run(store: Store) -> Any:
        out: list[Any] = []
        try:
            with store.unit() as unit:
                out.extend(_guarded(op, unit) for op in body)
                if fail:
                    raise RuntimeError("unit fails")
        except RuntimeError:
            out.append("rolled back")
        return out
    run.__name__ = f"unit(fail={fail})"
    return run


# Every program starts with an arrival, so the entry calls have a ledger row to address.
programs = st.lists(st.one_of(simple_ops, st.builds(_unit, st.lists(simple_ops, max_size=5), st.booleans())),
                    max_size=25).map(lambda ops: [_call("create_task", TaskState("T1", "wf", "a")), *ops])


def _guarded(op: Callable[[Store], Any], store: Store) -> Any:
    try:
        return _norm(op(store))
    except (StoreError, ValueError) as exc:
        return type(exc).__name__


def _norm(value: Any) -> Any:
    """Drop surrogate ids (compared by order elsewhere)."""
    if isinstance(value, list):
        return [_norm(v) for v in value]
    if isinstance(value, dict):
        return {k: _norm(v) for k, v in value.items()}
    if is_dataclass(value) and not isinstance(value, type):
        names = {f.name for f in fields(value)}
        changes: dict[str, Any] = {n: _norm(getattr(value, n)) for n in names}
        for name in ("id", "entry_id"):
            if name in names:
                changes[name] = 0
        return replace(value, **changes)
    return value


def _snapshot(store: Store) -> dict[str, Any]:
    rows = store.ledger()
    index = {row.id: i for i, row in enumerate(rows)}
    def task(task_id: str) -> Any:  # its activation by the ledger row's place (surrogate ids differ)
        found = store.get_task(task_id)
        if found is None or found.entry_id is None:
            return found
        return replace(found, entry_id=("row", index.get(found.entry_id)))

    return {
        "tasks": [task(t) for t in TASKS],
        "ledger": _norm(rows),
        "unrecorded": [index[r.id] for r in store.unrecorded_arrivals()],
        "entries": [_norm(store.entry_record(r.id)) for r in rows],
        "markers": [_norm(store.markers(r.id)) for r in rows],
        "ops": [store.operation_applied(o) for o in OPS],
        "runs": _norm(store.runs()),
        "participants": {t: _norm(store.participants(t, ALL_STEPS)) for t in ("", *TASKS)},
        "decisions": {(t, s): _norm(store.decisions(t, s)) for t in TASKS for s in ALL_STEPS},
    }


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(programs)
def test_memory_and_sql_agree(program: list[Callable[[Store], Any]]) -> None:
    engine = make_engine("sqlite://")
    metadata.create_all(engine)
    sql = SqlStore(engine, check=False)
    memory = MemoryStore()
    try:
        for op in program:
            assert _guarded(op, memory) == _guarded(op, sql), op.__name__
        assert _snapshot(memory) == _snapshot(sql)
    finally:
        engine.dispose()
