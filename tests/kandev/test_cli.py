"""`interlock import` and `interlock export` on the command line: files, folders and standard input in; `.wf` /
YAML, located diagnostics and exit statuses (0 clean, 1 findings, 2 usage) out."""

from __future__ import annotations

import io
import json
import sys
from pathlib import Path

import pytest
from support.kandev import FIXTURES, data

from interlock.cli import main

TEMPLATE = FIXTURES / "template-all-fields.yml"
PORTABLE = FIXTURES / "portable-two-workflows.yml"


@pytest.mark.parametrize("command", ["import", "export"])
def test_help(command: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert main([command, "--help"]) == 0
    assert "Exit status" in capsys.readouterr().out


def test_import_to_stdout_puts_diagnostics_on_stderr(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["import", str(TEMPLATE)]) == 0
    out, err = capsys.readouterr()
    code = [line for line in out.splitlines() if not line.startswith("#")]
    assert code[0] == "workflow all-fields \"All Fields\" {"
    assert "1 file read, 1 file written: no problems" in err


def test_import_to_a_file_and_export_it_back(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    wf = tmp_path / "all.wf"
    assert main(["import", str(TEMPLATE), "-o", str(wf)]) == 0
    assert "step no \"on\"" in wf.read_text()
    yml = tmp_path / "all.yml"
    assert main(["export", str(wf), "-o", str(yml)]) == 0
    assert data(yml.read_text()) == data(TEMPLATE.read_text())


def test_import_of_a_multi_workflow_document_into_a_folder(tmp_path: Path) -> None:
    assert main(["import", str(PORTABLE), "-o", str(tmp_path)]) == 0
    assert sorted(p.name for p in tmp_path.iterdir()) == ["release-train.wf", "triage-board.wf"]
    assert main(["export", str(tmp_path / "triage-board.wf"), "--yaml-format", "portable", "-q",
                 "-o", str(tmp_path / "t.yml")]) == 0
    assert data((tmp_path / "t.yml").read_text())["workflows"][0] == data(PORTABLE.read_text())["workflows"][0]


def test_import_reads_standard_input(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(TEMPLATE.read_bytes())))
    assert main(["import", "-", "-q"]) == 0
    assert "workflow all-fields" in capsys.readouterr().out


def test_bad_yaml_is_a_located_error_with_exit_1(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    bad = tmp_path / "bad.yml"
    bad.write_text("id: w\nsteps: [\n")
    assert main(["import", str(bad), "--diagnostics-format", "concise", "-o", str(tmp_path / "x.wf")]) == 1
    out = capsys.readouterr().out
    assert f"{bad}:3:1: error[KV001] not valid YAML" in out
    assert not (tmp_path / "x.wf").exists()


def test_import_findings_in_json(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    src = tmp_path / "t.yml"
    src.write_text("id: w\nname: W\nsteps:\n  - id: a\n    name: A\n    is_start_step: true\n    events:\n"
                   "      on_enter:\n        - type: teleport\n  - id: done\n    name: Done\n"
                   "    allow_manual_move: true\n")
    assert main(["import", str(src), "--diagnostics-format", "json", "-q", "-o", str(tmp_path / "t.wf")]) == 1
    found = json.loads(capsys.readouterr().out)
    records = found if isinstance(found, list) else found["diagnostics"]
    assert [(r["code"], r["line"], r["col"]) for r in records] == [("KV017", 4, 5), ("KV004", 9, 17)]
    assert found["summary"] == {"files": 1, "errors": 1, "warnings": 0, "written": 0}


def test_export_refuses_what_the_template_loader_rejects(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    wf = tmp_path / "w.wf"
    wf.write_text('workflow w {\n  step a {\n    start\n    on on_comment { set_workflow_data(key: "k", value: 1) }\n'
                  "  }\n}\n")
    out = tmp_path / "w.yml"
    assert main(["export", str(wf), "--diagnostics-format", "concise", "-o", str(out)]) == 1
    assert f"{wf}:4:21: error[KV014]" in capsys.readouterr().out
    assert not out.exists()


def test_export_of_a_wf_with_errors_writes_nothing(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    wf = tmp_path / "w.wf"
    wf.write_text("workflow w { step a { start on on_enter { no_such_kind } } }\n")
    assert main(["export", str(wf), "-o", str(tmp_path / "w.yml")]) == 1
    assert not (tmp_path / "w.yml").exists()


def test_usage_errors_exit_2(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["import", str(tmp_path / "missing.yml")]) == 2
    assert main(["import", str(TEMPLATE), "-o", str(tmp_path / "no" / "such" / "x.wf")]) == 2
    two = tmp_path / "two.wf"
    two.write_text("workflow a { step s { start } }\nworkflow b { step s { start } }\n")
    assert main(["export", str(two)]) == 2
    assert main(["export", str(two), "-o", str(tmp_path), "-q"]) == 0
    assert sorted(p.name for p in tmp_path.glob("*.yml")) == ["a.yml", "b.yml"]


def test_export_reads_standard_input(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    wf = b'workflow w "W" {\n  step a {\n    start\n    color "bg-red-500"\n  }\n}\n'
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(wf)))
    assert main(["export", "-", "-q"]) == 0
    out, _ = capsys.readouterr()
    # a step without `manual_move` is written `allow_manual_move: false` (kandev would let people move into it)
    assert data(out) == {"id": "w", "name": "W", "steps": [{"id": "a", "name": "a", "position": 0,
                                                           "color": "bg-red-500", "is_start_step": True,
                                                           "allow_manual_move": False}]}


def test_import_of_a_multi_workflow_document_to_stdout_is_one_wf(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["import", str(PORTABLE)]) == 0
    out, err = capsys.readouterr()
    code = [line for line in out.splitlines() if not line.startswith("#")]
    assert code[0] == "role release_captain" and out.count("\nworkflow ") == 2
    assert out.count("role release_captain") == 1
    assert "note[KV010]" in err and "1 file read, 1 file written" in err


MALFORMED_GUARD = ("id: w\nname: W\nsteps:\n  - id: a\n    name: A\n    position: 0\n    is_start_step: true\n"
                   "    events:\n      on_turn_complete:\n        - type: move_to_step\n          config:\n"
                   "            step_id: done\n            wait_for_quorum: {role: reviewer}\n"
                   "  - id: done\n    name: Done\n    position: 1\n")


@pytest.mark.parametrize("to", ["file", "folder", "stdout"])
def test_an_import_with_errors_writes_nothing(to: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    # kandev runs a move whose guard is malformed as an unguarded move; a partial import would write exactly that.
    src = tmp_path / "t.yml"
    src.write_text(MALFORMED_GUARD)
    out_dir = tmp_path / "out"
    out_dir.mkdir()
    args = {"file": ["-o", str(out_dir / "w.wf")], "folder": ["-o", str(out_dir)], "stdout": []}[to]
    assert main(["import", str(src), "--diagnostics-format", "concise", *args]) == 1
    out, err = capsys.readouterr()
    assert "error[KV007]" in out + err
    assert "move_to_step" not in out  # no .wf on standard output
    assert list(out_dir.iterdir()) == []
