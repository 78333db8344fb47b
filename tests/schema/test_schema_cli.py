"""`interlock schema plan|scenario [-o FILE]`, and the editor line that points scenario files at the schema."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

from interlock.cli import main
from interlock.json_schemas import render

ROOT = Path(__file__).resolve().parents[2]
SCENARIOS = ROOT / "examples" / "scenarios"
EDITOR_LINE = re.compile(r"^# yaml-language-server: \$schema=(\S+)$")


@pytest.mark.parametrize("name", ["plan", "scenario"])
def test_schema_prints_the_committed_schema(name: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["schema", name]) == 0
    out = capsys.readouterr().out
    assert out == render(name) == (ROOT / "schemas" / f"{name}.schema.json").read_text(encoding="utf-8")
    assert json.loads(out)["$id"].endswith(f"/{name}-v{2 if name == 'plan' else 1}.json")


def test_schema_writes_a_file_and_replaces_it(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    target = tmp_path / "scenario.schema.json"
    target.write_text("old", encoding="utf-8")
    assert main(["schema", "scenario", "-o", str(target)]) == 0
    assert target.read_bytes() == render("scenario").encode()
    assert capsys.readouterr().out == ""
    assert [p.name for p in tmp_path.iterdir()] == ["scenario.schema.json"]  # no temporary file left behind


def test_schema_dash_is_standard_output(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["schema", "plan", "-o", "-"]) == 0
    assert capsys.readouterr().out == render("plan")


@pytest.mark.parametrize(("args", "message"), [
    (["schema", "plans"], "invalid choice: 'plans'"),
    (["schema"], "the following arguments are required"),
    (["schema", "plan", "-o", "{tmp}/missing/plan.json"], "does not exist: create it first"),
    (["schema", "plan", "-o", "{tmp}"], "is a folder"),
])
def test_schema_usage_errors_exit_2(args: list[str], message: str, tmp_path: Path,
                                    capsys: pytest.CaptureFixture[str]) -> None:
    assert main([a.replace("{tmp}", str(tmp_path)) for a in args]) == 2
    captured = capsys.readouterr()
    assert message in captured.err and captured.out == ""


def test_schema_is_listed_in_the_help(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--help"]) == 0
    assert re.search(r"^\s+schema\s+print the JSON Schema", capsys.readouterr().out, re.M)


def test_the_tool_module_imports_only_the_standard_library() -> None:
    """The CLI imports every tool to build its parser: `interlock check` must not pay for pydantic."""
    code = ("import sys, interlock.tools.schema; "
            "print(sorted(m for m in ('pydantic', 'interlock.runtime', 'interlock.json_schemas') if m in sys.modules))")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, timeout=60)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "[]"


# ---- editor completion for scenario files --------------------------------------------------------------
@pytest.mark.parametrize("scenario", sorted(p.name for p in SCENARIOS.glob("*.yaml")))
def test_example_scenarios_point_editors_at_the_committed_schema(scenario: str) -> None:
    first = (SCENARIOS / scenario).read_text(encoding="utf-8").splitlines()[0]
    match = EDITOR_LINE.match(first)
    assert match, f"{scenario}: the first line is not the yaml-language-server schema line: {first!r}"
    target = (SCENARIOS / match.group(1)).resolve()
    assert target == ROOT / "schemas" / "scenario.schema.json"


def test_the_scenario_docs_show_the_editor_line() -> None:
    text = (ROOT / "docs" / "scenarios.md").read_text(encoding="utf-8")
    assert "# yaml-language-server: $schema=../../schemas/scenario.schema.json" in text
    assert json.loads(render("scenario"))["$id"] in text  # the alternative that needs no relative path
