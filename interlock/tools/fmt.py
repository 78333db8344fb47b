"""`interlock fmt [PATH…|-]`: `.wf` files in, the same files in the canonical layout out (in place, atomically).

The formatting itself is `interlock.dsl.format.format_source` (docs/fmt.md); this module reads the files,
writes back only those that change (`interlock.atomic.write_atomic`: a temporary file in the same folder,
then `os.replace`, keeping the file's mode), and reports.  `--check` and `--diff` write nothing.  Only the
standard library is imported at the top: the CLI imports this module to build its parser, and `interlock
check` must start fast.
"""

from __future__ import annotations

import argparse
import difflib
import os
import sys
import textwrap
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, TextIO

if TYPE_CHECKING:
    from interlock.dsl.diagnostics import Diagnostic
    from interlock.dsl.source import SourceFile

__all__ = ["HELP", "DESCRIPTION", "EPILOG", "add_arguments", "run"]

HELP = "format .wf files in the canonical layout, keeping every comment"
DESCRIPTION = "\n\n".join(textwrap.fill(p, 88) for p in (
    "Rewrite `.wf` files in place in the canonical layout (docs/fmt.md): two-space indentation, one item per "
    "line, long argument lists wrapped at 100 columns, runs of blank lines collapsed to one. Every comment is "
    "kept, in order; declarations and step items keep their order. Only files that change are written, "
    "atomically, keeping their mode.",
    "Folders are searched for `*.wf` recursively, skipping hidden folders, venv/, .venv/, node_modules/, .tox/, "
    "build/, dist/, .gitignore'd files and the configuration's `exclude` globs; `-` reads standard input and "
    "writes the result to standard output. A file with a syntax error is left untouched and its diagnostic "
    "reported."))
EPILOG = textwrap.fill(
    "Exit status: 0 done (or, with --check/--diff, nothing to change); 1 a file would change (--check, --diff) "
    "or could not be formatted (a syntax error, an unreadable file); 2 usage or internal error.", 88)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("paths", nargs="*", metavar="PATH", help="files or folders, or - for standard input "
                                                                  "(default: .)")
    parser.add_argument("--check", action="store_true",
                        help="write nothing; list the files that would be reformatted and exit 1 if there are any")
    parser.add_argument("--diff", action="store_true",
                        help="write nothing; print a unified diff of what would change (exit 1 if anything would)")
    parser.add_argument("--stdin-filename", metavar="NAME", default="<stdin>",
                        help="name to report for `-` (default: <stdin>)")
    parser.add_argument("--color", choices=("auto", "always", "never"), default="auto",
                        help="colour diagnostics: auto (a terminal without NO_COLOR), always or never (default: auto)")
    parser.add_argument("--quiet", "-q", action="store_true",
                        help="print only diagnostics (and the diff or the formatted text), no file list or summary")
    from interlock.cmdline import add_walk_options

    add_walk_options(parser)


@dataclass
class _Outcome:
    name: str
    diagnostics: list[Diagnostic]
    changed: bool = False


def run(args: argparse.Namespace) -> int:
    from interlock.cmdline import UsageError
    from interlock.cmdline import collect_files as _collect

    files = _collect(args.paths, args)
    if files.count("-") > 1:
        raise UsageError("`-` (standard input) may be given once")
    if "-" in files and len(files) > 1:
        raise UsageError("`-` (standard input) cannot be formatted together with files")
    dry = args.check or args.diff
    # standard output carries the formatted text or the diff: the report goes to standard error then
    report: TextIO = sys.stderr if (files == ["-"] and not args.check) or args.diff else sys.stdout
    outcomes = [_one(name, args, dry, report) for name in files]
    diagnostics = [d for o in outcomes for d in o.diagnostics]
    if diagnostics:
        from interlock.dsl import render

        sources = {o.name: src for o in outcomes if (src := _SOURCES.get(o.name)) is not None}
        text = render.render_full(diagnostics, sources, color=_use_color(args.color, sys.stderr))
        sys.stderr.write(text if text.endswith("\n") else text + "\n")
    changed = sum(1 for o in outcomes if o.changed)
    failed = sum(1 for o in outcomes if o.diagnostics)
    if not args.quiet:
        report.write(_summary(len(outcomes), changed, failed, dry) + "\n")
    report.flush()
    sys.stdout.flush()
    return 1 if failed or (dry and changed) else 0


_SOURCES: dict[str, SourceFile] = {}  # what each file read as, for the diagnostics' snippets


def _one(name: str, args: argparse.Namespace, dry: bool, report: TextIO) -> _Outcome:
    from interlock.dsl.format import format_source
    from interlock.dsl.parser import DEFAULT_LIMITS, decode, read_limited

    if name == "-":
        shown = args.stdin_filename
        data = sys.stdin.buffer.read(DEFAULT_LIMITS.max_bytes + 1)  # never slurp an unbounded stream
        source, problems = decode(shown, data)
    else:
        shown = name
        source, problems = read_limited(Path(name))
        data = b""
        if source is not None:
            data = Path(name).read_bytes()
    if source is None:
        return _Outcome(shown, problems)
    _SOURCES[shown] = source
    result = format_source(source.text, shown)
    if not result.ok:
        return _Outcome(shown, list(result.diagnostics))
    new = result.text.encode("utf-8")
    changed = new != data  # a byte-order mark or CRLF line ends are changes too
    if args.diff and changed:
        sys.stdout.write(_diff(shown, source.text, result.text))
    if name == "-":
        if not dry:
            sys.stdout.write(result.text)
    elif changed and not dry:
        from interlock.atomic import write_atomic

        write_atomic(Path(name), new)
    if changed and not args.quiet and name != "-":
        report.write(f"{'would reformat' if dry else 'reformatted'} {shown}\n")
    return _Outcome(shown, [], changed)


def _diff(name: str, before: str, after: str) -> str:
    lines = difflib.unified_diff(before.splitlines(keepends=True), after.splitlines(keepends=True),
                                 fromfile=f"{name} (original)", tofile=f"{name} (formatted)")
    out = []
    for line in lines:
        out.append(line if line.endswith("\n") else line + "\n\\ No newline at end of file\n")
    return "".join(out)


def _plural(n: int, word: str) -> str:
    return f"{n} {word}" if n == 1 else f"{n} {word}s"


def _summary(files: int, changed: int, failed: int, dry: bool) -> str:
    """`2 files reformatted, 7 files left unchanged` (`… would be reformatted, … already formatted`)."""
    unchanged = files - changed - failed
    if dry:
        parts = [f"{_plural(changed, 'file')} would be reformatted"] if changed else []
        parts.append(f"{_plural(unchanged, 'file')} already formatted")
    else:
        parts = [f"{_plural(changed, 'file')} reformatted"] if changed else []
        parts.append(f"{_plural(unchanged, 'file')} left unchanged")
    if failed:
        parts.append(f"{_plural(failed, 'file')} could not be formatted")
    return ", ".join(parts)


def _use_color(choice: str, stream: TextIO) -> bool:
    if choice == "always":
        return True
    if choice == "never" or os.environ.get("NO_COLOR"):
        return False
    return stream.isatty()
