"""Printing import/export diagnostics with the renderers and diagnostics formats of `interlock check`, and a summary
that counts the files read and the files written."""

from __future__ import annotations

import json
import sys
from collections.abc import Mapping, Sequence
from typing import TextIO

from interlock.dsl import render
from interlock.dsl.diagnostics import Diagnostic
from interlock.dsl.source import SourceFile

__all__ = ["emit", "summary_line"]


def summary_line(summary: render.Summary, written: int) -> str:
    """`1 file read, 2 files written: no problems` (errors and warnings counted as `interlock check` counts them)."""
    checked = render.summary_line(summary)
    problems = checked.split(": ", 1)[1]
    plural = "file" if written == 1 else "files"
    return f"{summary.files} file{'' if summary.files == 1 else 's'} read, {written} {plural} written: {problems}"


def emit(diagnostics: Sequence[Diagnostic], sources: Mapping[str, SourceFile], fmt: str, out: TextIO, *,
         color: bool, files: Sequence[str], written: int, quiet: bool) -> None:
    """Print `diagnostics` in `fmt`; the summary (to `out` for the text formats, else standard error) says how many
    of `files` were read and how many files were `written`; JSON's summary object carries `written` too."""
    from interlock import __version__

    summary = render.Summary.count(diagnostics, files=len(files))
    if fmt == "full":
        text = render.render_full(diagnostics, sources, color=color)
    elif fmt == "concise":
        text = render.render_concise(diagnostics)
    elif fmt == "json":
        doc = json.loads(render.render_json(diagnostics, summary=summary))
        doc["summary"]["written"] = written
        text = json.dumps(doc, indent=2) + "\n"
    elif fmt == "sarif":
        text = render.render_sarif(diagnostics, tool_version=__version__, files=list(files))
    else:
        text = render.render_github(diagnostics)
    if text:
        out.write(text if text.endswith("\n") else text + "\n")
    if not quiet:
        (out if fmt in ("full", "concise") else sys.stderr).write(summary_line(summary, written) + "\n")
    out.flush()
