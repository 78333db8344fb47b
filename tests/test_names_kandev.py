"""Everything a user reads names kandev as kandev (ADR 0043): the word "seed" (and "seeds", "seed's"), in any case,
appears nowhere in the package's folders, the docs, the examples, README.md or CHANGELOG.md — except in the ADRs
written before kandev was named throughout, which are history and are never amended (ADR 0043 says what they mean).

The match is the whole word: `seeded`, `seed_tasks` or `reseed` are other words.  Binary files and editor packages
(node_modules) are skipped.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
SCANNED = ("dsl", "compiler", "runtime", "stores", "interlock", "grammars", "schemas", "editors", "docs", "examples",
           "README.md", "CHANGELOG.md")
ALLOWED = {  # ADRs are superseded, never amended: these predate the rule and keep their words
    "docs/decisions/0008-runtime-semantics.md",
    "docs/decisions/0033-host-metadata-and-block-strings.md",
    "docs/decisions/0034-kandev-import-export.md",
}
WORD = re.compile(r"\bseed(?:s|'s)?\b", re.IGNORECASE)
SKIPPED_DIRS = {"__pycache__", "node_modules"}


def _files() -> list[Path]:
    out: list[Path] = []
    for name in SCANNED:
        path = ROOT / name
        candidates = [path] if path.is_file() else sorted(p for p in path.rglob("*") if p.is_file())
        out += [p for p in candidates if not SKIPPED_DIRS & set(p.relative_to(ROOT).parts)]
    return out


def hits(text: str) -> list[tuple[int, str]]:
    """(line number, line) of every whole-word "seed" in `text`."""
    return [(n, line.strip()) for n, line in enumerate(text.splitlines(), start=1) if WORD.search(line)]


def test_no_user_facing_text_calls_kandev_the_seed() -> None:
    found: list[str] = []
    for path in _files():
        rel = path.relative_to(ROOT).as_posix()
        if rel in ALLOWED:
            continue
        try:
            text = path.read_text(encoding="utf-8")
        except UnicodeDecodeError:
            continue  # an image
        found += [f"{rel}:{n}: {line}" for n, line in hits(text)]
    assert found == [], "name kandev (ADR 0043):\n" + "\n".join(found)


@pytest.mark.parametrize(("text", "hit"), [
    ("the seed system's YAML", True), ("The Seed drops it", True), ("both seeds name", True),
    ("seeded at random", False), ("seed_tasks(store)", False), ("reseed the pool", False),
])
def test_the_match_is_the_whole_word(text: str, hit: bool) -> None:
    assert bool(hits(text)) is hit


def test_the_allowed_files_exist_and_still_need_it() -> None:
    """An entry of the allow-list that no longer exists or no longer says it is stale: remove it."""
    for rel in ALLOWED:
        assert hits((ROOT / rel).read_text(encoding="utf-8")), rel
