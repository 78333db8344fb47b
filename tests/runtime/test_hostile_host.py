"""A careless or hostile host cannot double an effect, leave an entry stuck, escape the runtime or read its secrets
(docs/runtime.md §1-§3).

- Store errors: a permanent one (the data itself refused, e.g. a NUL in PostgreSQL text) is the action's
  recorded failure and the entry completes; a transient one leaves the entry for `recover`.
- Executors that return effects which break the protocol (non-string keys, values that are not JSON) fail that
  call, recorded, and nothing raises to the host.
- `BaseException`s raised on an executor's worker thread (`CancelledError`, `GeneratorExit`, `SystemExit`,
  `KeyboardInterrupt`) are contained as faults; run in place, only `KeyboardInterrupt` propagates, after the
  store is left consistent.
- Expression paths read keys of mappings only, never attributes of host objects.
- Arguments of the wrong type or content are refused at the boundary with a `RuntimeFault` naming them, before
  the store is touched.
"""

from __future__ import annotations

import asyncio
import types
from collections.abc import Mapping
from typing import Any

import pytest

from interlock.runtime import PlanError, RuntimeFault, TaskState, load_plan
from interlock.runtime.expr import lookup
from interlock.runtime.loaders import store_task_loader
from interlock.runtime.store import Participant, QueuedRun, StoreError
from interlock.stores import MemoryStore

COMMENT = {"comment_id": "c1", "author_id": "u1", "body": "hello"}


def office(h: Any, step: str = "work", **kw: Any) -> Any:
    rt = h.start(**kw)
    for position, agent in enumerate(("rev-a", "rev-b")):
        h.store.add_participant(Participant("", "review", "reviewer", agent, position=position))
    h.store.put_task(TaskState("T", "office_default", step, "Fix the login bug"))
    return rt


def step_of(h: Any) -> str | None:
    task = h.store.get_task("T")
    return task.step_id if task else None


# ---- permanent versus transient store errors ------------------------------------------------------------

def test_a_permanent_store_error_in_an_entry_action_is_its_failure_and_the_entry_completes(harness: Any) -> None:
    h = harness
    rt = office(h)

    def refused(args: Mapping[str, Any], ctx: Any) -> None:
        raise StoreError("the database refused the data", permanent=True)

    rt.executors.register("ensure_seats", refused, transactional=True)
    result = rt.move("T", "review")
    assert result.entry is not None and result.entry.status == "dispatched"
    assert result.entry.failed == (("ensure_seats", "the database refused the data"),)
    assert len(h.store.runs("T")) == 2  # record-and-continue: the fan-out after it still ran
    assert rt.recover().dispatched == 0 and h.store.unrecorded_arrivals() == []


def test_a_transient_store_error_in_an_entry_action_leaves_the_entry_for_recover(harness: Any) -> None:
    h = harness
    rt = office(h)
    calls = []

    def locked(args: Mapping[str, Any], ctx: Any) -> None:
        calls.append(1)
        if len(calls) == 1:
            raise StoreError("database is locked")

    rt.executors.register("ensure_seats", locked, transactional=True)
    result = rt.move("T", "review")
    assert step_of(h) == "review"
    entry_status = result.entry.status if result.entry is not None else None
    if entry_status == "dispatched":  # an atomic arrival retried its entry after the step change's own commit
        assert result.entry is not None and result.entry.failed == ()
    else:
        assert entry_status == "incomplete"
        assert rt.recover().dispatched == 1
    assert h.store.unrecorded_arrivals() == [] and len(h.store.runs("T")) == 2


def test_a_nul_in_a_text_the_store_keeps_never_leaves_an_entry_incomplete(harness: Any) -> None:
    """PostgreSQL cannot keep a NUL in text: every `recover` retried the same doomed write for ever."""
    h = harness
    rt = office(h)

    def queue_nul(args: Mapping[str, Any], ctx: Any) -> list[dict[str, Any]]:
        assert ctx.store is not None
        ctx.store.enqueue_run(QueuedRun(f"nul:{ctx.entry_id}", ctx.task.id, ctx.step_id, "rev-a", "bad\x00reason"))
        return [{"kind": "ensure_seats"}]

    rt.executors.register("ensure_seats", queue_nul, transactional=True)
    result = rt.move("T", "review")
    assert result.entry is not None and result.entry.status == "dispatched"
    failed = dict(result.entry.failed)
    if h.backend.name == "postgresql":
        assert "refused the data" in failed["ensure_seats"]
    else:  # SQLite and memory keep the NUL
        assert failed == {}
    assert rt.recover().dispatched == 0


# ---- effects that break the protocol ----------------------------------------------------------------------

GARBAGE = [[{1: "non-string key"}], [{"kind": "x", "value": object()}], [{"kind": "x", "value": float("nan")}],
           [{"kind": "x", "value": {2: "nested non-string key"}}]]


@pytest.mark.parametrize("garbage", GARBAGE, ids=["int-key", "object-value", "nan", "nested-key"])
@pytest.mark.parametrize("timeout", [10.0, None], ids=["thread", "in-place"])
def test_garbage_effects_of_a_fire_are_a_recorded_failure_not_an_exception(harness: Any, garbage: Any,
                                                                          timeout: float | None) -> None:
    h = harness
    rt = office(h)
    rt.executor_timeout = timeout
    calls = []

    def bad(args: Mapping[str, Any], ctx: Any) -> Any:
        calls.append(ctx.operation_id)
        return garbage

    rt.executors.register("queue_run", bad)
    result = rt.fire("on_comment", "T", payload=COMMENT, operation_id="comment:1")
    assert result.result == "error" and "effect" in (result.error or "")
    assert calls == ["comment:1"] and h.records("effect") == []
    (error,) = [r for r in h.records("dispatch") if r.level == "error"]
    assert error.fields["failed_kind"] == "queue_run"


@pytest.mark.parametrize("garbage", GARBAGE, ids=["int-key", "object-value", "nan", "nested-key"])
@pytest.mark.parametrize("transactional", [False, True], ids=["host", "store-backed"])
def test_garbage_effects_of_an_entry_action_are_its_failure_and_never_run_twice(harness: Any, garbage: Any,
                                                                               transactional: bool) -> None:
    h = harness
    rt = office(h)
    calls = []

    def bad(args: Mapping[str, Any], ctx: Any) -> Any:
        calls.append(ctx.entry_id)
        return garbage

    rt.executors.register("ensure_seats", bad, transactional=transactional)
    result = rt.move("T", "review")
    assert result.entry is not None and result.entry.status == "dispatched"
    assert [kind for kind, _ in result.entry.failed] == ["ensure_seats"]
    assert rt.dispatch_entry(result.entry.entry_id).status == "redelivery"
    assert len(calls) == 1


# ---- BaseException from executors -------------------------------------------------------------------------

BASE = [asyncio.CancelledError("cancelled"), GeneratorExit(), SystemExit(3), KeyboardInterrupt()]


@pytest.mark.parametrize("exc", BASE, ids=lambda e: type(e).__name__)
def test_a_base_exception_on_an_executors_thread_is_contained(harness: Any, exc: BaseException) -> None:
    h = harness
    rt = office(h)  # the harness runs host executors on a thread of their own (executor_timeout=10)

    def raising(args: Mapping[str, Any], ctx: Any) -> None:
        raise exc

    for kind in ("queue_run", "auto_start_agent"):
        rt.executors.register(kind, raising)
    fired = rt.fire("on_comment", "T", payload=COMMENT, operation_id="comment:1")
    assert fired.result == "error" and type(exc).__name__ in (fired.error or "")
    assert not h.store.operation_applied("comment:1") and h.store.claimed_operations() == []
    rt.executors.register("ensure_seats", raising)
    moved = rt.move("T", "review")
    assert moved.entry is not None and [k for k, _ in moved.entry.failed] == ["ensure_seats"]
    assert {r.fields["kind"] for r in h.records("error")} == {"queue_run", "ensure_seats"}


@pytest.mark.parametrize("exc", BASE[:3], ids=lambda e: type(e).__name__)
def test_a_base_exception_of_an_executor_run_in_place_is_contained(harness: Any, exc: BaseException) -> None:
    h = harness
    rt = office(h)
    rt.executor_timeout = None

    def raising(args: Mapping[str, Any], ctx: Any) -> None:
        raise exc

    rt.executors.register("queue_run", raising)
    assert rt.fire("on_comment", "T", payload=COMMENT, operation_id="comment:1").result == "error"
    rt.executors.register("ensure_seats", raising, transactional=True)
    moved = rt.move("T", "review")
    assert moved.entry is not None and [k for k, _ in moved.entry.failed] == ["ensure_seats"]


def test_a_keyboard_interrupt_in_the_hosts_own_thread_propagates_after_the_store_is_consistent(harness: Any
                                                                                              ) -> None:
    h = harness
    rt = office(h)
    rt.executor_timeout = None

    def interrupted(args: Mapping[str, Any], ctx: Any) -> None:
        raise KeyboardInterrupt

    rt.executors.register("queue_run", interrupted)
    with pytest.raises(KeyboardInterrupt):
        rt.fire("on_comment", "T", payload=COMMENT, operation_id="comment:1")
    assert h.store.claimed_operations() == [] and not h.store.operation_applied("comment:1")
    rt.executors.register("queue_run", lambda args, ctx: None)
    assert rt.fire("on_comment", "T", payload=COMMENT, operation_id="comment:1").result == "dispatched"


def test_a_dispatch_sequence_contains_base_exceptions_too(harness: Any) -> None:
    h = harness
    sessions = {"S1": {"id": "S1", "task_id": "T", "agent_profile_id": "coder", "state": "failed"}}
    rt = office(h, loaders={"session": lambda sid, event: sessions.get(sid),
                            "task": lambda tid, event: None})
    rt.loaders["task"] = store_task_loader(h.store)

    def raising(args: Mapping[str, Any], ctx: Any) -> None:
        raise asyncio.CancelledError("cancelled")

    rt.executors.register("queue_run", raising)
    result = rt.dispatch("agent_error", {"task_id": "T", "session_id": "S1", "execution_id": "E1",
                                         "agent_profile_id": "", "error_message": "OOM", "user_initiated": False})
    assert result.result == "error" and "CancelledError" in (result.error or "")


# ---- expressions read declared fields only ----------------------------------------------------------------

def test_a_path_never_reads_an_attribute_of_a_host_object() -> None:
    try:
        raise ValueError("x")
    except ValueError as caught:
        error = caught
    scope = {"event": {"error": error, "nested": {"a": {"b": "ok"}}}}
    assert lookup(scope, ("event", "error", "__traceback__")) is None
    assert lookup(scope, ("event", "error", "args")) is None
    assert lookup(scope, ("event", "nested", "a", "b")) == "ok"


def test_a_loaded_object_that_is_not_a_mapping_reads_as_missing(harness: Any) -> None:
    """A loader that hands back a host object: `session.agent_profile_id` was read with getattr."""
    h = harness
    secret = types.SimpleNamespace(id="S1", task_id="T", agent_profile_id="SECRET", state="failed")
    rt = office(h, loaders={"session": lambda sid, event: secret, "task": lambda tid, event: None})
    rt.loaders["task"] = store_task_loader(h.store)
    result = rt.dispatch("agent_error", {"task_id": "T", "session_id": "S1", "execution_id": "E1",
                                         "agent_profile_id": "", "error_message": "OOM", "user_initiated": False})
    assert result.result == "dispatched"
    assert result.payload["failed_agent_id"] == ""


# ---- the boundary -----------------------------------------------------------------------------------------

class Spy:
    """A store that records every call made on it."""

    def __init__(self, inner: Any) -> None:
        self._inner = inner
        self.calls: list[str] = []
        self.durable = inner.durable

    def __getattr__(self, name: str) -> Any:
        attr = getattr(self._inner, name)
        if not callable(attr):
            return attr

        def call(*args: Any, **kwargs: Any) -> Any:
            self.calls.append(name)
            return attr(*args, **kwargs)

        return call


BAD_CALLS = [
    ("dispatch None", lambda rt: rt.dispatch("agent_error", None), "`event` must be a mapping"),
    ("dispatch list", lambda rt: rt.dispatch("agent_error", [("task_id", "T")]), "`event` must be a mapping"),
    ("dispatch str", lambda rt: rt.dispatch("agent_error", "T"), "`event` must be a mapping"),
    ("dispatch field", lambda rt: rt.dispatch("agent_error", {"task_id": ["T"], "session_id": "S1"}), "task_id"),
    ("dispatch key", lambda rt: rt.dispatch("agent_error", {1: "T"}), "keys are strings"),
    ("fire list id", lambda rt: rt.fire("on_comment", ["T"], payload=COMMENT), "`task_id` must be a string"),
    ("fire dict id", lambda rt: rt.fire("on_comment", {"id": "T"}, payload=COMMENT), "`task_id` must be a string"),
    ("fire session", lambda rt: rt.fire("on_comment", "T", session_id=["S"], payload=COMMENT), "session_id"),
    ("fire op id", lambda rt: rt.fire("on_comment", "T", payload=COMMENT, operation_id=5), "operation_id"),
    ("fire trigger", lambda rt: rt.fire(None, "T"), "`trigger` must be a string"),
    ("surrogate id", lambda rt: rt.fire("on_comment", "T\ud800", payload=COMMENT), "lone surrogate"),
    ("nul id", lambda rt: rt.create_task("T\x00", "office_default"), "NUL"),
    ("long id", lambda rt: rt.create_task("T" * 300, "office_default"), "at most 256 bytes"),
    ("create list", lambda rt: rt.create_task(["T9"], "office_default"), "`task_id` must be a string"),
    ("description", lambda rt: rt.create_task("T9", "office_default", description=b"x"), "description"),
    ("move route None", lambda rt: rt.move("T", "review", route=None), "is not a route"),
    ("move route typo", lambda rt: rt.move("T", "review", route="manual"), "is not a route"),
    ("move step list", lambda rt: rt.move("T", ["review"]), "`to_step` must be a string"),
    ("move expected", lambda rt: rt.move("T", "review", expected_step=3), "expected_step"),
    ("decide verdict None", lambda rt: rt.record_decision("T", agent="a", role="reviewer", verdict=None),
     "is not a verdict"),
    ("decide agent list", lambda rt: rt.record_decision("T", agent=["a"], role="reviewer", verdict="approved"),
     "`agent` must be a string"),
    ("entry 2**70", lambda rt: rt.dispatch_entry(2**70), "out of range"),
    ("entry str", lambda rt: rt.dispatch_entry("1"), "must be an integer"),
    ("entry bool", lambda rt: rt.dispatch_entry(True), "must be an integer"),
]


@pytest.mark.parametrize("call, message", [(c, m) for _, c, m in BAD_CALLS], ids=[n for n, _, _ in BAD_CALLS])
def test_a_bad_argument_is_refused_naming_it_before_the_store_is_touched(memory_harness: Any, call: Any,
                                                                        message: str) -> None:
    h = memory_harness
    office(h)
    spy = Spy(h.store)
    h.backend.store = spy
    rt = h._build()
    spy.calls.clear()
    with pytest.raises(RuntimeFault, match=message):
        call(rt)
    assert spy.calls == []


def test_a_plan_with_a_lone_surrogate_or_a_nul_is_refused_with_a_plan_error() -> None:
    for text in ('{"plan_version": 1, "compiler": "\\ud800"}', '{"plan_version": 1, "compiler": "a\\u0000b"}'):
        with pytest.raises(PlanError, match="no store can keep it"):
            load_plan(text)


def test_a_compile_result_without_a_plan_is_a_clear_error() -> None:
    from interlock.compiler import compile_source
    from interlock.dsl import SourceFile
    from interlock.runtime import Runtime

    result = compile_source(SourceFile("bad.wf", 'workflow w "W" { step a "A" { start on on_enter { nope } } }'))
    assert result.plan is None
    with pytest.raises(RuntimeFault, match=r"no plan: its source has 1 error\(s\): bad.wf:1:"):
        Runtime(result, MemoryStore())
    with pytest.raises(RuntimeFault, match="must be a compiled Plan"):
        Runtime("plan.json", MemoryStore())  # type: ignore[arg-type]
    good = compile_source(SourceFile("good.wf", 'workflow w "W" { step a "A" { start } }'))
    with pytest.raises(RuntimeFault, match=r"must implement interlock\.runtime\.Store"):
        Runtime(good.plan, "sqlite://")  # type: ignore[arg-type]
    assert Runtime(good, MemoryStore(), sinks=[]).plan is good.plan  # a compile result with a plan is its plan
