"""Install commands a reader is shown work: interlock is not on a package index, so an extra is installed from
the checkout (`pip install -e '.[lsp]'`), never as `pip install 'interlock[lsp]'`, in the README, the docs, the
editor packages and the CLI's own messages.  (The changelog and the ADRs are history, and are left as written.)"""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
FROM_AN_INDEX = re.compile(r"pip install\s+['\"]?interlock\[")


def _read_by_users() -> list[Path]:
    files = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
    files += [p for p in sorted((ROOT / "editors").rglob("*")) if p.is_file() and "node_modules" not in p.parts
              and p.suffix in (".json", ".md", ".lua", ".el", ".toml", ".ts", ".js")]
    files += sorted((ROOT / "interlock").rglob("*.py"))
    return files


def test_no_install_command_names_a_package_index_release() -> None:
    found = [f"{p.relative_to(ROOT)}:{n}" for p in _read_by_users()
             for n, line in enumerate(p.read_text(encoding="utf-8", errors="replace").splitlines(), 1)
             if FROM_AN_INDEX.search(line) or "'interlock[lsp]'" in line]
    assert found == []


def test_the_lsp_extra_is_shown_as_a_checkout_install() -> None:
    for path in (ROOT / "README.md", ROOT / "docs" / "editors.md", ROOT / "interlock" / "tools" / "lsp.py"):
        assert "pip install -e '.[lsp]'" in path.read_text(encoding="utf-8"), path
