"""Two `.wf` versions in, the change records `interlock diff` reports out: what is compared, by id, and which
changes are named breaking (docs/diff.md)."""

from __future__ import annotations

from pathlib import Path

import pytest

from interlock.compiler import compile_source
from interlock.diffing import Change, diff_plans, guard_strictness
from interlock.dsl import SourceFile
from interlock.runtime.plan import Plan, PlanGuard, SourceRef

ROOT = Path(__file__).resolve().parents[2]
OFFICE = (ROOT / "examples" / "office_default.wf").read_text(encoding="utf-8")


def plan(text: str, name: str = "office_default.wf") -> Plan:
    result = compile_source(SourceFile(name, text))
    assert result.plan is not None, "\n".join(str(d) for d in result.diagnostics)
    return result.plan


def changes(old: str, new: str) -> list[Change]:
    return diff_plans(plan(old), plan(new))


def codes(found: list[Change]) -> list[tuple[str, bool]]:
    return [(c.code, c.breaking) for c in found]


def edited(*pairs: tuple[str, str]) -> str:
    text = OFFICE
    for before, after in pairs:
        assert before in text, before
        text = text.replace(before, after, 1)
    return text


def test_identical_sources_have_no_changes() -> None:
    assert changes(OFFICE, OFFICE) == []


def test_formatting_comments_and_file_name_are_not_changes() -> None:
    reflowed = "# a comment\n" + OFFICE.replace("    position 0\n", "    position 0   # first\n")
    assert diff_plans(plan(OFFICE), plan(reflowed, "elsewhere.wf")) == []


def test_step_removed_is_breaking_and_located() -> None:
    text = edited((('  step backlog "Backlog" {\n    position 0\n    manual_move\n    stage custom\n'
           '    color "bg-neutral-400"\n    show_in_command_panel\n  }\n'), ""))
    found = changes(OFFICE, text)
    assert codes(found) == [("step.removed", True)]
    assert (found[0].workflow, found[0].step) == ("office_default", "backlog")
    assert found[0].source is not None and found[0].source.startswith("office_default.wf:")


def test_step_renamed_is_detected_by_title_and_is_breaking() -> None:
    text = edited(('step review "Review"', 'step reviewing "Review"'),
                  ("move_to_step(review)", "move_to_step(reviewing)"))
    found = changes(OFFICE, text)
    renamed = [c for c in found if c.code == "step.renamed"]
    assert len(renamed) == 1 and renamed[0].breaking
    assert (renamed[0].step, renamed[0].old, renamed[0].new) == ("review", "review", "reviewing")
    assert not any(c.code in ("step.added", "step.removed") for c in found)
    # the transition that now points at the new id is a changed action, not a removal
    assert [(c.code, c.step, c.trigger) for c in found if c.code.startswith("action.")] == [
        ("action.changed", "work", "on_turn_complete")]


def test_title_change_keeps_the_id_and_is_not_breaking() -> None:
    found = changes(OFFICE, edited(('step done "Done"', 'step done "Finished"')))
    assert codes(found) == [("step.title", False)]
    assert (found[0].old, found[0].new) == ("Done", "Finished")


def test_steps_are_compared_by_id_not_list_position() -> None:
    # positions renumbered without changing the order: one metadata change (the plans differ), no move
    text = edited(("position 4", "position 14"), ("position 3", "position 13"), ("position 2", "position 12"),
                  ("position 1", "position 11"), ("position 0", "position 10"))
    found = changes(OFFICE, text)
    assert [(c.code, c.category, c.breaking) for c in found] == [("workflow.positions", "metadata", False)]
    assert found[0].old == {"backlog": 0, "work": 1, "review": 2, "approval": 3, "done": 4}
    assert found[0].new == {"backlog": 10, "work": 11, "review": 12, "approval": 13, "done": 14}
    # Backlog after Done: exactly one step moved
    moved = changes(OFFICE, edited(("position 0", "position 9")))
    assert [(c.code, c.step, c.old, c.new) for c in moved] == [("step.moved", "backlog", 0, 9)]


def test_attributes_are_compared_one_by_one() -> None:
    text = edited(("    position 0\n    manual_move\n", "    position 0\n    wip_limit 3\n"),
                  ("stage review", "stage approval"))
    found = [(c.code, c.step, c.subject, c.old, c.new) for c in changes(OFFICE, text)]
    assert ("step.attribute", "backlog", "manual_move", True, False) in found
    assert ("step.attribute", "backlog", "wip_limit", 0, 3) in found
    assert ("step.attribute", "review", "stage", "review", "approval") in found


@pytest.mark.parametrize(("before", "after", "code", "breaking"), [
    ("quorum(reviewer, all_approve)", "quorum(reviewer, majority_approve)", "guard.loosened", False),
    ("quorum(reviewer, all_approve)", "quorum(reviewer, n_approve(1))", "guard.loosened", False),
    ("quorum(reviewer, all_approve)", "quorum(reviewer, n_approve(2))", "guard.tightened", True),
    ("quorum(reviewer, all_approve)", "quorum(approver, all_approve)", "guard.changed", True),
    ("quorum(reviewer, all_approve)", "quorum(reviewer, all_decide)", "guard.changed", True),
    ("move_to_step(approval) when quorum(reviewer, all_approve)", "move_to_step(approval)", "guard.removed", False),
    ("move_to_step(review) }", "move_to_step(review) when quorum(reviewer, all_approve) }", "guard.added", True),
    ("quorum(reviewer, all_approve)", "quorum(reviewer, all_approve) requires_approval",
     "guard.requires_approval", True),
])
def test_guard_changes(before: str, after: str, code: str, breaking: bool) -> None:
    found = changes(OFFICE, edited((before, after)))
    assert codes(found) == [(code, breaking)]
    assert found[0].trigger == "on_turn_complete"


def _guard(threshold: str, count: int | None = None, role: str = "r") -> PlanGuard:
    return PlanGuard(role=role, threshold=threshold, count=count, source=SourceRef(file="f", line=1, col=1))  # type: ignore[arg-type]


@pytest.mark.parametrize(("old", "new", "verdict"), [
    (_guard("majority_approve"), _guard("all_approve"), "tightened"),
    (_guard("all_approve"), _guard("majority_approve"), "loosened"),
    (_guard("n_approve", 2), _guard("n_approve", 3), "tightened"),
    (_guard("n_approve", 3), _guard("n_approve", 2), "loosened"),
    (_guard("n_approve", 2), _guard("majority_approve"), "tightened"),  # with many seats a majority is more
    (_guard("majority_approve"), _guard("n_approve", 1), "loosened"),
    (_guard("n_approve", 2), _guard("n_approve", 2), "same"),
    (_guard("any_reject"), _guard("all_approve"), "changed"),
    (_guard("all_approve"), _guard("all_approve", role="other"), "changed"),
])
def test_guard_strictness(old: PlanGuard, new: PlanGuard, verdict: str) -> None:
    assert guard_strictness(old, new) == verdict


def test_actions_are_aligned_not_compared_by_index() -> None:
    # an action inserted at the front: one addition, the three others unchanged
    text = edited(("      clear_decisions\n      ensure_seats(role: reviewer)",
                   "      queue_run(reason: \"first\")\n      clear_decisions\n      ensure_seats(role: reviewer)"))
    found = changes(OFFICE, text)
    assert [(c.code, c.step, c.subject) for c in found if c.code.startswith("action.")] == [
        ("action.added", "review", "queue_run")]
    # an argument changed in place: one changed action
    text = edited(('reason: "task_assigned",\n        payload: {stage_type: "review"}',
                   'reason: "review_begun",\n        payload: {stage_type: "review"}'))
    found = [c for c in changes(OFFICE, text) if c.code.startswith("action.")]
    assert [(c.code, c.subject, c.old["index"], c.new["index"]) for c in found] == [
        ("action.changed", "queue_run_for_each_participant", 2, 2)]


def test_reordered_transitions_are_a_move() -> None:
    text = edited(("      move_to_step(approval) when quorum(reviewer, all_approve)\n"
                   "      move_to_step(work) when quorum(reviewer, any_reject)\n",
                   "      move_to_step(work) when quorum(reviewer, any_reject)\n"
                   "      move_to_step(approval) when quorum(reviewer, all_approve)\n"))
    found = [(c.code, c.step, c.trigger) for c in changes(OFFICE, text) if c.code.startswith("action.")]
    assert found == [("action.moved", "review", "on_turn_complete")]


def test_handlers_added_and_removed() -> None:
    text = edited(("    on on_comment { queue_run(target: primary, reason: \"task_comment\") }\n  }\n}",
                   "  }\n}"),
                  ("    show_in_command_panel\n  }", "    show_in_command_panel\n    on on_heartbeat { queue_run }\n  }"))
    found = [(c.code, c.step, c.trigger) for c in changes(OFFICE, text)]
    assert ("handler.removed", "done", "on_comment") in found
    assert ("handler.added", "backlog", "on_heartbeat") in found


VOCAB = """\
role qa, legal
trigger on_deploy (environment: str, version: str = "")
task notify (channel: str) on on_enter, on_deploy
task audit on on_enter
entry { dispatch notify  exclude audit }
workflow w {
  step a { start  on on_enter { notify(channel: "x")  audit }  on on_turn_complete { move_to_step(b) } }
  step b { terminal  manual_move }
}
"""


def test_vocabulary_changes_and_which_break() -> None:
    new = (VOCAB.replace("role qa, legal", "role qa, ops")
           .replace("(environment: str, version: str = \"\")", "(environment: int, region: str)")
           .replace("entry { dispatch notify  exclude audit }", "entry { exclude notify, audit }"))
    found = {(c.code, c.subject): c.breaking for c in diff_plans(plan(VOCAB), plan(new))}
    assert found == {
        ("role.removed", "legal"): True,
        ("role.added", "ops"): False,
        ("trigger.param_changed", "on_deploy"): True,   # environment: str -> int
        ("trigger.param_removed", "on_deploy"): True,   # version
        ("trigger.param_added", "on_deploy"): True,     # region, required
        ("entry.kind_moved", "notify"): True,
        ("step.entry", "entry"): False,
    }


def test_optional_trigger_parameter_added_is_not_breaking() -> None:
    new = VOCAB.replace('version: str = "")', 'version: str = "", note: str = "")')
    assert codes(diff_plans(plan(VOCAB), plan(new))) == [("trigger.param_added", False)]


def test_workflow_removed_and_step_that_lost_every_way_out() -> None:
    two = VOCAB + "workflow gone { step only { start terminal } }\n"
    dead = VOCAB.replace("on on_turn_complete { move_to_step(b) }", "").replace("terminal  manual_move", "terminal")
    found = diff_plans(plan(two), plan(dead))
    assert ("workflow.removed", True) in codes(found)
    dead_ends = [(c.workflow, c.step) for c in found if c.code == "step.dead_end"]
    assert dead_ends == [("w", "a")] and all(c.breaking for c in found if c.code == "step.dead_end")


def test_a_step_that_keeps_a_manual_move_successor_is_no_dead_end() -> None:
    new = VOCAB.replace("on on_turn_complete { move_to_step(b) }", "")
    assert not any(c.code == "step.dead_end" for c in diff_plans(plan(VOCAB), plan(new)))


def test_dispatch_sequence_changes() -> None:
    seq = ('trigger on_x (why: str)\n'
           'dispatch dx on on_x {\n  event agent_failure\n  skip quiet silent when event.session_id == ""\n'
           '  operation "x:{event.session_id}"\n  payload { why = event.error_message }\n}\n'
           'workflow w { step a { start terminal } }\n')
    new = seq.replace('skip quiet silent', 'skip quiet debug "now logged"').replace("x:{event", "y:{event")
    found = [(c.code, c.subject) for c in diff_plans(plan(seq), plan(new))]
    assert found == [("sequence.guard_changed", "dx"), ("sequence.operations", "dx")]
    gone = [c for c in diff_plans(plan(seq), plan(seq.split("dispatch dx")[0] + "workflow w { step a { start terminal } }\n"))
            if c.code == "sequence.removed"]
    assert len(gone) == 1 and gone[0].breaking


def test_output_is_deterministic_and_json_ready() -> None:
    import json

    text = edited(('step review "Review"', 'step reviewing "Review"'), ("move_to_step(review)", "move_to_step(reviewing)"),
                  ("position 0", "position 9"))
    first = [c.to_json() for c in changes(OFFICE, text)]
    second = [c.to_json() for c in changes(OFFICE, text)]
    assert first == second
    assert json.loads(json.dumps(first)) == first
    assert all(set(c) == {"code", "breaking", "category", "workflow", "step", "trigger", "subject", "message", "old",
                          "new", "source", "text_diff"} for c in first)
