"""`interlock import FILE.yml [-o OUT.wf | -o DIR]`: kandev's workflow YAML in, formatted `.wf` out.

The mapping is `interlock.kandev.importer` (docs/kandev.md); this module reads the file, writes the result and
reports.  Only the standard library is imported at the top (the CLI imports this module to build its parser).
"""

from __future__ import annotations

import argparse
import sys
import textwrap
from pathlib import Path

__all__ = ["HELP", "DESCRIPTION", "EPILOG", "FORMATS", "STRICT_CODES", "add_arguments", "run"]

HELP = "import kandev's workflow YAML as formatted .wf"
DESCRIPTION = "\n\n".join(textwrap.fill(p, 88) for p in (
    "Read a kandev workflow template or a portable export document (`version: 1`, `type: kandev_workflow`) and "
    "write it as formatted `.wf`: to standard output, to `-o FILE.wf`, or with `-o DIR` one `ID.wf` per "
    "workflow. The YAML is read as kandev reads it (YAML 1.2); its comments are kept as `.wf` comments. "
    "Everything kandev would drop or change silently, and every place where the `.wf` will behave differently "
    "from kandev, is a diagnostic at the YAML node (docs/kandev.md lists the KV codes); the written `.wf` is "
    "checked too.",
    "`-` reads standard input. Diagnostics go to standard output, or to standard error when the `.wf` does. "
    "`--strict` makes every key left out of the `.wf` (KV005) an error."))
EPILOG = textwrap.fill(
    "Exit status: 0 imported and checks clean (warnings and notes may be shown); 1 errors were reported and "
    "nothing was written (a partial import, e.g. a move without its malformed guard, is never written); 2 usage "
    "or input error (a missing file, an unusable -o).", 88)

FORMATS = ("full", "concise", "json", "sarif", "github")
STRICT_CODES = ("KV005",)
"""What `--strict` makes an error: something of the YAML that is not imported."""


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("file", metavar="FILE", help="a kandev YAML file, or - for standard input")
    parser.add_argument("-o", "--output", metavar="OUT", help="a .wf file, or an existing folder (one ID.wf per "
                                                             "workflow); default: standard output")
    parser.add_argument("--diagnostics-format", dest="diagnostics_format", choices=FORMATS, default="full",
                        metavar="FORMAT", help="diagnostics format: " + ", ".join(FORMATS) + " (default: full)")
    parser.add_argument("--format", dest="diagnostics_format", choices=FORMATS, default=argparse.SUPPRESS,
                        help=argparse.SUPPRESS)  # the old spelling (`export --format` is the YAML format)
    parser.add_argument("--strict", action="store_true", help="fail (exit 1, nothing written) when any part of "
                                                              "the YAML is left out of the .wf")
    parser.add_argument("--stdin-filename", metavar="NAME", default="<stdin>", help="name to report for `-`")
    parser.add_argument("--color", choices=("auto", "always", "never"), default="auto",
                        help="colour diagnostics: auto, always or never (default: auto)")
    parser.add_argument("--quiet", "-q", action="store_true", help="print only diagnostics, no summary")


def read_input(name: str, shown: str, limit: int) -> tuple[str | None, str]:
    """The text of `name` (or standard input), or None and why not: too large or not UTF-8."""
    from interlock.cmdline import UsageError

    try:
        data = sys.stdin.buffer.read(limit + 1) if name == "-" else Path(name).read_bytes()
    except OSError as exc:
        raise UsageError(f"{name}: cannot read: {exc.strerror or exc}") from None
    if len(data) > limit:
        return None, f"the file is larger than {limit:,} bytes: refused"
    try:
        return data.decode("utf-8"), ""
    except UnicodeDecodeError as exc:
        return None, f"not UTF-8 text (byte {exc.start})"


def run(args: argparse.Namespace) -> int:
    from interlock.cmdline import UsageError
    from interlock.cmdline import use_color as _use_color
    from interlock.compiler import compile_bytes
    from interlock.dsl.source import SourceFile
    from interlock.kandev.codes import kv, span_at, strict
    from interlock.kandev.importer import combined, import_text
    from interlock.kandev.report import emit
    from interlock.kandev.yamlread import MAX_BYTES

    shown = args.stdin_filename if args.file == "-" else args.file
    folder: Path | None = None
    target: Path | None = None
    if args.output is not None:
        if Path(args.output).is_dir():
            folder = Path(args.output)
        else:
            from interlock.cmdline import output_target

            target = output_target(args.output, "workflow.wf")
    if args.file != "-" and not Path(args.file).is_file():
        from interlock.cmdline import not_a_file

        raise UsageError(not_a_file(args.file, "import takes one kandev YAML file", "FILE.yml",
                                    "to write one .wf file per workflow into a folder, give the folder as `-o DIR`"))
    text, why = read_input(args.file, shown, MAX_BYTES)
    sources: dict[str, SourceFile] = {}
    if text is None:
        diagnostics = [kv("yaml-invalid", span_at(shown, 1, 1), why)]
        written: list[tuple[str, str]] = []
    else:
        sources[shown] = SourceFile(shown, text)
        result = import_text(text, shown)
        diagnostics = list(result.diagnostics)
        if args.strict:
            diagnostics = strict(diagnostics, STRICT_CODES)
        if folder is not None:
            written = [(str(folder / f"{wid}.wf"), wf) for wid, wf in result.workflows]
        elif result.workflows:
            written = [(str(target) if target is not None else "<stdout>.wf", combined(result.workflows))]
        else:
            written = []
        for name, wf in written:
            checked = compile_bytes(name, wf.encode(), want_plan=False)
            diagnostics += checked.diagnostics
            sources.update(checked.sources)
    if any(d.is_error for d in diagnostics):
        written = []  # a partial import (a move without its malformed guard, say) is never written
    report = sys.stderr if written and target is None and folder is None else sys.stdout
    for name, wf in written:
        if name == "<stdout>.wf":
            sys.stdout.write(wf)
            sys.stdout.flush()
        else:
            from interlock.atomic import write_atomic

            write_atomic(Path(name), wf)
    if diagnostics or not args.quiet:
        emit(diagnostics, sources, args.diagnostics_format, report, color=_use_color(args.color, report),
             files=[shown], written=len(written), quiet=args.quiet)
    if text is None:
        return 1
    if any(d.is_error for d in diagnostics):
        if not args.quiet:
            print("nothing written: fix the errors above and import again", file=report)
        return 1
    return 0
