"""Suppression comments (docs/language.md, "Suppressing a check"; ADR 0039): `# interlock: ignore[CODE, …]` at the end
of the line a diagnostic points at, or alone on the line above it; a suppression that suppresses nothing is IL512;
errors cannot be suppressed."""

from __future__ import annotations

from pathlib import Path

from hypothesis import given
from support.wf_strategies import valid_programs

from interlock.compiler import compile_path, compile_source
from interlock.dsl import SourceFile

UNREACHABLE = """workflow w {
  step a { start manual_move  on on_turn_complete { move_to_step(done) } }
  step b { terminal }@B
  step done { manual_move terminal }
}
"""


def found(text: str, ignore: tuple[str, ...] = ()) -> list[tuple[str, int, int]]:
    result = compile_source(SourceFile("t.wf", text), ignore=ignore)
    return [(d.code, d.span.line, d.span.col) for d in result.diagnostics]


def with_b(comment: str) -> str:
    return UNREACHABLE.replace("@B", comment)


def test_the_warning_without_a_comment() -> None:
    assert found(with_b("")) == [("IL504", 3, 8)]


def test_a_comment_at_the_end_of_the_line_suppresses_it() -> None:
    assert found(with_b("  # interlock: ignore[IL504] archived by a script")) == []


def test_a_comment_alone_on_the_line_above_suppresses_it() -> None:
    text = with_b("").replace("  step b {", "  # interlock: ignore[IL504]\n  step b {")
    assert found(text) == []


def test_the_line_above_only() -> None:
    text = with_b("").replace("  step b {", "  # interlock: ignore[IL504]\n\n  step b {")
    assert found(text) == [("IL512", 3, 23), ("IL504", 5, 8)]


def test_several_codes_any_case_and_spaces() -> None:
    assert found(with_b("  # interlock: ignore[ il503 ,IL504] why")) == [("IL512", 3, 45)]


def test_a_hash_in_a_string_is_not_a_comment() -> None:
    text = with_b("").replace("step b { terminal }", 'step b { terminal  description "# interlock: ignore[IL504]" }')
    assert found(text) == [("IL504", 3, 8)]


def test_a_hash_in_a_block_string_is_not_a_comment() -> None:
    text = with_b("").replace("step b { terminal }",
                              'step b {\n    terminal\n    description """\n      # interlock: ignore[IL504]\n'
                              '      """\n  }')
    assert found(text) == [("IL504", 3, 8)]


def test_an_error_cannot_be_suppressed() -> None:
    text = 'workflow w {\n  step a { start terminal  on on_enter { nope } }  # interlock: ignore[IL101]\n}\n'
    result = compile_source(SourceFile("t.wf", text))
    assert [(d.code, d.severity.value) for d in result.diagnostics] == [("IL101", "error"), ("IL512", "warning")]
    assert "errors cannot be suppressed" in result.diagnostics[1].message
    assert result.plan is None


def test_an_unknown_code_says_which_one_was_meant() -> None:
    result = compile_source(SourceFile("t.wf", with_b("  # interlock: ignore[IL5O4]")))
    codes = [(d.code, d.message, d.help) for d in result.diagnostics]
    assert ("IL512", "`IL5O4` is not a diagnostic code", "did you mean `IL504`?") in codes


def test_a_malformed_comment_is_reported() -> None:
    assert found(with_b("  # interlock: ignore IL504")) == [("IL504", 3, 8), ("IL512", 3, 24)]


def test_unused_suppressions_are_not_judged_in_a_file_with_errors() -> None:
    # the liveness checks do not run on a file with an error: whether IL509 would be reported is unknown
    text = '# interlock: ignore[IL509] parked\nworkflow w { step a { start  on on_enter { nope } } }\n'
    assert [c for c, _, _ in found(text)] == ["IL101"]


def test_il512_cannot_suppress_itself_but_the_configuration_can_ignore_it() -> None:
    text = with_b("  # interlock: ignore[IL503, IL512]")
    assert [c for c, _, _ in found(text)] == ["IL504", "IL512", "IL512"]
    assert [c for c, _, _ in found(text, ignore=("IL512",))] == ["IL504"]


def test_the_configurations_ignore_drops_warnings_never_errors() -> None:
    assert found(with_b(""), ignore=("IL504",)) == []
    text = "workflow w { step a { start terminal  on on_enter { nope } } }\n"
    assert [c for c, _, _ in found(text, ignore=("IL101",))] == ["IL101"]


def test_a_suppression_in_a_used_file_applies_there(tmp_path: Path) -> None:
    (tmp_path / "lib.wf").write_text(with_b("  # interlock: ignore[IL504] parked"))
    (tmp_path / "main.wf").write_text("use lib\n")
    assert compile_path(tmp_path / "main.wf").diagnostics == ()


@given(valid_programs())
def test_a_comment_above_every_warned_line_leaves_no_warning(text: str) -> None:
    """Property: suppressing each reported warning where it points leaves the file clean, and no comment is
    unused."""
    result = compile_source(SourceFile("t.wf", text))
    by_line: dict[int, set[str]] = {}
    for d in result.diagnostics:
        assert not d.is_error
        by_line.setdefault(d.span.line, set()).add(d.code)
    lines = text.split("\n")
    for line in sorted(by_line, reverse=True):
        lines.insert(line - 1, f"# interlock: ignore[{', '.join(sorted(by_line[line]))}] accepted")
    suppressed = compile_source(SourceFile("t.wf", "\n".join(lines)))
    assert suppressed.diagnostics == ()
    assert (suppressed.plan is None) == (result.plan is None)
