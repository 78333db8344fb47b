"""A redelivery of an operation whose marker `prune` deleted is refused loudly (ADR 0047): `fire` and `dispatch`
answer `pruned`, a `redelivery_refused` warning names it, and nothing runs — on memory, SQLite and PostgreSQL.
Before the prune the same redelivery is `idempotent`; a new operation id still runs."""

from __future__ import annotations

import time
from collections.abc import Iterator
from typing import Any

import pytest

from interlock.compiler import compile_source
from interlock.dsl import SourceFile
from interlock.runtime import ExecutorRegistry, ListSink, Runtime, store_task_loader
from interlock.runtime.store import Store
from interlock.stores import MemoryStore, SqlStore, prune

DAY = 86_400.0
SOURCE = """
task notify(text: str = "") on on_enter, on_comment, on_agent_error
entry { dispatch notify }
workflow w "W" {
  step work "Work" {
    start
    manual_move
    on on_comment     { notify(text: "comment") }
    on on_agent_error { notify(text: "agent error") }
  }
}
"""
COMMENT = {"comment_id": "c1", "author_id": "u1", "body": "hi"}
EVENT = {"task_id": "T1", "session_id": "S1", "execution_id": "E1", "agent_profile_id": "coder",
         "error_message": "OOM", "user_initiated": False}


class Clock:
    def __init__(self) -> None:
        self.offset = 0.0

    def __call__(self) -> float:
        return time.time() + self.offset


@pytest.fixture(params=["memory", "sqlite", pytest.param("postgresql", marks=pytest.mark.postgres)])
def clocked(request: pytest.FixtureRequest) -> Iterator[tuple[Store, Clock]]:
    clock = Clock()
    if request.param == "memory":
        yield MemoryStore(clock=clock), clock
        return
    if request.param == "sqlite":
        target: Any = request.getfixturevalue("sqlite_url")
    else:
        target = request.getfixturevalue("runtime_pg_engine")
        from interlock.stores.schema import metadata

        with target.begin() as conn:
            for table in reversed(metadata.sorted_tables):
                conn.execute(table.delete())
    store = SqlStore(target, clock=clock)
    try:
        yield store, clock
    finally:
        store.close()


def test_a_pruned_operation_is_refused_loudly_never_run_again(clocked: tuple[Store, Clock]) -> None:
    store, clock = clocked
    result = compile_source(SourceFile("p.wf", SOURCE))
    assert result.plan is not None, result.diagnostics
    calls: list[str] = []
    registry = ExecutorRegistry()
    registry.register("notify", lambda args, ctx: calls.append(ctx.operation_id or ""))
    trace = ListSink()
    sessions = {"S1": {"id": "S1", "task_id": "T1", "agent_profile_id": "coder", "state": "failed"}}
    loaders = {"session": lambda session_id, event: sessions.get(session_id),
               "task": store_task_loader(store, working_sibling=lambda task_id, session_id: "")}
    rt = Runtime(result.plan, store, executors=registry, sinks=[trace], loaders=loaders, executor_timeout=None)
    try:
        rt.create_task("T1", "w")
        assert rt.fire("on_comment", "T1", payload=COMMENT, operation_id="comment:c1").result == "dispatched"
        assert rt.fire("on_comment", "T1", payload=COMMENT, operation_id="comment:c1").result == "idempotent"
        assert rt.dispatch("agent_error", EVENT).result == "dispatched"
        assert calls == ["comment:c1", "agent_error:session:S1:E1"]
        clock.offset = 100 * DAY
        report = prune(store, older_than=90 * DAY)
        assert (report.tasks_pruned, report.fingerprints) == (1, 2)
        fired = rt.fire("on_comment", "T1", payload=COMMENT, operation_id="comment:c1")
        dispatched = rt.dispatch("agent_error", EVENT)
        assert (fired.result, dispatched.result) == ("pruned", "pruned")
        assert len(calls) == 2, "a pruned operation ran again"
        refused = [r.fields for r in trace.of("warning") if r.fields.get("code") == "redelivery_refused"]
        assert [(f["task"], f["operation_id"]) for f in refused] == [("T1", "comment:c1"),
                                                                     ("T1", "agent_error:session:S1:E1")]
        assert rt.counters.snapshot()["redeliveries_refused"] == 2
        assert rt.fire("on_comment", "T1", payload=COMMENT, operation_id="comment:c2").result == "dispatched"
        assert calls[2:] == ["comment:c2"]
    finally:
        rt.close()
