"""The shipped examples keep re-authoring kandev's nine workflow templates: each `examples/*.wf` is compared, step
by step and action by action, with its template YAML.

The templates are reference data kept beside the repository (`reference/kandev-workflows/` in the sibling `shared`
folder, as kandev shipped them at cd9fa0e6), never copied in; Office Default is compared with its current shape,
written from the facts about it for the tests (tests/kandev/fixtures/office-default-current.yml).  Without the
reference folder the comparison is skipped on a developer machine and fails under `CI=true`, so the examples cannot
drift unnoticed.
"""

from __future__ import annotations

from functools import cache
from pathlib import Path
from typing import Any

import pytest
import yaml

from interlock.compiler import compile_path
from interlock.runtime.plan import PlanAction, PlanStep, PlanWorkflow

ROOT = Path(__file__).resolve().parents[1]
EXAMPLES = ROOT / "examples"
TEMPLATES = ROOT.parent / "shared" / "reference" / "kandev-workflows"
CURRENT = {"office-default.yml": ROOT / "tests" / "kandev" / "fixtures" / "office-default-current.yml"}
"""Templates the examples follow in kandev's current shape rather than the reference's."""

# template file -> example file
PAIRS = {
    "architecture.yml": "architecture.wf",
    "feature-dev.yml": "feature_dev.wf",
    "improve-kandev.yml": "improve.wf",
    "kanban.yml": "kanban.wf",
    "office-default.yml": "office_default.wf",
    "plan-and-build.yml": "plan_and_build.wf",
    "pr-review.yml": "pr_review.wf",
    "report-kandev-issue.yml": "report_issue.wf",
    "routine.yml": "routine.wf",
}
# Workflow ids that differ from the template's, and why (examples/README.md lists them too).
ID_DIFFERENCES = {"office-default": "office_default"}  # many tests and scenarios name `office_default`
# Actions the examples add on purpose: (workflow, step, trigger) -> kinds (Office Default follows the current
# template, which seats reviewers and approvers itself; it routes a resolved approval by status, ADR 0038).
ADDED: dict[tuple[str, str, str], tuple[str, ...]] = {
    ("office_default", "approval", "on_approval_resolved"): ("move_to_step",),
}
# the template's action type -> the language's kind
KIND_OF = {"ensure_participant_seat": "ensure_seats"}
TERMINAL_NAMES = {"done", "complete", "completed", "approved"}


def _templates_or_skip() -> Path:
    from support.kandev import reference_folder  # skips (or fails under CI=true) saying what to put where

    return reference_folder()


@cache
def _example(name: str) -> PlanWorkflow:
    result = compile_path(EXAMPLES / name)
    assert result.plan is not None, [d.code for d in result.diagnostics]
    (workflow,) = result.plan.workflows
    return workflow


def _template(name: str) -> dict[str, Any]:
    path = CURRENT.get(name) or _templates_or_skip() / name
    data = yaml.safe_load(path.read_text(encoding="utf-8"))
    assert isinstance(data, dict)
    return data


def _pair(template_name: str) -> tuple[dict[str, Any], PlanWorkflow, list[dict[str, Any]]]:
    template = _template(template_name)
    steps = sorted(template["steps"], key=lambda s: s["position"])
    return template, _example(PAIRS[template_name]), steps


def test_every_template_has_an_example() -> None:
    names = sorted(p.name for p in _templates_or_skip().glob("*.yml"))
    assert names == sorted(PAIRS)
    assert sorted(p.name for p in EXAMPLES.glob("*.wf")) == sorted(PAIRS.values())


@pytest.mark.parametrize("template_name", sorted(PAIRS))
def test_workflow_header_matches(template_name: str) -> None:
    template, workflow, _ = _pair(template_name)
    assert workflow.id == ID_DIFFERENCES.get(template["id"], template["id"])
    assert workflow.title == template["name"]
    assert workflow.hidden == bool(template.get("hidden", False))


@pytest.mark.parametrize("template_name", sorted(PAIRS))
def test_steps_match_in_order(template_name: str) -> None:
    _, workflow, steps = _pair(template_name)
    got = [(s.id, s.title, s.position) for s in sorted(workflow.steps, key=lambda s: s.position)]
    assert got == [(s["id"], s["name"], s["position"]) for s in steps]
    starts = [s["id"] for s in steps if s.get("is_start_step")]
    assert [s.id for s in workflow.steps if s.start] == starts
    assert workflow.start_step == starts[0]


@pytest.mark.parametrize("template_name", sorted(PAIRS))
def test_step_flags_match(template_name: str) -> None:
    """manual_move, stage and terminal (kandev derives terminal from the last step's name)."""
    _, workflow, steps = _pair(template_name)
    by_id = {s.id: s for s in workflow.steps}
    named = [s["id"] for s in steps if str(s["name"]).strip().lower() in TERMINAL_NAMES]
    terminal = named[-1:] if named else []
    for spec in steps:
        step = by_id[spec["id"]]
        assert step.manual_move == bool(spec.get("allow_manual_move", False)), step.id
        assert step.stage == (spec.get("stage_type") or "custom"), step.id
        assert step.terminal == (spec["id"] in terminal), step.id
        assert step.wip_limit == int(spec.get("wip_limit", 0)), step.id


@pytest.mark.parametrize("template_name", sorted(PAIRS))
def test_prompts_match_in_shape(template_name: str) -> None:
    """A prompt where the template has one, the same `[... PHASE]` label first, `{{task_prompt}}` where it has it.
    (The wording is the example's own: the templates' prompts are not copied.)"""
    _, workflow, steps = _pair(template_name)
    by_id = {s.id: s for s in workflow.steps}
    for spec in steps:
        prompt, want = by_id[spec["id"]].prompt, spec.get("prompt")
        assert (prompt is not None) == bool(want), spec["id"]
        if not want or prompt is None:
            continue
        first = want.strip().splitlines()[0]
        if first.startswith("[") and first.endswith("]"):
            assert prompt.splitlines()[0] == first, spec["id"]
        assert ("{{task_prompt}}" in prompt) == ("{{task_prompt}}" in want), spec["id"]
        assert prompt.strip() != want.strip(), f"{spec['id']}: the template's prompt is not to be copied"


def _actions(step: PlanStep, trigger: str) -> tuple[PlanAction, ...]:
    return step.handlers.get(trigger, ())


def _expected(spec: dict[str, Any]) -> dict[str, Any]:
    """A template action in the plan's terms: kind, and the arguments, target and guard it fixes."""
    config = spec.get("config") or {}
    kind = KIND_OF.get(spec["type"], spec["type"])
    out: dict[str, Any] = {"kind": kind}
    if kind == "move_to_step":
        out["target"] = config["step_id"]
    guard = config.get("wait_for_quorum") or (config.get("if") or {}).get("wait_for_quorum")
    if guard:
        out["guard"] = (guard["role"], guard["threshold"])
    if config.get("requires_approval"):
        out["requires_approval"] = True
    if kind == "queue_run":
        out["args"] = {"target": config.get("target", "primary"), "task": config.get("task_id", "this"),
                       "reason": config.get("reason")}
    elif kind in ("queue_run_for_each_participant", "ensure_seats"):
        out["args"] = {k: config[k] for k in ("role", "reason") if k in config}
    elif kind == "set_session_mode":
        out["args"] = {"mode": config["mode"]}
    elif kind == "run_code_review":
        out["args"] = {"agent_profile": config.get("agent_profile_id", "")}
    return out


def _got(action: PlanAction, expected: dict[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = {"kind": action.kind}
    if "target" in expected:
        out["target"] = action.target_step
    if action.guard is not None:
        threshold = action.guard.threshold
        if threshold == "n_approve":
            threshold = f"n_approve:{action.guard.count}"
        out["guard"] = (action.guard.role, threshold)
    if action.requires_approval:
        out["requires_approval"] = True
    if "args" in expected:
        out["args"] = {k: action.args.get(k) for k in expected["args"]}
    return out


@pytest.mark.parametrize("template_name", sorted(PAIRS))
def test_handlers_match_action_by_action(template_name: str) -> None:
    _, workflow, steps = _pair(template_name)
    by_id = {s.id: s for s in workflow.steps}
    for spec in steps:
        step = by_id[spec["id"]]
        events: dict[str, list[dict[str, Any]]] = spec.get("events") or {}
        own = {t for (w, s, t) in ADDED if (w, s) == (workflow.id, step.id) and t not in events}  # added handlers
        assert set(step.handlers) - own == set(events), \
            f"{step.id}: triggers {sorted(step.handlers)} vs {sorted(events)}"
        for trigger in own:  # an added handler holds only the additions
            assert {a.kind for a in _actions(step, trigger)} <= set(ADDED[(workflow.id, step.id, trigger)])
        for trigger, wanted in events.items():
            added = ADDED.get((workflow.id, step.id, trigger), ())
            actions = [a for a in _actions(step, trigger) if a.kind not in added]
            assert [a.kind for a in actions] == [_expected(w)["kind"] for w in wanted], (step.id, trigger)
            for action, want in zip(actions, wanted):
                expected = _expected(want)
                assert _got(action, expected) == expected, (step.id, trigger, action.position)
            if added:  # the additions are really there, not silently dropped
                assert {a.kind for a in _actions(step, trigger)} >= set(added)


def test_office_default_done_can_be_moved_by_hand() -> None:
    """The seed's Done step of Office Default allows manual moves; an earlier example dropped it."""
    done = next(s for s in _example("office_default.wf").steps if s.id == "done")
    assert done.manual_move and done.terminal
