"""Property tests of timers (docs/runtime.md §7, issue 20): random interleavings of arrivals, moves, clock advances
and ticks — by two runtimes over one store, as two processes would — on the workflow of support/timer_host.py
(`open`: `after 1h`, `every 10m`; `review`: `after 30m`; `closed`: none).

Whatever the interleaving:

- each (entry, timer, slot) fires at most once, and its `timer` record is written once;
- a timer fires only while its entry is the task's current one, and never before its slot is due;
- an `after` timer fires for slot 1 only; an `every` timer's slots fire in increasing order;
- at the end, once the clock is past every due time and a tick ran, each task's current entry has fired its
  `after` timer exactly once (nothing is lost), and nothing is due.

Backends: the memory store, and in-memory SQLite (the SQL due queries).  Profiles: conftest.py here.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from hypothesis import given, note, settings
from hypothesis import strategies as st
from support.timer_host import HOST_KINDS, Clock, plan

from interlock.runtime import ActionContext, ExecutorRegistry, ListSink, Runtime
from interlock.runtime.store import Store
from interlock.stores import MemoryStore, open_store

PLAN = plan()
TASKS = ("T1", "T2", "T3")
STEPS = ("open", "review", "closed")
SECONDS = {"after 1h": 3600, "every 10m": 600, "after 30m": 1800}
AFTER = {"open": 0, "review": 0}  # the index of each step's `after` timer

ops = st.one_of(
    st.tuples(st.just("create"), st.sampled_from(TASKS), st.sampled_from(STEPS)),
    st.tuples(st.just("move"), st.sampled_from(TASKS), st.sampled_from(STEPS)),
    st.tuples(st.just("advance"), st.sampled_from([1, 59, 599, 600, 601, 1799, 1800, 3599, 3600, 5400, 7200])),
    st.tuples(st.just("tick"), st.sampled_from([0, 1])),
)


@dataclass(frozen=True)
class Fired:
    task: str
    label: str
    entry: int
    index: int
    slot: int
    ctx_entry: int | None
    current: int | None  # the task's activation in the store while the action ran
    at: float


class World:
    """Two runtimes over one store on one test clock; every timer action the executors ran."""

    def __init__(self, store: Store, clock: Clock) -> None:
        self.store, self.clock = store, clock
        self.fired: list[Fired] = []
        self.entered: dict[int, float] = {}  # entry id -> the clock when the task arrived
        self.sink = ListSink()
        reg = ExecutorRegistry()
        for kind in HOST_KINDS:
            reg.register(kind, self.executor)
        self.rts = [Runtime(PLAN, store, executors=reg, sinks=[self.sink], executor_timeout=None)
                    for _ in range(2)]

    def executor(self, args: Mapping[str, Any], ctx: ActionContext) -> Any:
        if ctx.trigger in SECONDS:
            _, entry, index, slot = (ctx.operation_id or "").split(":")
            task = self.store.get_task(ctx.task.id)
            self.fired.append(Fired(ctx.task.id, ctx.trigger, int(entry), int(index), int(slot), ctx.entry_id,
                                    task.entry_id if task else None, self.clock.now))
        return []

    def apply(self, op: tuple[Any, ...]) -> None:
        rt = self.rts[0]
        if op[0] == "create" and self.store.get_task(op[1]) is None:
            self._arrived(rt.create_task(op[1], "w", op[2]).ledger_id)
        elif op[0] == "move" and self.store.get_task(op[1]) is not None:
            self._arrived(rt.move(op[1], op[2]).ledger_id)
        elif op[0] == "advance":
            self.clock.advance(op[1])
        elif op[0] == "tick":
            self.rts[op[1]].tick()

    def _arrived(self, ledger_id: int | None) -> None:
        if ledger_id is not None:
            self.entered[ledger_id] = self.clock.now

    def close(self) -> None:
        for rt in self.rts:
            rt.close()


def check(world: World) -> None:
    keys = Counter((f.entry, f.index, f.slot) for f in world.fired)
    assert all(n == 1 for n in keys.values()), f"a slot fired twice: {keys}"
    records = Counter((r.fields["entry_id"], r.fields["timer"], r.fields["slot"]) for r in world.sink.of("timer")
                      if r.fields["result"] == "fired")
    assert all(n == 1 for n in records.values()), f"a `timer` record written twice: {records}"
    assert sorted(records) == sorted((f.entry, f.label, f.slot) for f in world.fired)
    slots: dict[tuple[int, int], int] = {}
    for f in world.fired:
        assert f.ctx_entry == f.entry == f.current, f"fired for an entry that is not current: {f}"
        assert f.at >= world.entered[f.entry] + f.slot * SECONDS[f.label], f"fired before it was due: {f}"
        if f.label.startswith("after"):
            assert f.slot == 1
        assert f.slot > slots.get((f.entry, f.index), 0), f"slots out of order: {f}"
        slots[(f.entry, f.index)] = f.slot


def run(store: Store, clock: Clock, script: list[tuple[Any, ...]]) -> None:
    world = World(store, clock)
    try:
        for op in script:
            world.apply(op)
            check(world)
        clock.advance(2 * 3600)  # past every due time: a tick fires what is due, once
        world.rts[1].tick()
        world.rts[0].tick()
        check(world)
        assert store.due(10) == [], "something is still due after a tick at this moment"
        for task_id in TASKS:
            task = store.get_task(task_id)
            if task is None or task.entry_id is None or task.step_id not in AFTER:
                continue
            after = [f for f in world.fired if f.entry == task.entry_id and f.label.startswith("after")]
            assert len(after) == 1, f"{task_id}'s `after` did not fire exactly once for its entry: {after}"
    finally:
        world.close()


scripts = st.lists(ops, min_size=1, max_size=30)


@given(scripts)
def test_timers_fire_at_most_once_and_only_for_the_current_entry_memory(script: list[tuple[Any, ...]]) -> None:
    note(repr(script))
    clock = Clock()
    run(MemoryStore(clock=clock), clock, script)


@settings(max_examples=25)
@given(scripts)
def test_timers_fire_at_most_once_and_only_for_the_current_entry_sqlite(script: list[tuple[Any, ...]]) -> None:
    note(repr(script))
    clock = Clock()
    store = open_store("sqlite://", clock=clock)
    try:
        run(store, clock, script)
    finally:
        getattr(store, "close", lambda: None)()
