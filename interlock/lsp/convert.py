"""The compiler's spans and diagnostics in, LSP ranges, locations and diagnostics out (in the negotiated
position encoding)."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from lsprotocol import types as lsp

from .analysis import PRELUDE_FILE, prelude_path
from .positions import to_units

if TYPE_CHECKING:
    from interlock.dsl import Diagnostic, SourceFile
    from interlock.dsl.source import Span

    from .analysis import Analysis

__all__ = ["Locator", "to_lsp_diagnostic", "anchor"]

_SEVERITY = {"error": lsp.DiagnosticSeverity.Error, "warning": lsp.DiagnosticSeverity.Warning,
             "note": lsp.DiagnosticSeverity.Information}


class Locator:
    """Spans of one analysis (its file, the prelude, the `use`d siblings) as LSP ranges and locations."""

    def __init__(self, analysis: Analysis, uri: str, encoding: str) -> None:
        self.analysis = analysis
        self.uri = uri
        self.encoding = encoding

    def source(self, file: str) -> SourceFile | None:
        if file == self.analysis.name:
            return self.analysis.source
        program = self.analysis.program
        return program.sources.get(file) if program is not None else None

    def uri_of(self, file: str) -> str:
        if file == self.analysis.name:
            return self.uri
        if file == PRELUDE_FILE:
            return prelude_path().as_uri()
        return Path(file).resolve().as_uri()

    def position(self, file: str, line: int, col: int) -> lsp.Position:
        source = self.source(file)
        text = source.line_text(line) if source is not None else ""
        return lsp.Position(line=line - 1, character=to_units(text, col - 1, self.encoding))

    def range(self, span: Span) -> lsp.Range:
        return lsp.Range(start=self.position(span.file, span.line, span.col),
                         end=self.position(span.file, span.end_line, span.end_col))

    def location(self, span: Span) -> lsp.Location:
        return lsp.Location(uri=self.uri_of(span.file), range=self.range(span))


def anchor(code: str, name: str, docs_url: str | None = None) -> str | None:
    """Where `codeDescription` points: the configured `docs_url`, else the code's section of the diagnostics page
    where interlock is installed (a wheel carries it; a checkout has docs/), `#il102-unknown-parameter`."""
    from interlock.diagnostic_pages import help_url

    return help_url(code, name, docs_url)


def to_lsp_diagnostic(d: Diagnostic, where: Locator) -> lsp.Diagnostic:
    """`check`'s diagnostic as LSP's: the same code, severity and message; help and notes appended to the
    message as `check --format full` prints them; labels as related information."""
    message = d.message
    extra = [f"help: {d.help}"] if d.help else []
    extra += [f"note: {n}" for n in d.notes]
    if extra:
        message += "\n" + "\n".join(extra)
    related = [lsp.DiagnosticRelatedInformation(location=where.location(lab.span), message=lab.message)
               for lab in d.labels]
    href = anchor(d.code, d.name, where.analysis.docs_url)
    return lsp.Diagnostic(range=where.range(d.span), message=message, severity=_SEVERITY[str(d.severity)],
                          code=d.code, code_description=None if href is None else lsp.CodeDescription(href=href),
                          source="interlock", related_information=related or None,
                          data={"name": d.name, "help": d.help})
