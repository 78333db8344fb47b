"""Golden diagrams: `interlock graph` of every example (and of tests/graph/fixtures/*.wf) is pinned in
tests/golden/graph/<name>.{mmd,dot}; `pytest --update-golden` rewrites them.  The committed pictures,
docs/graphs/<example>.png, are that DOT rendered by `dot -Tpng` (PNG bytes vary across Graphviz versions, so each
picture carries the digest of its DOT, and that is what is compared)."""

from __future__ import annotations

import hashlib
import struct
import zlib
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


REGENERATE = 'for f in examples/*.wf; do interlock graph "$f" --format png -o "docs/graphs/$(basename "$f" .wf).png"; done'


def test_the_committed_pictures_are_drawn_from_todays_dot(tmp_path: Path) -> None:
    """docs/graphs/NAME.png is `interlock graph examples/NAME.wf --format png` of every example, up to date: PNG bytes
    differ between Graphviz builds, so each picture carries the sha256 of the DOT it was drawn from (a PNG text
    chunk `interlock graph` writes), and that must be the sha256 of the DOT the example draws today."""
    from interlock.tools.graph import png_stamp

    pictures = ROOT / "docs" / "graphs"
    examples = sorted((ROOT / "examples").glob("*.wf"))
    assert sorted(p.stem for p in pictures.glob("*.png")) == sorted(e.stem for e in examples)
    for example in examples:
        png = (pictures / f"{example.stem}.png").read_bytes()
        assert png.startswith(PNG_MAGIC), f"docs/graphs/{example.stem}.png is not a PNG"
        dot = graph(example, "dot", tmp_path).encode("utf-8")
        assert png_stamp(png) == hashlib.sha256(dot).hexdigest(), (
            f"docs/graphs/{example.stem}.png is stale: regenerate the pictures with the command in docs/graph.md")
    # the command docs/graph.md gives regenerates every picture; the README shows one of them
    assert REGENERATE in (ROOT / "docs" / "graph.md").read_text(encoding="utf-8")
    assert "](docs/graphs/office_default.png)" in (ROOT / "README.md").read_text(encoding="utf-8")


def test_a_png_carries_the_digest_of_its_dot(tmp_path: Path, dot_exe: str) -> None:
    from interlock.tools.graph import png_stamp

    source = ROOT / "examples" / "kanban.wf"
    out = tmp_path / "k.png"
    assert main(["graph", str(source), "-o", str(out)]) == 0
    png = out.read_bytes()
    assert png_stamp(png) == hashlib.sha256(graph(source, "dot", tmp_path).encode()).hexdigest()
    # the stamped picture is still a PNG Graphviz's own tools read: every chunk's CRC holds
    at = 8
    while at < len(png):
        (size,) = struct.unpack(">I", png[at:at + 4])
        body = png[at + 4:at + 8 + size]
        (crc,) = struct.unpack(">I", png[at + 8 + size:at + 12 + size])
        assert crc == zlib.crc32(body) & 0xFFFFFFFF, body[:4]
        at += 12 + size
    assert at == len(png) and png.endswith(b"IEND\xaeB`\x82")
