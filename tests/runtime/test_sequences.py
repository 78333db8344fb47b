"""Dispatch sequences (docs/runtime.md §3) through the prelude's `agent_error` sequence: the
on_agent_error seed's guard order, records, operation ids, payload, idempotency and
containment (AC-A*, AC-B*, AC-C*, AC-D*, AC-E*, AC-F*).

Guards and payloads do not depend on the store (memory only); idempotency, restarts and
re-entrant executors are store-parametrised.
"""

from __future__ import annotations

import threading
from collections.abc import Mapping
from typing import Any

import pytest

from interlock.runtime import StaticDirectory, TaskState

pytestmark = pytest.mark.async_runtime  # each harness test runs with a Runtime and an AsyncRuntime

KB = """
workflow kb "Kanban" {
  step todo "Todo" {
    start
    manual_move
    on on_agent_error {
      set_workflow_data(key: "failed", value: true)
      queue_run(target: primary, reason: "agent_error")
    }
  }
  step quiet "Quiet" { manual_move }
  step recover "Recover" {
    manual_move
    on on_agent_error { move_to_step(fixup)  move_to_step(todo) }
  }
  step fixup "Fixup" {
    manual_move
    on on_enter { run_code_review  queue_run(target: primary, reason: "fixup_entered") }
  }
  step gated "Gated" {
    manual_move
    on on_agent_error {
      move_to_step(fixup) when quorum(reviewer, all_approve)
      move_to_step(todo) requires_approval
      page_oncall
      queue_run(target: primary, reason: "gated")
    }
  }
  step selfish "Selfish" {
    manual_move
    on on_agent_error { queue_run(target: primary, reason: "self")  move_to_step(selfish) }
  }
  step restart "Restart" {
    manual_move
    on on_agent_error { auto_start_agent }
  }
  step ceo "CEO" {
    manual_move
    on on_agent_error { queue_run(target: workspace.ceo_agent, reason: "agent_error") }
  }
  step twice "Twice" {
    manual_move
    on on_agent_error { set_workflow_data(key: "n", value: 1)  set_workflow_data(key: "n", value: 1) }
  }
}
task page_oncall on on_agent_error
"""

OP = "agent_error:session:S1:E1"
SKIP_MESSAGES = {
    "user_cancelled": "agent error dispatch: user cancelled the retry loop",
    "session_vanished": "agent error dispatch: session vanished",
    "session_unreadable": "agent error dispatch: session reload failed",
    "task_unavailable": "agent error dispatch: task unavailable",
    "sibling_working": "agent error dispatch: another session is working",
}


class Host:
    """The host's records behind the sequence's loaders (session and task), with read accounting."""

    def __init__(self, h: Any) -> None:
        self.h = h
        self.sessions: dict[str, dict[str, Any]] = {
            "S1": {"id": "S1", "task_id": "T", "agent_profile_id": "agent-s1", "state": "failed"}}
        self.session_errors: set[str] = set()
        self.task_errors: set[str] = set()
        self.task_fields: dict[str, Any] = {}
        self.other_working: dict[str, str] = {}
        self.reads: list[tuple[str, str]] = []

    def session(self, session_id: Any, event: Mapping[str, Any]) -> Mapping[str, Any] | None:
        self.reads.append(("session", session_id))
        if session_id in self.session_errors:
            raise ConnectionError("session store unavailable")
        return self.sessions.get(session_id)

    def task(self, task_id: Any, event: Mapping[str, Any]) -> Mapping[str, Any] | None:
        self.reads.append(("task", task_id))
        if task_id in self.task_errors:
            raise ConnectionError("task store unavailable")
        t = self.h.store.get_task(task_id)
        if t is None:
            return None
        return {"id": t.id, "workflow_id": t.workflow_id or "", "workflow_step_id": t.step_id or "",
                "description": t.description, "is_from_office": t.is_from_office, "is_ephemeral": t.is_ephemeral,
                "archived": t.archived, "other_working_session": self.other_working.get(task_id, ""),
                **self.task_fields}


def setup(h: Any, step: str = "todo", *, directory: Any = None, **task: Any) -> Host:
    host = Host(h)
    h.start(KB, loaders={"session": host.session, "task": host.task}, directory=directory)
    h.store.put_task(TaskState("T", "kb", step, "Fix the login bug", **task))
    return host


def event(**kw: Any) -> dict[str, Any]:
    return {"task_id": "T", "session_id": "S1", "execution_id": "E1", "agent_profile_id": "",
            "error_message": "boom", "user_initiated": False, **kw}


def own_records(h: Any, mark: int = 0) -> list[Any]:
    """The dispatch's own records (AC-A6): dispatch outcomes and recording guards' lines."""
    return [r for r in h.since(mark) if r.kind in ("dispatch", "skip")]


# ---- guards: first match wins, silent vs recording ---------------------------------------------------

def _engine_absent(h: Any, host: Host) -> dict[str, Any]:
    return {"host": {"engine_ready": False}}


def _no_session(h: Any, host: Host) -> dict[str, Any]:
    return {"event": event(session_id="")}


def _user_cancelled(h: Any, host: Host) -> dict[str, Any]:
    return {"event": event(user_initiated=True)}


def _session_vanished(h: Any, host: Host) -> dict[str, Any]:
    host.sessions.clear()
    return {}


def _session_unreadable(h: Any, host: Host) -> dict[str, Any]:
    host.session_errors.add("S1")
    return {}


def _task_missing(h: Any, host: Host) -> dict[str, Any]:
    return {"event": event(task_id="T-gone")}


def _task_unreadable(h: Any, host: Host) -> dict[str, Any]:
    host.task_errors.add("T")
    return {}


def _office(h: Any, host: Host) -> dict[str, Any]:
    h.store.put_task(TaskState("T", "kb", "todo", is_from_office=True))
    return {}


def _ephemeral(h: Any, host: Host) -> dict[str, Any]:
    h.store.put_task(TaskState("T", "kb", "todo", is_ephemeral=True))
    return {}


def _archived(h: Any, host: Host) -> dict[str, Any]:
    h.store.put_task(TaskState("T", "kb", "todo", archived=True))
    return {}


def _no_step(h: Any, host: Host) -> dict[str, Any]:
    h.store.put_task(TaskState("T", "kb", None))
    return {}


def _sibling(h: Any, host: Host) -> dict[str, Any]:
    host.other_working["T"] = "S2"
    return {}


GUARDS = [  # (case, setup, guard, level) in the prelude's declared order
    ("engine_absent", _engine_absent, "engine_absent", None),                  # AC-F1
    ("no_session", _no_session, "no_session", None),                          # AC-A5
    ("user_cancelled", _user_cancelled, "user_cancelled", "debug"),            # AC-A8
    ("session_vanished", _session_vanished, "session_vanished", "debug"),      # AC-A7
    ("session_unreadable", _session_unreadable, "session_unreadable", "warning"),  # AC-F6
    ("task_missing", _task_missing, "task_unavailable", "warning"),            # AC-B2
    ("task_unreadable", _task_unreadable, "task_unavailable", "warning"),      # AC-B2
    ("office_owned", _office, "office_owned", None),                           # AC-B1
    ("ephemeral", _ephemeral, "shape", None),                                  # AC-F2
    ("no_step", _no_step, "shape", None),                                      # AC-F3
    ("archived", _archived, "shape", None),                                    # AC-F4
    ("sibling_working", _sibling, "sibling_working", "debug"),                 # AC-F5
]


@pytest.mark.parametrize(("make", "guard", "level"), [g[1:] for g in GUARDS], ids=[g[0] for g in GUARDS])
def test_each_guard_skips_with_its_own_record_or_none(memory_harness: Any, make: Any, guard: str,
                                                      level: str | None) -> None:
    h = memory_harness
    host = setup(h)
    kw = make(h, host)
    result = h.rt.dispatch("agent_error", kw.get("event", event()), host=kw.get("host"))
    assert result.result == "skipped" and result.guard == guard
    own = own_records(h)
    if level is None:
        assert own == []  # a silent guard leaves only the absence of a dispatch
    else:
        (skip,) = own  # exactly one record: the matching guard's, no later guard's
        assert skip.kind == "skip" and skip.level == level and skip.message == SKIP_MESSAGES[guard]
        assert skip.fields["guard"] == guard and skip.fields["task"] == kw.get("event", event())["task_id"]
        assert skip.fields["session"] == "S1"
        if guard in ("session_unreadable", "task_unavailable") and "unreadable" in make.__name__:
            assert "store unavailable" in skip.fields["error"]  # the read's failure, named
    (outcome,) = h.records("outcome")
    assert outcome.level == "silent" and outcome.fields["result"] == "skipped" and outcome.fields["guard"] == guard
    assert h.recorder.calls == [] and h.runs() == []
    assert not h.store.operation_applied(OP)  # AC-F7: guards run before the operation is marked
    assert h.rt.counters.snapshot()["guard_skips"] == {guard: 1}


def test_skipped_failure_dispatches_once_the_condition_clears(memory_harness: Any) -> None:
    """AC-F7: a skip for a transient condition does not suppress a later delivery of the same failure."""
    h = memory_harness
    host = setup(h)
    host.other_working["T"] = "S2"
    assert h.rt.dispatch("agent_error", event()).result == "skipped"
    del host.other_working["T"]
    result = h.rt.dispatch("agent_error", event())
    assert result.result == "dispatched" and result.operation_id == OP
    assert h.runs("T") == [("T", "primary", "agent_error")]


def test_sibling_skip_names_the_blocking_session(memory_harness: Any) -> None:
    """AC-F5: the DEBUG record names the session that blocks the dispatch."""
    h = memory_harness
    host = setup(h)
    host.other_working["T"] = "S2"
    h.rt.dispatch("agent_error", event())
    (skip,) = h.records("skip")
    assert skip.fields["values"] == {"task.other_working_session": "S2"}


@pytest.mark.parametrize(("case", "expect_guard", "expect_level", "expect_reads"), [
    # a failure satisfying two guards takes the earlier one, and only its record
    ("engine_absent+user_cancelled", "engine_absent", None, []),
    ("user_cancelled+session_vanished", "user_cancelled", "debug", []),
    ("session_vanished+task_missing", "session_vanished", "debug", [("session", "S1")]),
    ("session_unreadable+task_unreadable", "session_unreadable", "warning", [("session", "S1")]),
    ("task_unreadable+office", "task_unavailable", "warning", [("session", "S1"), ("task", "T")]),
    ("office+sibling_working", "office_owned", None, [("session", "S1"), ("task", "T")]),
    ("archived+sibling_working", "shape", None, [("session", "S1"), ("task", "T")]),
])
def test_first_matching_guard_wins(memory_harness: Any, case: str, expect_guard: str, expect_level: str | None,
                                   expect_reads: list[tuple[str, str]]) -> None:
    h = memory_harness
    host = setup(h)
    ev, flags = event(), None
    for part in case.split("+"):
        if part == "engine_absent":
            flags = {"engine_ready": False}
        elif part == "user_cancelled":
            ev["user_initiated"] = True
        elif part == "session_vanished":
            host.sessions.clear()
        elif part == "session_unreadable":
            host.session_errors.add("S1")
        elif part == "task_missing":
            ev["task_id"] = "T-gone"
        elif part == "task_unreadable":
            host.task_errors.add("T")
        elif part == "office":
            h.store.put_task(TaskState("T", "kb", "todo", is_from_office=True))
        elif part == "archived":
            h.store.put_task(TaskState("T", "kb", "todo", archived=True))
        elif part == "sibling_working":
            host.other_working["T"] = "S2"
    result = h.rt.dispatch("agent_error", ev, host=flags)
    assert result.result == "skipped" and result.guard == expect_guard
    own = own_records(h)
    assert [r.level for r in own] == ([] if expect_level is None else [expect_level])
    assert host.reads == expect_reads  # session first, then task; a skip short-circuits the reads


def test_loads_are_read_once_session_before_task_and_reused(memory_harness: Any) -> None:
    h = memory_harness
    host = setup(h)
    result = h.rt.dispatch("agent_error", event(agent_profile_id=""))
    assert result.result == "dispatched"
    assert host.reads == [("session", "S1"), ("task", "T")]
    assert result.payload["failed_agent_id"] == "agent-s1"  # the one loaded session, reused


def test_missing_loader_is_an_engine_error_not_raised(memory_harness: Any) -> None:
    h = memory_harness
    h.start(KB, loaders={})
    h.store.put_task(TaskState("T", "kb", "todo"))
    result = h.rt.dispatch("agent_error", event())
    assert result.result == "error" and "no loader" in (result.error or "")
    (error,) = [r for r in h.records() if r.level == "error"]
    assert error.kind == "dispatch" and error.fields["task"] == "T" and error.fields["session"] == "S1"


# ---- operation ids and payload ------------------------------------------------------------------------

@pytest.mark.parametrize(("execution_id", "operation_id"), [
    ("E1", "agent_error:session:S1:E1"),  # AC-C1
    ("", "agent_error:session:S1"),       # AC-C2
])
def test_operation_id_is_derived_from_the_failure(memory_harness: Any, execution_id: str, operation_id: str) -> None:
    h = memory_harness
    setup(h)
    result = h.rt.dispatch("agent_error", event(execution_id=execution_id))
    assert result.result == "dispatched" and result.operation_id == operation_id
    (dispatch,) = h.records("dispatch")
    assert dispatch.fields["operation_id"] == operation_id
    assert {c.operation_id for c in h.recorder.calls} == {operation_id}
    (run,) = h.store.runs("T")
    # the key: the escaped operation id (`:` inside a field is `%3A`), the action's position, step, task, agent
    assert run.operation_id == operation_id
    assert run.key.startswith("op:" + operation_id.replace(":", "%3A") + ":1:todo:T:primary:"), run.key
    assert h.store.operation_applied(operation_id)


@pytest.mark.parametrize(("event_agent", "session_agent", "message", "want_agent", "want_message"), [
    ("evt-agent", "agent-s1", "boom", "evt-agent", "boom"),   # AC-D2: the event's profile first
    ("", "agent-s1", "boom", "agent-s1", "boom"),             # AC-D2: else the failed session's
    ("", "", "boom", "", "boom"),                             # AC-D2: else ""
    ("evt-agent", "", "", "evt-agent", "agent failed"),       # AC-D3: the default message
])
def test_payload(memory_harness: Any, event_agent: str, session_agent: str, message: str, want_agent: str,
                 want_message: str) -> None:
    h = memory_harness
    host = setup(h)
    host.sessions["S1"]["agent_profile_id"] = session_agent
    result = h.rt.dispatch("agent_error", event(agent_profile_id=event_agent, error_message=message))
    want = {"failed_session_id": "S1", "failed_agent_id": want_agent, "error_message": want_message}  # AC-D1
    assert result.payload == want
    assert [c.payload for c in h.recorder.calls] == [want, want]  # what the executors receive


# ---- idempotency ------------------------------------------------------------------------------------------

def test_replayed_failure_is_idempotent_and_silent(harness: Any) -> None:
    """AC-C3: the second delivery runs nothing and writes no dispatch record."""
    h = harness
    setup(h)
    assert h.rt.dispatch("agent_error", event()).result == "dispatched"
    calls = h.recorder.kinds()
    mark = h.mark()
    again = h.rt.dispatch("agent_error", event())
    assert again.result == "idempotent" and again.operation_id == OP
    assert h.recorder.kinds() == calls and h.runs("T") == [("T", "primary", "agent_error")]
    assert own_records(h, mark) == [] and all(r.level == "silent" for r in h.since(mark))


def test_replayed_failure_is_idempotent_after_a_restart(harness: Any) -> None:
    """Our departure from AC-C5: the operation markers are durable."""
    h = harness
    host = setup(h)
    h.rt.dispatch("agent_error", event())
    calls = h.recorder.kinds()
    rt = h.restart()
    rt.loaders.update({"session": host.session, "task": host.task})
    assert rt.dispatch("agent_error", event()).result == "idempotent"
    assert h.recorder.kinds() == calls and len(h.runs("T")) == 1


def test_failed_action_leaves_the_failure_unmarked_and_a_redelivery_reruns_everything(harness: Any) -> None:
    """AC-C6 (and AC-C8's carve-out): abort-on-first; the redelivery re-runs the list from the start."""
    h = harness
    setup(h)
    h.recorder.fail("queue_run", error="queue down")
    first = h.rt.dispatch("agent_error", event(execution_id=""))
    assert first.result == "error" and first.error == "queue down"
    assert not h.store.operation_applied("agent_error:session:S1")
    second = h.rt.dispatch("agent_error", event(execution_id=""))
    assert second.result == "dispatched"
    assert h.recorder.kinds() == ["set_workflow_data", "queue_run", "set_workflow_data", "queue_run"]
    assert h.runs("T") == [("T", "primary", "agent_error")]


def test_two_executions_of_one_session_dispatch_twice(harness: Any) -> None:
    """AC-C4."""
    h = harness
    setup(h)
    assert h.rt.dispatch("agent_error", event(execution_id="E1")).result == "dispatched"
    assert h.rt.dispatch("agent_error", event(execution_id="E2")).result == "dispatched"
    assert h.runs("T") == [("T", "primary", "agent_error")] * 2
    assert [r.level for r in h.records("dispatch")] == ["info", "info"]


def test_two_failures_without_execution_id_collapse_to_one(harness: Any) -> None:
    """AC-C8."""
    h = harness
    setup(h)
    assert h.rt.dispatch("agent_error", event(execution_id="")).result == "dispatched"
    second = h.rt.dispatch("agent_error", event(execution_id="", error_message="again"))
    assert second.result == "idempotent" and second.operation_id == "agent_error:session:S1"
    assert len(h.runs("T")) == 1 and len(h.records("dispatch")) == 1


# ---- records: the four outcomes ------------------------------------------------------------------------

def test_dispatched_with_actions_is_one_info_record(memory_harness: Any) -> None:
    """AC-A6."""
    h = memory_harness
    setup(h)
    h.rt.dispatch("agent_error", event())
    (info,) = own_records(h)
    assert info.kind == "dispatch" and info.level == "info"
    assert {k: info.fields[k] for k in ("task", "session", "step", "operation_id")} == {
        "task": "T", "session": "S1", "step": "todo", "operation_id": OP}


def test_step_without_actions_is_one_debug_record_and_marked(memory_harness: Any) -> None:
    """AC-E2."""
    h = memory_harness
    setup(h, "quiet")
    result = h.rt.dispatch("agent_error", event())
    assert result.result == "dispatched"
    (debug,) = own_records(h)
    assert debug.level == "debug" and debug.fields["actions"] == []
    assert h.records("warning") == []
    assert h.store.operation_applied(OP)
    assert h.rt.dispatch("agent_error", event()).result == "idempotent"


def test_a_task_on_a_step_the_plan_lacks_is_stranded_never_an_error(memory_harness: Any) -> None:
    """docs/runtime.md §6: a delivery for a task whose step the deciding plan does not have changes nothing, returns
    `stranded` and says so in a `task_stranded` warning naming the task, its step and the revision."""
    h = memory_harness
    setup(h, "deleted-step")
    result = h.rt.dispatch("agent_error", event())
    assert result.result == "stranded"
    (warning,) = [r for r in h.records("warning") if r.fields.get("code") == "task_stranded"]
    assert warning.fields["task"] == "T" and warning.fields["step"] == "deleted-step"
    assert warning.fields["revision"] == h.rt.digest and warning.fields["plan"] == h.rt.digest
    assert [r for r in h.records() if r.level == "error"] == []
    assert not h.store.operation_applied(OP) and h.store.runs() == []


@pytest.mark.parametrize("case", ["no_ceo"])
def test_engine_error_is_one_error_record_never_raised(memory_harness: Any, case: str) -> None:
    """AC-E5: a misconfigured queue_run target."""
    h = memory_harness
    setup(h, "ceo", directory=StaticDirectory(primary="primary", ceo=None))
    result = h.rt.dispatch("agent_error", event())
    assert result.result == "error"
    # one ERROR for the delivery; the failure nothing will retry is also an incident, announced at ERROR
    # (docs/runtime.md §7) — the same failure, never raised
    errors = [r for r in h.records() if r.level == "error"]
    assert [r.kind for r in errors] == ["dispatch", "incident_opened"]
    assert errors[0].fields["task"] == "T" and errors[0].fields["session"] == "S1"
    assert errors[1].fields["task"] == "T" and errors[1].fields["kind"] == "operation"
    assert not h.store.operation_applied(OP)


def test_panicking_executor_is_contained_with_one_error_naming_task_and_session(memory_harness: Any) -> None:
    """AC-A11's recover: the panic is one ERROR (not a dispatch record); the host keeps running."""
    h = memory_harness
    setup(h)
    h.recorder.panic("set_workflow_data", error="nil pointer")
    result = h.rt.dispatch("agent_error", event())
    assert result.result == "error"
    (error,) = h.records("error")
    assert error.level == "error" and error.fields["task"] == "T" and error.fields["session"] == "S1"
    assert "nil pointer" in error.fields["message"]
    assert len(own_records(h)) <= 1
    # the runtime goes on: the same failure, redelivered, now dispatches
    assert h.rt.dispatch("agent_error", event()).result == "dispatched"


# ---- the pre-dispatch walk ------------------------------------------------------------------------------

def test_walk_warns_for_unregistered_kinds_even_on_idempotent_replay(memory_harness: Any) -> None:
    """AC-E4 (six naming fields), AC-E9 (no warning for guarded or requires_approval transitions),
    AC-A6 (the walk warning is not a dispatch record)."""
    h = memory_harness
    setup(h, "gated")
    result = h.rt.dispatch("agent_error", event())
    assert result.result == "dispatched" and result.fire is not None and result.fire.arrival is None
    (warning,) = h.records("warning")
    assert warning.fields["code"] == "no_executor"
    assert {k: warning.fields[k] for k in ("workflow", "step", "step_title", "kind", "task", "session")} == {
        "workflow": "kb", "step": "gated", "step_title": "Gated", "kind": "page_oncall", "task": "T",
        "session": "S1"}
    (info,) = own_records(h)
    assert info.level == "info"
    assert h.runs("T") == [("T", "primary", "gated")]  # the remaining actions are unaffected
    mark = h.mark()
    assert h.rt.dispatch("agent_error", event()).result == "idempotent"
    assert [r.kind for r in h.since(mark) if r.level != "silent"] == ["warning"]
    assert own_records(h, mark) == []


def test_transitions_never_warn_and_only_the_first_moves(memory_harness: Any) -> None:
    """AC-E3/AC-E7: move_to_step moves through the ledger and the destination's entry runs with the
    task's description; the second transition does not move and does not warn."""
    h = memory_harness
    setup(h, "recover")
    result = h.rt.dispatch("agent_error", event())
    assert result.fire is not None and result.fire.arrival is not None
    assert h.records("warning") == []
    (row,) = h.store.ledger("T")
    assert (row.from_step_id, row.to_step_id, row.route, row.session_id) == ("recover", "fixup", "engine_transition",
                                                                           "S1")
    (review,) = h.recorder.of("run_code_review")
    assert review.entry_id == row.id and review.description == "Fix the login bug"
    assert h.runs("T") == [("T", "primary", "fixup_entered")]


def test_transition_to_the_current_step_is_inert_but_marked(memory_harness: Any) -> None:
    """AC-E8."""
    h = memory_harness
    setup(h, "selfish")
    result = h.rt.dispatch("agent_error", event())
    assert result.result == "dispatched" and result.fire is not None and result.fire.arrival is None
    assert h.store.ledger("T") == [] and h.records("entry") == []
    assert h.store.operation_applied(OP) and h.runs("T") == [("T", "primary", "self")]


def test_same_action_declared_twice_runs_twice_in_order(memory_harness: Any) -> None:
    """AC-E7: no deduplication of non-transition actions."""
    h = memory_harness
    setup(h, "twice")
    h.rt.dispatch("agent_error", event())
    assert h.recorder.kinds() == ["set_workflow_data", "set_workflow_data"]


def test_every_declared_kind_is_dispatched_session_kinds_included(memory_harness: Any) -> None:
    """AC-E1: no filtering by kind under on_agent_error."""
    h = memory_harness
    setup(h, "restart")
    h.rt.dispatch("agent_error", event())
    (call,) = h.recorder.of("auto_start_agent")
    assert call.trigger == "on_agent_error" and call.session_id == "S1"


def test_current_step_is_read_at_dispatch_time(memory_harness: Any) -> None:
    """AC-A4: a move committed before the dispatch decides which step's actions run."""
    h = memory_harness
    setup(h, "quiet")
    h.rt.move("T", "todo")
    result = h.rt.dispatch("agent_error", event())
    assert result.fire is not None and result.fire.step_id == "todo"
    assert h.runs("T") == [("T", "primary", "agent_error")]


# ---- re-entrant executors ------------------------------------------------------------------------------

def test_reentrant_executor_completes_without_deadlock(harness: Any) -> None:
    """AC-A11's shape: the `auto_start_agent` executor calls back into the same runtime (it moves the
    task, and a second failure arrives meanwhile); no lock is held while it runs."""
    h = harness
    setup(h, "restart")
    nested: list[Any] = []

    def relaunch(ctx: Any) -> None:
        nested.append(ctx.runtime.move(ctx.task.id, "fixup", session_id=ctx.session_id))
        nested.append(ctx.runtime.dispatch("agent_error", event(execution_id="E2")))

    h.recorder.hook("auto_start_agent", relaunch)
    done: list[Any] = []
    worker = threading.Thread(target=lambda: done.append(h.rt.dispatch("agent_error", event())), daemon=True)
    worker.start()
    worker.join(timeout=30)
    assert not worker.is_alive(), "the re-entrant dispatch deadlocked"
    assert done[0].result == "dispatched"
    moved, second = nested
    assert moved.status == "moved" and moved.entry is not None and moved.entry.status == "dispatched"
    assert second.result == "dispatched" and second.fire.step_id == "fixup"  # fixup has no on_agent_error
    assert h.runs("T") == [("T", "primary", "fixup_entered")]
    assert h.store.operation_applied(OP) and h.store.operation_applied("agent_error:session:S1:E2")


def test_user_cancel_does_not_suppress_another_delivery_of_the_failure(memory_harness: Any) -> None:
    """AC-A10: the user-initiated marker rides on its own event; the runtime keeps no per-session
    suppression, so the retry timer's own (not user-initiated) delivery still dispatches."""
    h = memory_harness
    setup(h)
    assert h.rt.dispatch("agent_error", event(user_initiated=True)).result == "skipped"
    assert h.rt.dispatch("agent_error", event(user_initiated=False)).result == "dispatched"
    assert h.runs("T") == [("T", "primary", "agent_error")]


def test_walk_reads_the_live_registry(memory_harness: Any) -> None:
    """AC-E13's concern: an executor registered after the runtime was built is seen by the walk
    (no snapshot that would warn forever) and by the dispatch."""
    h = memory_harness
    setup(h, "gated")
    seen: list[str] = []
    h.rt.executors.register("page_oncall", lambda args, ctx: seen.append(ctx.task.id) or None)
    assert h.rt.dispatch("agent_error", event()).result == "dispatched"
    assert h.records("warning") == [] and seen == ["T"]


def test_no_shipped_workflow_but_office_default_declares_on_agent_error() -> None:
    """AC-E6's intent: making the trigger work configures no board."""
    from pathlib import Path

    from interlock.compiler import compile_path

    examples = Path(__file__).resolve().parents[2] / "examples"
    declaring = set()
    for path in sorted(examples.glob("*.wf")):
        plan = compile_path(path).plan
        assert plan is not None, path
        declaring |= {wf.id for wf in plan.workflows for s in wf.steps if s.handlers.get("on_agent_error")}
    assert declaring == {"office_default"}
