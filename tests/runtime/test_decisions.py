"""Decisions (docs/runtime.md §2, facts 36-40, 53, 54, 58): recording a decision re-evaluates the
guarded `on_turn_complete` transitions of the task's step and moves the task with a
compare-and-swap (an arrival with route `decision`); the Office round trip.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from typing import Any

import pytest

from interlock.runtime import TaskState
from interlock.runtime.store import Decision, Store

pytestmark = pytest.mark.async_runtime  # each harness test runs with a Runtime and an AsyncRuntime

GATES = """
workflow g "G" {
  step r "R" {
    start
    manual_move
    on on_turn_complete {
      set_workflow_data(key: "k", value: 1)
      move_to_step(x) when quorum(reviewer, any_reject) requires_approval
      move_to_step(y)
    }
  }
  step r2 "R2" {
    manual_move
    on on_turn_complete {
      move_to_step(y)
      move_to_step(x) when quorum(reviewer, any_reject)
    }
  }
  step x "X" { manual_move }
  step y "Y" { manual_move }
}
"""


def office(h: Any, step: str | None = "review") -> Any:
    rt = h.start()
    h.seat("review", "reviewer", "rev-a")
    h.seat("review", "reviewer", "rev-b")
    h.seat("approval", "approver", "appr-1")
    if step is not None:
        h.store.put_task(TaskState("T", "office_default", step, "Fix the login bug"))
    return rt


def step_of(store: Store, task: str = "T") -> str | None:
    t = store.get_task(task)
    return t.step_id if t else None


def test_agent_decisions_move_the_task_by_compare_and_swap(harness: Any) -> None:
    h = harness
    rt = office(h)
    first = rt.record_decision("T", agent="rev-a", role="reviewer", verdict="approved")
    assert not first.transitioned and step_of(h.store) == "review"  # 1 of 2 seats
    second = rt.record_decision("T", agent="rev-b", role="reviewer", verdict="approved")
    assert second.transitioned and second.arrival is not None and second.arrival.to_step == "approval"
    (row,) = h.store.ledger("T")
    assert (row.from_step_id, row.to_step_id, row.route) == ("review", "approval", "decision")
    assert (row.actor_kind, row.actor_id, row.session_id) == ("agent", "rev-b", None)
    assert h.store.entry_record(row.id) is not None
    assert h.runs("T") == [("T", "appr-1", "task_assigned")]


def test_user_decision_without_a_session_re_evaluates(harness: Any) -> None:
    h = harness
    rt = office(h)
    result = rt.record_decision("T", user="u1", verdict="rejected")
    assert result.transitioned and step_of(h.store) == "work"
    (row,) = h.store.ledger("T")
    assert (row.route, row.actor_kind, row.actor_id, row.session_id) == ("decision", "human", "u1", None)
    entry = h.store.entry_record(row.id)
    assert entry is not None and entry.attempted == ()  # work: only auto_start_agent, left to the host


def test_decision_with_a_session_carries_it_onto_the_arrival(harness: Any) -> None:
    h = harness
    rt = office(h)
    rt.record_decision("T", agent="rev-a", role="reviewer", verdict="changes_requested", session_id="S-rev")
    (row,) = h.store.ledger("T")
    assert (row.to_step_id, row.session_id) == ("work", "S-rev")


class _RacedStore:
    """Another process moves the task between the decision's evaluation and its compare-and-swap."""

    def __init__(self, inner: Store, counts: list[int] | None = None) -> None:
        self._inner = inner
        self._counts = counts if counts is not None else [0]

    @property
    def decision_moves(self) -> int:
        return self._counts[0]

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)

    @contextlib.contextmanager
    def unit(self) -> Iterator[_RacedStore]:
        """The runtime may move the task inside a unit (ADR 0010): race there too."""
        with self._inner.unit() as tx:
            yield _RacedStore(tx, self._counts)

    def move_task(self, task_id: str, *args: Any, **kwargs: Any) -> Any:
        if kwargs.get("route") == "decision":
            self._counts[0] += 1
            self._inner.move_task(task_id, "office_default", "backlog", route="manual_move")
        return self._inner.move_task(task_id, *args, **kwargs)


def test_lost_compare_and_swap_abandons_the_transition(harness: Any) -> None:
    """Fact 38: exactly one attempt; the racer's move stands."""
    h = harness
    office(h)
    raced = _RacedStore(h.store)
    h.backend.store = raced
    rt = h._build()
    rt.record_decision("T", agent="rev-a", role="reviewer", verdict="approved")
    result = rt.record_decision("T", agent="rev-b", role="reviewer", verdict="approved")
    assert result.abandoned and not result.transitioned and result.arrival is None
    assert raced.decision_moves == 1
    assert step_of(h.store) == "backlog"
    assert [r.route for r in h.store.ledger("T")] == ["manual_move"]
    # its replay finds the task gone from the step: abandoned again, no second attempt
    replay = rt.reevaluate("T", "review", result.decision_id, actor="rev-b", actor_kind="agent")
    assert replay.abandoned and raced.decision_moves == 1
    assert rt.reevaluate("T", "review", result.decision_id).idempotent


def test_replayed_re_evaluation_is_idempotent(harness: Any) -> None:
    """Fact 39, also after a restart."""
    h = harness
    rt = office(h)
    rt.record_decision("T", agent="rev-a", role="reviewer", verdict="approved")
    moved = rt.record_decision("T", agent="rev-b", role="reviewer", verdict="approved")
    h.store.put_task(TaskState("T", "office_default", "review"))  # even back at the step
    replay = rt.reevaluate("T", "review", moved.decision_id, actor="rev-b", actor_kind="agent")
    assert replay.idempotent and not replay.transitioned
    rt2 = h.restart()
    assert rt2.reevaluate("T", "review", moved.decision_id, actor="rev-b", actor_kind="agent").idempotent
    assert len(h.store.ledger("T")) == 1 and step_of(h.store) == "review"


def test_re_evaluation_ignores_unguarded_and_requires_approval_transitions(harness: Any) -> None:
    """Fact 40: only guarded transitions are re-evaluated; no other action runs on a decision."""
    h = harness
    rt = h.start(GATES)
    h.store.put_task(TaskState("T", "g", "r"))
    result = rt.record_decision("T", user="u1", verdict="rejected")  # any_reject holds, but requires_approval
    assert not result.transitioned and not result.abandoned and step_of(h.store) == "r"
    assert h.store.ledger("T") == [] and h.recorder.calls == []
    h.store.put_task(TaskState("T", "g", "r2"))
    result = rt.record_decision("T", user="u1", verdict="rejected")
    assert result.transitioned and step_of(h.store) == "x"  # the guarded one, not the unguarded y


def test_decision_from_someone_without_a_seat_is_stored_and_ignored(harness: Any) -> None:
    h = harness
    rt = office(h)
    rt.record_decision("T", agent="rev-a", role="reviewer", verdict="approved")
    outsider = rt.record_decision("T", agent="outsider", role="reviewer", verdict="approved")
    assert not outsider.transitioned and step_of(h.store) == "review"
    assert {d.decider_id for d in h.store.decisions("T", "review")} == {"rev-a", "outsider"}


def test_office_round_trip(harness: Any) -> None:
    """Fact 53: Work -> Review (2 task_assigned runs) -> both approve -> Approval (1 task_assigned
    run) -> approver approves -> Done; one entry per arrival, each run queued once."""
    h = harness
    rt = office(h, step=None)
    created = rt.create_task("T", "office_default", description="Fix the login bug", session_id="S1")
    assert created.entry is not None and created.entry.attempted == ()
    fired = rt.fire("on_turn_complete", "T", session_id="S1", operation_id="turn:1")
    assert fired.arrival is not None and fired.arrival.to_step == "review"
    assert sorted(h.runs("T")) == [("T", "rev-a", "task_assigned"), ("T", "rev-b", "task_assigned")]
    rt.record_decision("T", agent="rev-a", role="reviewer", verdict="approved")
    assert step_of(h.store) == "review"
    rt.record_decision("T", agent="rev-b", role="reviewer", verdict="approved")
    assert step_of(h.store) == "approval"
    rt.record_decision("T", agent="appr-1", role="approver", verdict="approved")
    assert step_of(h.store) == "done"
    assert sorted(h.runs("T")) == [("T", "appr-1", "task_assigned"), ("T", "rev-a", "task_assigned"),
                                   ("T", "rev-b", "task_assigned")]
    rows = h.store.ledger("T")
    assert [(r.route, r.to_step_id) for r in rows] == [
        ("creation", "work"), ("engine_transition", "review"), ("decision", "approval"), ("decision", "done")]
    assert all(h.store.entry_record(r.id) is not None for r in rows)
    assert len(h.records("entry")) == 4


def test_office_rejection_and_reentry(harness: Any) -> None:
    """Facts 54 and 58: a reviewer's rejection sends the task back to Work; the next entry into
    Review clears the old decisions and wakes every reviewer again."""
    h = harness
    rt = office(h, step="work")
    rt.fire("on_turn_complete", "T", session_id="S1", operation_id="turn:1")
    rejected = rt.record_decision("T", agent="rev-a", role="reviewer", verdict="rejected")
    assert rejected.transitioned and step_of(h.store) == "work"
    rt.fire("on_turn_complete", "T", session_id="S1", operation_id="turn:2")
    assert step_of(h.store) == "review"
    assert h.store.decisions("T", "review") == []  # cleared on the new entry
    assert sorted(h.runs("T")) == sorted([("T", "rev-a", "task_assigned"), ("T", "rev-b", "task_assigned")] * 2)
    rt.record_decision("T", agent="rev-b", role="reviewer", verdict="approved")
    assert step_of(h.store) == "review"  # the old rejection no longer counts, and 1 of 2 approved
    rt.record_decision("T", agent="rev-a", role="reviewer", verdict="approved")
    assert step_of(h.store) == "approval"


def test_recover_re_evaluates_a_decision_stored_before_a_crash(harness: Any) -> None:
    """A crash between storing a decision and re-evaluating it leaves a met quorum unapplied: `recover` re-evaluates
    every active decision whose re-evaluation is not marked, once; the others are left alone."""
    h = harness
    rt = office(h)
    rt.record_decision("T", agent="rev-a", role="reviewer", verdict="approved")  # evaluated: 1 of 2
    crashed = h.store.record_decision(Decision("T", "review", "agent", "rev-b", "reviewer", "approved"))
    assert [d.id for d in h.store.unevaluated_decisions()] == [crashed.id]
    assert step_of(h.store) == "review"
    recovered = rt.recover()
    assert [(d.decision_id, d.transitioned) for d in recovered.decisions] == [(crashed.id, True)]
    assert step_of(h.store) == "approval"
    (row,) = h.store.ledger("T")
    assert (row.route, row.actor_kind, row.actor_id) == ("decision", "agent", "rev-b")
    assert h.runs("T") == [("T", "appr-1", "task_assigned")]
    assert h.store.unevaluated_decisions() == []
    again = rt.recover()
    assert again.decisions == () and again.dispatched == 0 and len(h.store.ledger("T")) == 1


def test_recover_marks_a_stored_decision_that_meets_no_quorum_and_skips_a_vanished_task(harness: Any) -> None:
    h = harness
    rt = office(h)
    lone = h.store.record_decision(Decision("T", "review", "agent", "rev-a", "reviewer", "approved"))
    ghost = h.store.record_decision(Decision("GONE", "review", "agent", "rev-a", "reviewer", "approved"))
    recovered = rt.recover()
    assert [(d.decision_id, d.transitioned, d.abandoned) for d in recovered.decisions] == [(lone.id, False, False)]
    assert step_of(h.store) == "review" and h.store.ledger("T") == []
    warnings = [r for r in h.sink.records if r.kind == "warning" and r.fields.get("code") == "decision_not_reevaluated"]
    assert [w.fields["decision_id"] for w in warnings] == [ghost.id]
    assert [d.id for d in h.store.unevaluated_decisions()] == [ghost.id]  # left for a host to look at
