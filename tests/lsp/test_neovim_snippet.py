"""docs/editors.md's Neovim snippet, verbatim, on the Neovim the tests install (Debian's 0.7.2, headless): it
detects `.wf` files, starts and attaches `interlock lsp`, and Neovim's client receives the server's diagnostics and
semantic tokens — decoded here with the legend the server announced to Neovim, and checked at known positions.
Neovim 0.7 has no semantic highlighting, so the tokens are requested from Lua (tests/lsp/nvim_probe.lua) and what
is verified is the data Neovim's client gets, not colours on the screen.  Skips without `nvim`, except under CI=true.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[2]
DOCS = ROOT / "docs" / "editors.md"
PROBE = Path(__file__).with_name("nvim_probe.lua")
TEXT = """\
task notify (channel: str) on on_enter
entry { dispatch notify }
workflow w "W" {
  step work {
    start
    on on_enter { notify(chanel: "x") }
    on on_turn_complete { move_to_step(done) when quorum(reviewer, all_approve) }
  }
  step done { terminal }
}
"""


def snippet() -> str:
    """The first `lua` block of the Neovim section of docs/editors.md, as written there."""
    text = DOCS.read_text(encoding="utf-8")
    section = text[text.index("## Neovim"):]
    found = re.search(r"```lua\n(.*?)```", section, re.DOTALL)
    assert found is not None, "docs/editors.md has no lua block in its Neovim section"
    return found.group(1)


def decode(data: list[int], legend: dict[str, Any], lines: list[str]) -> dict[tuple[int, str], tuple[str, list[str]]]:
    out = {}
    line = start = 0
    for i in range(0, len(data), 5):
        d_line, d_start, length, kind, mods = data[i:i + 5]
        start = start + d_start if d_line == 0 else d_start
        line += d_line
        names = [m for b, m in enumerate(legend["tokenModifiers"]) if mods & (1 << b)]
        out[(line, lines[line][start:start + length])] = (legend["tokenTypes"][kind], names)
    return out


def test_the_documented_snippet_runs_verbatim_on_the_tested_neovim(tmp_path: Path) -> None:
    nvim = shutil.which("nvim")
    if nvim is None:
        if os.environ.get("CI") == "true":
            pytest.fail("not installed: Neovim (`nvim`), and CI=true requires it (apt-get install neovim)")
        pytest.skip("not installed: Neovim (`nvim`; apt-get install neovim)")
    init = tmp_path / "init.lua"
    init.write_text(snippet(), encoding="utf-8")
    source = tmp_path / "review.wf"
    source.write_text(TEXT, encoding="utf-8")
    out = tmp_path / "out.json"
    bin_dir = str(Path(sys.executable).parent)  # `interlock` on PATH, as the snippet expects
    env = {**os.environ, "PATH": bin_dir + os.pathsep + os.environ.get("PATH", ""), "INTERLOCK_NVIM_OUT": str(out),
           "XDG_CONFIG_HOME": str(tmp_path), "XDG_DATA_HOME": str(tmp_path), "XDG_STATE_HOME": str(tmp_path)}
    proc = subprocess.run([nvim, "--headless", "-n", "-i", "NONE", "-u", str(init), str(source),
                           "-c", f"luafile {PROBE}"], cwd=tmp_path, env=env, timeout=90, check=False,
                          capture_output=True, stdin=subprocess.DEVNULL)
    assert out.is_file(), proc.stdout.decode() + proc.stderr.decode()
    seen = json.loads(out.read_text(encoding="utf-8"))
    assert seen["filetype"] == "interlock"
    assert seen["attached"] is True and seen["clients"] == ["interlock"]
    assert {"code": "IL102", "lnum": 5, "col": 25} in seen["diagnostics"]  # `chanel`
    legend = seen["legend"]
    assert legend["tokenTypes"][:3] == ["keyword", "type", "function"]
    tokens = decode(seen["tokens"], legend, seen["lines"])
    expected = {
        (0, "task"): ("keyword", []),
        (0, "notify"): ("function", ["declaration"]),
        (0, "channel"): ("parameter", ["declaration"]),
        (0, "str"): ("type", []),
        (0, "on_enter"): ("event", ["defaultLibrary"]),
        (2, "w"): ("namespace", ["declaration"]),
        (2, '"W"'): ("string", []),
        (3, "work"): ("enumMember", ["declaration"]),
        (5, "notify"): ("function", []),
        (6, "move_to_step"): ("function", ["defaultLibrary"]),
        (6, "done"): ("enumMember", []),
        (6, "quorum"): ("keyword", []),
        (6, "reviewer"): ("variable", ["defaultLibrary"]),
        (6, "all_approve"): ("enumMember", []),
    }
    for where, want in expected.items():
        assert tokens.get(where) == want, (where, tokens.get(where))
