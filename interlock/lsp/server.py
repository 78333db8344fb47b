"""The pygls server: documents in (open, incremental changes, save, close), diagnostics and answers out.

Diagnostics are debounced per document: each change cancels the document's pending run and schedules
a new one `DEBOUNCE` seconds later; a run publishes only if its version is still the document's
current one, so a burst of edits publishes once and never an older version after a newer one.
Requests read the document's cached analysis (re-analysed on demand when it is stale); a fault in
one request is logged and answered with an error, and the server goes on.  A document the client did not
send is read from disk only through `disk.read_unsent` (`check`'s reader, inside the workspace folders).
"""

from __future__ import annotations

import asyncio
import logging
import os
from pathlib import Path
from typing import Any

from lsprotocol import types as lsp
from pygls.exceptions import JsonRpcInvalidParams
from pygls.lsp.server import LanguageServer

from interlock.dsl.limits import Limits
from interlock.dsl.source import normalise_line_ends

from . import features
from .analysis import Analysis, analyse, completion_analysis, prelude_analysis
from .convert import Locator, to_lsp_diagnostic
from .disk import Refused, path_of, read_unsent
from .tokens import TOKEN_MODIFIERS, TOKEN_TYPES, semantic_tokens

__all__ = ["DEBOUNCE", "InterlockServer", "make_server"]

DEBOUNCE = 0.1
WORKSPACE_FILES = 2_000
"""At most this many `.wf` files of the workspace folders are read for workspace symbols."""
WORKSPACE_FILE_BYTES = 1 << 20
"""At most this many bytes of a file the client did not send are read (a larger one is refused)."""
SKIPPED_FOLDERS = frozenset({"node_modules", "__pycache__", "build", "dist", "venv"})
"""Folders (besides hidden ones, such as `.git` and `.venv`) never searched for `.wf` files."""
log = logging.getLogger("interlock.lsp")


def _seconds(text: str | None, default: float) -> float:
    """A non-negative number of seconds from the environment, or `default` (absent or not a number)."""
    try:
        value = float(text) if text is not None else default
    except ValueError:
        return default
    return value if value >= 0 else default


class InterlockServer(LanguageServer):
    def __init__(self) -> None:
        from interlock import __version__

        super().__init__("interlock", __version__, text_document_sync_kind=lsp.TextDocumentSyncKind.Incremental)
        self.analyses: dict[str, Analysis] = {}
        self.good: dict[str, Analysis] = {}  # the last analysis that parsed (completion while typing)
        self.pending: dict[str, asyncio.Task[None]] = {}
        self.on_disk: dict[str, tuple[tuple[int, int, int], Analysis]] = {}  # uri -> ((inode, mtime_ns, size), …)
        self.fault = os.environ.get("INTERLOCK_LSP_FAULT")  # tests: the request that fails once
        self.debounce = _seconds(os.environ.get("INTERLOCK_LSP_DEBOUNCE"), DEBOUNCE)  # tests: a burst's window

    @property
    def encoding(self) -> str:
        return str(self.workspace.position_encoding or "utf-16")

    def inject(self, feature: str) -> None:
        if self.fault == feature:
            self.fault = None
            raise RuntimeError(f"injected fault in {feature}")

    # -- analyses ------------------------------------------------------------------------------------
    def current(self, uri: str) -> Analysis:
        """The analysis of `uri` as the client sent it, or (a file it did not open) as saved on disk, read under
        `check`'s rules; a file refused is answered as an LSP error (`JsonRpcInvalidParams`)."""
        if uri not in self.workspace.text_documents:
            try:
                return self.analysis_on_disk(uri)
            except Refused as refused:
                raise JsonRpcInvalidParams(str(refused)) from None
        doc = self.workspace.get_text_document(uri)
        found = self.analyses.get(uri)
        if found is not None and found.version == doc.version and \
                found.source.text == normalise_line_ends(doc.source):
            return found
        return self.refresh(uri)

    def text(self, uri: str) -> str:
        """The text of `uri`: the client's copy, or the saved file (read as `current` reads it)."""
        if uri in self.workspace.text_documents:
            return self.workspace.get_text_document(uri).source
        return self.current(uri).source.text

    def refresh(self, uri: str) -> Analysis:
        """Analyse the client's copy of `uri` (an open document) again."""
        doc = self.workspace.get_text_document(uri)
        path = path_of(uri)
        name = str(path) if path is not None else uri
        result = analyse(name, doc.source, doc.version, path)
        self.analyses[uri] = result
        if result.program is not None:
            self.good[uri] = result
        return result

    def for_completion(self, uri: str, line: int) -> Analysis:
        """The analysis completion reads: the current one; while what is being typed does not parse, the text with
        the cursor's line blanked, else the last version that parsed, else the prelude alone."""
        current = self.current(uri)
        if current.symbols is not None:
            return current
        text = self.text(uri)
        return (completion_analysis(current.name, text, line, current.version, path_of(uri))
                or self.good.get(uri) or prelude_analysis(current.name))

    def locator(self, uri: str, analysis: Analysis | None = None) -> Locator:
        return Locator(analysis or self.current(uri), uri, self.encoding)

    def publish(self, uri: str) -> None:
        analysis = self.refresh(uri)
        where = Locator(analysis, uri, self.encoding)
        diagnostics = [to_lsp_diagnostic(d, where) for d in analysis.diagnostics if d.file == analysis.name]
        self.text_document_publish_diagnostics(lsp.PublishDiagnosticsParams(
            uri=uri, diagnostics=diagnostics, version=analysis.version))

    def schedule(self, uri: str, delay: float | None = None) -> None:
        """Publish `uri`'s diagnostics after `delay` seconds (default: the debounce), cancelling a pending run."""
        delay = self.debounce if delay is None else delay
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

    def roots(self) -> list[Path]:
        """The workspace folders on disk (the root path when the client sent no folders)."""
        roots = [p for f in self.workspace.folders.values() if (p := path_of(f.uri)) is not None]
        if not roots and self.workspace.root_path:
            roots = [Path(self.workspace.root_path)]
        return roots

    def workspace_files(self) -> list[tuple[str, Path]]:
        """The `.wf` files under the workspace folders that are not open, as (uri, path), in a stable order."""
        roots = self.roots()
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

    def analysis_on_disk(self, uri: str, limit: int = WORKSPACE_FILE_BYTES) -> Analysis:
        """The analysis of a file the client did not open, cached until the file changes, or `Refused`: not a
        regular UTF-8 file of at most `limit` bytes inside a workspace folder (`disk.read_unsent`)."""
        path = path_of(uri)
        try:
            st = os.stat(path) if path is not None else None
        except OSError:
            st = None
        key = (st.st_ino, st.st_mtime_ns, st.st_size) if st is not None else None
        cached = self.on_disk.get(uri)
        if cached is not None and cached[0] == key and key is not None and key[2] <= limit:
            return cached[1]
        path, source = read_unsent(uri, self.roots(), Limits(max_bytes=limit))
        analysis = analyse(str(path), source.text, None, path)
        if key is not None:
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

    _register_queries(server)
    _register_edits(server)
    return server


def _register_queries(server: InterlockServer) -> None:
    """The requests that read a document: hover, definition, references, completion, semantic tokens, symbols."""

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
        analysis = ls.for_completion(uri, params.position.line)
        text = ls.text(uri)
        items = features.completion(analysis, text, params.position, ls.encoding)
        return lsp.CompletionList(is_incomplete=False, items=items)

    @server.feature(lsp.TEXT_DOCUMENT_SEMANTIC_TOKENS_FULL,
                    lsp.SemanticTokensLegend(token_types=list(TOKEN_TYPES), token_modifiers=list(TOKEN_MODIFIERS)))
    def semantic_tokens_full(ls: InterlockServer, params: lsp.SemanticTokensParams) -> lsp.SemanticTokens:
        uri = params.text_document.uri
        ls.inject("semantic_tokens")
        analysis = ls.current(uri)
        text = ls.text(uri)
        return lsp.SemanticTokens(data=semantic_tokens(analysis, text, analysis.name, ls.encoding))

    @server.feature(lsp.TEXT_DOCUMENT_DOCUMENT_SYMBOL)
    def document_symbol(ls: InterlockServer, params: lsp.DocumentSymbolParams) -> list[lsp.DocumentSymbol]:
        where = ls.locator(params.text_document.uri)
        return features.document_symbols(where.analysis, where)

    @server.feature(lsp.WORKSPACE_SYMBOL)
    def workspace_symbol(ls: InterlockServer, params: lsp.WorkspaceSymbolParams) -> list[lsp.SymbolInformation]:
        found = [(ls.current(uri), ls.locator(uri)) for uri in list(ls.workspace.text_documents)]
        for uri, _ in ls.workspace_files():  # the workspace's other files, as saved
            try:
                analysis = ls.analysis_on_disk(uri)
            except Refused as refused:  # a FIFO, a device, a link out of the workspace, a file too large: skipped
                log.info("workspace symbols: %s", refused)
                continue
            found.append((analysis, Locator(analysis, uri, ls.encoding)))
        return features.workspace_symbols(found, params.query)


def _register_edits(server: InterlockServer) -> None:
    """The requests that answer with edits: rename, formatting, quick fixes."""

    @server.feature(lsp.TEXT_DOCUMENT_PREPARE_RENAME)
    def prepare_rename(ls: InterlockServer, params: lsp.PrepareRenameParams) -> Any:
        where = ls.locator(params.text_document.uri)
        try:
            return features.prepare_rename(where.analysis, where, params.position)
        except features.RenameRefused:
            return None

    @server.feature(lsp.TEXT_DOCUMENT_RENAME)
    def rename(ls: InterlockServer, params: lsp.RenameParams) -> lsp.WorkspaceEdit:
        where = ls.locator(params.text_document.uri)
        try:
            return features.rename(where.analysis, where, params.position, params.new_name)
        except features.RenameRefused as refused:
            raise JsonRpcInvalidParams(str(refused)) from None

    @server.feature(lsp.TEXT_DOCUMENT_FORMATTING)
    def formatting(ls: InterlockServer, params: lsp.DocumentFormattingParams) -> list[lsp.TextEdit]:
        ls.inject("formatting")
        uri = params.text_document.uri
        path = path_of(uri)
        return features.formatting(ls.text(uri), str(path) if path else uri, ls.encoding)

    @server.feature(lsp.TEXT_DOCUMENT_CODE_ACTION,
                    lsp.CodeActionOptions(code_action_kinds=[lsp.CodeActionKind.QuickFix]))
    def code_action(ls: InterlockServer, params: lsp.CodeActionParams) -> list[lsp.CodeAction]:
        where = ls.locator(params.text_document.uri)
        return features.code_actions(where.analysis, where, params.range)
