"""Timers (`after D { … }`, `every D { … }`) and retry policies (`retry N backoff D[..MAX]`) from the source to the
plan (docs/language.md §6): what `interlock check` says about them, at which span, and what the plan holds."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from interlock.compiler import CompileResult, compile_source
from interlock.dsl import SourceFile
from interlock.runtime.durations import (
    MAX_SECONDS,
    UNIT_SECONDS,
    duration_problem,
    duration_seconds,
    label_seconds,
    normal_duration,
    timer_label,
)
from interlock.runtime.plan import Plan, dump_plan, load_plan


def check(text: str) -> CompileResult:
    return compile_source(SourceFile("t.wf", text))


def codes(text: str) -> list[tuple[str, int, int]]:
    return [(d.code, d.span.line, d.span.col) for d in check(text).diagnostics]


def messages(text: str, code: str) -> list[str]:
    return [d.message for d in check(text).diagnostics if d.code == code]


def plan_of(text: str) -> Plan:
    result = check(text)
    assert result.plan is not None, [(d.code, d.message) for d in result.diagnostics]
    return result.plan


def review(body: str, *, head: str = "", done: str = "terminal") -> str:
    """A two-step workflow whose `review` step holds `body` (line 4 on is the body)."""
    return f"""{head}workflow w "W" {{
  step review "Review" {{
    start
{body}
    on on_turn_complete {{ move_to_step(done) }}
  }}
  step done "Done" {{ {done} }}
}}
"""


# ---- durations -------------------------------------------------------------------------------


@pytest.mark.parametrize(("text", "seconds", "label"), [
    ("90s", 90, "after 90s"), ("30m", 1800, "after 30m"), ("48h", 172_800, "after 48h"), ("2d", 172_800, "after 2d"),
    ("0048h", 172_800, "after 48h"), ("365d", MAX_SECONDS, "after 365d"), ("1s", 1, "after 1s"),
])
def test_a_duration_is_an_integer_and_a_unit(text: str, seconds: int, label: str) -> None:
    timer = plan_of(review(f"    after {text} {{ queue_run(target: primary) }}")).workflows[0].steps[0].timers[0]
    assert (timer.kind, timer.seconds, timer.label) == ("after", seconds, label)


@pytest.mark.parametrize(("text", "says"), [
    ("2w", "unknown unit `w`"), ("48", "has no unit"), ("1.5h", "whole number"), ("-5m", "whole number"),
    ("0s", "no time at all"), ("366d", "longer than 365 days"), ("31536001s", "longer than 365 days"),
    ("soon", "not a duration"), ("10min", "unknown unit `min`"),
])
def test_anything_else_is_an_error_at_the_duration(text: str, says: str) -> None:
    source = review(f"    every {text} {{ queue_run(target: primary) }}")
    found = [d for d in check(source).diagnostics if d.is_error]
    assert [(d.code, d.span.line, d.span.col, d.span.end_col) for d in found] == [("IL328", 4, 11, 11 + len(text))]
    assert says in found[0].message


def test_a_timer_without_a_duration_is_a_syntax_error_that_asks_for_one() -> None:
    found = check(review("    after { queue_run }")).diagnostics
    assert [(d.code, d.message) for d in found] == [("IL001", "unexpected `{`: expected a duration (`48h`)")]


@given(st.integers(1, 10**6), st.sampled_from(sorted(UNIT_SECONDS)), st.integers(0, 3))
def test_durations_and_labels_agree(number: int, unit: str, zeros: int) -> None:
    text = "0" * zeros + f"{number}{unit}"
    seconds = number * UNIT_SECONDS[unit]
    if seconds > MAX_SECONDS:
        assert duration_problem(text) is not None
        return
    assert duration_seconds(text) == seconds
    assert normal_duration(text) == f"{number}{unit}"
    for kind in ("after", "every"):
        assert label_seconds(kind, timer_label(kind, text)) == seconds
        assert label_seconds("every" if kind == "after" else "after", timer_label(kind, text)) is None


# ---- placement ------------------------------------------------------------------------------------


def test_two_after_timers_of_one_duration_are_an_error_at_the_second() -> None:
    source = review("    after 48h { queue_run(target: primary) }\n    after 2d { clear_decisions }")
    assert codes(source) == [("IL329", 5, 5)]
    assert codes(review("    every 1h { queue_run }\n    every 60m { clear_decisions }")) == [("IL329", 5, 5)]
    # one of each kind, or two durations: fine
    assert codes(review("    after 1h { queue_run }\n    every 1h { clear_decisions }\n    after 2h { queue_run }")) == []


def test_a_timer_on_a_terminal_step_is_a_warning() -> None:
    source = review("", done="terminal  after 30d { queue_run(target: primary) }")
    assert codes(source) == [("IL514", 7, 32)]
    assert plan_of(source).workflows[0].steps[1].timers[0].label == "after 30d"


def test_a_timers_actions_are_those_allowed_on_generic_triggers() -> None:
    found = check(review("    after 1h { ensure_seats(role: reviewer)  run_script(command: \"make\") }")).diagnostics
    assert [(d.code, d.span.col) for d in found] == [("IL301", 16), ("IL301", 46)]
    assert found[0].message == ("`ensure_seats` may not be used in a timer: a timer's actions are those allowed on a "
                                "generic trigger")
    assert "`ensure_seats` may be declared on `on_enter`" in found[0].notes[0]
    # a kind of the user's: allowed when it may be declared on a generic trigger, or has no `on` clause
    head = ("task page (who: str) on on_enter, on_heartbeat\ntask log_it\ntask only_entry on on_enter\n"
            "entry { dispatch page, log_it, only_entry }\n")
    source = review('    every 1h { page(who: "ops")  log_it  only_entry }', head=head)
    assert codes(source) == [("IL301", 8, 42)]


def test_transitions_are_allowed_and_make_the_step_finishable() -> None:
    stuck = """workflow w "W" {
  step review "Review" { start }
  step done "Done" { terminal }
}
"""
    assert {c for c, _, _ in codes(stuck)} == {"IL504", "IL509"}
    moving = stuck.replace('{ start }', '{ start  after 48h { move_to_step(done) } }')
    assert codes(moving) == []
    step = plan_of(moving).workflows[0].steps[0]
    assert step.timers[0].actions[0].target_step == "done"


def test_transition_rules_hold_inside_a_timer() -> None:
    source = review("    after 1h { move_to_step(done)  move_to_previous  move_to_step(review) }")
    assert [c for c, _, _ in codes(source)] == ["IL501", "IL502", "IL501", "IL503"]
    guarded = review("    after 1h { clear_decisions when task.archived  queue_run requires_approval }")
    assert [c for c, _, _ in codes(guarded)] == ["IL308", "IL308"]
    carried = review("    every 1h { move_to_step(done) continue_on_failure  queue_run continue_on_failure }")
    assert [c for c, _, _ in codes(carried)] == ["IL326"]


def test_a_timers_guard_reads_task_and_host_but_no_payload() -> None:
    source = review('    after 1h { move_to_step(done) when payload.status == "approved" }')
    found = [d for d in check(source).diagnostics if d.is_error]
    assert [(d.code, d.message) for d in found] == [("IL106", "a timer's payload has no field `status`")]
    assert found[0].help == "a timer carries no payload: its guards read `task.` and `host.`"
    ok = review("    after 1h { move_to_step(done) when not task.archived and quorum(reviewer, all_approve) }")
    action = plan_of(ok).workflows[0].steps[0].timers[0].actions[0]
    assert action.when is not None and action.when.op == "and"


def test_a_timers_arguments_are_checked_like_a_handlers() -> None:
    source = review("    after 1h { queue_run(target: nobody, payload: {a: 1, a: 2})  launch }")
    assert [c for c, _, _ in codes(source)] == ["IL202", "IL210", "IL101"]


def test_an_omitted_reason_is_the_timers_label() -> None:
    step = plan_of(review("    after 048h { queue_run(target: workspace.ceo_agent) }")).workflows[0].steps[0]
    assert step.timers[0].actions[0].args["reason"] == "after 48h"


def test_timers_keep_their_order_and_round_trip_through_the_plan() -> None:
    plan = plan_of(review("    every 30m { queue_run }\n    after 48h { queue_run  move_to_step(done) }"))
    timers = plan.workflows[0].steps[0].timers
    assert [(t.label, [a.position for a in t.actions]) for t in timers] == [("every 30m", [0]), ("after 48h", [0, 1])]
    assert load_plan(dump_plan(plan)) == plan


def test_the_keywords_stay_free_as_names() -> None:
    source = """trigger after (every: str)
task every (after: str, backoff: str = "") on after, on_comment retry 2 backoff 1s
role retry
workflow after "A" {
  step every "E" { start  on after { every(after: "x") }  after 1m { move_to_step(after) } }
  step after "A" { terminal }
}
"""
    assert codes(source) == []


# ---- retry policies ---------------------------------------------------------------------------------


HEAD = "{cls} notify (channel: str) on on_comment\n  retry {policy}\n"


def test_a_retry_policy_lands_on_its_kind() -> None:
    kinds = {k.name: k for k in plan_of(review("", head=HEAD.format(cls="task", policy="3 backoff 30s..10m"))).kinds}
    retry = kinds["notify"].retry
    assert retry is not None and (retry.attempts, retry.backoff, retry.max_backoff) == (3, 30, 600)
    one = {k.name: k for k in plan_of(review("", head=HEAD.format(cls="task", policy="1 backoff 1m"))).kinds}
    assert one["notify"].retry is not None and one["notify"].retry.max_backoff is None
    assert kinds["queue_run"].retry is None


@pytest.mark.parametrize(("cls", "policy", "code", "col"), [
    ("session", "3 backoff 30s", "IL330", 3), ("transition", "3 backoff 30s", "IL330", 3),
    ("task", "0 backoff 30s", "IL331", 9), ("task", "101 backoff 30s", "IL331", 9),
    ("task", "3 backoff 10m..30s", "IL331", 24), ("task", "3 backoff 30..1m", "IL328", 19),
    ("task", "3 backoff 30s..2y", "IL328", 24),
])
def test_a_retry_policy_that_cannot_hold_is_an_error(cls: str, policy: str, code: str, col: int) -> None:
    source = HEAD.format(cls=cls, policy=policy) + 'workflow w "W" { step a "A" { start  terminal } }\n'
    assert [(c, line, cl) for c, line, cl in codes(source) if c.startswith("IL3")] == [(code, 2, col)]


def test_retry_attempts_of_one_and_a_hundred_are_allowed() -> None:
    for n in (1, 100):
        assert codes(review("", head=HEAD.format(cls="task", policy=f"{n} backoff 5s"))) == []
