"""The `.wf` front end: source text in, IR module and diagnostics out.

Public entry points: `parse_source` (text → IR) and `parse_file` (path → IR).
"""

from __future__ import annotations

from pathlib import Path

# A library import leaves the host's garbage collector alone; the one-shot CLI pauses it while the front end is
# imported (`interlock.cli._import_front_end`).
from . import ir
from .diagnostics import CODES, Diagnostic, InternalCompilerError, Label, Severity
from .parser import DEFAULT_LIMITS, Limits, decode, read_limited
from .source import SourceFile, Span

__all__ = [
    "CODES", "Diagnostic", "InternalCompilerError", "Label", "Limits", "Severity", "SourceFile", "Span",
    "ir", "parse_source", "parse_file", "parse_bytes",
]


def parse_source(source: SourceFile, limits: Limits = DEFAULT_LIMITS) -> tuple[ir.Module | None, list[Diagnostic]]:
    """Parse and lower one source file.  `None` means the file did not parse."""
    from .parser import parse_module

    if len(source.text) > limits.max_bytes:
        return None, [_too_large(source.name, limits)]
    return parse_module(source, limits)


def parse_bytes(name: str, data: bytes, limits: Limits = DEFAULT_LIMITS) -> tuple[ir.Module | None, list[Diagnostic]]:
    source, problems = decode(name, data, limits)
    if source is None:
        return None, problems
    return parse_source(source, limits)


def parse_file(path: Path, limits: Limits = DEFAULT_LIMITS) -> tuple[ir.Module | None, list[Diagnostic]]:
    source, problems = read_limited(path, limits)
    if source is None:
        return None, problems
    return parse_source(source, limits)


def _too_large(name: str, limits: Limits) -> Diagnostic:
    from .diagnostics import make

    where = Span.model_construct(file=name, line=1, col=1, end_line=1, end_col=1)
    return make("file-too-large", where, f"input exceeds the limit of {limits.max_bytes} bytes")
