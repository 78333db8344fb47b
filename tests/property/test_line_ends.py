"""A line ends at `\\n`, `\\r\\n` or a lone `\\r` (classic Mac OS): any file compiles to the same plan, with the
same diagnostics at the same line:col, and formats to the same text, whichever line end it uses."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from support.wf_strategies import EXAMPLE_FILES, programs, valid_programs

from interlock.cli import main
from interlock.compiler import compile_bytes
from interlock.dsl.format import format_source
from interlock.runtime.plan import dump_plan

LINE_ENDS = ("\r", "\r\n")


def _with(text: str, end: str) -> bytes:
    return text.replace("\n", end).encode("utf-8")


def _lf(text: str) -> str:
    """The generated text with `\n` line ends alone (the generators mix in some `\r\n`)."""
    return text.replace("\r\n", "\n")


def _plan(data: bytes) -> str:
    result = compile_bytes("gen.wf", data)
    assert result.plan is not None, [d.message for d in result.diagnostics]
    return dump_plan(result.plan)


def _diagnostics(data: bytes) -> list[tuple[str, int, int, int, int, str]]:
    result = compile_bytes("gen.wf", data)
    return [(d.code, d.span.line, d.span.col, d.span.end_line, d.span.end_col, d.message) for d in result.diagnostics]


FEW = settings(max_examples=25)  # each example compiles twice: the suite's time is shared


@FEW
@given(valid_programs(), st.sampled_from(LINE_ENDS))
def test_a_valid_program_compiles_to_the_same_plan_with_any_line_end(text: str, end: str) -> None:
    text = _lf(text)
    assert _plan(_with(text, end)) == _plan(text.encode())


@FEW
@given(programs(), st.sampled_from(LINE_ENDS))
def test_diagnostics_are_the_same_at_the_same_line_and_column(text: str, end: str) -> None:
    text = _lf(text)
    assert _diagnostics(_with(text, end)) == _diagnostics(text.encode())


@FEW
@given(valid_programs(), st.sampled_from(LINE_ENDS))
def test_fmt_writes_the_same_text_with_newlines(text: str, end: str) -> None:
    text = _lf(text)
    formatted = format_source(text, "gen.wf")
    again = format_source(text.replace("\n", end), "gen.wf")
    assert (again.ok, again.text, again.diagnostics) == (formatted.ok, formatted.text, formatted.diagnostics)


@pytest.mark.parametrize("path", EXAMPLE_FILES, ids=lambda p: p.name)
@pytest.mark.parametrize("end", LINE_ENDS, ids=("cr", "crlf"))
def test_examples_that_start_with_a_comment_compile_the_same(path: Path, end: str) -> None:
    text = path.read_text(encoding="utf-8")
    assert text.startswith("#")
    assert _plan(_with(text, end)) == _plan(text.encode())


def test_a_classic_mac_file_starting_with_a_comment_is_not_an_empty_plan(tmp_path: Path,
                                                                           capsys: pytest.CaptureFixture[str]) -> None:
    source = tmp_path / "mac.wf"
    source.write_bytes(b"# notes\rworkflow w {\r  step a {\r    start\r    on on_turn_complete { move_to_stepp(a) }\r"
                       b"  }\r}\r")
    assert main(["check", "--format", "concise", str(source)]) == 1
    out = capsys.readouterr().out
    assert f"{source}:5:27: error[IL101]" in out
    source.write_bytes(source.read_bytes().replace(b"stepp", b"step"))
    assert main(["compile", str(source)]) == 0
    assert '"id": "w"' in capsys.readouterr().out


def test_fmt_rewrites_a_classic_mac_file_with_newlines(tmp_path: Path) -> None:
    source = tmp_path / "mac.wf"
    source.write_bytes(b"# notes\rworkflow w {\r  step a { start }\r}\r")
    assert main(["fmt", "-q", str(source)]) == 0
    assert source.read_bytes() == b"# notes\nworkflow w {\n  step a { start }\n}\n"
