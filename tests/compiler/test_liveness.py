"""Liveness warnings (docs/language.md §6, §7): a step no task can finish from (IL508), a workflow whose start step
reaches no terminal step (IL509), an unbounded replay loop (IL510), a step prompt never sent (IL511); the moves are
transitions, pulls and moves by hand into `manual_move` steps (compiler/flow.py)."""

from __future__ import annotations

from pathlib import Path

import pytest

from interlock.compiler import compile_source
from interlock.dsl import SourceFile

ROOT = Path(__file__).resolve().parents[2]


def found(text: str) -> list[tuple[str, int]]:
    return [(d.code, d.span.line) for d in compile_source(SourceFile("t.wf", text)).diagnostics]


def wf(*steps: str) -> str:
    return "workflow w {\n" + "".join(f"  {s}\n" for s in steps) + "}\n"


# ---- IL508 / IL509 --------------------------------------------------------------------------------


def test_a_step_without_a_way_on_is_il508() -> None:
    text = wf("step a { start  on on_turn_complete { move_to_step(done) }  on on_comment { move_to_step(park) } }",
              "step park { }", "step done { terminal }")
    assert found(text) == [("IL508", 3)]


@pytest.mark.parametrize("rescue", [
    "step park { on on_comment { move_to_step(a) } }",        # a transition back
    "step park { }\n  step puller { pull_from park  on on_turn_complete { move_to_step(done) } }",  # a pull
    "step park { }\n  step later { manual_move  on on_turn_complete { move_to_step(done) } }",  # by hand
])
def test_any_way_towards_the_end_counts(rescue: str) -> None:
    text = wf("step a { start  on on_turn_complete { move_to_step(done) }  on on_comment { move_to_step(park) } }",
              rescue, "step done { terminal }")
    assert [c for c, _ in found(text) if c in ("IL508", "IL509")] == []


def test_a_manual_move_terminal_step_finishes_every_step() -> None:
    assert found(wf("step a { start }", "step b { }", "step done { manual_move terminal }")) == [("IL504", 3)]


def test_a_workflow_without_a_terminal_step_is_one_il509() -> None:
    assert found(wf("step a { start manual_move  on on_turn_complete { move_to_step(b) } }",
                    "step b { manual_move }")) == [("IL509", 1)]


def test_a_terminal_step_the_start_cannot_reach_is_il509_and_il508() -> None:
    text = wf("step a { start  on on_turn_complete { move_to_step(b) } }",
              "step b { on on_turn_complete { move_to_step(a) } }", "step c { on on_comment { move_to_step(done) } }",
              "step done { terminal }")
    assert found(text) == [("IL509", 1), ("IL508", 3), ("IL504", 4), ("IL504", 5)]


def test_liveness_is_judged_only_for_a_file_without_errors() -> None:
    assert [c for c, _ in found(wf("step a { start  on on_enter { nope } }"))] == ["IL101"]


def test_il504_follows_paths_through_manual_move_steps() -> None:
    """A step reached only by a transition out of a `manual_move` step is reachable: a person moves the task into
    the manual step, and its transition goes on (it was reported unreachable)."""
    text = wf("step a { start  on on_turn_complete { move_to_step(done) } }",
              "step triage { manual_move  on on_turn_complete { move_to_step(fix) } }",
              "step fix { on on_turn_complete { move_to_step(done) } }", "step done { terminal }")
    assert found(text) == []


# ---- IL510 ----------------------------------------------------------------------------------------------

START = "on on_enter { auto_start_agent }"


def loop(back: str, trigger: str = "on_turn_complete", *, b_starts: bool = True) -> str:
    return wf(f"step a {{ start  {START}  on on_turn_complete {{ move_to_step(b) }} }}",
              f"step b {{ {START if b_starts else ''}  on {trigger} {{ {back} }} }}",
              "step done { manual_move terminal }")


def test_a_cycle_of_auto_starting_steps_is_a_replay_loop() -> None:
    assert found(loop("move_to_step(a)")) == [("IL510", 2)]
    (d,) = compile_source(SourceFile("t.wf", loop("move_to_step(a)"))).diagnostics
    assert "`a` -> `b` -> `a`" in d.message and [lab.span.line for lab in d.labels] == [3]


@pytest.mark.parametrize("back", [
    "move_to_step(a) requires_approval",                                  # a person
    "move_to_step(a) when quorum(reviewer, any_reject)",                  # a quorum
    'move_to_step(a) when quorum(reviewer, any_reject) or task.description == ""',  # a quorum inside
])
def test_a_person_or_a_quorum_breaks_the_loop(back: str) -> None:
    assert "IL510" not in [c for c, _ in found(loop(back))]


def test_a_guard_that_needs_nobody_does_not_break_it() -> None:
    assert [c for c, _ in found(loop('move_to_step(a) when task.description != ""'))] == ["IL510"]


def test_a_move_someone_else_causes_is_no_loop() -> None:
    assert [c for c, _ in found(loop("move_to_step(a)", "on_comment"))] == []


def test_every_step_of_the_cycle_must_start_the_agent() -> None:
    assert [c for c, _ in found(loop("move_to_step(a)", b_starts=False))] == []


def test_a_three_step_cycle_is_one_warning_with_its_moves() -> None:
    text = wf(f"step a {{ start  {START}  on on_turn_complete {{ move_to_next }} }}",
              f"step b {{ {START}  on on_turn_complete {{ move_to_next }} }}",
              f"step c {{ {START}  on on_agent_error {{ move_to_step(a) }} }}", "step done { manual_move terminal }")
    result = compile_source(SourceFile("t.wf", text)).diagnostics
    assert [(d.code, d.span.line, len(d.labels)) for d in result] == [("IL510", 2, 2)]


# ---- IL511 ----------------------------------------------------------------------------------------------


@pytest.mark.parametrize(("handlers", "codes"), [
    ("", ["IL511"]),
    ("on on_comment { auto_start_agent }", ["IL511"]),  # only entry sends the step's prompt
    (START, []),
])
def test_a_prompt_is_sent_only_by_starting_the_agent_on_entry(handlers: str, codes: list[str]) -> None:
    text = wf(f'step a {{ start terminal  prompt "Fix it."  {handlers} }}')
    assert [c for c, _ in found(text)] == codes


# ---- the examples -----------------------------------------------------------------------------------------


def test_the_examples_warn_only_where_they_say_why_they_keep_it() -> None:
    """Over the nine examples only IL509 fires, on the two whose kandev template marks no step terminal; both
    suppress it with the reason, so every example checks clean."""
    fired: dict[str, list[str]] = {}
    for path in sorted((ROOT / "examples").glob("*.wf")):
        text = path.read_text(encoding="utf-8")
        assert compile_source(SourceFile(path.name, text)).diagnostics == ()
        bare = "\n".join(line for line in text.splitlines() if "interlock: ignore[" not in line) + "\n"
        codes = [d.code for d in compile_source(SourceFile(path.name, bare)).diagnostics]
        if codes:
            fired[path.name] = codes
    assert fired == {"improve.wf": ["IL509"], "report_issue.wf": ["IL509"]}
