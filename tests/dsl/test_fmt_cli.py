"""`interlock fmt` on the command line: files, folders and standard input in; rewritten files, reports and
exit statuses out (0 done, 1 would change or could not format, 2 usage)."""

from __future__ import annotations

import io
import os
import shutil
import stat
import sys
from pathlib import Path

import pytest

from interlock.cli import main

MESSY = "role   a ,b\nworkflow w { step s {\n start } }\n"
NEAT = "role a, b\nworkflow w {\n  step s {\n    start\n  }\n}\n"


def _write(path: Path, text: str, mode: int = 0o644) -> Path:
    path.write_text(text, encoding="utf-8")
    path.chmod(mode)
    return path


def test_rewrites_in_place_keeping_the_mode_and_leaving_no_temporary_file(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    messy = _write(tmp_path / "messy.wf", MESSY, 0o640)
    neat = _write(tmp_path / "neat.wf", NEAT)
    neat_inode = neat.stat().st_ino
    assert main(["fmt", str(tmp_path)]) == 0
    assert messy.read_text(encoding="utf-8") == NEAT
    assert stat.S_IMODE(messy.stat().st_mode) == 0o640
    assert neat.stat().st_ino == neat_inode, "an unchanged file was rewritten"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["messy.wf", "neat.wf"]
    out = capsys.readouterr().out
    assert f"reformatted {messy}" in out
    assert "1 file reformatted, 1 file left unchanged" in out


def test_check_lists_what_would_change_and_writes_nothing(tmp_path: Path,
                                                           capsys: pytest.CaptureFixture[str]) -> None:
    messy = _write(tmp_path / "messy.wf", MESSY)
    _write(tmp_path / "neat.wf", NEAT)
    assert main(["fmt", "--check", str(tmp_path)]) == 1
    assert messy.read_text(encoding="utf-8") == MESSY
    out = capsys.readouterr().out
    assert out.splitlines() == [f"would reformat {messy}", "1 file would be reformatted, 1 file already formatted"]
    assert main(["fmt", "--check", str(tmp_path / "neat.wf")]) == 0


def test_diff_prints_a_unified_diff_and_writes_nothing(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    messy = _write(tmp_path / "messy.wf", MESSY)
    assert main(["fmt", "--diff", "-q", str(messy)]) == 1
    assert messy.read_text(encoding="utf-8") == MESSY
    captured = capsys.readouterr()
    assert captured.out.startswith(f"--- {messy} (original)\n+++ {messy} (formatted)\n")
    assert "\n-role   a ,b\n" in captured.out and "\n+role a, b\n" in captured.out
    assert captured.err == ""  # -q: no file list, no summary


def test_standard_input_to_standard_output(monkeypatch: pytest.MonkeyPatch,
                                          capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(MESSY.encode())))
    assert main(["fmt", "-"]) == 0
    captured = capsys.readouterr()
    assert captured.out == NEAT
    assert "1 file reformatted" in captured.err  # the report never mixes into the formatted text


def test_a_syntax_error_is_reported_and_the_file_left_alone(tmp_path: Path,
                                                            capsys: pytest.CaptureFixture[str]) -> None:
    broken = _write(tmp_path / "broken.wf", "workflow w {\n  step a {\n")
    messy = _write(tmp_path / "messy.wf", MESSY)
    assert main(["fmt", "--color", "never", str(tmp_path)]) == 1
    assert broken.read_text(encoding="utf-8") == "workflow w {\n  step a {\n"
    assert messy.read_text(encoding="utf-8") == NEAT, "the other files are still formatted"
    captured = capsys.readouterr()
    assert "error[IL001]" in captured.err and f"{broken}:2:11" in captured.err
    assert "1 file reformatted, 0 files left unchanged, 1 file could not be formatted" in captured.out


def test_stdin_filename_names_the_diagnostic(monkeypatch: pytest.MonkeyPatch,
                                             capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(b"role\n")))
    assert main(["fmt", "--color", "never", "--stdin-filename", "mine.wf", "-"]) == 1
    captured = capsys.readouterr()
    assert captured.out == "" and "mine.wf:" in captured.err


@pytest.mark.parametrize("argv", [["fmt", "no/such/file.wf"], ["fmt", "-", "-"], ["fmt", "--bogus"]])
def test_usage_errors_exit_2(argv: list[str], capsys: pytest.CaptureFixture[str]) -> None:
    assert main(argv) == 2


def test_a_failed_replace_leaves_the_file_and_no_temporary_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                                capsys: pytest.CaptureFixture[str]) -> None:
    messy = _write(tmp_path / "messy.wf", MESSY)

    def refuse(src: str, dst: str) -> None:
        raise PermissionError(13, "Permission denied", dst)

    monkeypatch.setattr(os, "replace", refuse)
    assert main(["fmt", str(messy)]) == 2
    assert messy.read_text(encoding="utf-8") == MESSY
    assert [p.name for p in tmp_path.iterdir()] == ["messy.wf"]
    assert "Permission denied" in capsys.readouterr().err


def test_the_summary_docs_fmt_md_shows_is_todays(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                 capsys: pytest.CaptureFixture[str]) -> None:
    """docs/fmt.md's summary is what `interlock fmt examples/` prints after an edit left `examples/kanban.wf`
    unformatted (the page said 8 files left unchanged; the folder holds 9 others, examples/host/flow.wf among them)."""
    root = Path(__file__).resolve().parents[2]
    page = (root / "docs" / "fmt.md").read_text(encoding="utf-8")
    shutil.copytree(root / "examples", tmp_path / "examples")
    kanban = tmp_path / "examples" / "kanban.wf"
    kanban.write_text(kanban.read_text(encoding="utf-8").replace("\n  step ", "\n    step "), encoding="utf-8")
    monkeypatch.chdir(tmp_path)
    assert main(["fmt", "--check", "examples/"]) == 1
    check = capsys.readouterr().out.splitlines()
    assert check[0] == "would reformat examples/kanban.wf"
    assert f"`would reformat …` and `{check[-1]}`" in page
    assert main(["fmt", "examples/"]) == 0
    assert "```text\n" + capsys.readouterr().out + "```" in page
