"""docs/diff.md's text output is real: the edit it describes (step `backlog` removed with task `t-7` on it, a line
added to `work`'s prompt, `auto_archive_after_hours 24`, `done` renamed "Finished"), made in a git repository with a
SQLite store, gives exactly the block the page shows."""

from __future__ import annotations

import os
import re
import shlex
import shutil
import subprocess
from pathlib import Path

import pytest

from interlock.cli import main
from interlock.compiler import compile_source
from interlock.dsl import SourceFile
from interlock.runtime import Runtime, StaticDirectory
from interlock.stores import open_store

ROOT = Path(__file__).resolve().parents[2]
PAGE = (ROOT / "docs" / "diff.md").read_text(encoding="utf-8")

HEAD = '''\
workflow office_default "Office" {
  step backlog "Backlog" { position 0  manual_move }
  step work "Work" {
    position 1
    start
    manual_move
    prompt """
      Fix the bug the task describes.
      Keep the change small.
      Say what you changed.
      """
    on on_enter         { auto_start_agent }
    on on_turn_complete { move_to_step(done) }
  }
  step done "Done" { position 2  manual_move  terminal }
}
'''

EDITED = '''\
workflow office_default "Office" {
  step work "Work" {
    position 1
    start
    manual_move
    auto_archive_after_hours 24
    prompt """
      Fix the bug the task describes.
      Write a test that fails first.
      Keep the change small.
      Say what you changed.
      """
    on on_enter         { auto_start_agent }
    on on_turn_complete { move_to_step(done) }
  }
  step done "Finished" { position 2  manual_move  terminal }
}
'''


def test_the_text_output_on_the_page_is_todays(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                               env_clean: dict[str, str],
                                               capsys: pytest.CaptureFixture[str]) -> None:
    if shutil.which("git") is None:
        pytest.skip("not installed: git")
    (block,) = re.findall(r"```\n\$ (interlock diff [^\n]*)\n(.*?)```", PAGE, re.S)
    command, shown = block
    (tmp_path / "flows").mkdir()
    (tmp_path / "flows" / "office.wf").write_text(HEAD, encoding="utf-8")
    git = ["git", "-c", "user.name=t", "-c", "user.email=t@example.org"]
    for args in (["init", "-q", "."], ["add", "flows/office.wf"], ["commit", "-q", "-m", "office"]):
        subprocess.run([*git, *args], cwd=tmp_path, env=env_clean, check=True, capture_output=True)
    (tmp_path / "flows" / "office.wf").write_text(EDITED, encoding="utf-8")
    plan = compile_source(SourceFile("office.wf", HEAD)).plan
    assert plan is not None
    store = open_store(f"sqlite:///{tmp_path / 'office.db'}", create=True)
    try:
        Runtime(plan, store, directory=StaticDirectory(primary="agent-1"), sinks=[]).create_task(
            "t-7", "office_default", "backlog")
    finally:
        store.close()
    monkeypatch.chdir(tmp_path)
    for key in [k for k in os.environ if k.startswith("GIT_")]:  # git reads this repository, as in env_clean
        monkeypatch.delenv(key)
    assert main(shlex.split(command)[1:]) == 1  # a breaking change, and work it strands
    assert capsys.readouterr().out == shown
