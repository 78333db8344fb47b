"""`interlock graph`: a `.wf` file (or a compiled plan) in, a diagram of its workflows out.

Mermaid and DOT are text from `interlock.diagrams` (pure); SVG and PNG are that DOT rendered by
Graphviz's `dot`, run as a subprocess.  The output is byte-identical across runs (PNG and SVG for one
Graphviz version).  Exit status: 0 drawn; 1 the file has errors (its diagnostics on stderr, as `check` and
`compile` print them) or the plan cannot be used; 2 usage: no such file, an unknown `--workflow`, SVG/PNG
without Graphviz, `-o` into a missing folder.
"""

from __future__ import annotations

import argparse
import os
import sys
import textwrap
from pathlib import Path
from typing import Any

from interlock.errors import InterlockError

HELP = "draw a file's workflows as a Mermaid, DOT, SVG or PNG diagram"
DESCRIPTION = textwrap.fill(
    "Draw the workflows of a `.wf` file (or of a compiled plan, `.json`): a node per step, `[*]` into the start "
    "step and out of terminal steps, steps in board (position) order, an edge per transition labelled with its "
    "trigger, guard and requires_approval, pull_from dashed, manual_move steps shaded, each step's handlers with "
    "--handlers, and a legend unless --no-legend (docs/graph.md). Mermaid and "
    "DOT are written as text; SVG and PNG are rendered by Graphviz's `dot`, which must be installed. The "
    "output is byte-identical across runs.", width=100)
EPILOG = textwrap.fill(
    "Exit status: 0 drawn; 1 the file has errors (diagnostics on stderr) or the plan is unusable; 2 usage "
    "error: no such file, an unknown --workflow (the known ids are listed), --format svg/png without "
    "Graphviz, -o into a missing folder.", width=100)

FORMATS = ("mermaid", "dot", "svg", "png")
SUFFIXES = {".mmd": "mermaid", ".mermaid": "mermaid", ".dot": "dot", ".gv": "dot", ".svg": "svg", ".png": "png"}
EXIT_OK, EXIT_PROBLEMS, EXIT_USAGE = 0, 1, 2
DOT_TIMEOUT = 120  # seconds; a workflow diagram renders in well under one


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("file", metavar="FILE",
                        help="a .wf file, a compiled plan (.json), or `-` for a .wf file on standard input")
    parser.add_argument("--workflow", metavar="ID", help="draw only this workflow (default: every workflow)")
    parser.add_argument("--format", choices=FORMATS, default=None,
                        help="output format (default: from -o's suffix — .mmd, .dot/.gv, .svg, .png — else mermaid)")
    parser.add_argument("--direction", choices=("LR", "TB"), default="LR",
                        help="layout direction: left to right or top to bottom (default: LR)")
    parser.add_argument("--no-legend", dest="legend", action="store_false",
                        help="leave the legend out (by default it is drawn below the diagram, DOT/SVG/PNG)")
    parser.add_argument("--handlers", action="store_true",
                        help="write each step's handlers in its box: the actions other than transitions, by trigger "
                             "(entry kinds the host runs inline marked `(inline)`)")
    parser.add_argument("-o", "--output", metavar="OUT", help="write the diagram to this file (default: stdout)")
    parser.add_argument("--color", choices=("auto", "always", "never"), default="auto",
                        help="colour diagnostics: auto (a terminal without NO_COLOR), always or never (default: auto)")
    parser.add_argument("--stdin-filename", metavar="NAME", default="<stdin>",
                        help="name to report for `-` (default: <stdin>)")


class _Usage(InterlockError):
    """Exit 2 with this message."""


def _fail(message: str, status: int = EXIT_USAGE) -> int:
    sys.stderr.write(f"interlock: error: {message}\n")
    return status


def _short(text: str, limit: int = 80) -> str:
    return text if len(text) <= limit else f"{text[:limit]}… ({len(text)} characters)"


def _use_color(choice: str) -> bool:
    if choice == "always":
        return True
    if choice == "never" or os.environ.get("NO_COLOR"):
        return False
    return sys.stderr.isatty()


def _format(args: argparse.Namespace) -> str:
    if args.format is not None:
        return str(args.format)
    if args.output and args.output != "-":
        return SUFFIXES.get(Path(args.output).suffix.lower(), "mermaid")
    return "mermaid"


def _target(raw: str | None) -> Path | None:
    if raw is None or raw == "-":
        return None
    from interlock.cmdline import UsageError, output_target

    try:
        return output_target(raw, "diagram.mmd")
    except UsageError as exc:
        raise _Usage(str(exc)) from None


def _plan(args: argparse.Namespace) -> tuple[Any, int | None]:
    """The plan to draw, or (None, exit status) after reporting why there is none."""
    name: str = args.file
    if name != "-":
        path = Path(name)
        if not path.exists():
            raise _Usage(f"no such file: {_short(name)}")
        if path.is_dir():
            raise _Usage(f"not a file: {_short(name)} (graph draws one file; `interlock check` takes folders)")
        if path.suffix.lower() == ".json":
            from interlock.runtime.plan import PlanError, load_plan

            try:
                return load_plan(path.read_bytes()), None
            except PlanError as exc:
                return None, _fail(f"{_short(name)}: {exc}", EXIT_PROBLEMS)
    from interlock.compiler import compile_bytes, compile_path
    from interlock.dsl import render

    if name == "-":
        from interlock.dsl.parser import DEFAULT_LIMITS

        data = sys.stdin.buffer.read(DEFAULT_LIMITS.max_bytes + 1)  # never slurp an unbounded stream
        result = compile_bytes(args.stdin_filename, data, search_dir=Path.cwd(), want_plan=True)
    else:
        result = compile_path(Path(name), want_plan=True)
    if result.diagnostics:
        sys.stderr.write(render.render_full(result.diagnostics, result.sources, color=_use_color(args.color)) + "\n")
    if result.plan is None:
        shown = args.stdin_filename if name == "-" else name
        errors = result.errors
        sys.stderr.write(f"interlock: {_short(shown)}: not drawn ({errors} error{'s' if errors != 1 else ''})\n")
        return None, EXIT_PROBLEMS
    return result.plan, None


def _graphviz(dot_text: str, fmt: str) -> bytes:
    """`dot -T<fmt>` over the DOT text; a missing or failing Graphviz is a usage error with what to do."""
    import shutil
    import subprocess

    exe = shutil.which("dot")
    if exe is None:
        raise _Usage(f"--format {fmt} needs Graphviz's `dot` on PATH, which was not found: install Graphviz "
                     "(Debian/Ubuntu: apt-get install graphviz; macOS: brew install graphviz), or write "
                     "--format dot and render it elsewhere")
    try:
        proc = subprocess.run([exe, f"-T{fmt}"], input=dot_text.encode("utf-8"), capture_output=True,
                              timeout=DOT_TIMEOUT, check=False)
    except subprocess.TimeoutExpired:
        raise _Usage(f"Graphviz's `dot -T{fmt}` did not finish in {DOT_TIMEOUT} s") from None
    if proc.returncode != 0 or not proc.stdout:
        detail = proc.stderr.decode("utf-8", "replace").strip() or f"exit status {proc.returncode}"
        raise _Usage(f"Graphviz's `dot -T{fmt}` failed: {detail}")
    return proc.stdout


PNG_KEY = "interlock-dot-sha256"
"""The PNG text chunk that names the DOT a picture was drawn from (its sha256), so a committed picture can be
checked against the DOT the current rules give without comparing PNG bytes, which differ between Graphviz builds."""


def stamp_png(png: bytes, dot_text: str) -> bytes:
    """`png` with a `tEXt` chunk `interlock-dot-sha256` = sha256 of `dot_text`, inserted before `IEND`."""
    import hashlib
    import struct
    import zlib

    end = png.rfind(b"IEND")
    if not png.startswith(b"\x89PNG\r\n\x1a\n") or end < 12:
        return png
    body = b"tEXt" + PNG_KEY.encode("latin-1") + b"\0" + hashlib.sha256(dot_text.encode("utf-8")).hexdigest().encode()
    chunk = struct.pack(">I", len(body) - 4) + body + struct.pack(">I", zlib.crc32(body) & 0xFFFFFFFF)
    return png[:end - 4] + chunk + png[end - 4:]


def png_stamp(png: bytes) -> str | None:
    """The `interlock-dot-sha256` text of a PNG `interlock graph` wrote, or None."""
    import struct

    at = 8
    while at + 8 <= len(png):
        (size,) = struct.unpack(">I", png[at:at + 4])
        kind, data = png[at + 4:at + 8], png[at + 8:at + 8 + size]
        key, _, value = data.partition(b"\0")
        if kind == b"tEXt" and key == PNG_KEY.encode("latin-1"):
            return value.decode("latin-1")
        at += 12 + size
    return None


def run(args: argparse.Namespace) -> int:
    try:
        return _run(args)
    except _Usage as exc:
        return _fail(str(exc))


def _run(args: argparse.Namespace) -> int:
    fmt = _format(args)
    target = _target(args.output)
    if fmt == "png" and target is None and sys.stdout.isatty():
        raise _Usage("--format png writes binary data: give -o FILE.png or redirect standard output")
    plan, status = _plan(args)
    if plan is None:
        return status if status is not None else EXIT_PROBLEMS
    from interlock.diagrams import GraphError, render

    try:
        text = render(plan, "mermaid" if fmt == "mermaid" else "dot", args.workflow, args.direction,
                      legend=args.legend, handlers=args.handlers)
    except GraphError as exc:
        raise _Usage(f"{_short(args.file)}: {exc}") from None
    data = text.encode("utf-8") if fmt in ("mermaid", "dot") else _graphviz(text, fmt)
    if fmt == "png":
        data = stamp_png(data, text)
    if target is None:
        sys.stdout.flush()
        sys.stdout.buffer.write(data)
        sys.stdout.buffer.flush()
        return EXIT_OK
    from interlock.atomic import write_atomic

    write_atomic(target, data)
    return EXIT_OK
