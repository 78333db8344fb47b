"""Quorum guards: the required slate and the thresholds (facts §3.2-3.4, scenarios 25-32 and 42; docs/runtime.md §2)."""

from __future__ import annotations

import random
from dataclasses import replace
from typing import Literal

import pytest
from hypothesis import given
from hypothesis import strategies as st

from interlock.runtime.quorum import APPROVE_STYLE, REASONS, QuorumResult, evaluate, seats
from interlock.runtime.store import Decision, Participant

TASK = "task-1"
STEP = "review"
APPROVE_ONLY = ("all_approve", "all_decide", "majority_approve")

_ids = iter(range(1, 1_000_000))


def seat(agent: str, *, role: str = "reviewer", task: str = TASK, step: str = STEP, required: bool = True,
         id: int | None = None, position: int = 0) -> Participant:
    return Participant(task_id=task, step_id=step, role=role, agent=agent, decision_required=required,
                       position=position, id=next(_ids) if id is None else id)


def template(agent: str, *, step: str = STEP, id: int | None = None) -> Participant:
    return seat(agent, task="", step=step, id=id)


def dec(decider: str, verdict: str, *, role: str = "reviewer", kind: Literal["agent", "user"] = "agent",
        task: str = TASK, step: str = STEP) -> Decision:
    return Decision(task_id=task, step_id=step, decider_type=kind, decider_id=decider, role=role, verdict=verdict)


def ev(threshold: str, participants: list[Participant], decisions: list[Decision], *, count: int | None = None,
       role: str = "reviewer") -> QuorumResult:
    return evaluate(role=role, threshold=threshold, count=count, participants=participants, decisions=decisions,
                    task_id=TASK, step_id=STEP)


def check(r: QuorumResult, satisfied: bool, reason: str | None, required: int, received: int) -> None:
    assert (r.satisfied, r.reason, r.required, r.received) == (satisfied, reason, required, received), r


TWO = [seat("rev-A"), seat("rev-B")]
THREE = [seat("rev-A"), seat("rev-B"), seat("rev-C")]


# ---- scenario 25: all_approve ------------------------------------------------------------------

def test_all_approve_both_approved_is_satisfied() -> None:
    r = ev("all_approve", TWO, [dec("rev-A", "approved"), dec("rev-B", "approved")])
    check(r, True, None, 2, 2)
    assert (r.role, r.threshold) == ("reviewer", "all_approve")


def test_all_approve_one_approved_is_not_met() -> None:
    check(ev("all_approve", TWO, [dec("rev-A", "approved")]), False, "threshold_not_met", 2, 1)


def test_all_approve_approve_and_reject_is_not_met() -> None:
    check(ev("all_approve", TWO, [dec("rev-A", "approved"), dec("rev-B", "rejected")]),
          False, "threshold_not_met", 2, 1)


def test_all_approve_no_decisions_is_not_met() -> None:
    check(ev("all_approve", TWO, []), False, "threshold_not_met", 2, 0)


# ---- scenario 26: all_decide -------------------------------------------------------------------

def test_all_decide_approved_and_rejected_is_satisfied() -> None:
    check(ev("all_decide", TWO, [dec("rev-A", "approved"), dec("rev-B", "rejected")]), True, None, 2, 2)


def test_all_decide_one_decided_is_not_met() -> None:
    check(ev("all_decide", TWO, [dec("rev-A", "approved")]), False, "threshold_not_met", 2, 1)


def test_free_form_verdict_counts_only_toward_all_decide() -> None:
    ds = [dec("rev-A", "approved"), dec("rev-B", "abstained")]
    check(ev("all_decide", TWO, ds), True, None, 2, 2)
    check(ev("all_approve", TWO, ds), False, "threshold_not_met", 2, 1)
    check(ev("any_reject", TWO, ds), False, "threshold_not_met", 1, 0)


# ---- scenario 27: majority_approve (strict) ----------------------------------------------------

def test_majority_two_of_three_is_satisfied() -> None:
    check(ev("majority_approve", THREE, [dec("rev-A", "approved"), dec("rev-B", "approved")]), True, None, 2, 2)


def test_majority_one_approve_one_reject_is_not_met() -> None:
    check(ev("majority_approve", THREE, [dec("rev-A", "approved"), dec("rev-B", "rejected")]),
          False, "threshold_not_met", 2, 1)


def test_majority_is_strict_half_of_two_is_not_enough() -> None:
    check(ev("majority_approve", TWO, [dec("rev-A", "approved")]), False, "threshold_not_met", 2, 1)
    check(ev("majority_approve", TWO, [dec("rev-A", "approved"), dec("rev-B", "approved")]), True, None, 2, 2)


# ---- scenario 28: n_approve ---------------------------------------------------------------------

def test_n_approve_two_of_two_approvals_is_satisfied() -> None:
    check(ev("n_approve", THREE, [dec("rev-A", "approved"), dec("rev-B", "approved")], count=2), True, None, 2, 2)


def test_n_approve_three_with_two_approvals_is_not_met() -> None:
    check(ev("n_approve", THREE, [dec("rev-A", "approved"), dec("rev-B", "approved")], count=3),
          False, "threshold_not_met", 3, 2)


@pytest.mark.parametrize("count", [0, -1, None])
def test_n_approve_bad_count_is_unrecognized(count: int | None) -> None:
    check(ev("n_approve", TWO, [dec("rev-A", "approved"), dec("rev-B", "approved")], count=count),
          False, "threshold_unrecognized", 0, 0)


def test_n_approve_bool_count_is_unrecognized() -> None:
    check(ev("n_approve", TWO, [dec("rev-A", "approved")], count=True), False, "threshold_unrecognized", 0, 0)


def test_n_approve_above_seat_count_is_unsatisfiable() -> None:
    check(ev("n_approve", TWO, [dec("rev-A", "approved"), dec("rev-B", "approved")], count=5),
          False, "threshold_unsatisfiable", 5, 2)


def test_n_approve_one_above_seat_count_is_unsatisfiable() -> None:
    check(ev("n_approve", TWO, [dec("rev-A", "approved")], count=3), False, "threshold_unsatisfiable", 3, 1)


def test_n_approve_equal_to_seat_count_is_satisfiable() -> None:
    check(ev("n_approve", TWO, [dec("rev-A", "approved")], count=2), False, "threshold_not_met", 2, 1)


@pytest.mark.parametrize("threshold", ["some_approve", "n_approve:2", "ALL_APPROVE", ""])
def test_unknown_threshold_is_unrecognized(threshold: str) -> None:
    check(ev(threshold, TWO, [dec("rev-A", "approved"), dec("rev-B", "approved")], count=1),
          False, "threshold_unrecognized", 0, 0)


def test_empty_slate_outranks_unrecognized_threshold() -> None:
    # facts §3.4 precedence: the slate is built (and found empty) before the threshold is parsed
    check(ev("bogus", [], []), False, "slate_empty", 0, 0)
    check(ev("n_approve", [], [], count=0), False, "slate_empty", 0, 0)
    check(ev("n_approve", [], [], count=3), False, "slate_empty", 0, 0)


def test_count_is_ignored_for_other_thresholds() -> None:
    check(ev("all_approve", TWO, [dec("rev-A", "approved"), dec("rev-B", "approved")], count=0), True, None, 2, 2)


# ---- scenarios 29-30: decision -> seat mapping, latest wins --------------------------------------

def test_decision_from_non_seat_agent_is_ignored() -> None:
    one = [seat("rev-A")]
    check(ev("all_approve", one, [dec("rev-Z", "approved"), dec("rev-A", "approved")]), True, None, 1, 1)
    check(ev("all_approve", TWO, [dec("rev-A", "approved"), dec("rev-Z", "approved")]),
          False, "threshold_not_met", 2, 1)
    check(ev("all_decide", TWO, [dec("rev-A", "approved"), dec("rev-Z", "rejected")]),
          False, "threshold_not_met", 2, 1)


def test_latest_decision_per_seat_wins() -> None:
    ds = [dec("rev-A", "approved"), dec("rev-A", "rejected")]
    check(ev("all_approve", [seat("rev-A")], ds), False, "threshold_not_met", 1, 0)
    check(ev("all_decide", [seat("rev-A")], ds), True, None, 1, 1)
    check(ev("any_reject", [seat("rev-A")], ds), True, None, 1, 1)
    check(ev("all_approve", [seat("rev-A")], list(reversed(ds))), True, None, 1, 1)


def test_agent_decision_maps_to_seat_by_role_and_agent() -> None:
    check(ev("all_approve", [seat("rev-A")], [dec("rev-A", "approved")]), True, None, 1, 1)


def test_decision_in_another_role_does_not_fill_the_seat() -> None:
    check(ev("all_approve", [seat("rev-A")], [dec("rev-A", "approved", role="approver")]),
          False, "threshold_not_met", 1, 0)


def test_user_decision_fills_only_a_seat_held_by_that_user_id() -> None:
    check(ev("all_approve", [seat("rev-A")], [dec("u-1", "approved", kind="user")]),
          False, "threshold_not_met", 1, 0)
    check(ev("all_approve", [seat("u-1")], [dec("u-1", "approved", kind="user")]), True, None, 1, 1)
    check(ev("all_approve", [seat("u-1")], [dec("u-1", "approved", kind="user", role="approver")]),
          False, "threshold_not_met", 1, 0)


def test_decisions_of_other_tasks_or_steps_are_ignored() -> None:
    ds = [dec("rev-A", "approved", task="task-2"), dec("rev-A", "approved", step="work")]
    check(ev("all_approve", [seat("rev-A")], ds), False, "threshold_not_met", 1, 0)
    check(ev("any_reject", [seat("rev-A")], [dec("rev-A", "rejected", step="work")]),
          False, "threshold_not_met", 1, 0)


def test_changes_requested_is_a_rejection_not_an_approval() -> None:
    ds = [dec("rev-A", "approved"), dec("rev-B", "changes_requested")]
    check(ev("all_approve", TWO, ds), False, "threshold_not_met", 2, 1)
    check(ev("all_decide", TWO, ds), True, None, 2, 2)


# ---- scenario 31: any_reject --------------------------------------------------------------------

def test_any_reject_one_agent_rejection_vetoes() -> None:
    check(ev("any_reject", TWO, [dec("rev-A", "approved"), dec("rev-B", "rejected")]), True, None, 1, 1)


def test_any_reject_counts_every_vetoer() -> None:
    check(ev("any_reject", TWO, [dec("rev-A", "rejected"), dec("rev-B", "changes_requested"),
                                 dec("u-1", "rejected", kind="user")]), True, None, 1, 3)


def test_any_reject_reject_then_approve_is_no_veto() -> None:
    check(ev("any_reject", TWO, [dec("rev-A", "rejected"), dec("rev-A", "approved")]),
          False, "threshold_not_met", 1, 0)


def test_any_reject_agent_in_another_role_is_no_veto() -> None:
    check(ev("any_reject", TWO, [dec("rev-A", "rejected", role="approver")]), False, "threshold_not_met", 1, 0)


def test_any_reject_agent_role_filtered_before_latest() -> None:
    # the approver-role approval does not hide the agent's standing reviewer rejection
    ds = [dec("rev-A", "rejected"), dec("rev-A", "approved", role="approver")]
    check(ev("any_reject", TWO, ds), True, None, 1, 1)


def test_any_reject_user_rejection_in_any_role_vetoes() -> None:
    check(ev("any_reject", TWO, [dec("u-1", "rejected", kind="user", role="approver")]), True, None, 1, 1)


def test_any_reject_user_latest_across_roles() -> None:
    ds = [dec("u-1", "rejected", kind="user", role="reviewer"), dec("u-1", "approved", kind="user", role="approver")]
    check(ev("any_reject", TWO, ds), False, "threshold_not_met", 1, 0)


def test_any_reject_changes_requested_vetoes() -> None:
    check(ev("any_reject", TWO, [dec("rev-A", "changes_requested")]), True, None, 1, 1)


def test_any_reject_no_decisions_is_not_met() -> None:
    check(ev("any_reject", TWO, []), False, "threshold_not_met", 1, 0)


def test_any_reject_without_seats_user_rejection_still_vetoes() -> None:
    check(ev("any_reject", [], [dec("u-1", "rejected", kind="user")]), True, None, 1, 1)
    check(ev("any_reject", [], [dec("rev-Z", "rejected")]), True, None, 1, 1)  # seatless agent in the role


def test_any_reject_ignores_rows_without_decider_identity() -> None:
    check(ev("any_reject", TWO, [dec("", "rejected"), dec("", "rejected", kind="user")]),
          False, "threshold_not_met", 1, 0)


def test_agent_and_user_with_the_same_id_are_distinct_vetoers() -> None:
    ds = [dec("x", "rejected"), dec("x", "approved", kind="user")]
    check(ev("any_reject", TWO, ds), True, None, 1, 1)


# ---- scenario 32: the slate ---------------------------------------------------------------------

def test_slate_filters_role_and_decision_required() -> None:
    rows = [seat("rev-A"), seat("rev-B", required=False), seat("app-1", role="approver")]
    assert [p.agent for p in seats(rows, task_id=TASK, step_id=STEP, role="reviewer")] == ["rev-A"]
    check(ev("all_approve", rows, [dec("rev-A", "approved")]), True, None, 1, 1)


def test_per_task_row_at_another_step_beats_template_row() -> None:
    t = template("rev-A", id=1)
    p = seat("rev-A", step="work", id=9)
    assert seats([t, p], task_id=TASK, step_id=STEP, role="reviewer") == [p]
    assert seats([p, t], task_id=TASK, step_id=STEP, role="reviewer") == [p]


def test_duplicate_per_task_rows_prefer_the_evaluating_step() -> None:
    elsewhere = seat("rev-A", step="work", id=1)
    here = seat("rev-A", step=STEP, id=7)
    assert seats([elsewhere, here], task_id=TASK, step_id=STEP, role="reviewer") == [here]


def test_duplicate_per_task_rows_elsewhere_take_lowest_id() -> None:
    a = seat("rev-A", step="work", id=5)
    b = seat("rev-A", step="plan", id=3)
    assert seats([a, b], task_id=TASK, step_id=STEP, role="reviewer") == [b]


def test_duplicate_template_rows_take_lowest_id() -> None:
    a = template("rev-A", id=5)
    b = template("rev-A", id=3)
    assert seats([a, b], task_id=TASK, step_id=STEP, role="reviewer") == [b]


def test_template_rows_of_other_steps_and_rows_of_other_tasks_are_not_seats() -> None:
    rows = [template("rev-A", step="work"), seat("rev-B", task="task-2")]
    assert seats(rows, task_id=TASK, step_id=STEP, role="reviewer") == []
    check(ev("all_approve", rows, [dec("rev-A", "approved"), dec("rev-B", "approved")]), False, "slate_empty", 0, 0)


def test_one_seat_per_agent_across_template_and_task_rows() -> None:
    rows = [template("rev-A"), template("rev-B"), seat("rev-A", step="work")]
    slate = seats(rows, task_id=TASK, step_id=STEP, role="reviewer")
    assert sorted(p.agent for p in slate) == ["rev-A", "rev-B"]
    check(ev("all_approve", rows, [dec("rev-A", "approved"), dec("rev-B", "approved")]), True, None, 2, 2)


def test_empty_agent_rows_stay_separate_seats_and_are_never_filled() -> None:
    rows = [template("", id=1), template("", id=2), seat("", id=3), seat("rev-A")]
    assert len(seats(rows, task_id=TASK, step_id=STEP, role="reviewer")) == 4
    ds = [dec("rev-A", "approved"), dec("", "approved"), dec("", "approved", kind="user")]
    check(ev("all_approve", rows, ds), False, "threshold_not_met", 4, 1)
    check(ev("all_decide", rows, ds), False, "threshold_not_met", 4, 1)


def test_nothing_configured_is_slate_empty_for_every_approve_style_threshold() -> None:
    ds = [dec("rev-A", "approved"), dec("u-1", "approved", kind="user")]
    for threshold in APPROVE_ONLY:
        check(ev(threshold, [], ds), False, "slate_empty", 0, 0)
    check(ev("n_approve", [], ds, count=1), False, "slate_empty", 0, 0)


def test_slate_is_ordered_by_position_then_agent() -> None:
    rows = [seat("rev-B", position=1), seat("rev-C", position=0), seat("rev-A", position=1)]
    assert [p.agent for p in seats(rows, task_id=TASK, step_id=STEP, role="reviewer")] == ["rev-C", "rev-A", "rev-B"]


# ---- scenario 42-ish: who holds a seat -----------------------------------------------------------

def test_seat_at_an_earlier_step_still_counts() -> None:
    rows = [seat("rev-A", step="work")]
    check(ev("all_approve", rows, [dec("rev-A", "approved")]), True, None, 1, 1)


def test_approver_and_reviewer_slates_are_separate() -> None:
    rows = [seat("agent-1", role="approver"), seat("agent-1", role="reviewer")]
    assert [p.role for p in seats(rows, task_id=TASK, step_id=STEP, role="approver")] == ["approver"]
    check(ev("all_approve", rows, [dec("agent-1", "approved", role="approver")], role="approver"), True, None, 1, 1)
    check(ev("all_approve", rows, [dec("agent-1", "approved", role="approver")]), False, "threshold_not_met", 1, 0)


def test_other_agent_or_not_required_holds_no_seat() -> None:
    rows = [seat("rev-A", required=False)]
    check(ev("all_approve", rows, [dec("rev-A", "approved")]), False, "slate_empty", 0, 0)
    check(ev("all_approve", [seat("rev-A")], [dec("rev-B", "approved")]), False, "threshold_not_met", 1, 0)


def test_result_invariant_reason_iff_unsatisfied() -> None:
    with pytest.raises(ValueError):
        QuorumResult(True, "threshold_not_met", 1, 1, "reviewer", "all_approve")
    with pytest.raises(ValueError):
        QuorumResult(False, None, 1, 0, "reviewer", "all_approve")
    with pytest.raises(ValueError):
        QuorumResult(False, "nope", 1, 0, "reviewer", "all_approve")


# ---- properties ---------------------------------------------------------------------------------

AGENTS = ["a", "b", "c", "d", ""]
ROLES = ["reviewer", "approver"]
VERDICTS = ["approved", "rejected", "changes_requested", "abstained"]

participants_st = st.lists(
    st.builds(Participant, task_id=st.sampled_from([TASK, "", "task-2"]), step_id=st.sampled_from([STEP, "work"]),
              role=st.sampled_from(ROLES), agent=st.sampled_from(AGENTS), decision_required=st.booleans(),
              position=st.integers(0, 2), id=st.integers(0, 20)),
    max_size=8)
decision_st = st.builds(Decision, task_id=st.just(TASK), step_id=st.just(STEP),
                        decider_type=st.sampled_from(["agent", "user"]),
                        decider_id=st.sampled_from(["a", "b", "c", "d", "u-1", "u-2"]),
                        role=st.sampled_from(ROLES), verdict=st.sampled_from(VERDICTS))
decisions_st = st.lists(decision_st, max_size=10)
threshold_st = st.sampled_from([*APPROVE_STYLE, "any_reject"])
count_st = st.one_of(st.none(), st.integers(-1, 6))


def run(threshold: str, count: int | None, ps: list[Participant], ds: list[Decision]) -> QuorumResult:
    return ev(threshold, ps, ds, count=count)


@given(threshold_st, count_st, participants_st,
       st.lists(decision_st, max_size=6, unique_by=lambda d: d.decider_id).flatmap(
           lambda ds: st.tuples(st.just(ds), st.permutations(ds))))
def test_order_of_different_deciders_does_not_matter(threshold: str, count: int | None, ps: list[Participant],
                                                     pair: tuple[list[Decision], list[Decision]]) -> None:
    ds, shuffled = pair
    assert run(threshold, count, ps, ds) == run(threshold, count, ps, shuffled)


@given(threshold_st, count_st, participants_st, decisions_st, decision_st, st.sampled_from(VERDICTS))
def test_a_later_decision_replaces_the_earlier_one(threshold: str, count: int | None, ps: list[Participant],
                                                   ds: list[Decision], new: Decision, old_verdict: str) -> None:
    def same(d: Decision) -> bool:
        return (d.decider_type, d.decider_id, d.role) == (new.decider_type, new.decider_id, new.role)

    old = replace(new, verdict=old_verdict)
    expected = run(threshold, count, ps, [d for d in ds if not same(d)] + [new])
    assert run(threshold, count, ps, [*ds, new]) == expected
    assert run(threshold, count, ps, [*ds, old, new]) == expected


@given(participants_st, decisions_st, st.integers(1, 6))
def test_all_approve_implies_all_decide_majority_and_n_approve(ps: list[Participant], ds: list[Decision],
                                                               n: int) -> None:
    if run("all_approve", None, ps, ds).satisfied:
        assert run("all_decide", None, ps, ds).satisfied
        assert run("majority_approve", None, ps, ds).satisfied
        slate = seats(ps, task_id=TASK, step_id=STEP, role="reviewer")
        if n <= len(slate):
            assert run("n_approve", n, ps, ds).satisfied


@given(participants_st, decisions_st, st.sampled_from(APPROVE_STYLE), count_st)
def test_an_empty_slate_never_satisfies_approve_style(ps: list[Participant], ds: list[Decision], threshold: str,
                                                      count: int | None) -> None:
    no_seats = [p for p in ps if not seats([p], task_id=TASK, step_id=STEP, role="reviewer")]
    r = run(threshold, count, no_seats, ds)
    assert not r.satisfied
    assert (r.reason, r.required, r.received) == ("slate_empty", 0, 0)


@given(participants_st, decisions_st, st.sampled_from(APPROVE_STYLE), count_st,
       st.lists(st.tuples(st.integers(0, 10), decision_st), max_size=6))
def test_decisions_from_non_seat_agents_never_change_approve_style(ps: list[Participant], ds: list[Decision],
                                                                   threshold: str, count: int | None,
                                                                   extra: list[tuple[int, Decision]]) -> None:
    seated = {p.agent for p in seats(ps, task_id=TASK, step_id=STEP, role="reviewer")}
    mixed = list(ds)
    for at, d in extra:  # interleave decisions of deciders who hold no seat of the role
        mixed.insert(at, replace(d, decider_id="seatless") if d.decider_id in seated else d)
    assert run(threshold, count, ps, mixed) == run(threshold, count, ps, ds)


@given(participants_st, st.sampled_from(ROLES), st.randoms(use_true_random=False))
def test_slate_shape(ps: list[Participant], role: str, rnd: random.Random) -> None:
    slate = seats(ps, task_id=TASK, step_id=STEP, role=role)
    named = [p.agent for p in slate if p.agent]
    assert len(named) == len(set(named))  # one seat per agent
    for p in slate:
        assert p.role == role and p.decision_required
        assert p.task_id == TASK or (p.task_id == "" and p.step_id == STEP)
        if p.task_id == "":  # a template seat only when the task has no row of its own for that agent
            assert not any(q.task_id == TASK and q.role == role and q.decision_required and q.agent == p.agent
                           and p.agent for q in ps)
    shuffled = list(ps)
    rnd.shuffle(shuffled)
    assert seats(shuffled, task_id=TASK, step_id=STEP, role=role) == slate  # input order never matters


@given(threshold_st, count_st, participants_st, decisions_st)
def test_reason_is_from_the_closed_set(threshold: str, count: int | None, ps: list[Participant],
                                       ds: list[Decision]) -> None:
    r = run(threshold, count, ps, ds)
    assert r.satisfied == (r.reason is None)
    assert r.reason is None or r.reason in REASONS
    assert r.received >= 0 and r.required >= 0
