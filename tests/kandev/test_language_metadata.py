"""The language forms ADR 0033 adds for the seed's host settings: checked, kept in the plan, printed back."""

from __future__ import annotations

import pytest

from interlock.compiler import compile_bytes
from interlock.dsl import parse_bytes
from interlock.dsl.format import format_source
from interlock.dsl.printer import format_module

FULL = '''workflow w "W" {
  description "about w"
  prompt """
    First line.
      indented \\n stays two characters

    Last.
    """
  agent_profile {agent_name: "Bot", model: "m"}
  step a "A" {
    start
    show_in_command_panel false
    auto_advance_requires_signal
    cancel_triggers_turn_complete true
    color "bg-blue-500"
    auto_archive_after_hours 24
    agent_profile "profile-7"
    on on_heartbeat { queue_run(cadence_seconds: 60) }
  }
}
'''


def test_metadata_lands_in_the_plan() -> None:
    result = compile_bytes("m.wf", FULL.encode())
    assert result.plan is not None and not result.errors
    wf = result.plan.workflows[0]
    assert wf.description == "about w"
    assert wf.prompt == "First line.\n  indented \\n stays two characters\n\nLast.\n"
    assert wf.agent_profile is not None and (wf.agent_profile.agent_name, wf.agent_profile.model) == ("Bot", "m")
    step = wf.steps[0]
    assert (step.show_in_command_panel, step.auto_advance_requires_signal, step.cancel_triggers_turn_complete) \
        == (False, True, True)
    assert (step.color, step.auto_archive_after_hours) == ("bg-blue-500", 24)
    assert step.agent_profile is not None and step.agent_profile.id == "profile-7"
    assert step.handlers["on_heartbeat"][0].args["cadence_seconds"] == 60


def test_printer_and_formatter_keep_every_form() -> None:
    module, _ = parse_bytes("m.wf", FULL.encode())
    assert module is not None
    printed = format_module(module)
    assert "show_in_command_panel false" in printed and 'prompt """' in printed
    again, _ = parse_bytes("p.wf", printed.encode())
    assert again is not None
    plan_a = compile_bytes("m.wf", FULL.encode()).plan
    plan_b = compile_bytes("m.wf", printed.encode()).plan
    assert plan_a is not None and plan_b is not None
    assert plan_a.workflows[0].prompt == plan_b.workflows[0].prompt
    result = format_source(FULL, "m.wf")
    assert result.ok and not result.changed


@pytest.mark.parametrize(("item", "message"), [
    ("auto_archive_after_hours -1", "must be 0 or more"),
    ('agent_profile {model: "m"}', "needs an `agent_name`"),
    ('agent_profile {agent_name: "a", colour: "x"}', "no key `colour`"),
    ("agent_profile 3", "must be a profile id or a profile map"),
    ('color "a"\n    color "b"', "given twice"),
])
def test_bad_metadata_is_reported(item: str, message: str) -> None:
    result = compile_bytes("m.wf", f"workflow w {{\n  step a {{\n    start\n    {item}\n  }}\n}}\n".encode())
    assert any(message in d.message for d in result.diagnostics), [d.message for d in result.diagnostics]


def test_a_badly_indented_block_string_line_is_located() -> None:
    text = 'workflow w {\n  step a {\n    start\n    prompt """\n      ok\n    bad\n      """\n  }\n}\n'
    result = compile_bytes("m.wf", text.encode())
    assert [(d.code, d.span.line) for d in result.diagnostics] == [("IL016", 6)]


def test_the_fixed_syntax_still_reads_as_before() -> None:
    plan = compile_bytes("m.wf", b'workflow w { step a { start manual_move prompt "p" } }').plan
    assert plan is not None
    step = plan.workflows[0].steps[0]
    assert (step.start, step.manual_move, step.prompt, step.color, step.show_in_command_panel) == \
        (True, True, "p", None, False)


@pytest.mark.parametrize("line", [" ", "ends in a space ", "a tab\t", "\u00a0", "em space\u2003"])
def test_a_text_with_trailing_whitespace_on_a_line_is_printed_quoted_and_kept(line: str) -> None:
    # A block string would carry the whitespace at a line's end, which editors and formatters strip.
    text = f'workflow w {{ step a {{ start prompt """\n  {line}\n  next\n  """ }} }}\n'
    module, diagnostics = parse_bytes("t.wf", text.encode())
    assert not diagnostics and module is not None
    printed = format_module(module)
    assert all(row == row.rstrip() for row in printed.splitlines())
    again, diagnostics = parse_bytes("t.wf", printed.encode())
    assert not diagnostics and again is not None
    (step,) = again.decls[0].steps  # type: ignore[union-attr]
    (prompt,) = [s for s in step.settings if s.name == "prompt"]
    assert prompt.value.value == f"{line}\nnext\n"  # type: ignore[union-attr]
