"""The pygls server: documents in (open, incremental changes, save, close), diagnostics and answers out.

Diagnostics are debounced per document: each change cancels the document's pending run and schedules
a new one `DEBOUNCE` seconds later; a run publishes only if its version is still the document's
current one, so a burst of edits publishes once and never an older version after a newer one.
Requests read the document's cached analysis (re-analysed on demand when it is stale); a fault in
one request is logged and answered with an error, and the server goes on.
"""

from __future__ import annotations

import asyncio
import logging
import os
from pathlib import Path
from typing import Any
from urllib.parse import unquote, urlparse

from lsprotocol import types as lsp
from pygls.lsp.server import LanguageServer

from . import features
from .analysis import Analysis, analyse
from .convert import Locator, to_lsp_diagnostic

__all__ = ["DEBOUNCE", "InterlockServer", "make_server"]

DEBOUNCE = 0.1
WORKSPACE_FILES = 2_000
"""At most this many `.wf` files of the workspace folders are read for workspace symbols."""
WORKSPACE_FILE_BYTES = 1 << 20
SKIPPED_FOLDERS = frozenset({"node_modules", "__pycache__", "build", "dist", "venv"})
"""Folders (besides hidden ones, such as `.git` and `.venv`) never searched for `.wf` files."""
log = logging.getLogger("interlock.lsp")


def path_of(uri: str) -> Path | None:
    parsed = urlparse(uri)
    if parsed.scheme != "file":
        return None
    return Path(unquote(parsed.path))


class InterlockServer(LanguageServer):
    def __init__(self) -> None:
        from interlock import __version__

        super().__init__("interlock", __version__, text_document_sync_kind=lsp.TextDocumentSyncKind.Incremental)
        self.analyses: dict[str, Analysis] = {}
        self.good: dict[str, Analysis] = {}  # the last analysis that parsed (completion while typing)
        self.pending: dict[str, asyncio.Task[None]] = {}
        self.on_disk: dict[str, tuple[tuple[int, int], Analysis]] = {}  # uri -> ((mtime_ns, size), analysis)
        self.fault = os.environ.get("INTERLOCK_LSP_FAULT")  # tests: the request that fails once

    @property
    def encoding(self) -> str:
        return str(self.workspace.position_encoding or "utf-16")

    def inject(self, feature: str) -> None:
        if self.fault == feature:
            self.fault = None
            raise RuntimeError(f"injected fault in {feature}")

    # -- analyses ------------------------------------------------------------------------------------
    def current(self, uri: str) -> Analysis:
        doc = self.workspace.get_text_document(uri)
        found = self.analyses.get(uri)
        if found is not None and found.version == doc.version and found.source.text == doc.source:
            return found
        return self.refresh(uri)

    def refresh(self, uri: str) -> Analysis:
        doc = self.workspace.get_text_document(uri)
        path = path_of(uri)
        name = str(path) if path is not None else uri
        result = analyse(name, doc.source, doc.version, path)
        self.analyses[uri] = result
        if result.program is not None:
            self.good[uri] = result
        return result

    def locator(self, uri: str, analysis: Analysis | None = None) -> Locator:
        return Locator(analysis or self.current(uri), uri, self.encoding)

    def publish(self, uri: str) -> None:
        analysis = self.refresh(uri)
        where = Locator(analysis, uri, self.encoding)
        diagnostics = [to_lsp_diagnostic(d, where) for d in analysis.diagnostics if d.file == analysis.name]
        self.text_document_publish_diagnostics(lsp.PublishDiagnosticsParams(
            uri=uri, diagnostics=diagnostics, version=analysis.version))

    def schedule(self, uri: str, delay: float = DEBOUNCE) -> None:
        old = self.pending.pop(uri, None)
        if old is not None:
            old.cancel()
        self.pending[uri] = asyncio.get_running_loop().create_task(self._later(uri, delay))

    async def _later(self, uri: str, delay: float) -> None:
        await asyncio.sleep(delay)
        self.pending.pop(uri, None)
        if uri not in self.workspace.text_documents:
            return
        try:
            self.publish(uri)
        except Exception:  # a fault in the compiler must not stop the server
            log.exception("checking %s failed", uri)

    def workspace_files(self) -> list[tuple[str, Path]]:
        """The `.wf` files under the workspace folders that are not open, as (uri, path), in a stable order."""
        roots = [p for f in self.workspace.folders.values() if (p := path_of(f.uri)) is not None]
        if not roots and self.workspace.root_path:
            roots = [Path(self.workspace.root_path)]
        seen = set(self.workspace.text_documents)
        out: list[tuple[str, Path]] = []
        for root in roots:
            for folder, subfolders, names in os.walk(root):  # links to folders are not followed
                subfolders[:] = sorted(d for d in subfolders if not d.startswith(".") and d not in SKIPPED_FOLDERS)
                for name in sorted(names):
                    if not name.endswith(".wf"):
                        continue
                    path = Path(folder) / name
                    uri = path.as_uri()
                    if uri not in seen:
                        seen.add(uri)
                        out.append((uri, path))
                        if len(out) >= WORKSPACE_FILES:
                            return out
        return out

    def analysis_on_disk(self, uri: str, path: Path) -> Analysis | None:
        """The analysis of a file that is not open, cached until the file changes; None for what is not a
        regular UTF-8 file of at most `WORKSPACE_FILE_BYTES`."""
        import stat

        try:
            st = path.lstat()
        except OSError:
            return None
        key = (st.st_mtime_ns, st.st_size)
        cached = self.on_disk.get(uri)
        if cached is not None and cached[0] == key:
            return cached[1]
        if not stat.S_ISREG(st.st_mode) or st.st_size > WORKSPACE_FILE_BYTES:
            return None
        try:
            text = path.read_bytes().decode("utf-8")
        except (OSError, UnicodeDecodeError):
            return None
        analysis = analyse(str(path), text, None, path)
        self.on_disk[uri] = (key, analysis)
        return analysis

    def dependents(self, uri: str) -> list[str]:
        """Open documents that `use` the file at `uri` (re-checked when it changes)."""
        path = path_of(uri)
        if path is None:
            return []
        real = os.path.realpath(path)
        return [other for other, a in self.analyses.items() if other != uri
                and any(os.path.realpath(f) == real for f in a.used_files)]


def make_server() -> InterlockServer:
    server = InterlockServer()

    @server.feature(lsp.INITIALIZED)
    def initialized(ls: InterlockServer, params: lsp.InitializedParams) -> None:
        # the prelude loads here, after `initialize` was answered
        from interlock.compiler.program import PRELUDE_NAME, prelude_module

        prelude_module(PRELUDE_NAME)

    @server.feature(lsp.TEXT_DOCUMENT_DID_OPEN)
    def did_open(ls: InterlockServer, params: lsp.DidOpenTextDocumentParams) -> None:
        ls.schedule(params.text_document.uri, 0)

    @server.feature(lsp.TEXT_DOCUMENT_DID_CHANGE)
    def did_change(ls: InterlockServer, params: lsp.DidChangeTextDocumentParams) -> None:
        ls.schedule(params.text_document.uri)

    @server.feature(lsp.TEXT_DOCUMENT_DID_SAVE)
    def did_save(ls: InterlockServer, params: lsp.DidSaveTextDocumentParams) -> None:
        for other in ls.dependents(params.text_document.uri):
            ls.schedule(other)

    @server.feature(lsp.TEXT_DOCUMENT_DID_CLOSE)
    def did_close(ls: InterlockServer, params: lsp.DidCloseTextDocumentParams) -> None:
        uri = params.text_document.uri
        task = ls.pending.pop(uri, None)
        if task is not None:
            task.cancel()
        dependents = ls.dependents(uri)
        ls.analyses.pop(uri, None)
        ls.good.pop(uri, None)
        ls.text_document_publish_diagnostics(lsp.PublishDiagnosticsParams(uri=uri, diagnostics=[]))
        for other in dependents:
            ls.schedule(other)

    @server.feature(lsp.WORKSPACE_DID_CHANGE_WATCHED_FILES)
    def watched(ls: InterlockServer, params: lsp.DidChangeWatchedFilesParams) -> None:
        for change in params.changes:
            for other in ls.dependents(change.uri):
                ls.schedule(other)

    @server.feature(lsp.TEXT_DOCUMENT_HOVER)
    def hover(ls: InterlockServer, params: lsp.HoverParams) -> lsp.Hover | None:
        ls.inject("hover")
        where = ls.locator(params.text_document.uri)
        return features.hover(where.analysis, where, params.position)

    @server.feature(lsp.TEXT_DOCUMENT_DEFINITION)
    def definition(ls: InterlockServer, params: lsp.DefinitionParams) -> list[lsp.Location]:
        ls.inject("definition")
        where = ls.locator(params.text_document.uri)
        return features.definition(where.analysis, where, params.position)

    @server.feature(lsp.TEXT_DOCUMENT_REFERENCES)
    def references(ls: InterlockServer, params: lsp.ReferenceParams) -> list[lsp.Location]:
        where = ls.locator(params.text_document.uri)
        return features.references(where.analysis, where, params.position, params.context.include_declaration)

    @server.feature(lsp.TEXT_DOCUMENT_COMPLETION,
                    lsp.CompletionOptions(trigger_characters=[".", "(", " ", ","]))
    def completion(ls: InterlockServer, params: lsp.CompletionParams) -> lsp.CompletionList:
        uri = params.text_document.uri
        current = ls.current(uri)
        analysis = current if current.program is not None else ls.good.get(uri, current)
        text = ls.workspace.get_text_document(uri).source
        items = features.completion(analysis, text, params.position, ls.encoding)
        return lsp.CompletionList(is_incomplete=False, items=items)

    @server.feature(lsp.TEXT_DOCUMENT_DOCUMENT_SYMBOL)
    def document_symbol(ls: InterlockServer, params: lsp.DocumentSymbolParams) -> list[lsp.DocumentSymbol]:
        where = ls.locator(params.text_document.uri)
        return features.document_symbols(where.analysis, where)

    @server.feature(lsp.WORKSPACE_SYMBOL)
    def workspace_symbol(ls: InterlockServer, params: lsp.WorkspaceSymbolParams) -> list[lsp.SymbolInformation]:
        found = [(ls.current(uri), ls.locator(uri)) for uri in list(ls.workspace.text_documents)]
        for uri, path in ls.workspace_files():  # the workspace's other files, as saved
            analysis = ls.analysis_on_disk(uri, path)
            if analysis is not None:
                found.append((analysis, Locator(analysis, uri, ls.encoding)))
        return features.workspace_symbols(found, params.query)

    @server.feature(lsp.TEXT_DOCUMENT_PREPARE_RENAME)
    def prepare_rename(ls: InterlockServer, params: lsp.PrepareRenameParams) -> Any:
        where = ls.locator(params.text_document.uri)
        try:
            return features.prepare_rename(where.analysis, where, params.position)
        except features.RenameRefused:
            return None

    @server.feature(lsp.TEXT_DOCUMENT_RENAME)
    def rename(ls: InterlockServer, params: lsp.RenameParams) -> lsp.WorkspaceEdit:
        from pygls.exceptions import JsonRpcInvalidParams

        where = ls.locator(params.text_document.uri)
        try:
            return features.rename(where.analysis, where, params.position, params.new_name)
        except features.RenameRefused as refused:
            raise JsonRpcInvalidParams(str(refused)) from None

    @server.feature(lsp.TEXT_DOCUMENT_FORMATTING)
    def formatting(ls: InterlockServer, params: lsp.DocumentFormattingParams) -> list[lsp.TextEdit]:
        ls.inject("formatting")
        uri = params.text_document.uri
        doc = ls.workspace.get_text_document(uri)
        path = path_of(uri)
        return features.formatting(doc.source, str(path) if path else uri, ls.encoding)

    @server.feature(lsp.TEXT_DOCUMENT_CODE_ACTION,
                    lsp.CodeActionOptions(code_action_kinds=[lsp.CodeActionKind.QuickFix]))
    def code_action(ls: InterlockServer, params: lsp.CodeActionParams) -> list[lsp.CodeAction]:
        where = ls.locator(params.text_document.uri)
        return features.code_actions(where.analysis, where, params.range)

    return server
