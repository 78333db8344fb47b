"""Bad input and faults: executors that raise, hang, return garbage or call back in; bad plans; bad
requests; and a database that goes away in the middle of an entry dispatch (docs/runtime.md §1-§4).

The plan is `examples/office_default.wf`: the review step's entry dispatches
`clear_decisions` (position 0), `ensure_seats` (1) and `queue_run_for_each_participant` (2);
the review step has two template reviewer seats, so a completed review entry queues two runs.
"""

from __future__ import annotations

import contextlib
import json
import shutil
import sqlite3
import threading
import uuid
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from typing import Any, cast

import pytest
from support import conc_flaky as flaky_mod
from support import conc_pg as pg
from support import conc_work as work

from interlock.runtime import builtins
from interlock.runtime.api import Runtime
from interlock.runtime.errors import (
    ActionFailed,
    PayloadError,
    RuntimeFault,
    UnknownStepError,
    UnknownTaskError,
    UnknownTriggerError,
    UnknownWorkflowError,
)
from interlock.runtime.executors import ActionContext, ExecutorRegistry
from interlock.runtime.plan import PlanError, load_plan, seal_digests
from interlock.runtime.records import ListSink
from interlock.runtime.results import EntryResult
from interlock.runtime.store import Decision, Participant, Store, StoreError, TaskState
from interlock.stores import MemoryStore, SqlStore, open_store
from interlock.stores.engine import make_engine
from interlock.stores.schema import metadata

HERE = Path(__file__).parent





WF = "office_default"
ENTRY_KINDS = ("clear_decisions", "ensure_seats", "queue_run_for_each_participant")
REVIEWERS = ("rev-a", "rev-b")


# ---- helpers ----------------------------------------------------------------------------------------------

def seed(store: Store, *tasks: str, step: str = "work") -> None:
    for position, agent in enumerate(REVIEWERS):
        store.add_participant(Participant("", "review", "reviewer", agent, position=position))
    for task in tasks:
        store.put_task(TaskState(task, WF, step))


def make_runtime(store: Store, executors: Mapping[str, Callable[..., Any]] | None = None, *,
                 transactional: bool = False, timeout: float | None = 10.0,
                 atomic: bool = True, replayable: bool = False) -> tuple[Runtime, ListSink]:
    """`atomic=False`: the entry after the arrival's commit (docs/runtime.md §1's shape, which every destination with
    a host executor takes) instead of the arrival and its store-backed entry in one transaction (ADR 0010)."""
    registry = ExecutorRegistry()
    for kind, fn in (executors or {}).items():
        registry.register(kind, fn, transactional=transactional, replayable=replayable)
    sink = ListSink()
    return Runtime(work.plan(), store, executors=registry, sinks=[sink], executor_timeout=timeout,
                   atomic_arrivals=atomic), sink


def within(seconds: float, fn: Callable[[], Any]) -> Any:
    """Run `fn` on a daemon thread; fail (instead of hanging the suite) if it does not return in time."""
    box: dict[str, Any] = {}

    def run() -> None:
        try:
            box["value"] = fn()
        except BaseException as exc:
            box["error"] = exc

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    thread.join(timeout=seconds)
    assert not thread.is_alive(), f"the call did not return within {seconds}s (deadlock?)"
    if "error" in box:
        raise box["error"]
    return box["value"]


def dump(store: SqlStore) -> dict[str, list[tuple[Any, ...]]]:
    """Every row of every interlock table."""
    with store.engine.connect() as conn:
        return {t.name: sorted((tuple(r) for r in conn.execute(t.select())), key=repr) for t in metadata.sorted_tables}


def errors_of(sink: ListSink) -> list[dict[str, Any]]:
    return [dict(r.fields) for r in sink.records if r.kind == "error"]



@pytest.fixture()
def sqlite_path(sqlite_template: Path, tmp_path: Path) -> Path:
    path = tmp_path / "faults.db"
    shutil.copyfile(sqlite_template, path)
    return path


@pytest.fixture()
def sqlite_store(sqlite_path: Path) -> Iterator[SqlStore]:
    sql = SqlStore(f"sqlite:///{sqlite_path}")
    yield sql
    sql.close()


@pytest.fixture(params=["memory", "sqlite"])
def store(request: pytest.FixtureRequest) -> Iterator[Store]:
    if request.param == "memory":
        yield MemoryStore()
        return
    yield request.getfixturevalue("sqlite_store")


@pytest.fixture(params=["sqlite", pytest.param("postgresql", marks=pytest.mark.postgres)])
def durable_store(request: pytest.FixtureRequest) -> Store:
    """The stores that write an arrival and its store-backed entry in one transaction (ADR 0010)."""
    if request.param == "sqlite":
        return cast(Store, request.getfixturevalue("sqlite_store"))
    return cast(Store, request.getfixturevalue("pg_store")[0])


# ---- executors that misbehave on entry ----------------------------------------------------------------------

@pytest.mark.parametrize("transactional", [False, True], ids=["host", "transactional"])
def test_an_executor_raising_on_entry_is_contained_and_the_rest_runs(store: Store, transactional: bool) -> None:
    calls: list[str] = []

    def boom(args: Any, ctx: ActionContext) -> Any:
        calls.append(ctx.task.id)
        raise KeyError("seat table")

    seed(store, "T1", "T2")
    rt, sink = make_runtime(store, {"ensure_seats": boom}, transactional=transactional)
    result = rt.move("T1", "review", session_id="S1")
    assert result.status == "moved" and result.entry is not None
    assert result.entry.status == "dispatched"
    assert result.entry.attempted == ENTRY_KINDS
    assert result.entry.failed == (("ensure_seats", "KeyError: 'seat table'"),)
    # the committed step change is kept and the rest of the entry ran
    task = store.get_task("T1")
    assert task is not None and task.step_id == "review"
    assert sorted(r.agent for r in store.runs("T1")) == list(REVIEWERS)
    record = store.entry_record(result.ledger_id)  # type: ignore[arg-type]
    assert record is not None and record.failed == (("ensure_seats", "KeyError: 'seat table'"),)
    # one `error` record naming task and session
    errors = errors_of(sink)
    assert len(errors) == 1, errors
    assert (errors[0]["task"], errors[0]["session"], errors[0]["kind"]) == ("T1", "S1", "ensure_seats")
    # the host keeps going: a redelivery is discarded (nothing re-runs), the next arrival works
    assert rt.dispatch_entry(result.ledger_id).status == "redelivery"  # type: ignore[arg-type]
    assert calls == ["T1"]
    other = rt.move("T2", "review", session_id="S2")
    assert other.entry is not None and other.entry.status == "dispatched"
    assert len(store.runs("T2")) == 2


def _raising(args: Any, ctx: ActionContext) -> Any:
    raise RuntimeError("kaboom")


def _garbage(args: Any, ctx: ActionContext) -> Any:
    return "not a list of effects"


@pytest.mark.parametrize("executor, error", [(_raising, "RuntimeError: kaboom"),
                                             (_garbage, "executor returned str, expected a list of effect dicts")],
                         ids=["raises", "garbage"])
def test_a_failed_host_executor_leaves_a_failed_marker(store: Store, executor: Any, error: str) -> None:
    """The entry's marker of a failed action says `failed` with the reason (not `in_progress` forever)."""
    seed(store, "T1")
    rt, _ = make_runtime(store, {"ensure_seats": executor})
    result = rt.move("T1", "review", session_id="S1")
    assert result.ledger_id is not None
    marker = store.markers(result.ledger_id)[1]
    assert (marker.kind, marker.state) == ("ensure_seats", "failed"), marker
    assert marker.error is not None and marker.error.startswith(error)


@pytest.mark.parametrize("garbage", ["a string", 42, [1, 2], {"kind": "x"}, [{"kind": "x"}, "y"], iter(())],
                         ids=["str", "int", "list-of-ints", "dict", "mixed-list", "generator"])
def test_an_executor_returning_garbage_is_a_recorded_failure(store: Store, garbage: Any) -> None:
    seed(store, "T1")
    rt, sink = make_runtime(store, {"ensure_seats": lambda args, ctx: garbage})
    result = rt.move("T1", "review", session_id="S1")
    assert result.entry is not None and result.entry.status == "dispatched"
    assert [kind for kind, _ in result.entry.failed] == ["ensure_seats"]
    assert "expected a list of effect dicts" in result.entry.failed[0][1]
    assert len(store.runs("T1")) == 2
    assert not [r for r in sink.records if r.kind == "effect" and r.fields.get("kind") == "ensure_seats"]


def test_an_executor_hanging_past_the_timeout_fails_and_the_call_returns_promptly(store: Store) -> None:
    release = threading.Event()

    def hang(args: Any, ctx: ActionContext) -> Any:
        release.wait(timeout=30)
        return []

    seed(store, "T1")
    rt, _ = make_runtime(store, {"ensure_seats": hang}, timeout=0.2)
    try:
        # the executor is released only afterwards: the move can return only through the executor timeout
        result = within(10, lambda: rt.move("T1", "review", session_id="S1"))
    finally:
        release.set()
    assert result.entry.status == "dispatched"
    assert result.entry.failed == (("ensure_seats", "executor timed out after 0.2s"),)
    assert len(store.runs("T1")) == 2
    record = store.entry_record(result.ledger_id)
    assert record is not None and record.failed == (("ensure_seats", "executor timed out after 0.2s"),)


def test_hung_executors_do_not_starve_the_ones_after_them() -> None:
    """Executors that never return (each timed out) must not leave later, healthy executors unable to run."""
    release = threading.Event()
    store = MemoryStore()
    hung = [f"H{i:02d}" for i in range(20)]
    seed(store, *hung, "OK")

    def hang(args: Any, ctx: ActionContext) -> Any:
        release.wait(timeout=30)
        return []

    ran: list[str] = []

    def healthy(args: Any, ctx: ActionContext) -> Any:
        ran.append(ctx.task.id)
        return []

    rt_hang, _ = make_runtime(store, {"ensure_seats": hang}, timeout=0.02)
    rt_ok, _ = make_runtime(store, {"ensure_seats": healthy}, timeout=1.0)
    try:
        for task in hung:
            assert rt_hang.move(task, "review").entry.failed == (("ensure_seats", "executor timed out after 0.02s"),)
        result = within(10, lambda: rt_ok.move("OK", "review"))
    finally:
        release.set()
    assert result.entry.failed == (), result.entry.failed
    assert ran == ["OK"]


@pytest.mark.parametrize("transactional", [False, True], ids=["host", "transactional"])
def test_an_executor_calling_back_into_the_runtime_completes(store: Store, transactional: bool) -> None:
    """An entry executor of T1 moves T2 and fires T3's turn completion (both arrive at review, whose entry runs
    the same executor again): no deadlock, every entry completes."""
    seen: list[str] = []

    def reenter(args: Any, ctx: ActionContext) -> Any:
        seen.append(ctx.task.id)
        if ctx.task.id == "T1":
            assert ctx.runtime is not None
            moved = ctx.runtime.move("T2", "review", session_id="S2")
            assert moved.entry is not None and moved.entry.status == "dispatched" and not moved.entry.failed
            fired = ctx.runtime.fire("on_turn_complete", "T3", session_id="S3", operation_id="tc:T3")
            assert fired.result == "dispatched" and fired.arrival is not None
            assert fired.arrival.entry is not None and not fired.arrival.entry.failed
        return [{"kind": "ensure_seats", "role": "reviewer", "agent": "host"}]

    seed(store, "T1", "T2", "T3")
    rt, sink = make_runtime(store, {"ensure_seats": reenter}, transactional=transactional, timeout=10.0)
    result = within(20, lambda: rt.move("T1", "review", session_id="S1"))
    assert result.entry.failed == (), result.entry.failed
    assert sorted(seen) == ["T1", "T2", "T3"]
    for task in ("T1", "T2", "T3"):
        state = store.get_task(task)
        assert state is not None and state.step_id == "review"
        assert len(store.runs(task)) == 2
    assert store.unrecorded_arrivals() == []
    assert errors_of(sink) == []


def test_many_executors_calling_back_into_the_runtime_at_once_complete() -> None:
    """Twenty arrivals at once whose entry executors, once all twenty are running, re-enter the runtime (which
    runs another executor): no executor waits for a free worker behind the others, none times out."""
    store = MemoryStore()
    n = 20
    seed(store, *[f"T{i:02d}" for i in range(n)], *[f"U{i:02d}" for i in range(n)])
    all_running = threading.Barrier(n)

    def reenter(args: Any, ctx: ActionContext) -> Any:
        if ctx.task.id.startswith("T") and ctx.runtime is not None:
            all_running.wait(timeout=5.0)
            moved = ctx.runtime.move("U" + ctx.task.id[1:], "review")
            assert moved.entry is not None and moved.entry.failed == (), moved.entry
        return []

    rt, _ = make_runtime(store, {"ensure_seats": reenter}, timeout=10.0)
    arrivals = threading.Barrier(n)
    results: dict[int, Any] = {}

    def arrive(i: int) -> None:
        arrivals.wait(timeout=10)
        results[i] = rt.move(f"T{i:02d}", "review")

    threads = [threading.Thread(target=arrive, args=(i,), daemon=True) for i in range(n)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=30)
    assert not any(t.is_alive() for t in threads)
    failed = {i: r.entry.failed for i, r in results.items() if r.entry.failed}
    assert failed == {}, f"{len(failed)} of {n} entries failed, e.g. {next(iter(failed.values()), None)}"
    assert all((store.get_task(f"U{i:02d}") or TaskState("", None, None)).step_id == "review" for i in range(n))


# ---- bad plans ------------------------------------------------------------------------------------------------

def _edited(mutate: Callable[[dict[str, Any]], None], *, redigest: bool) -> str:
    data = json.loads(work.plan_text())
    mutate(data)
    if redigest:
        data.update(seal_digests(data))
    return json.dumps(data)


def _step(data: dict[str, Any], step_id: str) -> dict[str, Any]:
    return next(s for s in data["workflows"][0]["steps"] if s["id"] == step_id)


BAD_PLANS: dict[str, tuple[Callable[[], str | bytes], str]] = {
    "version-99": (lambda: _edited(lambda d: d.update(plan_version=99), redigest=True), "plan version 99 is not supported"),
    "no-version": (lambda: _edited(lambda d: d.pop("plan_version"), redigest=True),
                   "plan version None is not supported"),
    "truncated": (lambda: work.plan_text()[: len(work.plan_text()) // 2], "plan is not valid JSON"),
    "not-json": (lambda: b"\xff\xfe garbage", "plan is not valid JSON"),
    "not-an-object": (lambda: "[1, 2, 3]", "plan is not a JSON object"),
    "hand-edited": (lambda: _edited(lambda d: _step(d, "review").update(manual_move=False), redigest=False),
                    "plan digest does not match"),
    "no-digest": (lambda: _edited(lambda d: d.pop("digest"), redigest=False), "plan digest does not match"),
    "schema-break": (lambda: _edited(lambda d: d["workflows"][0].update(steps="oops"), redigest=True),
                     "plan does not match the plan schema"),
    "extra-field": (lambda: _edited(lambda d: d.update(surprise=True), redigest=True),
                    "plan does not match the plan schema"),
    "deep-nesting": (lambda: '{"plan_version": 1, "digest": "x", "x": ' + "[" * 5000 + "]" * 5000 + "}",
                     "plan"),
}


@pytest.mark.parametrize("case", sorted(BAD_PLANS))
def test_a_bad_plan_is_refused_with_plan_error_and_the_store_is_untouched(sqlite_store: SqlStore, case: str) -> None:
    seed(sqlite_store, "T1")
    before = dump(sqlite_store)
    text, message = BAD_PLANS[case]
    with pytest.raises(PlanError, match=message):
        Runtime(load_plan(text()), sqlite_store, sinks=[ListSink()])
    assert dump(sqlite_store) == before


REFERENCE_BREAKS: dict[str, Callable[[dict[str, Any]], None]] = {
    "transition-to-unknown-step": lambda d: _step(d, "work")["handlers"]["on_turn_complete"][0].update(
        target_step="nowhere", args={"step": "nowhere"}),
    "unknown-start-step": lambda d: d["workflows"][0].update(start_step="nowhere"),
    "duplicate-step-id": lambda d: d["workflows"][0]["steps"].append(dict(_step(d, "backlog"))),
    "entry-kind-not-declared": lambda d: _step(d, "review")["entry_dispatch"][0].update(kind="rm_rf"),
}


@pytest.mark.parametrize("case", sorted(REFERENCE_BREAKS))
def test_a_re_digested_plan_whose_references_do_not_resolve_is_refused(sqlite_store: SqlStore, case: str) -> None:
    """A plan edited by hand and given a fresh digest must still be a consistent plan: names that do not resolve
    are a `PlanError` when the plan is loaded or the runtime built, before anything reaches the store."""
    seed(sqlite_store, "T1")
    before = dump(sqlite_store)
    text = _edited(REFERENCE_BREAKS[case], redigest=True)
    with pytest.raises(PlanError):
        rt = Runtime(load_plan(text), sqlite_store, sinks=[ListSink()])
        # not refused up front: show what it does to the store
        rt.fire("on_turn_complete", "T1", session_id="S1", operation_id="tc:T1")
        rt.create_task("T9", WF)
    assert dump(sqlite_store) == before


# ---- bad requests ---------------------------------------------------------------------------------------------

COMMENT = {"comment_id": "c1", "author_id": "u1", "body": "hi"}

BAD_REQUESTS: dict[str, tuple[Callable[[Runtime], Any], type[Exception], str]] = {
    "fire-unknown-task": (lambda rt: rt.fire("on_comment", "NOPE", payload=COMMENT, operation_id="op1"),
                          UnknownTaskError, "no task `NOPE`"),
    "fire-unknown-trigger": (lambda rt: rt.fire("on_nothing", "T1", operation_id="op1"), UnknownTriggerError,
                             "unknown trigger `on_nothing`"),
    "fire-unknown-payload-field": (lambda rt: rt.fire("on_comment", "T1", payload={**COMMENT, "bogus": 1},
                                                      operation_id="op1"), PayloadError, "no payload field `bogus`"),
    "fire-entry-trigger": (lambda rt: rt.fire("on_enter", "T1", operation_id="op1"), RuntimeFault,
                           "is the entry trigger"),
    "fire-task-at-no-step": (lambda rt: rt.fire("on_comment", "LOOSE", payload=COMMENT, operation_id="op1"),
                             UnknownStepError, "is at no step"),
    "move-unknown-task": (lambda rt: rt.move("NOPE", "review"), UnknownTaskError, "no task `NOPE`"),
    "move-unknown-step": (lambda rt: rt.move("T1", "nowhere"), UnknownStepError, "has no step `nowhere`"),
    "move-unknown-workflow": (lambda rt: rt.move("T1", "work", workflow_id="nope"), UnknownWorkflowError,
                              "workflow `nope` is not in the plan"),
    "switch-unknown-workflow": (lambda rt: rt.switch_workflow("T1", "nope"), UnknownWorkflowError,
                                "workflow `nope`"),
    "create-unknown-workflow": (lambda rt: rt.create_task("T9", "nope"), UnknownWorkflowError, "workflow `nope`"),
    "create-unknown-step": (lambda rt: rt.create_task("T9", WF, "nowhere"), UnknownStepError, "no step `nowhere`"),
    "create-existing-task": (lambda rt: rt.create_task("T1", WF), RuntimeFault, "exists already"),
    "decide-unknown-task": (lambda rt: rt.record_decision("NOPE", verdict="approved", agent="rev-a",
                                                          role="reviewer"), UnknownTaskError, "no task `NOPE`"),
    "decide-no-role": (lambda rt: rt.record_decision("T1", verdict="approved", agent="rev-a"), RuntimeFault,
                       "names its role"),
    "decide-nobody": (lambda rt: rt.record_decision("T1", verdict="approved"), RuntimeFault, "exactly one of"),
    "decide-both": (lambda rt: rt.record_decision("T1", verdict="approved", agent="a", user="u", role="reviewer"),
                    RuntimeFault, "exactly one of"),
    "redeliver-unknown-entry": (lambda rt: rt.dispatch_entry(999_999), RuntimeFault, "no ledger row 999999"),
    "unknown-sequence": (lambda rt: rt.dispatch("nope", {"task_id": "T1"}), RuntimeFault,
                         "no dispatch sequence `nope`"),
}


def _bad_request_store(store: SqlStore) -> None:
    seed(store, "T1")
    store.put_task(TaskState("GHOST", WF, "ghost"))
    store.put_task(TaskState("ALIEN", "kanban", "todo"))
    store.put_task(TaskState("LOOSE", None, None))
    store.record_decision(Decision("T1", "work", "user", "u0", "", "approved"))
    store.mark_operation("earlier-op", task_id="T1", trigger="on_comment")


@pytest.mark.parametrize("case", sorted(BAD_REQUESTS))
def test_a_bad_request_raises_its_fault_and_writes_nothing(sqlite_store: SqlStore, case: str) -> None:
    _bad_request_store(sqlite_store)
    rt, sink = make_runtime(sqlite_store)
    before = dump(sqlite_store)
    call, error, message = BAD_REQUESTS[case]
    with pytest.raises(error, match=message) as info:
        call(rt)
    assert isinstance(info.value, RuntimeFault)
    assert dump(sqlite_store) == before
    assert [r for r in sink.records if r.kind in ("arrival", "entry", "effect")] == []


STRANDED: dict[str, Callable[[Runtime], Any]] = {
    "fire-task-at-unknown-step": lambda rt: rt.fire("on_comment", "GHOST", payload=COMMENT, operation_id="op1"),
    "fire-task-in-unknown-workflow": lambda rt: rt.fire("on_comment", "ALIEN", payload=COMMENT, operation_id="op1"),
    "decide-task-at-unknown-step": lambda rt: rt.record_decision("GHOST", verdict="approved", user="u1"),
    "dispatch-task-at-unknown-step": lambda rt: rt.dispatch("agent_error", {
        "task_id": "GHOST", "session_id": "S1", "execution_id": "E1", "agent_profile_id": "",
        "error_message": "boom", "user_initiated": False}),
}


@pytest.mark.parametrize("case", sorted(STRANDED))
def test_a_delivery_for_a_task_on_a_step_the_plan_lacks_is_stranded_and_writes_nothing(
        sqlite_store: SqlStore, case: str) -> None:
    """docs/runtime.md §6: changes nothing, returns `stranded`, and a `task_stranded` warning names the task, its step
    and the plan revision (never silent, never an exception the host has to tell from its own mistakes)."""
    _bad_request_store(sqlite_store)
    rt, sink = make_runtime(sqlite_store)
    rt.loaders.update({"session": lambda _arg, _event: {"id": "S1", "task_id": "GHOST", "agent_profile_id": "p",
                                                        "state": "failed"},
                       "task": lambda arg, _event: {"id": arg, "workflow_id": "x", "workflow_step_id": "ghost",
                                                    "description": "", "is_from_office": False,
                                                    "is_ephemeral": False, "archived": False,
                                                    "other_working_session": ""}})
    before = dump(sqlite_store)
    result = STRANDED[case](rt)
    status = getattr(result, "result", None) or ("stranded" if getattr(result, "stranded", False) else result)
    assert status == "stranded", result
    assert dump(sqlite_store) == before
    (warning,) = [r for r in sink.records if r.fields.get("code") == "task_stranded"]
    task = "ALIEN" if "workflow" in case else "GHOST"
    assert warning.fields["task"] == task and warning.fields["revision"] == rt.digest
    assert warning.fields["step"] == sqlite_store.get_task(task).step_id  # type: ignore[union-attr]


BAD_PAYLOADS: dict[str, tuple[str, Any]] = {
    "missing-required-fields": ("on_comment", {"comment_id": "c1"}),
    "empty-payload": ("on_comment", {}),
    "wrong-type-str": ("on_comment", {"comment_id": 5, "author_id": "u1", "body": "hi"}),
    "wrong-type-int": ("on_budget_alert", {"budget_pct": "ninety", "scope": "task"}),
    "wrong-type-list": ("on_blocker_resolved", {"resolved_blocker_ids": "b1"}),
    "not-a-mapping": ("on_comment", ["comment_id", "c1"]),
    "not-json": ("on_comment", {"comment_id": object(), "author_id": "u1", "body": "hi"}),
}


@pytest.mark.parametrize("case", sorted(BAD_PAYLOADS))
def test_a_bad_payload_is_a_payload_error_and_writes_nothing(sqlite_store: SqlStore, case: str) -> None:
    """Payloads are checked against the trigger's declared parameters (required, typed) before anything runs."""
    _bad_request_store(sqlite_store)
    rt, _ = make_runtime(sqlite_store)
    before = dump(sqlite_store)
    trigger, payload = BAD_PAYLOADS[case]
    with pytest.raises(PayloadError):
        rt.fire(trigger, "T1", session_id="S1", payload=payload, operation_id=f"op:{case}")
    assert dump(sqlite_store) == before


# ---- the database goes away mid-dispatch ---------------------------------------------------------------------

def _check_incomplete_then_recover(store: Store, rt: Runtime, sink: ListSink, entry: EntryResult, task: str,
                                   session: str | None, *, ledger_id: int) -> None:
    """After an interrupted entry: step kept, no effect without its marker, an `error` record; `recover()`
    finishes the entry exactly once, running only the positions with no marker."""
    assert entry.status == "incomplete", entry
    state = store.get_task(task)
    assert state is not None and state.step_id == "review", "the committed step change was lost"
    errors = [e for e in errors_of(sink) if e.get("entry_id") == ledger_id]
    assert len(errors) == 1, errors_of(sink)
    assert (errors[0]["task"], errors[0]["session"]) == (task, session)
    assert store.entry_record(ledger_id) is None
    markers = store.markers(ledger_id)
    assert all(m.state == "done" for m in markers.values()), markers  # transactional: no half-done marker
    runs = store.runs(task)
    assert (2 in markers) == bool(runs), (markers, runs)  # the runs exist exactly when their marker does
    # a decision recorded before the sweep survives it when `clear_decisions` already ran
    cleared_before = 0 in markers
    rt.record_decision(task, verdict="approved", agent="rev-a", role="reviewer")
    recovered = rt.recover()
    assert recovered.dispatched == 1, recovered
    record = store.entry_record(ledger_id)
    assert record is not None and record.attempted == ENTRY_KINDS and record.failed == ()
    assert sorted(r.agent for r in store.runs(task)) == list(REVIEWERS)
    assert store.markers(ledger_id) == {}  # one transaction: its record is the marker of every position
    assert [d.decider_id for d in store.decisions(task, "review")] == (["rev-a"] if cleared_before else [])
    # exactly once: nothing left for a second sweep or a redelivery
    assert rt.recover().dispatched == 0
    assert rt.dispatch_entry(ledger_id).status == "redelivery"
    assert len(store.runs(task)) == 2
    assert store.unrecorded_arrivals() == []


ENTRY_FAILURES: dict[str, tuple[str, int]] = {  # case: (store method that fails, calls of it let through first)
    "get_task": ("get_task", 1),  # (the first is move()'s own)
    "begin": ("unit", 0),  # the entry's transaction cannot begin
    "savepoint-position-1": ("unit", 2),  # (the second `unit` is position 0's savepoint)
    "clear_decisions": ("clear_decisions", 0),  # an effect of ours
    "participants-position-1": ("participants", 0),
    "participants-position-2": ("participants", 1),
    "first-run": ("enqueue_run", 0),
    "second-run": ("enqueue_run", 1),  # the first reviewer's run is written, the second fails
    "record_entry": ("record_entry", 0),  # every effect done, the record fails
}
"""An entry whose actions are all store-backed is one transaction (ADR 0036): wherever the store fails, all of it is
undone, and `recover` runs it again whole.  (Entries that call host executors span transactions: their faults are
in tests/runtime/test_at_least_once.py.)"""


@pytest.mark.parametrize("case", list(ENTRY_FAILURES))
def test_a_store_failing_during_entry_dispatch_leaves_it_incomplete_and_recover_finishes_it(
        store: Store, case: str) -> None:
    """The entry after the arrival's commit (atomic_arrivals=False, or a destination with a host executor)."""
    method, skip = ENTRY_FAILURES[case]
    seed(store, "T1")
    flaky = flaky_mod.FlakyStore(store)
    rt, sink = make_runtime(flaky, atomic=False)
    flaky.fail_on(method, skip=skip)
    result = within(20, lambda: rt.move("T1", "review", session_id="S1"))
    flaky.heal()
    assert flaky.raised == [method]
    assert result.status == "moved" and result.entry is not None and result.ledger_id is not None
    if case == "second-run":
        assert store.runs("T1") == [], "the first run survived without its marker"
    _check_incomplete_then_recover(flaky, rt, sink, result.entry, "T1", "S1", ledger_id=result.ledger_id)


ATOMIC_FAILURES: dict[str, tuple[str, int]] = {  # case: (store method that fails, calls of it let through first)
    "clear_decisions": ("clear_decisions", 0),
    "participants": ("participants", 0),
    "first-run": ("enqueue_run", 0),
    "second-run": ("enqueue_run", 1),
    "record_entry": ("record_entry", 0),
}


def _check_dispatched_once(store: Store, rt: Runtime, result: Any, task: str) -> None:
    """The arrival stands, its entry ran exactly once, and nothing is left for `recover` or a redelivery."""
    assert result.status == "moved" and result.entry is not None, result
    assert result.entry.status == "dispatched" and result.entry.failed == (), result.entry
    state = store.get_task(task)
    assert state is not None and state.step_id == "review"
    assert [(r.from_step_id, r.to_step_id) for r in store.ledger(task)] == [("work", "review")]
    record = store.entry_record(result.ledger_id)
    assert record is not None and record.attempted == ENTRY_KINDS and record.failed == ()
    assert sorted(r.agent for r in store.runs(task)) == list(REVIEWERS)
    assert rt.recover().dispatched == 0
    assert rt.dispatch_entry(result.ledger_id).status == "redelivery"
    assert len(store.runs(task)) == 2 and store.unrecorded_arrivals() == []


@pytest.mark.parametrize("case", list(ATOMIC_FAILURES))
def test_a_store_failing_inside_an_atomic_arrival_keeps_the_step_change_and_dispatches_the_entry_once(
        durable_store: Store, case: str) -> None:
    """ADR 0010: the arrival and its store-backed entry are one transaction.  When the store fails after the step
    change was written, the transaction is undone, the step change is written again on its own and the entry is
    dispatched after that commit: the step change is never given up, the entry runs once, an `error` record says so."""
    store = durable_store
    method, skip = ATOMIC_FAILURES[case]
    seed(store, "T1")
    flaky = flaky_mod.FlakyStore(store)
    rt, sink = make_runtime(flaky)
    flaky.fail_on(method, skip=skip)
    result = within(20, lambda: rt.move("T1", "review", session_id="S1"))
    flaky.heal()
    assert flaky.raised == [method]
    retried = [e for e in errors_of(sink) if e.get("code") == "arrival_retried"]
    assert len(retried) == 1 and "injected" in retried[0]["message"], errors_of(sink)
    assert (retried[0]["task"], retried[0]["session"]) == ("T1", "S1")
    # entered after the commit, in one transaction of its own (its record is the marker of every position)
    assert store.markers(result.ledger_id) == {}
    _check_dispatched_once(flaky, rt, result, "T1")


@pytest.mark.parametrize("case", ["clear_decisions", "first-run", "record_entry"])
def test_a_store_failing_inside_an_atomic_arrival_and_again_in_its_entry_leaves_it_for_recover(
        durable_store: Store, case: str) -> None:
    """The store fails in the atomic arrival and again in the entry dispatched after the step change's own commit:
    the step change stands, the entry is incomplete, and `recover` finishes it exactly once."""
    store = durable_store
    method, skip = ATOMIC_FAILURES[case]
    seed(store, "T1")
    flaky = flaky_mod.FlakyStore(store)
    rt, sink = make_runtime(flaky)
    flaky.fail_on(method, times=2, skip=skip)
    result = within(20, lambda: rt.move("T1", "review", session_id="S1"))
    flaky.heal()
    assert flaky.raised == [method, method]
    assert result.status == "moved" and result.entry is not None and result.ledger_id is not None
    _check_incomplete_then_recover(flaky, rt, sink, result.entry, "T1", "S1", ledger_id=result.ledger_id)


@pytest.mark.parametrize("method", ["unit", "move_task"])
def test_a_store_failing_before_an_atomic_arrival_wrote_its_step_change_raises_and_changes_nothing(
        durable_store: Store, method: str) -> None:
    store = durable_store
    seed(store, "T1")
    flaky = flaky_mod.FlakyStore(store)
    rt, sink = make_runtime(flaky)
    flaky.fail_on(method)
    with pytest.raises(StoreError, match="injected"):
        rt.move("T1", "review", session_id="S1")
    flaky.heal()
    state = store.get_task("T1")
    assert state is not None and state.step_id == "work" and store.ledger("T1") == [] and store.runs() == []
    assert [r for r in sink.records if r.kind in ("arrival", "entry", "effect")] == []
    _check_dispatched_once(flaky, rt, rt.move("T1", "review", session_id="S1"), "T1")


class _CommitFails:
    """A store whose next transaction reports a failed COMMIT (what a connection lost during COMMIT looks like):
    `committed` says whether the transaction really committed before the error."""

    def __init__(self, inner: Store, *, committed: bool) -> None:
        self._inner = inner
        self._committed = committed
        self.armed = True

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)

    @contextlib.contextmanager
    def unit(self) -> Iterator[Store]:
        if not self.armed:
            with self._inner.unit() as tx:
                yield tx
            return
        self.armed = False

        class _Undo(Exception):
            pass

        try:
            with self._inner.unit() as tx:
                yield tx
                if not self._committed:
                    raise _Undo
        except _Undo:
            pass
        raise StoreError("the connection was lost during COMMIT (injected)")


@pytest.mark.parametrize("committed", [True, False])
def test_an_atomic_arrival_whose_commit_reports_a_failure(durable_store: Store, committed: bool) -> None:
    """A COMMIT that fails may have committed (PostgreSQL, connection lost): the runtime looks.  Committed: the
    arrival is reported as it happened (moved, entry dispatched, its records and counters), nothing is written
    again.  Not committed: the step change is written on its own and the entry dispatched after it."""
    store = durable_store
    seed(store, "T1")
    wrapped = _CommitFails(store, committed=committed)
    rt, sink = make_runtime(cast(Store, wrapped))
    result = rt.move("T1", "review", session_id="S1")
    assert not wrapped.armed
    retried = [e for e in errors_of(sink) if e.get("code") == "arrival_retried"]
    assert len(retried) == (0 if committed else 1), errors_of(sink)
    assert [r.kind for r in sink.records if r.kind in ("arrival", "entry")] == ["arrival", "entry"]
    effects = [r for r in sink.records if r.kind == "effect"]
    # clear_decisions and the two queued runs, once each (the template seats leave ensure_seats nothing to do)
    assert [e.fields["kind"] for e in effects] == ["clear_decisions", *["queue_run_for_each_participant"] * 2]
    snap = rt.counters.snapshot()
    assert (snap["arrivals"], snap["entries_dispatched"], snap["effects"]) == (1, 1, 3)
    # committed: in its arrival's transaction; else entered after the commit, in one transaction of its own
    assert store.markers(result.ledger_id) == {}  # type: ignore[arg-type]
    _check_dispatched_once(store, rt, result, "T1")


def test_an_atomic_entry_action_returning_garbage_is_a_failure_and_the_step_change_stands(
        durable_store: Store) -> None:
    store = durable_store
    seed(store, "T1")
    rt, sink = make_runtime(store, {"clear_decisions": lambda args, ctx: 5}, transactional=True)
    result = rt.move("T1", "review", session_id="S1")
    assert result.status == "moved" and result.entry is not None and result.entry.status == "dispatched"
    assert result.entry.failed == (("clear_decisions", "executor returned int, expected a list of effect dicts or "
                                    "None"),)
    state = store.get_task("T1")
    assert state is not None and state.step_id == "review"
    assert sorted(r.agent for r in store.runs("T1")) == list(REVIEWERS)  # the rest ran
    assert rt.counters.snapshot()["executor_failures"] == 1
    assert [e for e in errors_of(sink) if e.get("code") == "arrival_retried"] == []


def test_a_failure_in_a_rolled_back_atomic_arrival_is_counted_once(durable_store: Store) -> None:
    """An entry action fails, then the arrival's transaction fails and is retried: one failure, counted once."""
    store = durable_store
    seed(store, "T1")

    def refuse(args: Any, ctx: ActionContext) -> Any:
        raise ActionFailed("not now")

    flaky = flaky_mod.FlakyStore(store)
    rt, sink = make_runtime(flaky, {"clear_decisions": refuse}, transactional=True)
    flaky.fail_on("record_entry")
    result = rt.move("T1", "review", session_id="S1")
    flaky.heal()
    assert flaky.raised == ["record_entry"]
    assert result.entry is not None and result.entry.failed == (("clear_decisions", "not now"),)
    assert rt.counters.snapshot()["executor_failures"] == 1
    assert len([e for e in errors_of(sink) if e.get("code") == "arrival_retried"]) == 1


def _refuse_seats(calls: list[str]) -> Callable[..., Any]:
    def refuse(args: Any, ctx: ActionContext) -> Any:
        calls.append(ctx.idempotency_key or "")
        raise ActionFailed("no seat today")

    return refuse


def test_an_atomic_entry_action_that_fails_is_called_once_and_its_entry_commits_with_the_arrival(
        durable_store: Store) -> None:
    """The entry runs without savepoints until an action fails; then the transaction is undone and run again
    with a savepoint per action, and the failed action is recorded from its one call (ADR 0010)."""
    store = durable_store
    seed(store, "T1")
    calls: list[str] = []
    cleared: list[str] = []

    def clear(args: Any, ctx: ActionContext) -> Any:
        cleared.append(ctx.idempotency_key or "")
        return builtins.clear_decisions(args, ctx)

    rt, sink = make_runtime(store, {"clear_decisions": clear, "ensure_seats": _refuse_seats(calls)},
                            transactional=True, replayable=True)
    result = rt.move("T1", "review", session_id="S1")
    assert result.status == "moved" and result.entry is not None and result.entry.status == "dispatched"
    assert result.entry.attempted == ENTRY_KINDS
    assert result.entry.failed == (("ensure_seats", "no seat today"),)
    assert len(calls) == 1, calls
    assert len(cleared) == 2, cleared  # replayable: run without savepoints, then again with them
    assert [(r.from_step_id, r.to_step_id) for r in store.ledger("T1")] == [("work", "review")]
    assert store.markers(result.ledger_id) == {}  # type: ignore[arg-type]  # one transaction: no markers
    assert sorted(r.agent for r in store.runs("T1")) == list(REVIEWERS)  # the actions after it ran, once
    snapshot = rt.counters.snapshot()
    assert (snapshot["executor_failures"], snapshot["effects"], snapshot["arrivals"]) == (1, 3, 1), snapshot
    assert [r.kind for r in sink.records if r.kind in ("effect", "entry", "arrival")] == [
        "arrival", "effect", "effect", "effect", "entry"]
    assert errors_of(sink) == []  # an ActionFailed is an ordinary failure, and nothing was retried as a fault
    assert rt.recover().dispatched == 0 and rt.dispatch_entry(result.ledger_id).status == "redelivery"  # type: ignore[arg-type]


def test_a_store_failing_in_the_savepoint_run_of_an_atomic_arrival_keeps_the_step_change(
        durable_store: Store) -> None:
    """An action fails, and then the store fails opening the first savepoint of the run again: the step change
    is written on its own and the entry dispatched after that commit."""
    store = durable_store
    seed(store, "T1")
    calls: list[str] = []
    flaky = flaky_mod.FlakyStore(store)
    rt, sink = make_runtime(flaky, {"ensure_seats": _refuse_seats(calls)}, transactional=True, replayable=True)
    flaky.fail_on("unit", skip=2)  # the first run's transaction, the second's, then its first savepoint
    result = within(20, lambda: rt.move("T1", "review", session_id="S1"))
    flaky.heal()
    assert flaky.raised == ["unit"]
    assert [e.get("code") for e in errors_of(sink)] == ["arrival_retried"]
    assert result.status == "moved" and result.entry is not None and result.entry.status == "dispatched"
    assert result.entry.failed == (("ensure_seats", "no seat today"),)
    assert len(calls) == 2  # once in the undone transaction, once in the entry after the step change's commit
    assert [(r.from_step_id, r.to_step_id) for r in store.ledger("T1")] == [("work", "review")]
    assert store.markers(result.ledger_id) == {}  # type: ignore[arg-type]  # entered in one transaction
    assert sorted(r.agent for r in store.runs("T1")) == list(REVIEWERS)
    assert rt.counters.snapshot()["executor_failures"] == 1


@pytest.mark.parametrize("method", ["unit", "get_task", "move_task"])
def test_a_store_failing_as_an_atomic_arrival_runs_again_keeps_the_step_change(
        durable_store: Store, method: str) -> None:
    """An action failed in the run without savepoints, and the store fails before the run again wrote anything:
    the step change (which the first run had written) is written on its own, its entry dispatched after that."""
    store = durable_store
    seed(store, "T1")
    calls: list[str] = []
    flaky = flaky_mod.FlakyStore(store)
    rt, sink = make_runtime(flaky, {"ensure_seats": _refuse_seats(calls)}, transactional=True, replayable=True)
    flaky.fail_on(method, skip=1)  # the first run's call goes through; the run again's fails
    result = within(20, lambda: rt.move("T1", "review", session_id="S1"))
    flaky.heal()
    assert flaky.raised == [method]
    assert [e.get("code") for e in errors_of(sink)] == ["arrival_retried"]
    assert result.status == "moved" and result.entry is not None and result.entry.status == "dispatched"
    assert result.entry.failed == (("ensure_seats", "no seat today"),)
    state = store.get_task("T1")
    assert state is not None and state.step_id == "review"
    assert [(r.from_step_id, r.to_step_id) for r in store.ledger("T1")] == [("work", "review")]
    assert sorted(r.agent for r in store.runs("T1")) == list(REVIEWERS)
    assert rt.counters.snapshot()["executor_failures"] == 1


def test_the_builtins_are_replayable_and_only_a_transactional_executor_can_be(durable_store: Store) -> None:
    rt, _sink = make_runtime(durable_store)
    assert all(rt.executors.is_replayable(kind) for kind in builtins.BUILTIN_KINDS)
    with pytest.raises(ValueError, match="only a transactional executor can be replayable"):
        rt.executors.register("notify", lambda args, ctx: None, replayable=True)
    rt.executors.register("notify", lambda args, ctx: None, transactional=True)
    assert not rt.executors.is_replayable("notify")


def test_a_task_created_elsewhere_between_the_two_runs_of_a_creation_is_a_refusal_with_no_error_record(
        durable_store: Store) -> None:
    """`create_task` into a step whose entry fails without savepoints runs twice; when another writer creates the
    same task in between, the second run's refusal is the answer (`RuntimeFault`), and no `arrival_retried` record
    claims a step change that never happened."""
    store = durable_store

    class Racing(flaky_mod.FlakyStore):  # type: ignore[name-defined,misc]
        units = 0

        @contextlib.contextmanager
        def unit(self) -> Iterator[Any]:
            Racing.units += 1
            if Racing.units == 2:  # between the two runs: another writer creates the task
                store.create_task(TaskState("N1", WF, "review"))
            with super().unit() as tx:
                yield tx

    seed(store)
    calls: list[str] = []
    rt, sink = make_runtime(Racing(store), {"ensure_seats": _refuse_seats(calls)}, transactional=True,
                            replayable=True)
    with pytest.raises(RuntimeFault, match="exists already"):
        rt.create_task("N1", WF, "review")
    assert Racing.units == 2 and len(calls) == 1
    assert errors_of(sink) == []
    assert [(r.task_id, r.from_step_id, r.to_step_id) for r in store.ledger("N1")] == [("N1", None, "review")]


def test_an_entry_whose_actions_call_the_runtime_keeps_its_savepoints(durable_store: Store) -> None:
    """A store-backed executor that is not replayable (here: it moves another task through the runtime) is not
    called twice when a later action fails: its entry runs with a savepoint per action from the start, and the
    failure is contained in its own savepoint, as it always was.  (A store fault after it ran still undoes the
    transaction and runs the entry again after the step change's own commit: ADR 0010.)"""
    store = durable_store
    seed(store, "T1", "T2")
    calls: list[str] = []
    nested: list[Any] = []

    def move_the_other(args: Any, ctx: ActionContext) -> Any:
        nested.append(ctx.runtime.move("T2", "backlog"))
        return builtins.clear_decisions(args, ctx)

    rt, sink = make_runtime(store, {"clear_decisions": move_the_other, "ensure_seats": _refuse_seats(calls)},
                            transactional=True)
    result = rt.move("T1", "review", session_id="S1")
    assert result.entry is not None and result.entry.failed == (("ensure_seats", "no seat today"),)
    assert len(nested) == 1 and len(calls) == 1
    assert sorted((r.task_id, r.to_step_id) for r in store.ledger()) == [("T1", "review"), ("T2", "backlog")]
    arrivals = [r.fields["task"] for r in sink.records if r.kind == "arrival"]
    assert sorted(arrivals) == ["T1", "T2"], arrivals
    snapshot = rt.counters.snapshot()
    assert (snapshot["arrivals"], snapshot["executor_failures"]) == (2, 1), snapshot
    assert all(store.ledger_row(r.fields["ledger_id"]) is not None for r in sink.records if r.kind == "arrival")


def _script(rt: Runtime) -> list[Any]:
    return [rt.create_task("N1", WF), rt.move("T1", "review", session_id="S1"),
            rt.record_decision("T1", agent="rev-a", role="reviewer", verdict="approved"),
            rt.record_decision("T1", agent="rev-b", role="reviewer", verdict="approved"),
            rt.fire("on_turn_complete", "T2", session_id="S2", operation_id="tc:T2"),
            rt.move("T2", "work", session_id="S2"), rt.switch_workflow("N1", WF, "review")]


@pytest.mark.parametrize("failing", [False, True])
def test_both_arrival_shapes_give_the_same_results_records_and_counters(tmp_path: Path, failing: bool) -> None:
    """`atomic_arrivals` changes how many transactions an arrival takes, not what a host sees (with an entry
    action that fails, too)."""
    seen = []
    for atomic in (True, False):
        store = open_store(f"sqlite:///{tmp_path / f'shape-{atomic}.db'}")
        try:
            seed(store, "T1", "T2")
            calls: list[str] = []
            rt, sink = make_runtime(store, {"ensure_seats": _refuse_seats(calls)} if failing else None,
                                    transactional=True, replayable=True, atomic=atomic)
            results = _script(rt)
            records = [(r.kind, r.level, r.message, dict(r.fields)) for r in sink.records]
            seen.append((results, records, rt.counters.snapshot(), store.runs(), store.ledger()))
        finally:
            store.close()  # type: ignore[attr-defined]
    assert seen[0][0] == seen[1][0]
    assert seen[0][1] == seen[1][1]
    assert seen[0][2] == seen[1][2]
    assert [(r.key, r.agent, r.entry_id) for r in seen[0][3]] == [(r.key, r.agent, r.entry_id) for r in seen[1][3]]
    assert seen[0][4] == seen[1][4]
    assert any(r[0] == "entry" for r in seen[0][1]) and any(r[0] == "effect" for r in seen[0][1])


@pytest.mark.parametrize("atomic", [True, False])
def test_an_atomic_arrival_commits_the_step_change_with_its_entry(sqlite_path: Path, atomic: bool) -> None:
    """ADR 0010: while an atomic arrival's entry runs, another connection still sees the task at its old step
    (nothing has committed), and no per-position marker is written (the entry record stands for them all).
    With `atomic_arrivals=False` the step change commits first, then the entry in one transaction of its own."""
    store = SqlStore(make_engine(f"sqlite:///{sqlite_path}"), owns_engine=True)
    seen: list[str] = []

    def queue_runs(args: Any, ctx: ActionContext) -> Any:
        other = sqlite3.connect(sqlite_path)
        try:
            seen.append(other.execute("SELECT step_id FROM interlock_tasks WHERE id = 'T1'").fetchone()[0])
        finally:
            other.close()
        return builtins.queue_run_for_each_participant(args, ctx)

    try:
        seed(store, "T1")
        rt, _ = make_runtime(store, {"queue_run_for_each_participant": queue_runs}, transactional=True,
                             atomic=atomic)
        result = rt.move("T1", "review", session_id="S1")
        assert seen == (["work"] if atomic else ["review"])
        markers = store.markers(result.ledger_id)  # type: ignore[arg-type]
        assert markers == {}
        _check_dispatched_once(store, rt, result, "T1")
    finally:
        store.close()


@pytest.mark.parametrize("method", ["get_task", "claim_operation", "move_task"])
def test_fire_when_the_store_fails_before_the_move_raises_and_changes_nothing(store: Store, method: str) -> None:
    seed(store, "T1")
    flaky = flaky_mod.FlakyStore(store)
    rt, _ = make_runtime(flaky)
    flaky.fail_on(method)
    with pytest.raises(StoreError, match="injected"):
        rt.fire("on_turn_complete", "T1", session_id="S1", operation_id="tc:T1")
    state = store.get_task("T1")
    assert state is not None and state.step_id == "work"
    assert store.ledger("T1") == [] and not store.operation_applied("tc:T1")
    # the redelivery (store back) takes effect once
    again = rt.fire("on_turn_complete", "T1", session_id="S1", operation_id="tc:T1")
    assert again.result == "dispatched" and again.arrival is not None and again.arrival.status == "moved"
    assert rt.fire("on_turn_complete", "T1", session_id="S1", operation_id="tc:T1").result == "idempotent"
    assert [(r.from_step_id, r.to_step_id) for r in store.ledger("T1")] == [("work", "review")]
    assert len(store.runs("T1")) == 2
    # `dispatches` counts the fires that completed: the one that raised is not among them
    snap = rt.counters.snapshot()
    assert (snap["dispatches"], snap["transitions"], snap["arrivals"], snap["entries_dispatched"],
            snap["idempotent"]) == (1, 1, 1, 1, 1), snap


@pytest.mark.parametrize("method", ["unit", "enqueue_run", "record_entry"])
def test_fire_when_the_store_fails_after_the_move_keeps_the_move(store: Store, method: str) -> None:
    seed(store, "T1")
    flaky = flaky_mod.FlakyStore(store)
    rt, sink = make_runtime(flaky, atomic=False)
    flaky.fail_on(method)
    fired = within(20, lambda: rt.fire("on_turn_complete", "T1", session_id="S1", operation_id="tc:T1"))
    flaky.heal()
    assert fired.result == "dispatched" and fired.arrival is not None and fired.arrival.status == "moved"
    assert fired.arrival.entry is not None and fired.arrival.ledger_id is not None
    assert store.operation_applied("tc:T1")
    assert rt.fire("on_turn_complete", "T1", session_id="S1", operation_id="tc:T1").result == "idempotent"
    _check_incomplete_then_recover(flaky, rt, sink, fired.arrival.entry, "T1", "S1",
                                   ledger_id=fired.arrival.ledger_id)


@pytest.mark.parametrize("method", ["enqueue_run", "mark_operation"])
def test_fire_of_an_action_trigger_when_the_store_fails(store: Store, method: str) -> None:
    """`on_comment` queues a run, then marks the operation: a failure at either is an error result or a
    `StoreError`, and the redelivery queues the run exactly once."""
    seed(store, "T1")
    flaky = flaky_mod.FlakyStore(store)
    rt, _ = make_runtime(flaky)
    flaky.fail_on(method)
    try:
        first = rt.fire("on_comment", "T1", session_id="S1", payload=COMMENT, operation_id="comment:c1")
    except StoreError:
        first = None
    flaky.heal()
    if first is not None:
        assert first.result == "error" and first.error is not None and "injected" in first.error
    assert not store.operation_applied("comment:c1")
    assert rt.fire("on_comment", "T1", session_id="S1", payload=COMMENT, operation_id="comment:c1").result == \
        "dispatched"
    assert rt.fire("on_comment", "T1", session_id="S1", payload=COMMENT, operation_id="comment:c1").result == \
        "idempotent"
    assert [r.reason for r in store.runs("T1")] == ["task_comment"]


def test_sqlite_locked_by_another_writer_mid_entry(sqlite_path: Path) -> None:
    """A real database fault on SQLite: right after the arrival commits, before its entry dispatch begins, another
    connection takes the write lock and keeps it past the busy timeout.  The entry (store-backed actions only)
    is one transaction, so it is all or nothing: nothing of it commits, and `recover` runs all of it."""
    store = SqlStore(make_engine(f"sqlite:///{sqlite_path}", busy_timeout=0.2), owns_engine=True)
    locker = sqlite3.connect(sqlite_path, isolation_level=None, check_same_thread=False)
    try:
        seed(store, "T1")
        rt, sink = make_runtime(store, atomic=False)
        locked: list[bool] = []

        def lock_after_the_arrival_commits(record: Any) -> None:
            if record.kind == "arrival" and not locked:
                locker.execute("BEGIN IMMEDIATE")
                locked.append(True)

        rt.add_sink(lock_after_the_arrival_commits)
        result = within(20, lambda: rt.move("T1", "review", session_id="S1"))
        assert locked == [True]
        assert result.entry is not None and result.entry.status == "incomplete"
        errors = errors_of(sink)
        assert len(errors) == 1 and "locked" in errors[0]["message"], errors
        locker.execute("ROLLBACK")
        assert store.markers(result.ledger_id) == {}  # type: ignore[arg-type]  # all or nothing
        _check_incomplete_then_recover(store, rt, sink, result.entry, "T1", "S1",
                                       ledger_id=result.ledger_id)  # type: ignore[arg-type]
    finally:
        locker.close()
        store.close()


# ---- PostgreSQL: the runtime's connections are killed mid-dispatch ---------------------------------------------

@pytest.fixture(scope="module")
def pg_schema() -> Iterator[str]:
    with pg.private_schema() as name:
        yield name


@pytest.fixture()
def pg_store(pg_schema: str) -> Iterator[tuple[SqlStore, str]]:
    """A store whose connections carry a unique application_name (only they are terminated); tables emptied."""
    app = f"il_fault_{uuid.uuid4().hex[:10]}"
    store = open_store(pg.url_for(pg_schema, application_name=app), create=False)
    assert isinstance(store, SqlStore)
    with store.engine.begin() as conn:
        for table in reversed(metadata.sorted_tables):
            conn.execute(table.delete())
    yield store, app
    store.close()


def _killer(app: str, builtin: Callable[..., Any]) -> tuple[Callable[..., Any], list[int]]:
    """A transactional executor that, on its first call, kills the runtime's connections (its own unit's too)
    and then does the builtin's work on the dead connection."""
    kills: list[int] = []

    def executor(args: Any, ctx: ActionContext) -> Any:
        if not kills:
            kills.append(pg.terminate_backends(app))
        return builtin(args, ctx)

    return executor, kills


@pytest.mark.postgres
def test_postgres_connections_killed_during_an_entry_action(pg_store: tuple[SqlStore, str]) -> None:
    store, app = pg_store
    seed(store, "T1")
    executor, kills = _killer(app, builtins.queue_run_for_each_participant)
    rt, sink = make_runtime(store, {"queue_run_for_each_participant": executor}, transactional=True,
                            atomic=False)
    result = within(30, lambda: rt.move("T1", "review", session_id="S1"))
    assert kills and kills[0] >= 1
    assert result.status == "moved" and result.entry is not None and result.ledger_id is not None
    assert store.runs("T1") == []
    assert store.markers(result.ledger_id) == {}  # the entry is one transaction: nothing of it committed
    _check_incomplete_then_recover(store, rt, sink, result.entry, "T1", "S1", ledger_id=result.ledger_id)


@pytest.mark.postgres
def test_postgres_connections_killed_during_the_entry_of_a_fired_transition(pg_store: tuple[SqlStore, str]) -> None:
    store, app = pg_store
    seed(store, "T1")
    executor, kills = _killer(app, builtins.queue_run_for_each_participant)
    rt, sink = make_runtime(store, {"queue_run_for_each_participant": executor}, transactional=True,
                            atomic=False)
    fired = within(30, lambda: rt.fire("on_turn_complete", "T1", session_id="S1", operation_id="tc:T1"))
    assert kills and kills[0] >= 1
    assert fired.result == "dispatched" and fired.arrival is not None and fired.arrival.status == "moved"
    assert store.operation_applied("tc:T1")
    assert rt.fire("on_turn_complete", "T1", session_id="S1", operation_id="tc:T1").result == "idempotent"
    assert fired.arrival.entry is not None and fired.arrival.ledger_id is not None
    _check_incomplete_then_recover(store, rt, sink, fired.arrival.entry, "T1", "S1",
                                   ledger_id=fired.arrival.ledger_id)


@pytest.mark.postgres
def test_postgres_connections_killed_during_a_fired_action(pg_store: tuple[SqlStore, str]) -> None:
    store, app = pg_store
    seed(store, "T1")
    executor, kills = _killer(app, builtins.queue_run)
    rt, sink = make_runtime(store, {"queue_run": executor}, transactional=True)
    first = within(30, lambda: rt.fire("on_comment", "T1", session_id="S1", payload=COMMENT, operation_id="c:1"))
    assert kills and kills[0] >= 1
    assert first.result == "error" and first.error is not None, first
    assert store.runs("T1") == [] and not store.operation_applied("c:1")
    errors = [e for e in sink.records if e.kind == "dispatch" and e.level == "error"]
    assert len(errors) == 1 and errors[0].fields["task"] == "T1" and errors[0].fields["session"] == "S1"
    assert rt.fire("on_comment", "T1", session_id="S1", payload=COMMENT, operation_id="c:1").result == "dispatched"
    assert rt.fire("on_comment", "T1", session_id="S1", payload=COMMENT, operation_id="c:1").result == "idempotent"
    assert [r.reason for r in store.runs("T1")] == ["task_comment"]


@pytest.mark.postgres
def test_postgres_connections_killed_between_calls_are_replaced(pg_store: tuple[SqlStore, str]) -> None:
    store, app = pg_store
    seed(store, "T1", "T2")
    rt, sink = make_runtime(store)
    assert rt.move("T1", "review", session_id="S1").entry.status == "dispatched"  # type: ignore[union-attr]
    assert pg.terminate_backends(app) >= 1
    fired = rt.fire("on_turn_complete", "T2", session_id="S2", operation_id="tc:T2")
    assert fired.result == "dispatched" and fired.arrival is not None
    assert fired.arrival.entry is not None and fired.arrival.entry.status == "dispatched"
    assert errors_of(sink) == []
    assert len(store.runs()) == 4
