"""Our hook manifest and packaging in, the real pre-commit tool's verdicts out: a throwaway git
repository uses this checkout as a remote hook repository, so pre-commit clones it, builds the
`interlock-check` hook's own venv from `.pre-commit-hooks.yaml` and runs it on staged `.wf` files.

pre-commit installs hooks from a git revision, so this tests the checkout's *committed* HEAD:
uncommitted changes to tracked files (the hook manifest, setup.py, the CLI) are not exercised
until they are committed.  The hook venv is built once per module in a temporary
PRE_COMMIT_HOME; that needs the package index for the hook's dependencies.
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

REPO = Path(__file__).resolve().parents[1]
HOOK_ID = "interlock-check"
FMT_HOOK_ID = "interlock-fmt"
GOOD = REPO / "examples" / "office_default.wf"
INSTALL_TIMEOUT = 600
RUN_TIMEOUT = 120


@dataclass(frozen=True)
class Sandbox:
    """A temporary git repository whose `.pre-commit-config.yaml` points at this checkout."""

    root: Path
    env: dict[str, str]
    rev: str

    def run(self, *cmd: str, timeout: float = RUN_TIMEOUT) -> subprocess.CompletedProcess[str]:
        return subprocess.run(list(cmd), cwd=self.root, env=self.env, capture_output=True, text=True,
                              timeout=timeout, check=False)

    def pre_commit(self, *args: str, timeout: float = RUN_TIMEOUT) -> subprocess.CompletedProcess[str]:
        return self.run(sys.executable, "-m", "pre_commit", *args, timeout=timeout)

    def git(self, *args: str) -> subprocess.CompletedProcess[str]:
        return self.run("git", *args)


def _describe(proc: subprocess.CompletedProcess[str]) -> str:
    return f"exit {proc.returncode}\n--- stdout ---\n{proc.stdout}\n--- stderr ---\n{proc.stderr}"


def _bad_text() -> str:
    text = (REPO / "examples" / "kanban.wf").read_text(encoding="utf-8")
    assert "auto_start_agent" in text, "the bad fixture is derived from kanban.wf's auto_start_agent action"
    return text.replace("auto_start_agent", "launch_rockets", 1)


@pytest.fixture(scope="module")
def sandbox(tmp_path_factory: pytest.TempPathFactory) -> Sandbox:
    if importlib.util.find_spec("pre_commit") is None:
        pytest.fail("pre-commit is not installed; it is part of the `test` extra", pytrace=False)
    assert shutil.which("git"), "git is required"
    head = subprocess.run(["git", "-C", str(REPO), "rev-parse", "HEAD"], capture_output=True, text=True, check=False)
    assert head.returncode == 0, f"{REPO} is not a git checkout with a commit: {head.stderr}"
    rev = head.stdout.strip()
    shown = subprocess.run(["git", "-C", str(REPO), "cat-file", "-e", f"{rev}:.pre-commit-hooks.yaml"],
                           capture_output=True, text=True, check=False)
    assert shown.returncode == 0, f".pre-commit-hooks.yaml is not committed at HEAD ({rev})"

    base = tmp_path_factory.mktemp("precommit")
    root = base / "repo"
    root.mkdir()
    gitconfig = base / "gitconfig"
    gitconfig.write_text("", encoding="utf-8")
    # Keep the caller's git/pre-commit state out: a test run from inside a git hook has
    # GIT_DIR/GIT_INDEX_FILE set, and a global config could sign commits or add hooks.
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("GIT_", "PRE_COMMIT")) and k not in {"PYTHONPATH", "VIRTUAL_ENV"}}
    env.update(PRE_COMMIT_HOME=str(base / "cache"), GIT_CONFIG_NOSYSTEM="1", GIT_CONFIG_GLOBAL=str(gitconfig),
               NO_COLOR="1", PRE_COMMIT_COLOR="never")
    box = Sandbox(root=root, env=env, rev=rev)
    setup: list[list[str]] = [["init", "-q"], ["config", "user.email", "test@example.invalid"],
                              ["config", "user.name", "Test"], ["config", "commit.gpgsign", "false"]]
    for args in setup:
        proc = box.git(*args)
        assert proc.returncode == 0, _describe(proc)
    (root / ".pre-commit-config.yaml").write_text(
        f"repos:\n  - repo: {REPO.as_posix()}\n    rev: {rev}\n    hooks:\n      - id: {HOOK_ID}\n"
        f"      - id: {FMT_HOOK_ID}\n",
        encoding="utf-8")
    (root / "README.txt").write_text("sandbox\n", encoding="utf-8")
    for args in (["add", "-A"], ["commit", "-q", "--no-verify", "-m", "initial"]):
        proc = box.git(*args)
        assert proc.returncode == 0, _describe(proc)
    proc = box.pre_commit("install", "--install-hooks", timeout=INSTALL_TIMEOUT)
    assert proc.returncode == 0, f"pre-commit could not install the hook from {REPO}@{rev}: {_describe(proc)}"
    return box


def test_manifest_validates() -> None:
    proc = subprocess.run([sys.executable, "-m", "pre_commit", "validate-manifest",
                           str(REPO / ".pre-commit-hooks.yaml")], capture_output=True, text=True, check=False)
    assert proc.returncode == 0, _describe(proc)


def test_good_file_passes(sandbox: Sandbox) -> None:
    shutil.copy2(GOOD, sandbox.root / "good.wf")
    assert sandbox.git("add", "good.wf").returncode == 0
    proc = sandbox.pre_commit("run", "--files", "good.wf")
    assert proc.returncode == 0, _describe(proc)
    assert "Passed" in proc.stdout, _describe(proc)
    commit = sandbox.git("commit", "-m", "add a good workflow")
    assert commit.returncode == 0, _describe(commit)
    log = sandbox.git("log", "--format=%s", "-1")
    assert log.stdout.strip() == "add a good workflow"


def test_bad_file_blocks_the_commit(sandbox: Sandbox) -> None:
    (sandbox.root / "bad.wf").write_text(_bad_text(), encoding="utf-8")
    assert sandbox.git("add", "bad.wf").returncode == 0
    before = sandbox.git("rev-parse", "HEAD").stdout.strip()
    proc = sandbox.git("commit", "-m", "add a broken workflow")
    out = proc.stdout + proc.stderr
    assert proc.returncode != 0, _describe(proc)
    assert "Failed" in out and HOOK_ID in out, _describe(proc)
    assert "IL101" in out and "bad.wf" in out, _describe(proc)
    assert sandbox.git("rev-parse", "HEAD").stdout.strip() == before, "the commit went through"
    assert sandbox.git("reset", "-q", "bad.wf").returncode == 0
    (sandbox.root / "bad.wf").unlink()


def test_non_wf_files_are_not_checked(sandbox: Sandbox) -> None:
    (sandbox.root / "notes.txt").write_text("workflow { launch_rockets }\n", encoding="utf-8")
    assert sandbox.git("add", "notes.txt").returncode == 0
    proc = sandbox.pre_commit("run", "--files", "notes.txt")
    assert proc.returncode == 0, _describe(proc)
    assert "Skipped" in proc.stdout or "no files to check" in proc.stdout, _describe(proc)
    assert sandbox.git("reset", "-q", "notes.txt").returncode == 0
    (sandbox.root / "notes.txt").unlink()


# ---- the interlock-fmt hook -------------------------------------------------------------------------


def test_fmt_hook_reformats_and_stops_the_commit(sandbox: Sandbox) -> None:
    formatted = (REPO / "examples" / "kanban.wf").read_text(encoding="utf-8")
    assert "    position 0\n" in formatted, "the fixture is kanban.wf with one attribute mis-indented"
    (sandbox.root / "messy.wf").write_text(formatted.replace("    position 0\n", "position    0\n", 1),
                                           encoding="utf-8")
    assert sandbox.git("add", "messy.wf").returncode == 0
    before = sandbox.git("rev-parse", "HEAD").stdout.strip()
    proc = sandbox.git("commit", "-m", "add a messy workflow")
    out = proc.stdout + proc.stderr
    assert proc.returncode != 0, _describe(proc)
    assert FMT_HOOK_ID in out and "files were modified by this hook" in out, _describe(proc)
    assert sandbox.git("rev-parse", "HEAD").stdout.strip() == before, "the commit went through"
    # the hook left the file formatted: staged again, it commits
    assert (sandbox.root / "messy.wf").read_text(encoding="utf-8") == formatted
    assert sandbox.git("add", "messy.wf").returncode == 0
    commit = sandbox.git("commit", "-m", "add a formatted workflow")
    assert commit.returncode == 0, _describe(commit)


def test_fmt_hook_leaves_a_broken_file_alone(sandbox: Sandbox) -> None:
    text = "workflow w {\n  step a {\n"
    (sandbox.root / "broken.wf").write_text(text, encoding="utf-8")
    assert sandbox.git("add", "broken.wf").returncode == 0
    proc = sandbox.pre_commit("run", FMT_HOOK_ID, "--files", "broken.wf")
    assert proc.returncode != 0, _describe(proc)
    assert "IL001" in proc.stdout + proc.stderr and "broken.wf:2:" in proc.stdout + proc.stderr, _describe(proc)
    assert (sandbox.root / "broken.wf").read_text(encoding="utf-8") == text
    assert sandbox.git("reset", "-q", "broken.wf").returncode == 0
    (sandbox.root / "broken.wf").unlink()
