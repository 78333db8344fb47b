"""Each shipped example (`examples/*.wf`) compiles to the plan of `interlock import` of its seed template, except
for the prompt and description texts (the examples keep their own wording: the seed's text stays out of the
repository) and the additions listed here on purpose.  So the examples can never drift from the seed again."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from support.kandev import ROOT, comparable, compiled, import_clean, reference

from interlock.compiler import compile_path

PAIRS = {"architecture": "architecture", "feature-dev": "feature_dev", "improve-kandev": "improve",
         "kanban": "kanban", "office-default": "office_default", "plan-and-build": "plan_and_build",
         "pr-review": "pr_review", "report-kandev-issue": "report_issue", "routine": "routine"}
# Deliberate differences, each with its reason (examples/README.md says the same):
RENAMED = {"office-default": "office_default"}  # the tests, scenarios and docs name `office_default`
ADDED = {  # (workflow, step, trigger) -> kinds the example adds: the later Office Default seats reviewers first
    ("office_default", "review", "on_enter"): ("ensure_seats",),
    ("office_default", "approval", "on_enter"): ("ensure_seats",),
}
TEXTS = ("prompt", "description")  # the examples' own wording


def _without_texts(plan: Any, additions: bool) -> Any:
    for wf in plan["workflows"]:
        for key in TEXTS:
            wf[key] = wf.get(key) is not None
        for step in wf["steps"]:
            for key in TEXTS:
                step[key] = step.get(key) is not None
            for trigger, actions in step["handlers"].items():
                drop = ADDED.get((wf["id"], step["id"], trigger), ()) if additions else ()
                kept = [a for a in actions if a["kind"] not in drop]
                for pos, a in enumerate(kept):
                    a["position"] = pos
                step["handlers"][trigger] = kept
            step["entry_dispatch"] = [a for a in step["entry_dispatch"]
                                      if a["kind"] not in (ADDED.get((wf["id"], step["id"], "on_enter"), ())
                                                           if additions else ())]
            for pos, a in enumerate(step["entry_dispatch"]):
                a["position"] = pos
    return plan


@pytest.mark.parametrize("template", sorted(PAIRS))
def test_example_equals_the_import_of_its_template(template: str) -> None:
    _, wf = import_clean(reference(template).read_text()).workflows[0]
    if template in RENAMED:
        wf = wf.replace(f"workflow {template} ", f"workflow {RENAMED[template]} ", 1)
    imported = _without_texts(comparable(compiled("t.wf", wf)), additions=False)
    result = compile_path(ROOT / "examples" / f"{PAIRS[template]}.wf")
    assert result.plan is not None
    example = _without_texts(comparable(result.plan), additions=True)
    assert example == imported


def test_the_listed_additions_are_really_in_the_examples() -> None:
    result = compile_path(Path(ROOT / "examples" / "office_default.wf"))
    assert result.plan is not None
    steps = {s.id: s for s in result.plan.workflows[0].steps}
    for (_, step, trigger), kinds in ADDED.items():
        assert set(kinds) <= {a.kind for a in steps[step].handlers[trigger]}
