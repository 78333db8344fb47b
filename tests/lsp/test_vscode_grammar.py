"""The VS Code extension's TextMate grammar, checked with `vscode-tmgrammar-test` (editors/vscode/node_modules,
pinned by its package-lock.json; `.ci/run` runs `npm ci --prefix editors/vscode`) on lines of the shipped examples:
the scopes of keywords, strings, comments and step ids.  Skips without Node or the packages, except under
CI=true, where it fails."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
VSCODE = ROOT / "editors" / "vscode"
TOOL = VSCODE / "node_modules" / ".bin" / "vscode-tmgrammar-test"


def _need(what: str) -> None:
    if os.environ.get("CI") == "true":
        pytest.fail(f"not installed: {what}, and CI=true requires it (npm ci --prefix editors/vscode)")
    pytest.skip(f"not installed: {what} (npm ci --prefix editors/vscode)")


def test_grammar_scopes() -> None:
    if shutil.which("node") is None:
        _need("Node")
    if not TOOL.exists():
        _need("vscode-tmgrammar-test")
    proc = subprocess.run([str(TOOL), "-g", "syntaxes/interlock.tmLanguage.json", "tests/*.wf"], cwd=VSCODE,
                          capture_output=True, text=True, timeout=120, check=False)
    assert proc.returncode == 0, proc.stdout + proc.stderr


def test_grammar_test_lines_are_the_examples() -> None:
    """Every source line the grammar test asserts on is a line of the file its header names (`"lines of
    examples/kanban.wf"`; the timers' lines come from the graph fixture, which `interlock check` accepts)."""
    tests = sorted((VSCODE / "tests").glob("*.wf"))
    assert [t.name for t in tests] == ["kanban.wf", "timers.wf"]
    for test in tests:
        header, *lines = test.read_text().splitlines()
        named = re.fullmatch(r'# SYNTAX TEST "source\.interlock" "lines of (\S+)"', header)
        assert named is not None, header
        source = (ROOT / named.group(1)).read_text().splitlines()
        for line in lines:
            if not line.startswith("#"):
                assert line in source, line


def test_extension_manifest() -> None:
    manifest = json.loads((VSCODE / "package.json").read_text())
    (language,) = manifest["contributes"]["languages"]
    assert language["extensions"] == [".wf"]
    for path in (language["configuration"], manifest["contributes"]["grammars"][0]["path"], manifest["main"]):
        assert (VSCODE / path).is_file()
    lock = json.loads((VSCODE / "package-lock.json").read_text())
    assert lock["packages"][""]["devDependencies"] == manifest["devDependencies"]
