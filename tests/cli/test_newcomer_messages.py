"""What a newcomer trips on is said in words: a misspelt command gets a suggestion, a folder where one file is
expected says so and what to give instead, two files to `compile` say why that is a usage error, a file with no
workflow is a warning (IL513), and `Runtime(None, …)` points at the compile result's diagnostics."""

from __future__ import annotations

from pathlib import Path

import pytest

from interlock.cli import main
from interlock.compiler import compile_source
from interlock.dsl import SourceFile
from interlock.runtime import Runtime
from interlock.runtime.errors import RuntimeFault
from interlock.stores import MemoryStore

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.parametrize(("typed", "meant"), [("chek", "check"), ("compiel", "compile"), ("simulte", "simulate"),
                                              ("fmat", "fmt"), ("improt", "import")])
def test_a_misspelt_command_gets_a_suggestion(typed: str, meant: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert main([typed, "x.wf"]) == 2
    err = capsys.readouterr().err
    assert f"unknown command `{typed}`: did you mean `{meant}`?" in err


def test_a_command_like_nothing_lists_the_commands(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["zzzz"]) == 2
    assert "the commands are check, compile, simulate" in capsys.readouterr().err


@pytest.mark.parametrize(("command", "expected"), [
    ("export", "is a folder: export takes one .wf file"),
    ("import", "is a folder: import takes one kandev YAML file"),
    ("compile", "is a folder: compile takes one .wf file"),
])
def test_a_folder_given_for_a_file_says_so(command: str, expected: str, tmp_path: Path,
                                           capsys: pytest.CaptureFixture[str]) -> None:
    assert main([command, str(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert expected in err and "no such file" not in err
    assert "-o DIR" in err or "interlock check" in err


def test_compile_with_two_files_says_why_it_is_a_usage_error(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["compile", "a.wf", "b.wf"]) == 2
    err = capsys.readouterr().err
    assert "compile takes one file at a time, and was given 2: a.wf, b.wf" in err
    assert "interlock check FILE..." in err


@pytest.mark.parametrize("text", ["", "# only a comment\n", "role lead\ntask note on on_comment\n"])
def test_a_file_with_no_workflow_compiles_with_a_warning(text: str, tmp_path: Path,
                                                        capsys: pytest.CaptureFixture[str]) -> None:
    result = compile_source(SourceFile("empty.wf", text))
    assert [(d.code, d.severity.value, d.span.line, d.span.col) for d in result.diagnostics] == \
        [("IL513", "warning", 1, 1)]
    assert result.plan is not None and result.plan.workflows == ()
    path = tmp_path / "empty.wf"
    path.write_text(text)
    assert main(["check", str(path)]) == 0  # a warning: still a clean exit
    assert "warning[IL513]" in capsys.readouterr().out
    assert main(["check", "-W", str(path)]) == 1


def test_runtime_of_none_points_at_the_compile_results_diagnostics() -> None:
    result = compile_source(SourceFile("bad.wf", 'workflow w "W" { step a "A" { start on on_enter { nope } } }'))
    with pytest.raises(RuntimeFault, match=r"`plan` is None: a compile whose source has errors produces no plan") \
            as info:
        Runtime(result.plan, MemoryStore())
    assert "`diagnostics`" in str(info.value) and "pass the compile result itself" in str(info.value)
