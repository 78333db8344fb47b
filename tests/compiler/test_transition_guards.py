"""Guards on transitions in the compiler (docs/language.md §6, ADR 0038): the expression language of dispatch
sequences over `payload.`, `task.` and `host.`, with `quorum(…)`; type errors at their exact spans; the shadowing
warning over transitions; the plan's `guard` (one quorum) or `when` (anything else); the text `graph`, `diff` and
the kandev export show."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given
from support.wf_strategies import valid_programs

from interlock.compiler import check_program, compile_source
from interlock.compiler.guard_text import expr_text, guard_text
from interlock.dsl import SourceFile, ir
from interlock.dsl.printer import format_expr
from interlock.runtime.plan import Plan, QuorumX


def compiled(text: str) -> Any:
    return compile_source(SourceFile("t.wf", text))


def handler(body: str, trigger: str = "on_approval_resolved", extra: str = "") -> str:
    return (f'{extra}workflow w {{\n  step a {{ start manual_move\n    on {trigger} {{\n{body}\n    }}\n  }}\n'
            '  step b { manual_move }\n  step c { manual_move terminal }\n}\n')


def found(text: str) -> list[tuple[str, int, int, int]]:
    return [(d.code, d.span.line, d.span.col, d.span.end_col) for d in compiled(text).diagnostics]


@pytest.mark.parametrize("guard", [
    'payload.status == "approved"',
    'payload.status != "approved" and not task.is_from_office',
    "quorum(reviewer, all_approve) and not task.archived",
    "quorum(reviewer, n_approve(2)) or (host.engine_ready and task.archived)",
    'not (payload.note ?? "" == "")',
    "true",
])
def test_guards_that_check(guard: str) -> None:
    result = compiled(handler(f"      move_to_step(b) when {guard}"))
    assert result.diagnostics == () and result.plan is not None


@pytest.mark.parametrize(("guard", "code", "col", "end", "message"), [
    ('payload.statuss == "approved"', "IL106", 28, 43, "the payload of `on_approval_resolved` has no field `statuss`"),
    ("payload.status == true", "IL205", 28, 50, "cannot compare `str` with `bool` using `==`"),
    ("payload.status", "IL205", 28, 42, "a transition's guard must be a bool, found `str`"),
    ("event.session_id == \"\"", "IL112", 28, 44, "unknown name `event`"),
    ('task.other_working_session == ""', "IL106", 28, 54, "`task.other_working_session` cannot be read by a "
     "transition's guard"),
    ("quorum(nobody, all_approve)", "IL104", 35, 41, "role `nobody` is not declared"),
    ("task.archived and quorum(reviewer, some)", "IL105", 63, 67, "unknown threshold `some`"),
    ("not quorum(reviewer, n_approve(0))", "IL208", 59, 60, "`n_approve(0)` can never be met"),
    ('host.ready == ""', "IL106", 28, 38, "record `host` has no field `ready`"),
    ("task.archived or 1", "IL205", 45, 46, "`or` needs bools, found `int`"),
])
def test_type_errors_point_at_the_expression(guard: str, code: str, col: int, end: int, message: str) -> None:
    result = compiled(handler(f"      move_to_step(b) when {guard}"))
    assert [(d.code, d.span.line, d.span.col, d.span.end_col) for d in result.diagnostics] == [(code, 4, col, end)]
    assert message in result.diagnostics[0].message
    assert result.plan is None


def test_a_trigger_without_a_payload_says_so() -> None:
    (d,) = compiled(handler('      move_to_step(b) when payload.x == ""', "on_turn_complete")).diagnostics
    assert (d.code, d.help) == ("IL106", "`on_turn_complete` carries no payload")


def test_quorum_is_refused_in_a_dispatch_sequence() -> None:
    text = ("dispatch x on on_budget_alert {\n  event agent_failure\n"
            "  skip a silent when quorum(reviewer, all_approve)\n  payload { budget_pct = 1 scope = \"\" }\n}\n")
    assert [(d.code, d.span.line, d.span.col) for d in compiled(text).diagnostics] == [("IL205", 3, 22)]


def test_a_guard_on_a_non_transition_is_one_error() -> None:
    assert [d.code for d in compiled(handler("      queue_run when payload.statuss")).diagnostics] == ["IL308"]


# ---- shadowing -----------------------------------------------------------------------------------


def test_an_always_true_guard_hides_the_transitions_after_it() -> None:
    text = handler("      move_to_step(b) when not false\n      move_to_step(c) when payload.status == \"x\"")
    assert found(text) == [("IL505", 5, 7, 19)]
    (d,) = compiled(text).diagnostics
    assert "always holds" in d.message and d.labels[0].span.line == 4


def test_a_repeated_guard_never_decides() -> None:
    text = handler('      move_to_step(b) when payload.status == "x"\n      move_to_step(c) when payload.status == "x"')
    assert found(text) == [("IL505", 5, 28, 49)]


def test_two_quorums_that_differ_do_not_shadow() -> None:
    text = handler("      move_to_step(b) when quorum(reviewer, all_approve)\n"
                   "      move_to_step(c) when quorum(reviewer, any_reject)", "on_turn_complete")
    assert found(text) == []
    same = text.replace("any_reject", "all_approve")
    assert [f[0] for f in found(same)] == ["IL505"]


def test_a_requires_approval_transition_hides_nothing() -> None:
    text = handler("      move_to_step(b) when true requires_approval\n      move_to_step(c) when true")
    assert found(text) == []


def test_an_unguarded_transition_is_still_il501() -> None:
    text = handler("      move_to_step(b)\n      move_to_step(c) when true")
    assert [f[0] for f in found(text)] == ["IL501"]


# ---- the plan --------------------------------------------------------------------------------------


def _actions(plan: Plan, trigger: str) -> Any:
    return plan.workflows[0].steps[0].handlers[trigger]


def test_one_quorum_is_the_plans_guard_anything_else_its_when() -> None:
    plan = compiled(handler("      move_to_step(b) when quorum(reviewer, n_approve(2))\n"
                            "      move_to_step(c) when quorum(reviewer, n_approve(2)) and task.archived",
                            "on_turn_complete")).plan
    first, second = _actions(plan, "on_turn_complete")
    assert first.guard is not None and (first.guard.role, first.guard.count, first.when) == ("reviewer", 2, None)
    assert second.guard is None and second.when is not None
    assert second.when.model_dump(mode="json") == {
        "op": "and", "left": {"op": "quorum", "role": "reviewer", "threshold": "n_approve", "count": 2},
        "right": {"op": "path", "path": ["task", "archived"], "type": "bool"}}


def test_a_payload_path_carries_its_parameter_type() -> None:
    plan = compiled(handler("      move_to_step(b) when payload.budget_pct == 90", "on_budget_alert")).plan
    (action,) = _actions(plan, "on_budget_alert")
    assert action.when.left.model_dump(mode="json") == {"op": "path", "path": ["payload", "budget_pct"],
                                                        "type": "int"}


@pytest.mark.parametrize("guard", [
    'payload.status == "a\\"b" or not (task.archived and host.engine_ready)',
    "not quorum(reviewer, any_reject) and quorum(approver, n_approve(3))",
    'payload.note ?? payload.status != "" and (task.is_from_office or task.archived)',
])
def test_guard_text_is_the_source_form(guard: str) -> None:
    plan = compiled(handler(f"      move_to_step(b) when {guard}")).plan
    (action,) = _actions(plan, "on_approval_resolved")
    assert guard_text(action) == f"when {guard}"


def test_a_quorum_only_guard_reads_as_its_quorum() -> None:
    plan = compiled(handler("      move_to_step(b) when quorum(reviewer, n_approve(2))", "on_turn_complete")).plan
    (action,) = _actions(plan, "on_turn_complete")
    assert guard_text(action) == "when quorum(reviewer, n_approve(2))"
    assert expr_text(QuorumX(role="r", threshold="all_approve")) == "quorum(r, all_approve)"


def _ir_guards(text: str) -> list[ir.Expr]:
    checked = check_program(SourceFile("t.wf", text))
    assert checked.context is not None
    return [a.guard for _, _, h in checked.context.handlers() for a in h.actions if a.guard is not None]


@given(valid_programs())
def test_the_plan_text_of_every_guard_is_the_printers(text: str) -> None:
    """What graph, diff and the kandev export show of a guard is what `fmt` would print of the source."""
    plan = compiled(text).plan
    assert plan is not None
    shown = [guard_text(a) for wf in plan.workflows for s in wf.steps for acts in s.handlers.values()
             for a in acts if a.guard is not None or a.when is not None]
    # the plan keeps handlers in source order and steps by position: compare as multisets
    assert sorted(shown) == sorted(f"when {format_expr(g)}" for g in _ir_guards(text))
