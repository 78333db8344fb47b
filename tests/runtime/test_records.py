"""Records and counters: what a host sees in its logs (loguru, through the default `LoguruSink`)
and through `runtime.counters.snapshot()`.

Every dispatch record carries `task_id`, `session_id` and a stable message unique to its
outcome (the on_agent_error seed's AC-F9); silent records never reach the log.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from loguru import logger

from interlock.compiler import compile_source
from interlock.dsl import SourceFile
from interlock.runtime import ExecutorRegistry, Runtime, StaticDirectory, TaskState
from interlock.runtime.builtins import register_builtins
from interlock.stores import MemoryStore

KB = """
workflow kb "Kanban" {
  step todo "Todo" {
    start
    manual_move
    on on_agent_error { queue_run(target: primary, reason: "agent_error")  page_oncall }
  }
  step quiet "Quiet" { manual_move }
  step review "Review" {
    manual_move
    on on_enter { clear_decisions  queue_run(target: primary, reason: "review") }
  }
}
task page_oncall on on_agent_error
"""

DISPATCH_MESSAGES = {
    "info": "trigger dispatched",
    "debug": "trigger dispatched: step has no actions",
    "error": "trigger dispatch aborted",
}
GUARD_MESSAGES = {
    "user_cancelled": "agent error dispatch: user cancelled the retry loop",
    "session_vanished": "agent error dispatch: session vanished",
    "session_unreadable": "agent error dispatch: session reload failed",
    "task_unavailable": "agent error dispatch: task unavailable",
    "sibling_working": "agent error dispatch: another session is working",
}


@pytest.fixture()
def logged() -> Iterator[list[dict[str, Any]]]:
    """Every loguru record emitted during the test: the bound `extra` fields plus `_level`, `_message` (the stable
    message) and `_line` (what loguru prints: the message and the fields)."""
    captured: list[dict[str, Any]] = []
    handler = logger.add(lambda m: captured.append({**m.record["extra"], "_level": m.record["level"].name,
                                                    "_message": m.record["extra"]["stable_message"],
                                                    "_line": m.record["message"]}),
                         level="DEBUG", format="{message}")
    yield captured
    logger.remove(handler)


class Host:
    def __init__(self, store: Any) -> None:
        self.store = store
        self.sessions = {"S1": {"id": "S1", "task_id": "T", "agent_profile_id": "p", "state": "failed"}}
        self.broken: set[str] = set()
        self.working = ""

    def session(self, sid: Any, event: Any) -> Any:
        if "session" in self.broken:
            raise ConnectionError("down")
        return self.sessions.get(sid)

    def task(self, tid: Any, event: Any) -> Any:
        if "task" in self.broken:
            raise ConnectionError("down")
        t = self.store.get_task(tid)
        return None if t is None else {
            "id": t.id, "workflow_id": t.workflow_id, "workflow_step_id": t.step_id or "", "description": "",
            "is_from_office": t.is_from_office, "is_ephemeral": False, "archived": False,
            "other_working_session": self.working}


def runtime(**kw: Any) -> tuple[Runtime, Host]:
    """A runtime that logs through loguru (its default sink) and counts."""
    store = MemoryStore()
    host = Host(store)
    rt = Runtime(compile_text(KB), store, executors=register_builtins(ExecutorRegistry()),
                 loaders={"session": host.session, "task": host.task},
                 directory=StaticDirectory(primary="primary", ceo=None), executor_timeout=10.0, **kw)
    store.put_task(TaskState("T", "kb", "todo"))
    return rt, host


def compile_text(text: str) -> Any:
    result = compile_source(SourceFile("kb.wf", text))
    assert result.plan is not None
    return result.plan


def event(**kw: Any) -> dict[str, Any]:
    return {"task_id": "T", "session_id": "S1", "execution_id": "E1", "agent_profile_id": "", "error_message": "x",
            "user_initiated": False, **kw}


def test_every_dispatch_record_carries_task_session_and_a_stable_message(logged: list[dict[str, Any]]) -> None:
    """AC-F9: one stable message per outcome and per recording guard; task_id and session_id bound."""
    rt, host = runtime()
    rt.dispatch("agent_error", event(execution_id="E1"))                       # INFO
    rt.dispatch("agent_error", event(execution_id="E2", user_initiated=True))  # user_cancelled
    host.sessions.clear()
    rt.dispatch("agent_error", event(execution_id="E3"))                       # session_vanished
    host.sessions["S1"] = {"id": "S1", "task_id": "T", "agent_profile_id": "p", "state": "failed"}
    host.broken = {"session"}
    rt.dispatch("agent_error", event(execution_id="E4"))                       # session_unreadable
    host.broken = {"task"}
    rt.dispatch("agent_error", event(execution_id="E5"))                       # task_unavailable
    host.broken = set()
    host.working = "S2"
    rt.dispatch("agent_error", event(execution_id="E6"))                       # sibling_working
    host.working = ""
    rt.store.put_task(TaskState("T", "kb", "quiet"))
    rt.dispatch("agent_error", event(execution_id="E7"))                       # DEBUG
    rt.store.put_task(TaskState("T", "kb", "todo"))
    rt.directory = StaticDirectory(primary=None)
    rt.dispatch("agent_error", event(execution_id="E8"))                       # ERROR (no primary agent)

    own = [r for r in logged if r["record"] in ("dispatch", "skip")]
    assert [(r["_level"], r["_message"]) for r in own] == [
        ("INFO", DISPATCH_MESSAGES["info"]),
        ("DEBUG", GUARD_MESSAGES["user_cancelled"]),
        ("DEBUG", GUARD_MESSAGES["session_vanished"]),
        ("WARNING", GUARD_MESSAGES["session_unreadable"]),
        ("WARNING", GUARD_MESSAGES["task_unavailable"]),
        ("DEBUG", GUARD_MESSAGES["sibling_working"]),
        ("DEBUG", DISPATCH_MESSAGES["debug"]),
        ("ERROR", DISPATCH_MESSAGES["error"]),
    ]
    for r in own:
        assert r["task_id"] == "T" and r["session_id"] == "S1", r
    messages = [*DISPATCH_MESSAGES.values(), *GUARD_MESSAGES.values()]
    assert len(set(messages)) == len(messages)  # unique: a test can tell each outcome apart
    # the walk warning is in the log too, identifiable, and not one of the dispatch's own records
    # the runtime said so when it was built (page_oncall has no executor), once
    assert [r["kinds"] for r in logged if r.get("code") == "runtime_misconfigured"] == [["page_oncall"]]
    walk = [r for r in logged if r["record"] == "warning" and r["code"] == "no_executor"]
    assert walk and all(r["task_id"] == "T" and r["session_id"] == "S1" and r["kind"] == "page_oncall"
                        for r in walk)
    # and every failed action is loud on its own (docs/runtime.md §7): a WARNING naming task, step and kind
    failed = [r for r in logged if r["record"] == "warning" and r["code"] == "action_failed"]
    assert failed and all(r["_level"] == "WARNING" and r["task_id"] == "T" and r["step"] == "todo" and r["kind"]
                          for r in failed)


def test_silent_records_never_reach_the_log(logged: list[dict[str, Any]]) -> None:
    rt, _ = runtime()
    rt.dispatch("agent_error", event())
    logged.clear()
    assert rt.dispatch("agent_error", event()).result == "idempotent"
    assert [r["record"] for r in logged] == ["warning"]  # only the walk's warning: no dispatch record
    logged.clear()
    assert rt.dispatch("agent_error", event(session_id="")).result == "skipped"  # a silent guard
    assert logged == []


def test_arrival_and_entry_records_name_task_and_session(logged: list[dict[str, Any]]) -> None:
    rt, _ = runtime()
    moved = rt.move("T", "review", session_id="S1")
    by_kind = {r["record"]: r for r in logged}
    arrival, entry = by_kind["arrival"], by_kind["entry"]
    assert (arrival["task_id"], arrival["session_id"], arrival["ledger_id"], arrival["route"]) == (
        "T", "S1", moved.ledger_id, "manual_move")
    assert (entry["task_id"], entry["session_id"], entry["entry_id"], entry["_message"]) == (
        "T", "S1", moved.ledger_id, "step entry dispatched")
    assert entry["attempted"] == ["clear_decisions", "queue_run"] and entry["failed"] == []
    effects = [r for r in logged if r["record"] == "effect"]
    assert [e["kind"] for e in effects] == ["clear_decisions", "queue_run"] and all(e["task_id"] == "T"
                                                                                    for e in effects)


def test_counters() -> None:
    rt, _ = runtime(sinks=[])
    moved = rt.move("T", "review")
    rt.dispatch_entry(moved.ledger_id)
    rt.dispatch_entry(moved.ledger_id)
    rt.move("T", "todo")
    rt.dispatch("agent_error", event(session_id=""))
    rt.dispatch("agent_error", event(user_initiated=True))
    rt.dispatch("agent_error", event(user_initiated=True))
    rt.directory = StaticDirectory(primary=None)
    rt.dispatch("agent_error", event())  # queue_run fails: an executor failure
    snap = rt.counters.snapshot()
    assert snap["arrivals"] == 2
    assert snap["entries_dispatched"] == 2
    assert snap["redeliveries_discarded"] == 2
    assert snap["guard_skips"] == {"no_session": 1, "user_cancelled": 2}
    assert snap["executor_failures"] == 1
    assert snap["missing_executors"] == 1  # the walk, for page_oncall
    rt.directory = StaticDirectory(primary="primary")
    assert rt.dispatch("agent_error", event()).result == "dispatched"
    assert rt.dispatch("agent_error", event()).result == "idempotent"
    snap = rt.counters.snapshot()
    assert snap["dispatches"] == 1 and snap["idempotent"] == 1 and snap["redeliveries_discarded"] == 3
