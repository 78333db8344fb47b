"""A real `interlock lsp` process driven over stdio by pytest-lsp's client, under a client profile (VS Code,
Neovim, Emacs capabilities as those editors send them) and a position encoding."""

from __future__ import annotations

import asyncio
import contextlib
import sys
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from pathlib import Path

from lsprotocol import types as lsp
from pytest_lsp import LanguageClient, client_capabilities
from pytest_lsp.client import make_test_lsp_client

INTERLOCK = str(Path(sys.executable).with_name("interlock"))
PROFILES = ("visual-studio-code", "neovim", "emacs")


@dataclass
class Session:
    client: LanguageClient
    encoding: str
    published: list[lsp.PublishDiagnosticsParams] = field(default_factory=list)
    versions: dict[str, int] = field(default_factory=dict)
    capabilities: lsp.ServerCapabilities | None = None

    def open(self, path: Path, text: str | None = None) -> str:
        uri = path.resolve().as_uri()
        self.versions[uri] = 1
        self.client.text_document_did_open(lsp.DidOpenTextDocumentParams(text_document=lsp.TextDocumentItem(
            uri=uri, language_id="interlock", version=1, text=path.read_text() if text is None else text)))
        return uri

    def change(self, uri: str, text: str, rng: lsp.Range | None = None) -> int:
        """An incremental change (replace `rng`), or the whole text when `rng` is None."""
        self.versions[uri] += 1
        event: lsp.TextDocumentContentChangeEvent = (
            lsp.TextDocumentContentChangeWholeDocument(text=text) if rng is None
            else lsp.TextDocumentContentChangePartial(range=rng, text=text))
        self.client.text_document_did_change(lsp.DidChangeTextDocumentParams(
            text_document=lsp.VersionedTextDocumentIdentifier(uri=uri, version=self.versions[uri]),
            content_changes=[event]))
        return self.versions[uri]

    async def diagnostics(self, uri: str, version: int | None = None, timeout: float = 20) -> list[lsp.Diagnostic]:
        """Wait for the publish of `uri` at `version` (default: the latest sent)."""
        want = self.versions.get(uri) if version is None else version
        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout
        while loop.time() < deadline:
            for p in reversed(self.published):
                if p.uri == uri and (want is None or p.version == want):
                    return list(p.diagnostics)
            await asyncio.sleep(0.02)
        raise AssertionError(f"no diagnostics for {uri} version {want}; got {[(p.uri, p.version) for p in self.published]}")


@contextlib.asynccontextmanager
async def session(profile: str = "visual-studio-code", encoding: str | None = None,
                  env: dict[str, str] | None = None, root: Path | None = None) -> AsyncIterator[Session]:
    import os

    client = make_test_lsp_client()
    capabilities = client_capabilities(profile)
    if encoding is not None:
        general = capabilities.general or lsp.GeneralClientCapabilities()
        general.position_encodings = [encoding]
        capabilities.general = general
    state = Session(client, "utf-16")

    default = client.protocol.fm.features[lsp.TEXT_DOCUMENT_PUBLISH_DIAGNOSTICS]

    def _published(params: lsp.PublishDiagnosticsParams) -> None:  # every publish, in arrival order
        state.published.append(params)
        default(params)

    client.protocol.fm.features[lsp.TEXT_DOCUMENT_PUBLISH_DIAGNOSTICS] = _published

    await client.start_io(INTERLOCK, "lsp", env={**os.environ, **(env or {})})
    try:
        result = await client.initialize_session(lsp.InitializeParams(
            capabilities=capabilities, root_uri=None if root is None else root.as_uri(), process_id=None,
            workspace_folders=None if root is None else [lsp.WorkspaceFolder(uri=root.as_uri(), name=root.name)]))
        state.encoding = str(result.capabilities.position_encoding or "utf-16")
        state.capabilities = result.capabilities
        yield state
        await client.shutdown_session()
    except BaseException:
        if client._server is not None and client._server.returncode is None:
            client._server.kill()  # a failed test must not wait for a shutdown that never comes
        raise
    finally:
        await client.stop()  # type: ignore[no-untyped-call]
