"""House style is enforced, not hoped for: ruff is clean and mypy --strict passes on the package.

mypy cannot follow setuptools' default editable import hook (docs/architecture.md, "known
traps"), so the test type-checks a link tree that maps the fixed top-level folders to
`interlock.*`, exactly as the wheel lays them out.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
FOLDERS = ("grammars", "dsl", "compiler", "runtime", "stores")


def _tool(name: str) -> str:
    exe = Path(sys.executable).parent / name
    found = str(exe) if exe.exists() else shutil.which(name)
    if found is None:
        pytest.fail(f"{name} is not installed (it is in the `test` extra)")
    return found


@pytest.mark.slow
def test_ruff_clean() -> None:
    proc = subprocess.run([_tool("ruff"), "check", "--no-cache", "--output-format", "concise", "."], cwd=ROOT,
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stdout + proc.stderr


@pytest.mark.slow
def test_mypy_strict(tmp_path: Path) -> None:
    pkg = tmp_path / "tree" / "interlock"
    pkg.mkdir(parents=True)
    for item in (ROOT / "interlock").iterdir():
        if item.name != "__pycache__":
            (pkg / item.name).symlink_to(item)
    for folder in FOLDERS:
        (pkg / folder).symlink_to(ROOT / folder)
    proc = subprocess.run(
        [_tool("mypy"), "--config-file", str(ROOT / "pyproject.toml"), "--cache-dir", str(tmp_path / "cache"),
         "-p", "interlock"],
        cwd=tmp_path / "tree", capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stdout + proc.stderr
