"""`interlock diff` over transition guards that are expressions (docs/language.md §6, ADR 0038): a changed guard is
a behaviour change, reported (never "no changes") and breaking; two single quorums are still weighed."""

from __future__ import annotations

import pytest

from interlock.compiler import compile_source
from interlock.diffing import Change, diff_plans
from interlock.dsl import SourceFile
from interlock.runtime.plan import Plan


def flow(guard: str) -> str:
    when = f" when {guard}" if guard else ""
    return ('workflow w {\n  step a { start manual_move\n    on on_approval_resolved {\n'
            f'      move_to_step(b){when}\n    }}\n    on on_turn_complete {{ move_to_step(b) }}\n  }}\n'
            '  step b { manual_move terminal }\n}\n')


def plan(text: str) -> Plan:
    result = compile_source(SourceFile("t.wf", text))
    assert result.plan is not None, [str(d) for d in result.diagnostics]
    return result.plan


def changes(old: str, new: str) -> list[Change]:
    return diff_plans(plan(flow(old)), plan(flow(new)))


@pytest.mark.parametrize(("old", "new", "code", "breaking"), [
    ('payload.status == "approved"', 'payload.status == "rejected"', "guard.changed", True),
    ('payload.status == "approved"', 'payload.status == "approved" and not task.archived', "guard.changed", True),
    ("quorum(reviewer, all_approve)", "quorum(reviewer, all_approve) and host.engine_ready", "guard.changed",
     True),
    ("", 'payload.status == "approved"', "guard.added", True),
    ('payload.status == "approved"', "", "guard.removed", False),
    ("quorum(reviewer, n_approve(2))", "quorum(reviewer, n_approve(3))", "guard.tightened", True),
    ("quorum(reviewer, n_approve(3))", "quorum(reviewer, n_approve(2))", "guard.loosened", False),
])
def test_a_changed_guard_is_reported(old: str, new: str, code: str, breaking: bool) -> None:
    (change,) = changes(old, new)
    assert (change.code, change.breaking, change.trigger, change.step) == (code, breaking, "on_approval_resolved",
                                                                          "a")
    assert all(g in change.message for g in (old, new) if g)


def test_an_expression_guard_in_json_carries_its_text_and_expression() -> None:
    (change,) = changes('payload.status == "approved"', 'payload.status == "rejected"')
    assert change.old is not None and change.new is not None
    assert change.new["when"] == 'payload.status == "rejected"'
    assert change.new["expr"]["right"] == {"op": "lit", "value": "rejected"}


def test_a_reformatted_guard_is_no_change() -> None:
    assert changes("(payload.status == \"approved\")", 'payload.status=="approved"') == []
