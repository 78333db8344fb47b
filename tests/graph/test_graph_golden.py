"""Golden diagrams: `interlock graph` of every example (and of tests/graph/fixtures/*.wf) is pinned in
tests/golden/graph/<name>.{mmd,dot}; `pytest --update-golden` rewrites them.  The committed README picture,
docs/office_default.png, is that DOT rendered by `dot -Tpng` (PNG bytes vary across Graphviz versions, so the
DOT is what is compared)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from interlock.cli import main

ROOT = Path(__file__).resolve().parents[2]
GOLDEN = ROOT / "tests" / "golden" / "graph"
SOURCES = sorted([*(ROOT / "examples").glob("*.wf"), *(Path(__file__).parent / "fixtures").glob("*.wf")])
FORMATS = {"mmd": "mermaid", "dot": "dot"}
PNG_MAGIC = b"\x89PNG\r\n\x1a\n"


def graph(source: Path, fmt: str, tmp_path: Path) -> str:
    out = tmp_path / f"out.{fmt}"
    assert main(["graph", str(source), "--format", fmt, "-o", str(out)]) == 0
    return out.read_text(encoding="utf-8")


@pytest.mark.parametrize("suffix", sorted(FORMATS))
@pytest.mark.parametrize("source", SOURCES, ids=[s.stem for s in SOURCES])
def test_golden(source: Path, suffix: str, tmp_path: Path, request: pytest.FixtureRequest) -> None:
    actual = graph(source, FORMATS[suffix], tmp_path)
    expected = GOLDEN / f"{source.stem}.{suffix}"
    if request.config.getoption("--update-golden"):
        GOLDEN.mkdir(parents=True, exist_ok=True)
        expected.write_text(actual, encoding="utf-8")
    assert expected.is_file(), f"{expected} is missing: run pytest --update-golden"
    assert actual == expected.read_text(encoding="utf-8")


def test_no_stale_goldens() -> None:
    expected = {f"{s.stem}.{suffix}" for s in SOURCES for suffix in FORMATS}
    assert {p.name for p in GOLDEN.iterdir()} == expected


def test_the_readme_picture_is_the_office_default_golden_rendered() -> None:
    png = ROOT / "docs" / "office_default.png"
    assert png.read_bytes().startswith(PNG_MAGIC), "docs/office_default.png is not a PNG"
    # the command docs/graph.md gives to regenerate it draws the pinned DOT
    command = re.search(r"^interlock graph examples/office_default\.wf (.*)-o docs/office_default\.png$",
                        (ROOT / "docs" / "graph.md").read_text(encoding="utf-8"), re.MULTILINE)
    assert command is not None, "docs/graph.md does not show the command that regenerates the picture"
    assert command.group(1).split() == ["--format", "png"]
    assert (GOLDEN / "office_default.dot").is_file()
