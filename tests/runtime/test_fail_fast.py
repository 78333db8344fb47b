"""Misconfiguration shows up at start-up, not at the first event in production (issue 21, finding 5): `Runtime.check()`
and the constructor's one `runtime_misconfigured` warning name every kind without an executor and every record without
a loader the plan can need; `dispatch` refuses an event with unknown or missing fields with `fire`'s `PayloadError`."""

from __future__ import annotations

from typing import Any

import pytest

from interlock.runtime import (
    ExecutorRegistry,
    ListSink,
    PayloadError,
    Runtime,
    RuntimeFault,
    StaticDirectory,
    TaskState,
)
from interlock.runtime.preflight import Problem, RuntimeMisconfigured, Where
from interlock.stores import MemoryStore

WF = """
task notify(channel: str) on on_enter, on_comment, on_exit
task page on on_comment
session pause on on_turn_complete
entry { dispatch notify }
workflow w "W" {
  step a "A" {
    start manual_move
    on on_enter { auto_start_agent  notify(channel: "#a") }
    on on_comment { notify(channel: "#c")  page  queue_run(target: primary, reason: "c") }
    on on_turn_complete { pause  move_to_step(b) }
    on on_exit { notify(channel: "#bye") }
  }
  step b "B" { manual_move  on on_comment { page } }
}
"""

FAILURE = {"task_id": "T", "session_id": "S1", "execution_id": "E1", "agent_profile_id": "", "error_message": "OOM",
           "user_initiated": False}


@pytest.fixture()
def plan() -> Any:
    from interlock.compiler import compile_source
    from interlock.dsl import SourceFile

    result = compile_source(SourceFile("w.wf", WF))
    assert result.plan is not None, result.diagnostics
    return result.plan


def runtime(plan: Any, *, kinds: tuple[str, ...] = (), loaders: dict[str, Any] | None = None,
            sink: ListSink | None = None) -> Runtime:
    registry = ExecutorRegistry()
    for kind in kinds:
        registry.register(kind, lambda args, ctx: None)
    return Runtime(plan, MemoryStore(), executors=registry, loaders=loaders, sinks=[sink or ListSink()],
                   directory=StaticDirectory(primary="p", ceo="ceo"), executor_timeout=None)


def test_check_names_every_kind_without_an_executor_and_every_record_without_a_loader(plan: Any) -> None:
    problems = runtime(plan).check()
    assert problems == [
        Problem("no_executor", "notify", None, (Where("w", "a", "on_enter"), Where("w", "a", "on_comment"),
                                                Where("w", "a", "on_exit"))),
        Problem("no_executor", "page", None, (Where("w", "a", "on_comment"), Where("w", "b", "on_comment"))),
        Problem("no_executor", "pause", None, (Where("w", "a", "on_turn_complete"),)),
        Problem("no_loader", None, "session", (Where(sequence="agent_error"),)),
        Problem("no_loader", None, "task", (Where(sequence="agent_error"),)),
    ]
    # the entry's excluded kind (auto_start_agent: the host's arriving session runs it), the transition and the
    # built-in queue_run are not problems
    assert {p.kind for p in problems if p.code == "no_executor"} == {"notify", "page", "pause"}
    assert problems[0].message == ("action kind `notify` has no registered executor (run at w.a on_enter, "
                                   "w.a on_comment, w.a on_exit)")
    assert problems[3].message == "record `session` has no loader (loaded by dispatch sequence `agent_error`)"


def test_a_fully_registered_runtime_has_no_problems_and_says_nothing(plan: Any) -> None:
    sink = ListSink()
    rt = runtime(plan, kinds=("notify", "page", "pause"), loaders={"session": lambda *a: None,
                                                                   "task": lambda *a: None}, sink=sink)
    assert rt.check() == [] and rt.check(strict=True) == []
    assert sink.records == []


def test_the_constructor_leaves_one_warning_record_naming_them(plan: Any) -> None:
    sink = ListSink()
    runtime(plan, kinds=("notify",), loaders={"task": lambda *a: None}, sink=sink)
    (record,) = sink.records
    assert (record.kind, record.level, record.fields["code"]) == ("warning", "warning", "runtime_misconfigured")
    assert record.fields["kinds"] == ["page", "pause"] and record.fields["records"] == ["session"]
    assert [p["where"] for p in record.fields["problems"]] == [
        [{"workflow": "w", "step": "a", "trigger": "on_comment"}, {"workflow": "w", "step": "b", "trigger": "on_comment"}],
        [{"workflow": "w", "step": "a", "trigger": "on_turn_complete"}],
        [{"sequence": "agent_error"}]]


def test_strict_check_raises_listing_every_problem(plan: Any) -> None:
    rt = runtime(plan, kinds=("notify", "page"), loaders={"session": lambda *a: None})
    with pytest.raises(RuntimeMisconfigured) as caught:
        rt.check(strict=True)
    assert isinstance(caught.value, RuntimeFault)
    assert [(p.kind, p.record) for p in caught.value.problems] == [("pause", None), (None, "task")]
    assert "action kind `pause` has no registered executor" in str(caught.value)
    assert "record `task` has no loader" in str(caught.value)


def test_check_sees_what_the_host_registers_after_construction(plan: Any) -> None:
    rt = runtime(plan)
    rt.executors.register("notify", lambda args, ctx: None)
    rt.loaders["session"] = lambda *a: None
    assert [p.kind or p.record for p in rt.check()] == ["page", "pause", "task"]


def test_without_builtins_the_builtin_kinds_the_plan_runs_are_problems(plan: Any) -> None:
    rt = Runtime(plan, MemoryStore(), builtins=False, sinks=[])
    assert "queue_run" in {p.kind for p in rt.check()}


# ---- dispatch events are checked like fire payloads -----------------------------------------------------------------

@pytest.fixture()
def dispatching(plan: Any) -> Runtime:
    rt = runtime(plan, kinds=("notify", "page", "pause"),
                 loaders={"session": lambda sid, ev: {"id": sid, "task_id": "T", "agent_profile_id": "p",
                                                      "state": "failed"},
                          "task": lambda tid, ev: None})
    rt.store.put_task(TaskState("T", "w", "a"))
    return rt


def test_dispatch_refuses_a_misspelt_field_like_fire(dispatching: Runtime) -> None:
    """The issue's example: `sesion_id` was ignored and the missing `session_id` read as empty: a silent skip."""
    event = {**{k: v for k, v in FAILURE.items() if k != "session_id"}, "sesion_id": "S1"}
    with pytest.raises(PayloadError, match=r"`agent_error` has no event \(agent_failure\) field `sesion_id` "
                                           r"\(fields: agent_profile_id, error_message, execution_id, session_id, "
                                           r"task_id, user_initiated\)"):
        dispatching.dispatch("agent_error", event)
    with pytest.raises(PayloadError, match="`on_comment` has no payload field `bogus`"):
        dispatching.fire("on_comment", "T", payload={"bogus": 1})
    assert dispatching.counters.snapshot()["dispatches"] == 0 and dispatching.store.runs() == []


@pytest.mark.parametrize("field", sorted(FAILURE))
def test_dispatch_refuses_an_event_missing_a_field(dispatching: Runtime, field: str) -> None:
    event = {k: v for k, v in FAILURE.items() if k != field}
    with pytest.raises(PayloadError, match=rf"`agent_error`'s event \(agent_failure\) lacks `{field}` \(fields: "):
        dispatching.dispatch("agent_error", event)


def test_dispatch_still_refuses_a_field_of_the_wrong_type_and_takes_nulls_as_empty(dispatching: Runtime) -> None:
    with pytest.raises(PayloadError, match=r"`agent_error`'s event \(agent_failure\) field `user_initiated` "
                                           r"\(bool\): expected bool, got str"):
        dispatching.dispatch("agent_error", {**FAILURE, "user_initiated": "no"})
    skipped = dispatching.dispatch("agent_error", {**FAILURE, "session_id": None})
    assert (skipped.result, skipped.guard) == ("skipped", "no_session")


def test_a_complete_event_dispatches(dispatching: Runtime) -> None:
    assert dispatching.dispatch("agent_error", FAILURE).result == "skipped"  # the task loader finds nothing
