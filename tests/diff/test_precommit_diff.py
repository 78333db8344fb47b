"""Our hook manifest in, the real pre-commit tool's verdicts on the `interlock-diff` hook out: a throwaway git
repository uses this checkout as a remote hook repository, so pre-commit clones it, builds the hook's venv from
`.pre-commit-hooks.yaml` and runs `interlock diff --staged --fail-on-breaking` on the staged `.wf` files.

As in tests/test_precommit.py, pre-commit installs hooks from a git revision, so this tests the checkout's
*committed* HEAD, and building the hook venv needs the package index for the hook's dependencies.
"""

from __future__ import annotations

import importlib.util
import os
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow

REPO = Path(__file__).resolve().parents[2]
HOOK_ID = "interlock-diff"
OFFICE = (REPO / "examples" / "office_default.wf").read_text(encoding="utf-8")
BACKLOG = ('  step backlog "Backlog" {\n    position 0\n    manual_move\n    stage custom\n'
           '    color "bg-neutral-400"\n    show_in_command_panel\n  }\n')
INSTALL_TIMEOUT = 600
RUN_TIMEOUT = 120


@dataclass(frozen=True)
class Sandbox:
    root: Path
    env: dict[str, str]

    def run(self, *cmd: str, timeout: float = RUN_TIMEOUT) -> subprocess.CompletedProcess[str]:
        return subprocess.run(list(cmd), cwd=self.root, env=self.env, capture_output=True, text=True,
                              timeout=timeout, check=False)

    def git(self, *args: str) -> subprocess.CompletedProcess[str]:
        return self.run("git", *args)

    def head(self) -> str:
        return self.git("rev-parse", "HEAD").stdout.strip()


def _describe(proc: subprocess.CompletedProcess[str]) -> str:
    return f"exit {proc.returncode}\n--- stdout ---\n{proc.stdout}\n--- stderr ---\n{proc.stderr}"


@pytest.fixture(scope="module")
def sandbox(tmp_path_factory: pytest.TempPathFactory) -> Sandbox:
    if importlib.util.find_spec("pre_commit") is None:
        pytest.fail("pre-commit is not installed; it is part of the `test` extra", pytrace=False)
    assert shutil.which("git"), "git is required"
    head = subprocess.run(["git", "-C", str(REPO), "rev-parse", "HEAD"], capture_output=True, text=True, check=False)
    assert head.returncode == 0, head.stderr
    rev = head.stdout.strip()
    manifest = subprocess.run(["git", "-C", str(REPO), "show", f"{rev}:.pre-commit-hooks.yaml"], capture_output=True,
                              text=True, check=False)
    assert f"id: {HOOK_ID}" in manifest.stdout, f"the {HOOK_ID} hook is not committed at HEAD ({rev})"

    base = tmp_path_factory.mktemp("precommit-diff")
    root = base / "repo"
    root.mkdir()
    gitconfig = base / "gitconfig"
    gitconfig.write_text("", encoding="utf-8")
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("GIT_", "PRE_COMMIT")) and k not in {"PYTHONPATH", "VIRTUAL_ENV"}}
    env.update(PRE_COMMIT_HOME=str(base / "cache"), GIT_CONFIG_NOSYSTEM="1", GIT_CONFIG_GLOBAL=str(gitconfig),
               NO_COLOR="1", PRE_COMMIT_COLOR="never")
    box = Sandbox(root, env)
    for args in (["init", "-q"], ["config", "user.email", "test@example.invalid"], ["config", "user.name", "Test"],
                 ["config", "commit.gpgsign", "false"]):
        proc = box.git(*args)
        assert proc.returncode == 0, _describe(proc)
    (root / ".pre-commit-config.yaml").write_text(
        f"repos:\n  - repo: {REPO.as_posix()}\n    rev: {rev}\n    hooks:\n      - id: {HOOK_ID}\n", encoding="utf-8")
    (root / "office.wf").write_text(OFFICE, encoding="utf-8")
    for args in (["add", "-A"], ["commit", "-q", "--no-verify", "-m", "initial"]):
        proc = box.git(*args)
        assert proc.returncode == 0, _describe(proc)
    proc = box.run(sys.executable, "-m", "pre_commit", "install", "--install-hooks", timeout=INSTALL_TIMEOUT)
    assert proc.returncode == 0, f"pre-commit could not install the hook from {REPO}@{rev}: {_describe(proc)}"
    return box


def test_a_breaking_change_blocks_the_commit(sandbox: Sandbox) -> None:
    (sandbox.root / "office.wf").write_text(OFFICE.replace(BACKLOG, ""), encoding="utf-8")
    assert sandbox.git("add", "office.wf").returncode == 0
    before = sandbox.head()
    proc = sandbox.git("commit", "-m", "drop the backlog")
    out = proc.stdout + proc.stderr
    assert proc.returncode != 0, _describe(proc)
    assert "Failed" in out and HOOK_ID in out, _describe(proc)
    assert "step `backlog` removed" in out and "[step.removed]" in out and "git:HEAD:office.wf" in out, out
    assert sandbox.head() == before, "the commit went through"
    assert sandbox.git("checkout", "-q", "HEAD", "--", "office.wf").returncode == 0


def test_a_compatible_change_is_committed(sandbox: Sandbox) -> None:
    (sandbox.root / "office.wf").write_text(OFFICE.replace('step done "Done"', 'step done "Finished"'),
                                            encoding="utf-8")
    assert sandbox.git("add", "office.wf").returncode == 0
    before = sandbox.head()
    proc = sandbox.git("commit", "-m", "rename Done's title")
    assert proc.returncode == 0, _describe(proc)
    assert "Passed" in proc.stdout + proc.stderr, _describe(proc)
    assert sandbox.head() != before


def test_a_new_workflow_file_is_committed(sandbox: Sandbox) -> None:
    (sandbox.root / "fresh.wf").write_text(OFFICE.replace("workflow office_default", "workflow fresh"),
                                           encoding="utf-8")
    assert sandbox.git("add", "fresh.wf").returncode == 0
    proc = sandbox.git("commit", "-m", "a new workflow")
    assert proc.returncode == 0, _describe(proc)
