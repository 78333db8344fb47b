"""`interlock check [PATH…|-]`: `.wf` files in, their diagnostics out (full, concise, json, sarif or github).

The pre-commit path: it imports neither SQLAlchemy, alembic nor the runtime (`tests/test_layering.py`), and only
the standard library at the top of this module.  Machine formats (json, sarif, github) keep standard output pure;
the summary then goes to standard error.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import TYPE_CHECKING

from interlock.cmdline import (
    COLOR_HELP,
    EXIT_OK,
    EXIT_PROBLEMS,
    STDIN_HELP,
    UsageError,
    add_walk_options,
    collect_with_config,
    use_color,
)

if TYPE_CHECKING:
    from interlock.compiler import CompileResult

__all__ = ["HELP", "DESCRIPTION", "EPILOG", "FORMATTER", "FRONT_END", "FORMATS", "add_arguments", "run",
           "compile_one"]

HELP = "check .wf files and report diagnostics"
DESCRIPTION = ("Check `.wf` files. Folders are searched for `*.wf` recursively (hidden, .gitignore'd and excluded "
               "files skipped); `-` reads one file from standard input. A file named twice is checked once. "
               "Settings: `[tool.interlock]` of the nearest pyproject.toml, or interlock.toml.")
EPILOG = "Exit status: 0 clean (warnings allowed), 1 errors found (or warnings with -W), 2 usage or internal error."
FORMATTER = argparse.HelpFormatter
FRONT_END = True
"""The command runs the compiler alone: a one-shot process imports it as `interlock.cli` does for these."""

FORMATS = ("full", "concise", "json", "sarif", "github")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("paths", nargs="*", metavar="PATH", help="files or folders (default: .)")
    parser.add_argument("--format", choices=FORMATS, default="full", help="output format (default: full)")
    parser.add_argument("--color", choices=("auto", "always", "never"), default="auto", help=COLOR_HELP)
    parser.add_argument("--warnings-as-errors", "-W", action="store_true", help="exit 1 on warnings too")
    parser.add_argument("--stdin-filename", metavar="NAME", default="<stdin>", help=STDIN_HELP)
    parser.add_argument("--quiet", "-q", action="store_true", help="print only diagnostics, no summary")
    add_walk_options(parser)


def compile_one(name: str, stdin_name: str, want_plan: bool, ignore: frozenset[str] = frozenset()) -> CompileResult:
    """Compile the file `name` (`-`: standard input, reported as `stdin_name`, bounded as files are)."""
    from interlock.compiler import compile_bytes, compile_path

    if name == "-":
        from interlock.dsl.parser import DEFAULT_LIMITS

        data = sys.stdin.buffer.read(DEFAULT_LIMITS.max_bytes + 1)  # never slurp an unbounded stream
        return compile_bytes(stdin_name, data, search_dir=Path.cwd(), want_plan=want_plan, ignore=ignore)
    return compile_path(Path(name), want_plan=want_plan, ignore=ignore)


def run(args: argparse.Namespace) -> int:
    from interlock import __version__
    from interlock.dsl import render

    entries = collect_with_config(args.paths, args)
    files = [name for name, _ in entries]
    if files.count("-") > 1:
        raise UsageError("`-` (standard input) may be given once")
    results = [compile_one(f, args.stdin_filename, want_plan=False, ignore=config.ignore) for f, config in entries]
    diagnostics = [d for r in results for d in r.diagnostics]
    sources = {name: src for r in results for name, src in r.sources.items()}
    errors = sum(1 for d in diagnostics if d.is_error)
    warnings = len(diagnostics) - errors
    summary = render.Summary(files=len(results), errors=errors, warnings=warnings)
    fmt = args.format
    out = sys.stdout
    if fmt == "full":
        text = render.render_full(diagnostics, sources, color=use_color(args.color, out))
    elif fmt == "concise":
        text = render.render_concise(diagnostics)
    elif fmt == "json":
        text = render.render_json(diagnostics, summary=summary)
    elif fmt == "sarif":
        from interlock.diagnostic_pages import help_url

        docs_url = next((config.docs_url for _, config in entries if config.docs_url), None)
        text = render.render_sarif(diagnostics, tool_version=__version__, files=[r.file for r in results],
                                   help_uri=lambda code, name: help_url(code, name, docs_url))
    else:
        text = render.render_github(diagnostics)
    if text:
        out.write(text if text.endswith("\n") else text + "\n")
    if not args.quiet:
        line = render.summary_line(summary)
        (out if fmt in ("full", "concise") else sys.stderr).write(line + "\n")
    out.flush()
    if errors or (args.warnings_as_errors and warnings):
        return EXIT_PROBLEMS
    return EXIT_OK
