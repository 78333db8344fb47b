"""Printing import/export diagnostics with the renderers and `--format` values of `interlock check`."""

from __future__ import annotations

import sys
from collections.abc import Mapping, Sequence
from typing import TextIO

from interlock.dsl import render
from interlock.dsl.diagnostics import Diagnostic
from interlock.dsl.source import SourceFile

__all__ = ["emit"]


def emit(diagnostics: Sequence[Diagnostic], sources: Mapping[str, SourceFile], fmt: str, out: TextIO, *,
         color: bool, files: Sequence[str], quiet: bool) -> None:
    from interlock import __version__

    summary = render.Summary.count(diagnostics, files=len(files))
    if fmt == "full":
        text = render.render_full(diagnostics, sources, color=color)
    elif fmt == "concise":
        text = render.render_concise(diagnostics)
    elif fmt == "json":
        text = render.render_json(diagnostics, summary=summary)
    elif fmt == "sarif":
        text = render.render_sarif(diagnostics, tool_version=__version__, files=list(files))
    else:
        text = render.render_github(diagnostics)
    if text:
        out.write(text if text.endswith("\n") else text + "\n")
    if not quiet:
        (out if fmt in ("full", "concise") else sys.stderr).write(render.summary_line(summary) + "\n")
    out.flush()
