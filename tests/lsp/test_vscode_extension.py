"""The VS Code extension (editors/vscode/): it finds `interlock` in the workspace's `.venv` first, then `venv`, then
on PATH, unless the setting names another command (server.js, run under Node without VS Code); and its package holds
no test files (the file list `vsce ls` gives, offline, from editors/vscode/node_modules — pinned by its
package-lock.json and installed by `.ci/run`).  Skips without Node or the packages, except under CI=true."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[2]
VSCODE = ROOT / "editors" / "vscode"
VSCE = VSCODE / "node_modules" / ".bin" / "vsce"


def _need(what: str) -> None:
    if os.environ.get("CI") == "true":
        pytest.fail(f"not installed: {what}, and CI=true requires it (npm ci --prefix editors/vscode)")
    pytest.skip(f"not installed: {what} (npm ci --prefix editors/vscode)")


def _node() -> str:
    node = shutil.which("node")
    if node is None:
        _need("Node")
    assert node is not None
    return node


def resolve(configured: Any, folders: list[Path], platform: str = "linux") -> dict[str, Any]:
    script = ("const { serverCommand } = require(process.argv[1]);"
              "const [configured, folders, platform] = JSON.parse(process.argv[2]);"
              "process.stdout.write(JSON.stringify(serverCommand(configured, folders, platform)));")
    proc = subprocess.run([_node(), "-e", script, str(VSCODE / "server.js"),
                           json.dumps([configured, [str(f) for f in folders], platform])],
                          capture_output=True, text=True, timeout=60, check=False)
    assert proc.returncode == 0, proc.stderr
    result: dict[str, Any] = json.loads(proc.stdout)
    return result


def executable(path: Path) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("#!/bin/sh\n")
    path.chmod(0o755)
    return path


def test_the_workspace_venv_comes_first(tmp_path: Path) -> None:
    one, two = tmp_path / "one", tmp_path / "two"
    one.mkdir()
    dot_venv = executable(two / ".venv" / "bin" / "interlock")
    executable(two / "venv" / "bin" / "interlock")
    assert resolve(["interlock", "lsp"], [one, two]) == {"command": str(dot_venv), "args": ["lsp"],
                                                         "source": ".venv"}
    # a setting left unset reads as the default
    assert resolve(None, [two])["command"] == str(dot_venv)


def test_then_venv_then_path(tmp_path: Path) -> None:
    plain = executable(tmp_path / "venv" / "bin" / "interlock")
    assert resolve(["interlock", "lsp"], [tmp_path]) == {"command": str(plain), "args": ["lsp"], "source": "venv"}
    empty = tmp_path / "empty"
    empty.mkdir()
    (empty / ".venv" / "bin").mkdir(parents=True)  # a venv without interlock in it
    assert resolve(["interlock", "lsp"], [empty]) == {"command": "interlock", "args": ["lsp"], "source": "PATH"}
    assert resolve(["interlock", "lsp"], []) == {"command": "interlock", "args": ["lsp"], "source": "PATH"}


def test_a_command_set_by_the_user_wins(tmp_path: Path) -> None:
    executable(tmp_path / ".venv" / "bin" / "interlock")
    assert resolve(["/opt/il/bin/interlock", "lsp", "--flag"], [tmp_path]) == {
        "command": "/opt/il/bin/interlock", "args": ["lsp", "--flag"], "source": "setting"}


def test_windows_venvs_have_scripts(tmp_path: Path) -> None:
    exe = executable(tmp_path / ".venv" / "Scripts" / "interlock.exe")
    found = resolve(["interlock", "lsp"], [tmp_path], "win32")
    assert found["source"] == ".venv" and Path(found["command"]) == exe


def test_the_extension_uses_the_resolution() -> None:
    extension = (VSCODE / "extension.js").read_text(encoding="utf-8")
    assert 'require("./server")' in extension and "serverCommand(configured, folders)" in extension
    manifest = json.loads((VSCODE / "package.json").read_text(encoding="utf-8"))
    setting = manifest["contributes"]["configuration"]["properties"]["interlock.server.command"]
    assert setting["default"] == ["interlock", "lsp"] and ".venv" in setting["description"]


def test_the_package_holds_no_test_files() -> None:
    _node()
    if not VSCE.exists():
        _need("@vscode/vsce")
    proc = subprocess.run([str(VSCE), "ls"], cwd=VSCODE, capture_output=True, text=True, timeout=300, check=False)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    files = set(proc.stdout.split())
    manifest = json.loads((VSCODE / "package.json").read_text(encoding="utf-8"))
    needed = {"package.json", "extension.js", "server.js", manifest["main"].removeprefix("./"),
              manifest["contributes"]["grammars"][0]["path"].removeprefix("./"),
              manifest["contributes"]["languages"][0]["configuration"].removeprefix("./")}
    assert needed <= files, needed - files
    assert not [f for f in files if f.startswith("tests/") or f.endswith(".vsix") or f.endswith(".wf")]
    packaged = {f.split("/")[1] if not f.startswith("node_modules/@") else "/".join(f.split("/")[1:3])
                for f in files if f.startswith("node_modules/")}
    assert "vscode-languageclient" in packaged  # the runtime dependency travels with the extension
    assert not packaged & set(manifest["devDependencies"]), packaged & set(manifest["devDependencies"])
