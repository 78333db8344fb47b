"""Property tests of the runtime: random interleavings of moves, crashes after commit,
redeliveries of earlier arrivals, decisions, turn completions, restarts and `recover` on
the Office workflow with seated reviewers and an approver.

After a final `recover`, whatever the interleaving:

- every ledger row naming a destination has exactly one durable entry record and exactly
  one `entry` record in the trace;
- the queued runs are exactly one per (entry into review/approval x seated participant of
  the step's role) — at most once (redeliveries, restarts) and at least once (recover);
- the `redeliveries_discarded` counters (summed over the runtimes of the run) equal the
  number of redeliveries of entries that had their record;
- each entry record's attempted kinds are the step's dispatch list, in declared order.

Backends: the memory store and a SQLite file (a restart reopens it).  Profiles: see
conftest.py in this folder (`ci` is the fast default).
"""

from __future__ import annotations

import tempfile
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, note
from hypothesis import strategies as st

from interlock.compiler import compile_source
from interlock.dsl import SourceFile
from interlock.runtime import ListSink, Runtime, StaticDirectory
from interlock.runtime.store import Participant, Store
from interlock.stores import MemoryStore, open_store

ROOT = Path(__file__).resolve().parents[2]
PLAN = compile_source(SourceFile("office_default.wf", (ROOT / "examples" / "office_default.wf").read_text())).plan
assert PLAN is not None

TASKS = ("T1", "T2")
STEPS = ("backlog", "work", "review", "approval", "done")
SEATS = {"review": ("reviewer", ("rev-a", "rev-b"), "task_assigned"),
         "approval": ("approver", ("appr-1",), "task_assigned")}
DECIDERS = (("rev-a", "reviewer"), ("rev-b", "reviewer"), ("appr-1", "approver"), ("outsider", "reviewer"))
DISPATCH = {step.id: tuple(a.kind for a in step.entry_dispatch) for step in PLAN.workflow("office_default").steps}

ops = st.lists(st.one_of(
    st.tuples(st.just("move"), st.sampled_from(TASKS), st.sampled_from(STEPS), st.booleans()),
    st.tuples(st.just("redeliver"), st.integers(min_value=0, max_value=1000)),
    st.tuples(st.just("decide"), st.sampled_from(TASKS), st.sampled_from(DECIDERS),
              st.sampled_from(("approved", "rejected"))),
    st.tuples(st.just("turn_complete"), st.sampled_from(TASKS)),
    st.just(("restart",)),
    st.just(("recover",)),
), max_size=30)


class Run:
    def __init__(self, backend: str, tmp: str) -> None:
        self.url = f"sqlite:///{tmp}/p.db" if backend == "sqlite" else None
        self.store: Store = open_store(self.url) if self.url else MemoryStore()
        self.opened = [self.store]
        self.sink = ListSink()
        self.runtimes: list[Runtime] = []
        self.rt = self.new_runtime()
        self.recorded: set[int] = set()  # the model: ledger rows whose entry has its record
        self.discards = 0
        self.turns = 0

    def new_runtime(self) -> Runtime:
        rt = Runtime(PLAN, self.store, directory=StaticDirectory(primary="primary", ceo="ceo-1"), sinks=[self.sink],
                     executor_timeout=10.0)
        self.runtimes.append(rt)
        return rt

    def restart(self) -> None:
        if self.url:
            self.store = open_store(self.url, create=False)
            self.opened.append(self.store)
        self.rt = self.new_runtime()

    def close(self) -> None:
        for store in self.opened:
            close = getattr(store, "close", None)
            if close is not None:
                close()

    def arrived(self, arrival: Any) -> None:
        """An arrival dispatched in-line (its entry is now recorded)."""
        if arrival is not None and arrival.status == "moved":
            assert arrival.entry is not None and arrival.entry.status == "dispatched"
            self.recorded.add(arrival.ledger_id)

    def apply(self, op: tuple[Any, ...]) -> None:
        kind = op[0]
        if kind == "move":
            _, task, step, crash = op
            result = self.rt.move(task, step, dispatch=not crash)
            if not crash:
                self.arrived(result)
        elif kind == "redeliver":
            rows = [r for r in self.store.ledger() if r.to_step_id is not None]
            row = rows[op[1] % len(rows)]
            result = self.rt.dispatch_entry(row.id)
            if row.id in self.recorded:
                assert result.status == "redelivery"
                self.discards += 1
            else:
                assert result.status == "dispatched"
                self.recorded.add(row.id)
        elif kind == "decide":
            _, task, (agent, role), verdict = op
            self.arrived(self.rt.record_decision(task, agent=agent, role=role, verdict=verdict).arrival)
        elif kind == "turn_complete":
            self.turns += 1
            fired = self.rt.fire("on_turn_complete", op[1], session_id="S1", operation_id=f"turn:{self.turns}")
            assert fired.result == "dispatched"
            self.arrived(fired.arrival)
        elif kind == "restart":
            self.restart()
        else:
            self.rt.recover()
            self.recorded.update(r.id for r in self.store.ledger() if r.to_step_id is not None)


@pytest.mark.parametrize("backend", ["memory", "sqlite"])
@given(ops=ops)
def test_entry_exactly_once_under_any_interleaving(backend: str, ops: list[tuple[Any, ...]]) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        run = Run(backend, tmp)
        try:
            for step, agents in (("review", SEATS["review"]), ("approval", SEATS["approval"])):
                for agent in agents[1]:
                    run.store.add_participant(Participant("", step, agents[0], agent))
            for task in TASKS:
                run.arrived(run.rt.create_task(task, "office_default", description=f"task {task}"))
            for op in ops:
                note(repr(op))
                run.apply(op)
            run.rt.recover()
            check(run)
        finally:
            run.close()


def check(run: Run) -> None:
    store = run.store
    rows = [r for r in store.ledger() if r.to_step_id is not None]
    assert [r for r in store.ledger() if r.to_step_id is None] == []  # no detach in this workload
    # one durable entry record and one trace record per row naming a destination
    traced = Counter(r.fields["entry_id"] for r in run.sink.of("entry"))
    for row in rows:
        record = store.entry_record(row.id)
        assert record is not None, f"row {row.id} ({row.route} -> {row.to_step_id}) was never entered"
        assert record.step_id == row.to_step_id
        assert record.attempted == DISPATCH[row.to_step_id], (row, record)
        assert record.failed == ()
        assert traced[row.id] == 1, f"row {row.id} entered {traced[row.id]} times"
    assert set(traced) == {r.id for r in rows}
    # the runs: exactly one per (entry into review/approval x seated participant)
    want: Counter[tuple[int | None, str, str, str]] = Counter()
    for row in rows:
        if row.to_step_id in SEATS:
            _, agents, reason = SEATS[row.to_step_id]
            for agent in agents:
                want[(row.id, row.task_id, agent, reason)] += 1
    got = Counter((r.entry_id, r.task_id, r.agent, r.reason) for r in store.runs())
    assert got == want
    # redeliveries of recorded entries, and only those, are counted as discarded
    discarded = sum(rt.counters.snapshot()["redeliveries_discarded"] for rt in run.runtimes)
    assert discarded == run.discards
    assert len(run.sink.of("redelivery_discarded")) == run.discards
