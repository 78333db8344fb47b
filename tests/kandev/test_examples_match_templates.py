"""Each shipped example (`examples/*.wf`) differs from `interlock import` of its kandev template in exactly the ways
listed here — and examples/README.md's table says the same, word for word.

The comparison is `interlock diff` of the import's plan against the example's (every rule, prompt and attribute
it compares), plus the host metadata diff does not look at (descriptions, colours, flags for the host): anything
else that differs fails the test, and so does a listed difference that is not there.  Office Default follows kandev's
current template (tests/kandev/fixtures/office-default-current.yml); the eight others the reference templates.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest
from support.kandev import ROOT, compiled, import_clean, template

from interlock.compiler import compile_path
from interlock.diffing import diff_plans
from interlock.runtime.plan import Plan

PAIRS = {"architecture": "architecture", "feature-dev": "feature_dev", "improve-kandev": "improve",
         "kanban": "kanban", "office-default-current": "office_default", "plan-and-build": "plan_and_build",
         "pr-review": "pr_review", "report-kandev-issue": "report_issue", "routine": "routine"}
"""template (a reference template, or a current-shape fixture) -> example"""

OWN_WORDING = "the workflow description"
EXPECTED = {  # the examples keep their own wording (kandev's text stays out of the repository) and one id
    "architecture": [OWN_WORDING, "the prompt of `planning`"],
    "feature_dev": [OWN_WORDING, "the prompts of `spec`, `work`, `review`, `qa`, `pr`, `ci-fixup`"],
    "improve": [OWN_WORDING, "the prompts of `improve`, `test`, `pr`"],
    "kanban": [OWN_WORDING],
    "office_default": ["the workflow id (`office_default`, not `office-default`: the tests, scenarios and docs name "
                       "it)", OWN_WORDING,
                       # routes a resolved approval request by its status (ADR 0038): kandev has no moves there
                       "step `approval`: handler `on on_approval_resolved` added"],
    "plan_and_build": [OWN_WORDING, "the prompts of `plan`, `implementation`"],
    "pr_review": [OWN_WORDING, "the prompt of `review`"],
    "report_issue": [OWN_WORDING, "the prompt of `open-issue`"],
    "routine": [OWN_WORDING],
}
ID_REASON = "the tests, scenarios and docs name it"
HOST_FIELDS = ("description", "color", "show_in_command_panel", "auto_archive_after_hours",
               "auto_advance_requires_signal", "cancel_triggers_turn_complete", "agent_profile", "session_target",
               "agent_tag")
README = (ROOT / "examples" / "README.md").read_text(encoding="utf-8")


def differences(imported: Plan, example: Plan) -> list[str]:
    """How `example` differs from `imported`, in the words of examples/README.md."""
    (wi,), (we,) = imported.workflows, example.workflows
    out: list[str] = []
    if wi.id != we.id:
        out.append(f"the workflow id (`{we.id}`, not `{wi.id}`: {ID_REASON})")
        imported = imported.model_copy(update={"workflows": (wi.model_copy(update={"id": we.id}),)})
        (wi,) = imported.workflows
    if (wi.description, wi.prompt, wi.agent_profile) != (we.description, we.prompt, we.agent_profile):
        out.append(OWN_WORDING if (wi.prompt, wi.agent_profile) == (we.prompt, we.agent_profile)
                   else "the workflow's host settings")
    prompts: list[str] = []
    for change in diff_plans(imported, example):
        if (change.code, change.subject) == ("step.attribute", "prompt"):
            prompts.append(f"`{change.step}`")
        elif (change.code, change.subject) == ("workflow.attribute", "description"):
            continue  # said above (OWN_WORDING)
        else:
            out.append(change.message)
    if prompts:
        out.append(("the prompt of " if len(prompts) == 1 else "the prompts of ") + ", ".join(prompts))
    steps = {s.id: s for s in wi.steps}
    for step in we.steps:
        for name in HOST_FIELDS:
            if step.id in steps and getattr(steps[step.id], name) != getattr(step, name):
                out.append(f"`{name}` of `{step.id}`")
    return out


def _plans(template_name: str) -> tuple[Plan, Plan]:
    _, wf = import_clean(template(template_name).read_text()).workflows[0]
    result = compile_path(Path(ROOT / "examples" / f"{PAIRS[template_name]}.wf"))
    assert result.plan is not None
    return compiled("t.wf", wf), result.plan


@pytest.mark.parametrize("template_name", sorted(PAIRS))
def test_an_example_differs_from_its_import_exactly_as_listed(template_name: str) -> None:
    imported, example = _plans(template_name)
    assert differences(imported, example) == EXPECTED[PAIRS[template_name]]


@pytest.mark.parametrize("example", sorted(EXPECTED))
def test_the_readme_says_the_same(example: str) -> None:
    row = re.search(rf"^\| `{example}\.wf` \|[^|\n]*\| (?P<said>[^|\n]*) \|$", README, re.M)
    assert row is not None, f"examples/README.md has no row for {example}.wf"
    assert row.group("said") == "; ".join(EXPECTED[example])


def test_a_difference_that_is_not_listed_fails() -> None:
    """The comparison sees what it must: a changed action, a changed host setting."""
    imported, example = _plans("kanban")
    (wf,) = example.workflows
    step = wf.steps[1]
    touched: Any = step.model_copy(update={"color": "bg-black", "handlers": {}})
    edited = example.model_copy(update={"workflows": (wf.model_copy(update={
        "steps": (wf.steps[0], touched, *wf.steps[2:])}),)})
    found = differences(imported, edited)
    assert f"`color` of `{step.id}`" in found
    assert any("removed" in d for d in found)
