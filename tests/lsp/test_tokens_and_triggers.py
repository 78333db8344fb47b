"""Two editor features over the protocol: completion right after `on ` in a step — the handler still empty, the
step's closing brace on the next line, the document never having parsed — lists the triggers the step can still
handle; and semantic tokens (full document) classify every token with LSP's standard types, at known positions,
in every position encoding."""

from __future__ import annotations

from pathlib import Path

import pytest
from lsprotocol import types as lsp

from interlock.lsp.tokens import TOKEN_MODIFIERS, TOKEN_TYPES, decode

from .conftest import PROFILES, session

pytestmark = pytest.mark.asyncio

TYPING = ('workflow w "W" {\n'
          '  step work "Work" {\n'
          "    start\n"
          "    on on_enter { auto_start_agent }\n"
          "    on \n"  # the cursor goes right after `on `: the handler not begun, the brace on the next line
          "  }\n"
          '  step done "Done" { terminal }\n'
          "}\n")

DOC = """\
# a comment
trigger on_deploy (environment: str)
task notify (channel: str) on on_enter, on_deploy
entry { dispatch notify }
workflow w "W \u00e9" {
  step work {
    start
    prompt \"\"\"
      two
      lines
      \"\"\"
    on on_enter { notify(channel: "ops") }
    on on_turn_complete { move_to_step(done) when quorum(reviewer, n_approve(2)) }
  }
  step done { terminal }
}
dispatch d on on_deploy {
  event agent_failure
  skip quiet silent when event.session_id == "" and not host.engine_ready
  operation "op:{event.session_id}"
  payload { environment = event.error_message ?? "x" }
}
"""


@pytest.mark.parametrize("profile", PROFILES)
async def test_completion_after_on_in_a_step_lists_its_triggers(tmp_path: Path, profile: str) -> None:
    f = tmp_path / "typing.wf"
    f.write_text(TYPING)
    async with session(profile) as s:
        uri = s.open(f)  # opened as it is: it has never parsed, so no earlier analysis can help
        await s.diagnostics(uri, 1)
        found = await s.client.text_document_completion_async(lsp.CompletionParams(
            text_document=lsp.TextDocumentIdentifier(uri=uri), position=lsp.Position(line=4, character=7)))
    assert isinstance(found, lsp.CompletionList)
    labels = [i.label for i in found.items]
    assert {"on_turn_complete", "on_comment", "on_agent_error", "on_exit"} <= set(labels)
    assert "on_enter" not in labels  # the step handles it already: a second handler is an error
    assert not {"workflow", "step", "when"} & set(labels)  # triggers, not keywords
    assert all(i.kind == lsp.CompletionItemKind.Event for i in found.items)


async def test_completion_after_on_lists_every_trigger_outside_a_step(tmp_path: Path) -> None:
    text = "task ping on \n"
    f = tmp_path / "kind.wf"
    f.write_text(text)
    async with session() as s:
        uri = s.open(f)
        await s.diagnostics(uri, 1)
        found = await s.client.text_document_completion_async(lsp.CompletionParams(
            text_document=lsp.TextDocumentIdentifier(uri=uri), position=lsp.Position(line=0, character=13)))
    assert isinstance(found, lsp.CompletionList)
    assert {"on_enter", "on_comment"} <= {i.label for i in found.items}


def tokens_at(text: str, data: list[int]) -> dict[tuple[int, str], tuple[str, tuple[str, ...]]]:
    """(line, token text) -> (type, modifiers); positions are UTF-16 here (the text is BMP-only)."""
    lines = text.split("\n")
    out = {}
    for line, start, length, kind, mods in decode(data):
        out[(line, lines[line][start:start + length])] = (kind, mods)
    return out


@pytest.mark.parametrize("encoding", ["utf-16", "utf-8", "utf-32"])
async def test_semantic_tokens_classify_the_document(tmp_path: Path, encoding: str) -> None:
    f = tmp_path / "doc.wf"
    f.write_text(DOC)
    async with session("neovim", encoding) as s:
        uri = s.open(f)
        await s.diagnostics(uri, 1)
        result = await s.client.text_document_semantic_tokens_full_async(lsp.SemanticTokensParams(
            text_document=lsp.TextDocumentIdentifier(uri=uri)))
        assert s.encoding == encoding
    assert result is not None
    data = list(result.data)
    assert len(data) % 5 == 0
    # the title `"W é"`: five characters, six bytes in UTF-8
    title = next(t for t in decode(data) if t[0] == 4 and t[3] == "string")
    assert title[1:3] == (11, 6 if encoding == "utf-8" else 5)
    found = tokens_at(DOC, data)
    expected = {
        (0, "# a comment"): ("comment", ()),
        (1, "trigger"): ("keyword", ()),
        (1, "on_deploy"): ("event", ("declaration",)),
        (1, "environment"): ("parameter", ("declaration",)),
        (1, "str"): ("type", ()),
        (2, "notify"): ("function", ("declaration",)),
        (2, "on_enter"): ("event", ("defaultLibrary",)),
        (4, "w"): ("namespace", ("declaration",)),
        (5, "work"): ("enumMember", ("declaration",)),
        (7, "prompt"): ("keyword", ()),
        (8, "two"): ("string", ()),  # a block string: one token per line
        (9, "lines"): ("string", ()),
        (11, "notify"): ("function", ()),
        (11, "channel"): ("parameter", ()),
        (11, '"ops"'): ("string", ()),
        (12, "move_to_step"): ("function", ("defaultLibrary",)),
        (12, "done"): ("enumMember", ()),
        (12, "reviewer"): ("variable", ("defaultLibrary",)),
        (12, "n_approve"): ("enumMember", ()),
        (12, "2"): ("number", ()),
        (16, "d"): ("function", ("declaration",)),
        (17, "agent_failure"): ("type", ("defaultLibrary",)),
        (18, "quiet"): ("enumMember", ()),
        (18, "session_id"): ("property", ()),
        (18, "=="): ("operator", ()),
        (18, "host"): ("variable", ()),
        (20, "??"): ("operator", ()),
    }
    for where, want in expected.items():
        assert found.get(where) == want, (where, found.get(where))


async def test_the_legend_is_lsps_standard_types(tmp_path: Path) -> None:
    async with session() as s:
        caps = s.capabilities
    assert caps is not None and caps.semantic_tokens_provider is not None
    legend = caps.semantic_tokens_provider.legend
    assert tuple(legend.token_types) == TOKEN_TYPES and tuple(legend.token_modifiers) == TOKEN_MODIFIERS
    standard = {t.value for t in lsp.SemanticTokenTypes}
    assert set(TOKEN_TYPES) <= standard
    assert set(TOKEN_MODIFIERS) <= {m.value for m in lsp.SemanticTokenModifiers}


async def test_a_text_that_does_not_parse_still_gets_its_lexical_tokens(tmp_path: Path) -> None:
    f = tmp_path / "broken.wf"
    f.write_text(TYPING)
    async with session() as s:
        uri = s.open(f)
        await s.diagnostics(uri, 1)
        result = await s.client.text_document_semantic_tokens_full_async(lsp.SemanticTokensParams(
            text_document=lsp.TextDocumentIdentifier(uri=uri)))
    assert result is not None
    found = tokens_at(TYPING, list(result.data))
    assert found[(0, "workflow")] == ("keyword", ()) and found[(0, '"W"')] == ("string", ())
