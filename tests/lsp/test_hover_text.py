"""The text hovers and completions show is the IR printer's (`interlock.dsl.printer`, ADR 0055): what the
language server shows of a declaration reads back as the source would, its strings escaped and its map keys quoted
as `interlock fmt` and the kandev bridge write them.  Called in process: pure functions of (analysis, position)."""

from __future__ import annotations

from lsprotocol import types as lsp

from interlock.dsl import ir, parse_bytes
from interlock.lsp.analysis import analyse
from interlock.lsp.convert import Locator
from interlock.lsp.features import hover

TEXT = """task notify(channel: str = "a\\tb\\u007f", data: map = {"a b": 1, "step": 2}) on on_comment
workflow w "W" {
  step review "Review" {
    start
    manual_move
    terminal
    on on_comment { notify }
  }
}
"""


def _hover(line: int, word: str) -> str:
    analysis = analyse("t.wf", TEXT, 1, None)
    col = TEXT.splitlines()[line].index(word) + 1
    found = hover(analysis, Locator(analysis, "file:///t.wf", "utf-16"), lsp.Position(line=line, character=col))
    assert found is not None and isinstance(found.contents, lsp.MarkupContent)
    return found.contents.value


def test_a_hover_writes_a_default_as_the_source_does() -> None:
    text = _hover(0, "notify")
    head = text.split("\n")[1]
    assert head == 'task notify(channel: str = "a\\tb\\u007f", data: map = {"a b": 1, "step": 2})', head
    assert "\t" not in text and "\x7f" not in text


def test_what_a_hover_shows_of_a_kind_parses_back_to_the_same_parameters() -> None:
    head = _hover(6, "notify").split("\n")[1]
    module, diagnostics = parse_bytes("h.wf", (head + " on on_comment\n").encode())
    assert module is not None and not diagnostics
    source, _ = parse_bytes("t.wf", TEXT.encode())
    assert source is not None
    shown, = (d for d in module.decls if getattr(d, "kind", "") != "workflow")
    declared = next(d for d in source.decls if d.kind == shown.kind)
    assert _meaning(shown) == _meaning(declared)


def _meaning(node: object) -> object:
    """A dumped IR node without its positions."""
    def strip(obj: object) -> object:
        if isinstance(obj, dict):
            return {k: strip(v) for k, v in obj.items() if not k.endswith("span")}
        return [strip(v) for v in obj] if isinstance(obj, list | tuple) else obj
    assert isinstance(node, ir.Node)
    return strip(node.model_dump()["params"])
