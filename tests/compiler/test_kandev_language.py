"""The language's forms for kandev today (ADR 0042, ADR 0043), through every tool: `continue_on_failure` (checked,
in the plan, printed, drawn, diffed), `run_script`'s arguments, `session_target` / `agent_tag`, a transition's
`options`, and folded block strings."""

from __future__ import annotations

import pytest

from interlock.compiler import compile_source
from interlock.diagrams import render_dot, render_mermaid
from interlock.diffing import diff_plans
from interlock.dsl import SourceFile, parse_bytes
from interlock.dsl.format import format_source
from interlock.dsl.printer import format_module
from interlock.runtime.plan import Plan

FLOW = """\
workflow ci "CI" {
  step build "Build" {
    start
    manual_move
    session_target initial
    on on_turn_complete {
      run_script(command: "make lint", timeout_seconds: 120) continue_on_failure
      move_to_step(review, options: {instructions: "Look at the tests first", skip_step_prompt: true})
    }
  }
  step review "Review" {
    manual_move
    agent_tag "reviewers"
    session_target step(build)
    on on_enter { run_script(command: "make docs") continue_on_failure  queue_run(reason: "review") }
  }
}
"""


def plan_of(text: str) -> Plan:
    result = compile_source(SourceFile("t.wf", text))
    assert result.plan is not None, [(d.code, d.message) for d in result.diagnostics]
    return result.plan


def codes(text: str) -> list[tuple[str, int]]:
    return [(d.code, d.span.line) for d in compile_source(SourceFile("t.wf", text)).diagnostics]


def test_the_plan_carries_the_flag_the_options_and_the_host_settings() -> None:
    build, review = plan_of(FLOW).workflows[0].steps
    script, move = build.handlers["on_turn_complete"]
    assert (script.continue_on_failure, move.continue_on_failure) == (True, False)
    assert script.args == {"command": "make lint", "timeout_seconds": 120}
    assert move.args["options"] == {"instructions": "Look at the tests first", "skip_step_prompt": True}
    assert build.session_target is not None and build.session_target.kind == "initial"
    assert review.session_target is not None and review.session_target.step_id == "build"
    assert review.agent_tag == "reviewers"
    assert [a.kind for a in review.entry_dispatch] == ["run_script", "queue_run"]  # run_script is dispatched


@pytest.mark.parametrize(("action", "trigger", "code"), [
    ("move_to_next continue_on_failure", "on_turn_complete", "IL326"),
    ("auto_start_agent continue_on_failure", "on_enter", "IL326"),
    ('run_script(command: "") ', "on_enter", "IL327"),
    ('run_script(command: "x", timeout_seconds: 86401)', "on_exit", "IL327"),
    ('run_script(command: "x", timeout_seconds: 0)', "on_turn_complete", "IL327"),
    ('run_script(command: "x")', "on_comment", "IL301"),
])
def test_misplaced_flags_and_out_of_range_scripts_are_errors(action: str, trigger: str, code: str) -> None:
    text = f'workflow w {{\n  step a {{ start\n    on {trigger} {{ {action} }}\n  }}\n  step b {{ }}\n}}\n'
    assert (code, 3) in codes(text)


def test_the_flag_on_a_dispatched_entry_kind_or_a_host_kind_is_fine() -> None:
    text = ('task notify (to: str) on on_comment\nworkflow w {\n  step a { start\n'
            '    on on_enter { queue_run continue_on_failure }\n'
            '    on on_comment { notify(to: "x") continue_on_failure  auto_start_agent continue_on_failure }\n  }\n}\n')
    assert [c for c, _ in codes(text) if c.startswith("IL3")] == []


@pytest.mark.parametrize(("settings", "code"), [
    ("session_target step(nowhere)", "IL103"),
    ("session_target step(b)", "IL323"),  # b is tag-configured
    ("session_target somewhere", "IL323"),
    ('agent_tag "t"  agent_profile "p"', "IL323"),
    ('agent_tag " "', "IL323"),
])
def test_session_targets_and_tags_are_checked(settings: str, code: str) -> None:
    text = f'workflow w {{\n  step a {{ start\n    {settings}\n  }}\n  step b {{ agent_tag "x" }}\n}}\n'
    assert code in [c for c, _ in codes(text)]


def test_printer_and_formatter_keep_everything() -> None:
    module, _ = parse_bytes("t.wf", FLOW.encode())
    assert module is not None
    printed = format_module(module)
    again = plan_of(printed)
    original = plan_of(FLOW)
    assert diff_plans(original, again) == []
    assert "continue_on_failure" in printed and "session_target step(build)" in printed
    formatted = format_source(FLOW, "t.wf")
    assert formatted.ok and diff_plans(original, plan_of(formatted.text)) == []


def test_graph_lists_the_actions_that_continue_on_failure() -> None:
    plan = plan_of(FLOW)
    mermaid, dot = render_mermaid(plan), render_dot(plan)
    assert "  build : run_script continues on failure (on_turn_complete)\n" in mermaid  # a line under the title
    assert ">run_script continues on failure (on_enter)</font>" in dot
    # the legends explain such a line
    assert "a step's line#58; an action that continues on failure (continue_on_failure)" in mermaid
    assert "an action that continues on failure</td>" in dot
    plain = plan_of(FLOW.replace(" continue_on_failure", ""))
    assert "continues on failure" not in render_mermaid(plain) + render_dot(plain)  # no legend line without one


def test_diff_reports_a_changed_failure_policy_as_a_behaviour_change() -> None:
    old, new = plan_of(FLOW), plan_of(FLOW.replace('"make lint", timeout_seconds: 120) continue_on_failure',
                                                 '"make lint", timeout_seconds: 120)'))
    (change,) = diff_plans(old, new)
    assert (change.code, change.breaking, change.step, change.subject) == \
        ("action.failure_policy", False, "build", "run_script")
    assert "no longer continues on failure" in change.message
    (back,) = diff_plans(new, old)
    assert "now continues on failure" in back.message


def test_diff_compares_session_targets_and_tags() -> None:
    old = plan_of(FLOW)
    new = plan_of(FLOW.replace("session_target step(build)", "session_target initial")
                  .replace('agent_tag "reviewers"', 'agent_tag "seniors"'))
    found = {(c.code, c.subject, str(c.new)) for c in diff_plans(old, new)}
    assert ("step.attribute", "session_target", "{'kind': 'initial', 'step_id': None}") in found
    assert ("step.attribute", "agent_tag", "seniors") in found


def test_folded_block_strings_read_as_one_line() -> None:
    text = 'workflow w {\n  description >"""\n    one two\n    three\n\n    four\n    """\n  step a { start }\n}\n'
    assert plan_of(text).workflows[0].description == "one two three\nfour"
    bad = 'workflow w {\n  description >"""\n  x\n    """\n  step a { start }\n}\n'
    assert ("IL016", 3) in codes(bad)
