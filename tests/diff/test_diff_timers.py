"""`interlock diff` on timers and retry policies (docs/diff.md): a changed duration or period, a timer added or
removed, a timer's actions changed and a kind's retry policy added, removed or changed are behaviour changes, each on
a line that says what changed; a changed duration is breaking (tasks already waiting lose the old timer)."""

from __future__ import annotations

from pathlib import Path

from interlock.cli import main
from interlock.compiler import compile_source
from interlock.diffing import Change, diff_plans
from interlock.dsl import SourceFile
from interlock.runtime.plan import Plan

BASE = '''task notify(channel: str) on on_comment retry 3 backoff 30s..10m
workflow w "W" {
  step review "Review" {
    start
    manual_move
    after 48h { queue_run(target: workspace.ceo_agent, reason: "overdue") }
    every 1h { notify(channel: "ops") }
  }
  step done "Done" { manual_move  terminal }
}
'''


def plan(text: str) -> Plan:
    result = compile_source(SourceFile("w.wf", text))
    assert result.plan is not None, [str(d) for d in result.diagnostics]
    return result.plan


def changes(new: str) -> list[Change]:
    return diff_plans(plan(BASE), plan(new))


def edited(before: str, after: str) -> str:
    assert before in BASE, before
    return BASE.replace(before, after, 1)


def test_a_changed_duration_is_one_breaking_line_that_names_both_timers() -> None:
    found = changes(edited("after 48h", "after 72h"))
    assert [(c.code, c.breaking, c.category, c.step, c.old, c.new) for c in found] == [
        ("timer.duration", True, "behaviour", "review", "after 48h", "after 72h")]
    assert found[0].message.startswith("step `review`: timer `after 48h` -> `after 72h`: tasks already on the step "
                                       "lose the old timer")
    assert found[0].source == "w.wf:6:5"


def test_a_changed_period_is_reported_the_same_way() -> None:
    found = changes(edited("every 1h", "every 30m"))
    assert [(c.code, c.old, c.new) for c in found] == [("timer.duration", "every 1h", "every 30m")]


def test_the_same_time_written_otherwise_is_no_change() -> None:
    assert changes(edited("every 1h", "every 01h")) == []


def test_a_timer_added_or_removed() -> None:
    added = changes(edited("    every 1h", '    after 3d { move_to_step(done) }\n    every 1h'))
    assert [(c.code, c.breaking, c.trigger) for c in added] == [("timer.added", False, "after 3d")]
    assert "tasks already on it are not armed" in added[0].message
    assert added[0].new["actions"][0]["kind"] == "move_to_step"
    removed = changes(edited('    every 1h { notify(channel: "ops") }\n', ""))
    assert [(c.code, c.breaking, c.subject) for c in removed] == [("timer.removed", False, "every 1h")]
    assert removed[0].message == ("step `review`: timer `every 1h` removed: its pending rows are cancelled at the "
                                  "next tick")
    # `after` turned into `every`: another timer, not the same one with another duration
    swapped = changes(edited("after 48h", "every 48h"))
    assert sorted(c.code for c in swapped) == ["timer.added", "timer.removed"]


def test_a_timers_actions_are_compared_like_a_handlers() -> None:
    found = changes(edited('reason: "overdue"', 'reason: "late"'))
    assert [(c.code, c.trigger) for c in found] == [("action.changed", "after 48h")]
    assert found[0].message.startswith("step `review`, `after 48h`: action #1 `queue_run`:")
    both = changes(edited('after 48h { queue_run(target: workspace.ceo_agent, reason: "overdue") }',
                          'after 2d { queue_run(target: workspace.ceo_agent, reason: "late") }'))
    assert [c.code for c in both] == ["timer.duration", "action.changed"]


def test_a_retry_policy_added_removed_or_changed() -> None:
    changed = changes(edited("retry 3 backoff 30s..10m", "retry 5 backoff 1m"))
    assert [(c.code, c.breaking, c.category, c.subject) for c in changed] == [
        ("kind.retry", False, "behaviour", "notify")]
    assert changed[0].message == "action kind `notify`: retry policy `retry 3 backoff 30s..10m` -> `retry 5 backoff 1m`"
    assert (changed[0].old, changed[0].new) == ({"attempts": 3, "backoff": 30, "max_backoff": 600},
                                                {"attempts": 5, "backoff": 60, "max_backoff": None})
    dropped = changes(edited(" retry 3 backoff 30s..10m", ""))
    assert [c.message for c in dropped] == [
        "action kind `notify`: no longer retried (was `retry 3 backoff 30s..10m`): a failure becomes an incident at "
        "once"]
    back = diff_plans(plan(edited(" retry 3 backoff 30s..10m", "")), plan(BASE))
    assert [c.message for c in back] == ["action kind `notify`: now retried: `retry 3 backoff 30s..10m`"]
    assert changes(edited("30s..10m", "30s..600s")) == []  # the same policy written otherwise


def test_the_text_output_lists_them(tmp_path: Path, capsys: object) -> None:
    old, new = tmp_path / "old.wf", tmp_path / "new.wf"
    old.write_text(BASE, encoding="utf-8")
    new.write_text(edited("after 48h", "after 72h").replace("retry 3", "retry 4"), encoding="utf-8")
    assert main(["diff", str(old), str(new), "--fail-on-breaking"]) == 1
    out = capsys.readouterr().out  # type: ignore[attr-defined]
    assert "BREAKING" in out and "timer `after 48h` -> `after 72h`" in out and "timer.duration" in out
    assert "retry policy `retry 3 backoff 30s..10m` -> `retry 4 backoff 30s..10m`" in out
