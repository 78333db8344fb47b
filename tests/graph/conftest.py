"""The real renderers the graph tests check `interlock graph`'s output with: Graphviz's `dot` and Mermaid's own
parser under Node (`mermaid_parse.mjs`, with `mermaid` and `jsdom` from `.ci/node`, which `.ci/run` installs).

A test that needs one skips with the reason when it is absent, except under `CI=true`, where it fails: CI must
never pass by skipping the renderer checks.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import pytest

from interlock.compiler import compile_path
from interlock.runtime.plan import Plan

ROOT = Path(__file__).resolve().parents[2]
NODE_DIR = ROOT / ".ci" / "node"
PARSER = Path(__file__).with_name("mermaid_parse.mjs")
INSTALL = "run .ci/run, or: apt-get install graphviz; npm ci --prefix .ci/node"


def missing(what: str) -> None:
    """Skip (fail under CI=true) because `what` is not installed."""
    if os.environ.get("CI") == "true":
        pytest.fail(f"not installed: {what}, and CI=true requires it ({INSTALL})")
    pytest.skip(f"not installed: {what} ({INSTALL})")


@pytest.fixture(scope="session")
def dot_exe() -> str:
    exe = shutil.which("dot")
    if exe is None:
        missing("Graphviz's `dot`")
    assert exe is not None
    return exe


@pytest.fixture(scope="session")
def mermaid_parse() -> Callable[[Sequence[Path]], list[dict[str, Any]]]:
    """Parse Mermaid files with Mermaid itself; returns each diagram as Mermaid's database holds it."""
    node = shutil.which("node")
    if node is None:
        missing("Node.js")
    if not (NODE_DIR / "node_modules" / "mermaid" / "package.json").is_file() or \
            not (NODE_DIR / "node_modules" / "jsdom" / "package.json").is_file():
        missing("the npm packages mermaid and jsdom in .ci/node/node_modules")
    assert node is not None

    def parse(files: Sequence[Path]) -> list[dict[str, Any]]:
        proc = subprocess.run([node, str(PARSER), "--json", str(NODE_DIR), *map(str, files)], capture_output=True,
                              text=True, timeout=300, check=False)
        assert proc.returncode == 0, f"Mermaid rejected the diagram:\n{proc.stderr}"
        return [json.loads(line) for line in proc.stdout.splitlines()]

    return parse


def _plan_of(path: Path) -> Plan:
    result = compile_path(path)
    assert result.plan is not None, [d.message for d in result.diagnostics]
    return result.plan


@pytest.fixture(scope="session")
def plan_of() -> Callable[[Path], Plan]:
    """The compiled plan of a `.wf` file that must compile."""
    return _plan_of
