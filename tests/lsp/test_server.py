"""`interlock lsp` over stdio, driven by pytest-lsp's client under the VS Code, Neovim and Emacs profiles:
every feature, the debounce and version order, and each position encoding."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from pathlib import Path

import pytest
from lsprotocol import types as lsp
from pygls.exceptions import JsonRpcException

from interlock.compiler import compile_source
from interlock.dsl import SourceFile

from .conftest import PROFILES, session

pytestmark = pytest.mark.asyncio

GOOD = """\
trigger on_deploy (environment: str, version: str)
role release_manager
task notify (channel: str, text: str = "") on on_enter, on_deploy
entry { dispatch notify }
record build { id: str  ok: bool }

workflow w "W" {
  step work "Work" {
    start
    stage work
    on on_enter { notify(channel: "a") }
    on on_turn_complete {
      move_to_step(review) when quorum(reviewer, all_approve)
    }
  }
  step review "Review" {
    pull_from work
    on on_turn_complete { move_to_step(work) }
  }
  step done "Done" { manual_move  terminal }
}
"""


def pos(text: str, needle: str, nth: int = 0, delta: int = 0) -> lsp.Position:
    """The UTF-16 position of the `nth` occurrence of `needle` (+ `delta` characters; ASCII lines)."""
    at = -1
    for _ in range(nth + 1):
        at = text.index(needle, at + 1)
    at += delta
    line = text.count("\n", 0, at)
    return lsp.Position(line=line, character=at - (text.rfind("\n", 0, at) + 1))


def doc(uri: str) -> lsp.TextDocumentIdentifier:
    return lsp.TextDocumentIdentifier(uri=uri)


@pytest.fixture
def good(tmp_path: Path) -> Path:
    f = tmp_path / "good.wf"
    f.write_text(GOOD)
    return f


@pytest.mark.parametrize("profile", PROFILES)
async def test_diagnostics_match_check(tmp_path: Path, profile: str) -> None:
    text = GOOD.replace("notify(channel", "notify(chanel").replace("entry { dispatch notify }\n", "")
    f = tmp_path / "bad.wf"
    f.write_text(text)
    expected = compile_source(SourceFile(str(f), text), search_dir=tmp_path).diagnostics
    async with session(profile) as s:
        uri = s.open(f)
        got = await s.diagnostics(uri, 1)
    assert [(d.code, d.message.split("\n")[0]) for d in got] == [(d.code, d.message) for d in expected]
    assert {d.code for d in got} == {"IL102", "IL201", "IL306"}
    unknown = next(d for d in got if d.code == "IL102")
    assert unknown.range.start == pos(text, "chanel") and unknown.range.end == pos(text, "chanel", delta=6)
    assert unknown.severity == lsp.DiagnosticSeverity.Error
    assert unknown.code_description is not None
    assert unknown.code_description.href.endswith("docs/diagnostics.md#il102-unknown-parameter")
    assert "did you mean `channel`?" in unknown.message


async def test_labels_are_related_information(tmp_path: Path) -> None:
    f = tmp_path / "dup.wf"
    f.write_text("role a\nrole a\n")
    async with session() as s:
        uri = s.open(f)
        (d,) = [d for d in await s.diagnostics(uri) if d.code == "IL110"]
    assert d.related_information is not None
    (info,) = d.related_information
    assert info.location.uri == uri and info.location.range.start == lsp.Position(line=0, character=5)
    assert info.message == "first declared here"


async def test_burst_publishes_once_newest_version_and_close_clears(good: Path) -> None:
    # a debounce of 2 s: the burst is sent at once, but a busy machine may stall the server between two changes
    async with session(env={"INTERLOCK_LSP_DEBOUNCE": "2"}) as s:
        uri = s.open(good)
        await s.diagnostics(uri, 1)
        s.published.clear()
        for i in range(8):  # a burst well inside the debounce
            s.change(uri, GOOD.replace("chan", "chan" + "x" * (i + 1), 1) if i % 2 else GOOD.replace('"a"', "1"))
        last = s.versions[uri]
        await s.diagnostics(uri, last)
        await asyncio.sleep(0.4)
        assert [p.version for p in s.published if p.uri == uri] == [last]
        s.client.text_document_did_close(lsp.DidCloseTextDocumentParams(text_document=doc(uri)))
        await asyncio.sleep(0.4)
    assert s.published[-1].uri == uri and not s.published[-1].diagnostics and s.published[-1].version is None


async def test_versions_never_go_backwards(good: Path) -> None:
    async with session() as s:
        uri = s.open(good)
        for _ in range(5):
            s.change(uri, GOOD.replace("work", "wrok", 1))
            await asyncio.sleep(0.06 + 0.05 * (s.versions[uri] % 3))
        await s.diagnostics(uri, s.versions[uri])
        seen = [p.version for p in s.published if p.uri == uri]
    assert seen == sorted(seen) and len(seen) == len(set(seen))


async def test_incremental_sync(good: Path) -> None:
    async with session() as s:
        uri = s.open(good)
        await s.diagnostics(uri, 1)
        start = pos(GOOD, "channel", 1)
        s.change(uri, "chanel", lsp.Range(start=start, end=lsp.Position(line=start.line,
                                                                         character=start.character + 7)))
        (d,) = [d for d in await s.diagnostics(uri) if d.code == "IL102"]
        assert d.range.start == start
        s.change(uri, "channel", d.range)
        assert await s.diagnostics(uri) == []


async def test_use_dependents_rechecked(tmp_path: Path) -> None:
    lib = tmp_path / "lib.wf"
    lib.write_text("role shared_role\n")
    main = tmp_path / "main.wf"
    text = "use lib\nworkflow w { step s { start terminal on on_enter { ensure_seats(role: shared_role) } } }\n"
    main.write_text(text)
    async with session() as s:
        main_uri = s.open(main)
        assert await s.diagnostics(main_uri, 1) == []
        lib_uri = s.open(lib)
        await s.diagnostics(lib_uri, 1)
        lib.write_text("role other_role\n")
        s.change(lib_uri, "role other_role\n")
        s.client.text_document_did_save(lsp.DidSaveTextDocumentParams(text_document=doc(lib_uri)))
        deadline = asyncio.get_running_loop().time() + 30  # the same patience as `Session.diagnostics`
        while asyncio.get_running_loop().time() < deadline:
            latest = [p for p in s.published if p.uri == main_uri][-1]
            if latest.diagnostics:
                break
            await asyncio.sleep(0.05)
    assert [d.code for d in latest.diagnostics] == ["IL104"]


# ---- positions -------------------------------------------------------------------------------

TRICKY = 'task t (x: str = "😀漢") on on_enter\r\nworkflow w { step s { start on on_enter { t(y: "😀😀") } } }\r\n'


@pytest.mark.parametrize(("encoding", "col"), [("utf-16", 50), ("utf-8", 54), ("utf-32", 49)])
async def test_position_encodings(tmp_path: Path, encoding: str, col: int) -> None:
    # line 2 (after a CRLF line holding an astral and a CJK character) has `漢😀` in the title before the
    # misspelt `y`, which is code point 49: 50 UTF-16 units (😀 is a surrogate pair), 54 UTF-8 bytes.
    text = TRICKY.replace("workflow w", "workflow w \"漢😀\"")
    f = tmp_path / "enc.wf"
    f.write_bytes(text.encode())
    async with session("visual-studio-code", encoding) as s:
        assert s.encoding == encoding
        uri = s.open(f, text)
        diags = [d for d in await s.diagnostics(uri) if d.code == "IL102"]
        assert len(diags) == 1
        assert diags[0].range.start == lsp.Position(line=1, character=col)
        assert diags[0].range.end == lsp.Position(line=1, character=col + 1)
        hover = await s.client.text_document_hover_async(lsp.HoverParams(text_document=doc(uri),
                                                                          position=diags[0].range.start))
        assert hover is not None and "IL102" in str(hover.contents)
        edits = await s.client.text_document_formatting_async(lsp.DocumentFormattingParams(
            text_document=doc(uri), options=lsp.FormattingOptions(tab_size=2, insert_spaces=True)))
        assert edits


# ---- requests ------------------------------------------------------------------------------

@pytest.mark.parametrize("profile", PROFILES)
async def test_hover(good: Path, profile: str) -> None:
    async with session(profile) as s:
        uri = s.open(good)
        await s.diagnostics(uri, 1)

        async def hover(needle: str, nth: int = 0) -> str:
            h = await s.client.text_document_hover_async(lsp.HoverParams(text_document=doc(uri),
                                                                         position=pos(GOOD, needle, nth, 1)))
            assert h is not None, needle
            assert isinstance(h.contents, lsp.MarkupContent)
            return h.contents.value

        kind = await hover("notify", 1)
        assert "task notify(channel: str, text: str = \"\")" in kind
        assert "`on_enter`, `on_deploy`" in kind and "Entry policy: in `dispatch`" in kind
        assert "environment: str" in await hover("on_deploy")
        step = await hover("review", 0)
        assert 'step review "Review"' in step and "`pull_from work`" in step
        assert "role" in await hover("reviewer")
        assert "every seat" in await hover("all_approve")
        assert "ok: bool" in await hover("build")
        assert "Parameter of kind `notify`" in await hover("channel", 1)


async def test_definition_references_into_prelude(good: Path) -> None:
    async with session("neovim") as s:
        uri = s.open(good)
        await s.diagnostics(uri, 1)

        async def definition(needle: str, nth: int = 0, delta: int = 1) -> list[lsp.Location]:
            found = await s.client.text_document_definition_async(lsp.DefinitionParams(
                text_document=doc(uri), position=pos(GOOD, needle, nth, delta)))
            assert isinstance(found, list)
            return found

        (step,) = await definition("(review)")
        assert step.uri == uri and step.range.start == pos(GOOD, "step review", delta=5)
        (pulled,) = await definition("pull_from work", delta=10)
        assert pulled.range.start == pos(GOOD, "step work", delta=5)
        (kind,) = await definition(" notify(", delta=1)
        assert kind.range.start == pos(GOOD, "notify")
        (std,) = await definition("move_to_step")
        assert std.uri.endswith("compiler/prelude/std.wf")
        assert (await definition("reviewer"))[0].uri.endswith("std.wf")
        (trigger,) = await definition("on_deploy", 1, 2)
        assert trigger.range.start == pos(GOOD, "on_deploy")
        refs = await s.client.text_document_references_async(lsp.ReferenceParams(
            text_document=doc(uri), position=pos(GOOD, "step work", delta=6),
            context=lsp.ReferenceContext(include_declaration=True)))
        assert refs is not None and len(refs) == 3


async def test_completion(good: Path) -> None:
    async with session("emacs") as s:
        uri = s.open(good)
        await s.diagnostics(uri, 1)

        async def complete(text: str, at: lsp.Position) -> list[str]:
            s.change(uri, text)
            found = await s.client.text_document_completion_async(lsp.CompletionParams(text_document=doc(uri),
                                                                                       position=at))
            assert isinstance(found, lsp.CompletionList)
            return [i.label for i in found.items]

        t = GOOD.replace('on on_enter { notify(channel: "a") }', 'on on_enter { notify(channel: "a") }\n    on ')
        assert {"on_deploy", "on_comment"} <= set(await complete(t, pos(t, "    on ", delta=7)))
        t = GOOD.replace('notify(channel: "a")', 'notify(channel: "a") ')
        labels = await complete(t, pos(t, 'notify(channel: "a") ', delta=21))
        assert "notify" in labels and "ensure_seats" in labels and "move_to_step" not in labels  # on_enter
        t = GOOD.replace('notify(channel: "a")', 'notify(channel: "a", ')
        assert await complete(t, pos(t, '"a", ', delta=5)) == ["text:"]
        t = GOOD.replace("move_to_step(work)", "move_to_step()")
        assert set(await complete(t, pos(t, "move_to_step()", delta=13))) >= {"work", "review"}
        t = GOOD.replace("quorum(reviewer, all_approve)", "quorum(")
        assert "release_manager" in await complete(t, pos(t, "quorum(", delta=7))
        t = GOOD.replace("quorum(reviewer, all_approve)", "quorum(reviewer, ")
        assert "majority_approve" in await complete(t, pos(t, "quorum(reviewer, ", delta=17))
        t = GOOD.replace("stage work", "stage ")
        assert set(await complete(t, pos(t, "stage ", delta=6))) == {"work", "review", "approval", "custom"}
        t = GOOD + "dispatch d on on_deploy {\n  event build\n  skip x silent when event.\n}\n"
        assert set(await complete(t, pos(t, "event.", delta=6))) == {"id", "ok"}
        assert "workflow" in await complete(GOOD, lsp.Position(line=5, character=0))


async def test_symbols(good: Path) -> None:
    async with session() as s:
        uri = s.open(good)
        await s.diagnostics(uri, 1)
        symbols = await s.client.text_document_document_symbol_async(lsp.DocumentSymbolParams(text_document=doc(uri)))
        assert symbols is not None
        tree = {sym.name: sym for sym in symbols if isinstance(sym, lsp.DocumentSymbol)}
        wf = tree["w"]
        assert [st.name for st in wf.children or ()] == ["work", "review", "done"]
        assert [h.name for h in (wf.children or [])[0].children or ()] == ["on_enter", "on_turn_complete"]
        assert [f.name for f in tree["build"].children or ()] == ["id", "ok"]
        found = await s.client.workspace_symbol_async(lsp.WorkspaceSymbolParams(query="rev"))
        assert found is not None and [x.name for x in found] == ["review"]


async def test_workspace_symbols_cover_the_workspaces_files_that_are_not_open(tmp_path: Path) -> None:
    (tmp_path / "open.wf").write_text('workflow opened "O" { step inbox "I" { start } }\n')
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "closed.wf").write_text('workflow shut "S" { step review_queue "R" { start } }\n')
    (tmp_path / ".hidden").mkdir()  # hidden folders (.git, .venv) are not searched
    (tmp_path / ".hidden" / "x.wf").write_text('workflow ghost "G" { step review_ghost "R" { start } }\n')
    async with session(root=tmp_path) as s:
        uri = s.open(tmp_path / "open.wf")
        await s.diagnostics(uri, 1)
        found = await s.client.workspace_symbol_async(lsp.WorkspaceSymbolParams(query="review"))
        assert found is not None
        assert [(x.name, x.container_name, x.location.uri) for x in found] == [  # type: ignore[union-attr]
            ("review_queue", "shut", (tmp_path / "sub" / "closed.wf").as_uri())]
        (tmp_path / "sub" / "closed.wf").write_text('workflow shut "S" { step review_later_on "R" { start } }\n')
        found = await s.client.workspace_symbol_async(lsp.WorkspaceSymbolParams(query="review"))
        assert found is not None and [x.name for x in found] == ["review_later_on"]  # re-read once changed (its size changed too)


async def test_rename(good: Path) -> None:
    async with session() as s:
        uri = s.open(good)
        await s.diagnostics(uri, 1)
        ready = await s.client.text_document_prepare_rename_async(lsp.PrepareRenameParams(
            text_document=doc(uri), position=pos(GOOD, "pull_from work", delta=11)))
        assert isinstance(ready, lsp.PrepareRenamePlaceholder) and ready.placeholder == "work"
        edit = await s.client.text_document_rename_async(lsp.RenameParams(
            text_document=doc(uri), position=pos(GOOD, "pull_from work", delta=11), new_name="doing"))
        assert edit is not None and edit.changes is not None
        assert len(edit.changes[uri]) == 3
        for refused in ("move_to_step", "reviewer"):  # prelude names
            assert await s.client.text_document_prepare_rename_async(lsp.PrepareRenameParams(
                text_document=doc(uri), position=pos(GOOD, refused, 0, 1))) is None
        for bad in ("step", "9x", "a b"):
            with pytest.raises(JsonRpcException):
                await s.client.text_document_rename_async(lsp.RenameParams(
                    text_document=doc(uri), position=pos(GOOD, "release_manager"), new_name=bad))
        edit = await s.client.text_document_rename_async(lsp.RenameParams(
            text_document=doc(uri), position=pos(GOOD, "on_deploy"), new_name="on_ship"))
        assert edit is not None and edit.changes is not None and len(edit.changes[uri]) == 2


def apply(text: str, edits: Sequence[lsp.TextEdit]) -> str:
    lines = text.splitlines(keepends=True)
    offsets = [0]
    for line in lines:
        offsets.append(offsets[-1] + len(line))

    def off(p: lsp.Position) -> int:
        return offsets[p.line] + p.character if p.line < len(lines) else len(text)

    for e in sorted(edits, key=lambda e: (e.range.start.line, e.range.start.character), reverse=True):
        text = text[:off(e.range.start)] + e.new_text + text[off(e.range.end):]
    return text


async def test_formatting_minimal_edits(tmp_path: Path) -> None:
    from interlock.dsl.format import format_source

    messy = GOOD.replace("    start\n", "        start\n").replace("role release_manager", "role   release_manager")
    f = tmp_path / "messy.wf"
    f.write_text(messy)
    opts = lsp.FormattingOptions(tab_size=2, insert_spaces=True)
    async with session() as s:
        uri = s.open(f)
        edits = await s.client.text_document_formatting_async(lsp.DocumentFormattingParams(
            text_document=doc(uri), options=opts))
        assert edits is not None and len(edits) == 2
        assert apply(messy, edits) == format_source(messy).text
        s.change(uri, messy + "workflow {")
        assert not await s.client.text_document_formatting_async(lsp.DocumentFormattingParams(
            text_document=doc(uri), options=opts))


async def test_code_actions(tmp_path: Path) -> None:
    text = GOOD.replace("notify(channel", "notify(chanel").replace("entry { dispatch notify }\n", "")
    f = tmp_path / "fix.wf"
    f.write_text(text)
    async with session() as s:
        uri = s.open(f)
        diags = await s.diagnostics(uri, 1)
        whole = lsp.Range(start=lsp.Position(line=0, character=0), end=lsp.Position(line=99, character=0))
        actions = await s.client.text_document_code_action_async(lsp.CodeActionParams(
            text_document=doc(uri), range=whole, context=lsp.CodeActionContext(diagnostics=diags)))
        assert actions is not None
        by_title = {a.title: a for a in actions if isinstance(a, lsp.CodeAction)}
        assert set(by_title) == {"Replace with `channel`", "Add `notify` to the entry policy's `dispatch` list",
                                 "Add `notify` to the entry policy's `exclude` list"}
        for title in by_title:
            edit = by_title[title].edit
            assert edit is not None and edit.changes is not None
            fixed = apply(text, edit.changes[uri])
            remaining = {d.code for d in compile_source(SourceFile(str(f), fixed)).diagnostics}
            assert remaining == ({"IL102", "IL201"} if "entry" in title else {"IL306"})


async def test_a_fault_is_answered_and_the_next_request_works(good: Path) -> None:
    async with session(env={"INTERLOCK_LSP_FAULT": "hover"}) as s:
        uri = s.open(good)
        await s.diagnostics(uri, 1)
        params = lsp.HoverParams(text_document=doc(uri), position=pos(GOOD, "notify", 1, 1))
        with pytest.raises(JsonRpcException, match="injected fault"):
            await s.client.text_document_hover_async(params)
        assert await s.client.text_document_hover_async(params) is not None
