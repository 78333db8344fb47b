"""Files the client did not send: every read the server makes of one goes through `check`'s reader (a regular
file, a size bound) and must lie inside a workspace folder; anything else is answered with an LSP error (or
skipped by the workspace-symbol search), and the server goes on answering."""

from __future__ import annotations

import asyncio
import os
from collections.abc import Awaitable
from pathlib import Path
from typing import TypeVar

import pytest
from lsprotocol import types as lsp
from pygls.exceptions import JsonRpcException

from .conftest import session
from .test_server import GOOD, doc, pos

pytestmark = [pytest.mark.asyncio, pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="needs FIFOs")]

T = TypeVar("T")
ANSWER = 30.0
"""Seconds a request may take before the test fails: a server blocked on a read never answers at all."""


async def answered(request: Awaitable[T]) -> T:
    try:
        return await asyncio.wait_for(request, ANSWER)
    except TimeoutError:
        raise AssertionError(f"no answer in {ANSWER} s: the server is blocked") from None


def hover(uri: str, text: str = GOOD, needle: str = "notify") -> lsp.HoverParams:
    return lsp.HoverParams(text_document=doc(uri), position=pos(text, needle, 1, 1))


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    root = tmp_path / "ws"
    root.mkdir()
    (root / "good.wf").write_text(GOOD)
    os.mkfifo(root / "x.wf")
    return root


async def test_hover_and_definition_on_a_fifo_are_refused_and_the_server_goes_on(workspace: Path) -> None:
    fifo = (workspace / "x.wf").as_uri()
    async with session(root=workspace) as s:
        uri = s.open(workspace / "good.wf")
        await s.diagnostics(uri, 1)
        with pytest.raises(JsonRpcException, match="FIFO"):
            await answered(s.client.text_document_hover_async(hover(fifo)))
        with pytest.raises(JsonRpcException, match="FIFO"):
            await answered(s.client.text_document_definition_async(lsp.DefinitionParams(
                text_document=doc(fifo), position=lsp.Position(line=0, character=0))))
        assert await answered(s.client.text_document_hover_async(hover(uri))) is not None


async def test_formatting_a_device_is_refused(workspace: Path) -> None:
    async with session(root=workspace) as s:
        params = lsp.DocumentFormattingParams(text_document=doc("file:///dev/zero"),
                                              options=lsp.FormattingOptions(tab_size=2, insert_spaces=True))
        with pytest.raises(JsonRpcException, match="outside the workspace"):
            await answered(s.client.text_document_formatting_async(params))
    async with session(root=Path("/dev")) as s:  # even with /dev as the workspace, a device is never read
        with pytest.raises(JsonRpcException, match="character device"):
            await answered(s.client.text_document_formatting_async(params))


async def test_a_file_outside_the_workspace_is_refused_and_one_inside_is_read(workspace: Path,
                                                                              tmp_path: Path) -> None:
    outside = tmp_path / "outside.wf"
    outside.write_text(GOOD)
    (workspace / "link.wf").symlink_to(outside)
    async with session(root=workspace) as s:
        for uri in (outside.as_uri(), (workspace / "link.wf").as_uri()):
            with pytest.raises(JsonRpcException, match="outside the workspace"):
                await answered(s.client.text_document_hover_async(hover(uri)))
        inside = await answered(s.client.text_document_hover_async(hover((workspace / "good.wf").as_uri())))
        assert inside is not None and "task" in str(inside.contents)
    async with session() as s:  # no workspace folder: nothing unsent is read
        with pytest.raises(JsonRpcException, match="no workspace folder"):
            await answered(s.client.text_document_hover_async(hover((workspace / "good.wf").as_uri())))


async def test_a_file_too_large_is_refused(workspace: Path) -> None:
    big = workspace / "big.wf"
    big.write_text("// filler\n" * 200_000)  # 2 MB, over the server's bound for unsent files
    async with session(root=workspace) as s:
        with pytest.raises(JsonRpcException, match="limit"):
            await answered(s.client.text_document_formatting_async(lsp.DocumentFormattingParams(
                text_document=doc(big.as_uri()), options=lsp.FormattingOptions(tab_size=2, insert_spaces=True))))


async def test_workspace_symbols_skip_a_fifo_and_find_the_rest(workspace: Path) -> None:
    async with session(root=workspace) as s:
        found = await answered(s.client.workspace_symbol_async(lsp.WorkspaceSymbolParams(query="review")))
        assert found is not None
        assert {Path(f.location.uri).name for f in found if isinstance(f, lsp.SymbolInformation)} == {"good.wf"}
