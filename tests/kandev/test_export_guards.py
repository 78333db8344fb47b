"""`interlock export` and transition guards (ADR 0038): kandev guards a move with one `wait_for_quorum` at most, so a
guard it cannot hold (a payload, task or host condition, quorums joined) is refused with KV023 and nothing is
written — kandev would read it as no guard and move the task unconditionally."""

from __future__ import annotations

import re

import pytest
from support.kandev import ROOT, compiled, data, export

from interlock.dsl import parse_bytes
from interlock.kandev.exporter import export_program


def flow(guard: str, trigger: str = "on_turn_complete") -> str:
    return ("workflow w {\n  step a { start manual_move\n"
            f"    on {trigger} {{ move_to_step(b) when {guard} }}\n  }}\n"
            "  step b \"Done\" { manual_move terminal }\n}\n")


@pytest.mark.parametrize("fmt", ["template", "portable"])
@pytest.mark.parametrize("guard", [
    "quorum(reviewer, all_approve) and not task.is_from_office",
    "quorum(reviewer, all_approve) or quorum(approver, all_approve)",
    "not quorum(reviewer, any_reject)",
    "host.engine_ready",
])
def test_a_guard_kandev_cannot_hold_is_refused(guard: str, fmt: str) -> None:
    text = flow(guard)
    module, _ = parse_bytes("x.wf", text.encode())
    assert module is not None
    result = export_program(module, compiled("x.wf", text), fmt)
    refused = [d for d in result.diagnostics if d.code == "KV023"]
    assert [(d.span.line, d.span.col) for d in refused] == [(3, 48)]
    assert guard in refused[0].message and result.errors


def test_one_quorum_is_still_written_as_wait_for_quorum() -> None:
    yaml_text, diagnostics = export(flow("quorum(reviewer, n_approve(2))"), "template")
    assert not [d for d in diagnostics if d.code == "KV023"]
    (step,) = [s for s in data(yaml_text)["steps"] if s["id"] == "a"]
    config = step["events"]["on_turn_complete"][0]["config"]
    assert config["wait_for_quorum"] == {"role": "reviewer", "threshold": "n_approve:2"}


def test_office_defaults_header_names_the_codes_its_export_reports() -> None:
    """examples/office_default.wf says in its header how `interlock export` treats its own addition (the
    `on_approval_resolved` routes): the codes it names are the ones the export reports, at those moves."""
    path = ROOT / "examples" / "office_default.wf"
    text = path.read_text(encoding="utf-8")
    header = "\n".join(line for line in text.splitlines() if line.startswith("#"))
    module, _ = parse_bytes(path.name, text.encode())
    assert module is not None
    plan = compiled(path.name, text)
    lines = text.splitlines()
    routes = [n for n, line in enumerate(lines, start=1) if "when payload.status ==" in line]
    handler = next(n for n, line in enumerate(lines, start=1) if "on on_approval_resolved" in line)
    template = export_program(module, plan, "template")
    assert [(d.code, d.span.line) for d in template.diagnostics] == [("KV014", n) for n in routes]
    portable = export_program(module, plan, "portable")
    assert ("KV015", handler) in [(d.code, d.span.line) for d in portable.diagnostics] and not portable.errors
    named = set(re.findall(r"KV\d{3}", header))
    assert named == {"KV014", "KV015"}, named
