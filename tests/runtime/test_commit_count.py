"""How many transactions a delivery commits on SQLite (issue 19, ADR 0052): counted, not timed.

Each COMMIT the store issues is seen through the sqlite3 driver's trace callback on every connection of the
store's engine, so the counts are exact.  What a user relies on: an arrival whose entry runs one host action
commits at most 3 times (2: the arrival with its marker started, then the marker finished with the entry record),
and the first commit is durable before the host action runs (RUNTIME §6 and §7: a durable marker before host effects).
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import event

from interlock.compiler import compile_source
from interlock.dsl import SourceFile
from interlock.runtime import ExecutorRegistry, Runtime
from interlock.stores import upgrade
from interlock.stores.engine import make_engine
from interlock.stores.sql import SqlStore

WF = """
task notify on on_enter, on_turn_complete
entry { dispatch notify }
workflow w "W" {
  step a "A" { start manual_move on on_turn_complete { notify move_to_step(one) } }
  step one "One" { manual_move on on_enter { notify } on on_turn_complete { notify move_to_step(a) } }
  step two "Two" { manual_move on on_enter { notify queue_run(target: primary, reason: "x") notify } }
  step plain "Plain" { manual_move on on_enter { queue_run(target: primary, reason: "x") } }
}
"""


class Counted:
    """A SQLite file store whose statements are traced: `commits()` counts the COMMITs since the last call."""

    def __init__(self, path: Path) -> None:
        url = f"sqlite:///{path}"
        upgrade(url)
        self.path = path
        self.statements: list[str] = []
        engine = make_engine(url)
        event.listen(engine, "connect", self._trace)
        self.store = SqlStore(engine, owns_engine=True)

    def _trace(self, dbapi: Any, _record: Any) -> None:
        dbapi.set_trace_callback(self.statements.append)

    def commits(self) -> int:
        done = sum(1 for s in self.statements if s.strip().upper() == "COMMIT")
        self.statements.clear()
        return done


@pytest.fixture
def counted(tmp_path: Path) -> Iterator[Counted]:
    c = Counted(tmp_path / "store.db")
    yield c
    c.store.close()


def _runtime(c: Counted, seen: list[tuple[str, str | None, str | None]], **options: Any) -> Runtime:
    plan = compile_source(SourceFile("commits.wf", WF)).plan
    assert plan is not None
    registry = ExecutorRegistry()

    def notify(_args: Any, ctx: Any) -> None:
        # What another process sees while the host action runs: the committed step and marker state.
        other = sqlite3.connect(c.path)
        try:
            step = other.execute("SELECT step_id FROM interlock_tasks WHERE id = 'T'").fetchone()[0]
            marker = other.execute("SELECT state FROM interlock_entry_markers WHERE entry_id = ? ORDER BY "
                                   '"position" DESC LIMIT 1', (ctx.entry_id,)).fetchone()
        finally:
            other.close()
        seen.append((ctx.trigger, step, None if marker is None else marker[0]))

    registry.register("notify", notify)
    return Runtime(plan, c.store, executors=registry, sinks=[], **options)


def test_an_arrival_whose_entry_runs_one_host_action_commits_twice(counted: Counted) -> None:
    seen: list[tuple[str, str | None, str | None]] = []
    rt = _runtime(counted, seen)
    try:
        rt.create_task("S", "w")  # the runtime's first write keeps its plan revision and registers its owner
        counted.commits()
        rt.create_task("T", "w")
        assert counted.commits() == 1  # the task, its genesis row, its (empty) entry record
        result = rt.move("T", "one")
        assert result.entry is not None and result.entry.status == "dispatched"
        assert counted.commits() == 2
        # the first commit (step change, ledger row, marker started) was durable before the host action ran
        assert seen == [("on_enter", "one", "in_progress")]
        assert counted.store.markers(result.ledger_id)[0].state == "done"  # type: ignore[arg-type]
    finally:
        rt.close()


def test_an_entry_commits_once_per_host_action_plus_one_and_once_without_any(counted: Counted) -> None:
    seen: list[tuple[str, str | None, str | None]] = []
    rt = _runtime(counted, seen)
    try:
        rt.create_task("T", "w")
        counted.commits()
        assert rt.move("T", "plain").entry.status == "dispatched"  # type: ignore[union-attr]
        assert counted.commits() == 1  # store-backed actions only: the arrival's one transaction
        assert rt.move("T", "two").entry.status == "dispatched"  # type: ignore[union-attr]
        assert counted.commits() == 3  # two host actions: n + 1
        assert [s[1:] for s in seen] == [("two", "in_progress"), ("two", "in_progress")]
    finally:
        rt.close()


def test_a_fire_with_an_operation_id_into_a_host_entry_commits_three_times(counted: Counted) -> None:
    seen: list[tuple[str, str | None, str | None]] = []
    rt = _runtime(counted, seen)
    try:
        rt.create_task("T", "w")
        counted.commits()
        result = rt.fire("on_turn_complete", "T", operation_id="turn-1")
        assert result.result == "dispatched"
        # the operation's claim (durable before the handler's host action), the arrival with the operation marked
        # and the entry's marker started, the marker finished with the entry record
        assert counted.commits() == 3
        assert [s[0] for s in seen] == ["on_turn_complete", "on_enter"]
        rows = len(counted.store.ledger("T"))
        assert rt.fire("on_turn_complete", "T", operation_id="turn-1").result == "idempotent"
        assert len(counted.store.ledger("T")) == rows and len(seen) == 2  # a redelivery runs and writes nothing
    finally:
        rt.close()
