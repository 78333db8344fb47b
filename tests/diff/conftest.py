"""Fixtures for the `interlock diff` tests: the two versions of a workflow every store test diffs, and stores
(SQLite files and private PostgreSQL schemas) seeded through the runtime's public API with work the change
strands — and work it does not.

Helpers reach the tests through fixtures, never imports: the suite runs in pytest's importlib mode.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import pytest

from interlock.compiler import compile_source
from interlock.dsl import SourceFile
from interlock.runtime.plan import Plan
from interlock.stores import upgrade

HERE = Path(__file__).resolve().parent

OLD_TEXT = """\
role qa
task notify (text: str = "") on on_enter
task ping on on_enter
entry { dispatch notify, ping }

workflow flow "Flow" {
  step todo "Todo" {
    start
    manual_move
    on on_turn_complete { move_to_step(check) }
  }
  step check "Check" {
    manual_move
    on on_enter { ensure_seats(role: qa)  notify(text: "check")  ping }
    on on_turn_complete { move_to_step(done) when quorum(qa, all_approve) }
  }
  step legacy "Legacy" {
    manual_move
    on on_turn_complete { move_to_step(done) }
  }
  step done "Done" { manual_move  terminal }
}

workflow line "Line" {
  step a "A" {
    start
    on on_turn_complete { move_to_step(b) }
  }
  step b "B" { terminal }
}
"""

# qa gone (the guard and the seats use reviewer), `legacy` gone, `notify` run inline (exclude), `ping` gone,
# and `line.a` lost its only transition: a dead end.
NEW_TEXT = """\
task notify (text: str = "") on on_enter
entry { exclude notify }

workflow flow "Flow" {
  step todo "Todo" {
    start
    manual_move
    on on_turn_complete { move_to_step(check) }
  }
  step check "Check" {
    manual_move
    on on_enter { ensure_seats(role: reviewer)  notify(text: "check") }
    on on_turn_complete { move_to_step(done) when quorum(reviewer, all_approve) }
  }
  step done "Done" { manual_move  terminal }
}

workflow line "Line" {
  step a "A" { start }
  step b "B" { terminal }
}
"""


def compile_text(text: str, name: str = "flow.wf") -> Plan:
    result = compile_source(SourceFile(name, text))
    assert result.plan is not None, "\n".join(str(d) for d in result.diagnostics)
    return result.plan


@pytest.fixture(scope="session")
def plans() -> tuple[Plan, Plan]:
    return compile_text(OLD_TEXT), compile_text(NEW_TEXT)



def seed(url: str, old: Plan) -> dict[str, Any]:
    """Work under the OLD plan: what the diff must report, and what it must not.  Returns the ids involved."""
    from interlock.runtime import ActionContext, ExecutorRegistry, Runtime, StaticDirectory
    from interlock.stores import LedgerWriter, open_store
    from interlock.stores.engine import make_engine

    def host(args: Mapping[str, Any], ctx: ActionContext) -> list[Any]:
        return []

    executors = ExecutorRegistry()
    executors.register("notify", host)
    executors.register("ping", host)
    store = open_store(url, create=False)
    try:
        rt = Runtime(old, store, executors=executors, directory=StaticDirectory(primary="agent-1"), sinks=[])
        rt.create_task("t-todo", "flow")  # stays where it is: nothing stranded
        rt.create_task("t-legacy", "flow", "legacy")  # its step is removed
        rt.create_task("t-check", "flow")
        rt.move("t-check", "check")  # entry dispatched: a qa seat; then a qa decision
        rt.record_decision("t-check", verdict="approved", agent="agent-1", role="qa")
        rt.create_task("t-pending", "flow")
        pending = rt.move("t-pending", "check", dispatch=False)  # committed, never dispatched
        rt.create_task("t-a", "line")  # line.a loses its only way out
        rt.create_task("t-b", "line", "b")  # terminal: never stranded
    finally:
        close = getattr(store, "close", None)
        if close is not None:
            close()
    # a host that keeps its own tasks table: only the ledger knows `t-host` (docs/runtime.md §4, LedgerWriter)
    engine = make_engine(url)
    try:
        with engine.begin() as conn:
            host_row = LedgerWriter().write_arrival(conn, task_id="t-host", from_workflow_id=None, from_step_id=None,
                                                    to_workflow_id="flow", to_step_id="legacy", route="creation")
    finally:
        engine.dispose()
    assert pending.status == "moved" and pending.ledger_id is not None
    return {"pending_entry": pending.ledger_id, "host_entry": host_row}


@pytest.fixture(scope="session")
def seeder() -> Callable[[str, Plan], dict[str, Any]]:
    """`seed(url, old_plan)`, for tests that seed a store they set up themselves."""
    return seed




@pytest.fixture
def pg_url(pg_server: Any) -> str:
    """A fresh migrated private schema of the suite's `pg_server` (dropped at the end of the session)."""
    url = str(pg_server.url_for(pg_server.new_schema()))
    upgrade(url)
    return url


@pytest.fixture(params=["sqlite", pytest.param("postgresql", marks=pytest.mark.postgres)])
def seeded(request: pytest.FixtureRequest, plans: tuple[Plan, Plan]) -> tuple[str, dict[str, Any]]:
    """(store URL, seed ids) for each dialect."""
    url: str = request.getfixturevalue("sqlite_url" if request.param == "sqlite" else "pg_url")
    return url, seed(url, plans[0])


@pytest.fixture
def wf_files(tmp_path: Path) -> Callable[[], tuple[Path, Path]]:
    def write() -> tuple[Path, Path]:
        old, new = tmp_path / "old.wf", tmp_path / "new.wf"
        old.write_text(OLD_TEXT, encoding="utf-8")
        new.write_text(NEW_TEXT, encoding="utf-8")
        return old, new
    return write


@pytest.fixture
def env_clean() -> dict[str, str]:
    return {k: v for k, v in os.environ.items() if not k.startswith("GIT_")}
