"""Common slips get a message that names the mistake and a `help:` with the fix: misplaced guards
(IL013), an entry block inside a workflow (IL014), a missing comma (IL015), and a prelude transition
on the file's own trigger (IL301)."""

from __future__ import annotations

import pytest

from interlock.compiler import CompileResult, compile_source
from interlock.dsl import SourceFile


def _compile(text: str) -> CompileResult:
    return compile_source(SourceFile("t.wf", text))


def _handler(body: str, trigger: str = "on_turn_complete") -> str:
    return ('workflow w {\n  step a { start manual_move\n    on ' + trigger + ' { ' + body + ' }\n  }\n'
            '  step b { manual_move terminal }\n}\n')


@pytest.mark.parametrize(("body", "message", "help"), [
    ("when quorum(reviewer, all_approve) move_to_step(b)",
     "`when quorum(…)` is written before the transition it guards; it follows the transition",
     "write `move_to_step(b) when quorum(reviewer, all_approve)`"),
    ("when quorum(reviewer, n_approve(2))",
     "`when quorum(…)` is written before the transition it guards; it follows the transition",
     "write `move_to_step(STEP) when quorum(reviewer, n_approve(2))`"),
    ("move_to_step(b) requires_approval when quorum(reviewer, all_approve)",
     "`requires_approval` is written before `when quorum(…)`; the guard comes first",
     "write `move_to_step(b) when quorum(reviewer, all_approve) requires_approval`"),
    ("move_to_step(b) when quorum(reviewer, all_approve) requires_approval and quorum(approver, any_reject)",
     "`and quorum(approver, any_reject)` is written after `requires_approval`; the whole guard comes first",
     "write `move_to_step(b) when quorum(reviewer, all_approve) and quorum(approver, any_reject) "
     "requires_approval`"),
    ("move_to_step(b) when quorum(reviewer, all_approve) requires_approval or quorum(approver, all_approve)",
     "`or quorum(approver, all_approve)` is written after `requires_approval`; the whole guard comes first",
     "write `move_to_step(b) when quorum(reviewer, all_approve) or quorum(approver, all_approve) "
     "requires_approval`"),
    ("move_to_step(b) when quorum(reviewer, all_approve) when quorum(approver, all_approve)",
     "`move_to_step` already has a guard: a transition takes one `when …`",
     "join the conditions into one guard: `when quorum(reviewer, all_approve) and quorum(approver, all_approve)` "
     "(both must hold) or `or` (either)"),
])
def test_misplaced_guards(body: str, message: str, help: str) -> None:
    result = _compile(_handler(body))
    assert [(d.code, d.span.line) for d in result.diagnostics] == [("IL013", 3)]
    (d,) = result.diagnostics
    assert (d.message, d.help) == (message, help)


@pytest.mark.parametrize("guard", [
    "quorum(reviewer, all_approve) and quorum(approver, any_reject)",
    "quorum(reviewer, all_approve) or quorum(approver, all_approve)",
    "not quorum(reviewer, any_reject) and quorum(reviewer, n_approve(2))",
])
def test_quorums_joined_in_one_guard_are_a_guard(guard: str) -> None:
    # docs/language.md §6: quorums combine with `and`, `or`, `not` (they were IL013 before guards were expressions)
    assert _compile(_handler(f"move_to_step(b) when {guard}")).diagnostics == ()


def test_a_kind_of_the_users_named_when_is_an_action() -> None:
    text = "task when on on_turn_complete\n" + _handler("when quorum(reviewer, all_approve)")
    assert [d.code for d in _compile(text).diagnostics] == ["IL101"]  # `quorum` is still unknown


def test_an_unknown_action_is_still_unknown() -> None:
    assert [d.code for d in _compile(_handler("when")).diagnostics] == ["IL101"]


@pytest.mark.parametrize(("text", "where"), [
    ("workflow w {\n  entry { exclude x }\n  step s { start terminal }\n}", "a workflow"),
    ("workflow w {\n  step s { start terminal entry { exclude x } }\n}", "a step"),
])
def test_an_entry_block_inside_a_workflow(text: str, where: str) -> None:
    (d,) = _compile(text).diagnostics
    assert (d.code, d.span.line, d.span.col) == ("IL014", 2, text.splitlines()[1].index("entry") + 1)
    assert d.message == f"an `entry {{ … }}` block inside {where}: entry blocks are top-level declarations"
    assert d.help is not None and "move the block out" in d.help


@pytest.mark.parametrize(("line", "between", "joined"), [
    ('on on_comment { queue_run(target: primary reason: "x") }', "`primary` and `reason`", "`primary, reason`"),
    ('on on_comment { queue_run(reason: "x" target: primary) }', '`"x"` and `target`', '`"x", target`'),
    ("on on_comment { queue_run(payload: {a: 1 b: 2}) }", "`1` and `b`", "`1, b`"),
    ("on on_comment { queue_run(payload: {a: [1 2]}) }", "`1` and `2`", "`1, 2`"),
    ("on on_turn_complete { move_to_step(s) when quorum(reviewer all_approve) }", "`reviewer` and `all_approve`",
     "`reviewer, all_approve`"),
])
def test_a_missing_comma_names_both_items(line: str, between: str, joined: str) -> None:
    (d,) = _compile("workflow w {\n  step s { start terminal\n    " + line + "\n  }\n}").diagnostics
    assert (d.code, d.span.line) == ("IL015", 3)
    assert d.message == f"missing `,` between {between}"
    assert d.help == f"separate the items with a comma: {joined}"


def test_a_missing_comma_in_a_parameter_list() -> None:
    (d,) = _compile("task k(a: str b: int) on on_comment").diagnostics
    assert (d.code, d.message) == ("IL015", "missing `,` between `str` and `b`")


def test_other_syntax_errors_stay_syntax_errors() -> None:
    assert [d.code for d in _compile("role a b").diagnostics] == ["IL001"]


@pytest.mark.parametrize(("move", "call"), [("move_to_step(b)", "move_on_deploy(b)"),
                                            ("move_to_next", "move_on_deploy(b)"),
                                            ("move_to_previous", "move_on_deploy(STEP)")])
def test_a_prelude_transition_on_the_files_own_trigger_says_how_to_declare_one(move: str, call: str) -> None:
    text = "trigger on_deploy (environment: str)\n" + _handler(move, "on_deploy")
    (d,) = [d for d in _compile(text).diagnostics if d.is_error]
    assert d.code == "IL301"
    assert d.help == ("the prelude's transitions are not declared on your trigger `on_deploy`; declare one that is: "
                      f"`transition move_on_deploy(step: step) on on_deploy`, and write `{call}`")
    fixed = ("trigger on_deploy (environment: str)\ntransition move_on_deploy(step: step) on on_deploy\n"
             + _handler("move_on_deploy(b)", "on_deploy"))
    result = _compile(fixed)
    assert result.diagnostics == () and result.plan is not None


def test_a_prelude_kind_on_a_prelude_trigger_gets_no_such_help() -> None:
    (d,) = _compile(_handler("ensure_seats(role: reviewer)")).diagnostics
    assert d.code == "IL301" and d.help is None
