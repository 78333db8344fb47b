"""End to end with a real editor: Neovim headless (Debian's `neovim`, 0.7.2 in CI; `.ci/run` installs it) and its
built-in LSP client open a file with an error, receive the diagnostic at the right position, ask for hover
and definition, and format.  Skips without `nvim`, except under CI=true, where it fails."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

SCRIPT = Path(__file__).with_name("nvim_e2e.lua")
TEXT = """\
task notify (channel: str) on on_enter
entry { dispatch notify }
workflow w {
  step work {   start
    on on_enter { notify(chanel: "x") }
    on on_turn_complete { move_to_step(done) }
  }
  step done { terminal }
}
"""


def test_neovim_end_to_end(tmp_path: Path) -> None:
    nvim = shutil.which("nvim")
    if nvim is None:
        if os.environ.get("CI") == "true":
            pytest.fail("not installed: Neovim (`nvim`), and CI=true requires it (apt-get install neovim)")
        pytest.skip("not installed: Neovim (`nvim`; apt-get install neovim)")
    f = tmp_path / "edit.wf"
    f.write_text(TEXT)
    result = tmp_path / "out.json"
    env = {**os.environ, "INTERLOCK_EXE": str(Path(sys.executable).with_name("interlock")),
           "INTERLOCK_NVIM_OUT": str(result), "HOVER_LINE": "4", "HOVER_COL": "20",
           "DEF_LINE": "5", "DEF_COL": "40", "XDG_CONFIG_HOME": str(tmp_path), "XDG_DATA_HOME": str(tmp_path),
           "XDG_STATE_HOME": str(tmp_path)}
    subprocess.run([nvim, "--headless", "-n", "-u", "NONE", "-i", "NONE", str(f), "-c", f"luafile {SCRIPT}"],
                   cwd=tmp_path, env=env, timeout=60, check=False, capture_output=True, stdin=subprocess.DEVNULL)
    out = json.loads(result.read_text())
    assert out["attached"] is True
    codes = {(d["code"], d["lnum"], d["col"]) for d in out["diagnostics"]}
    assert ("IL102", 4, 25) in codes  # `chanel`, line 5 column 26 as `interlock check` prints it
    assert "task notify(channel: str)" in out["hover"]
    (loc,) = out["definition"]
    assert loc["uri"] == f.resolve().as_uri() and loc["range"]["start"] == {"line": 7, "character": 7}
    assert out["formatted"].splitlines()[3] == "  step work {"
    assert "    start" in out["formatted"].splitlines()
