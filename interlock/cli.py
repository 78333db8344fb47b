"""Command-line arguments in, exit status out: `interlock check`, `interlock compile` and friends.

Exit codes: 0 clean (warnings allowed), 1 problems found, 2 usage or internal error.
Machine formats (json, sarif, github) keep stdout pure; the summary then goes to stderr.
`interlock check` imports neither SQLAlchemy nor alembic: it runs in pre-commit hooks.
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, TextIO

from . import __version__

if TYPE_CHECKING:
    from interlock.compiler import CompileResult

__all__ = ["main", "console", "EXIT_OK", "EXIT_PROBLEMS", "EXIT_USAGE"]

EXIT_OK, EXIT_PROBLEMS, EXIT_USAGE = 0, 1, 2
FORMATS = ("full", "concise", "json", "sarif", "github")


class UsageError(Exception):
    """A problem with how the command was called (exit 2)."""


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="interlock",
        description="Typed workflow rules for agent/task orchestrators: check and compile `.wf` files.",
        epilog="Exit status: 0 clean, 1 problems found, 2 usage or internal error.",
    )
    parser.add_argument("--version", action="version", version=f"interlock {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")

    check = sub.add_parser("check", help="check .wf files and report diagnostics",
                           description="Check `.wf` files. Folders are searched for `*.wf` recursively; "
                                       "`-` reads one file from standard input.")
    check.add_argument("paths", nargs="*", metavar="PATH", help="files or folders (default: .)")
    check.add_argument("--format", choices=FORMATS, default="full", help="output format (default: full)")
    check.add_argument("--color", choices=("auto", "always", "never"), default="auto",
                       help="colour for the full format (default: auto)")
    check.add_argument("--warnings-as-errors", "-W", action="store_true", help="exit 1 on warnings too")
    check.add_argument("--stdin-filename", metavar="NAME", default="<stdin>",
                       help="name to report for `-` (default: <stdin>)")
    check.add_argument("--quiet", "-q", action="store_true", help="print only diagnostics, no summary")

    comp = sub.add_parser("compile", help="compile one .wf file to a versioned JSON plan",
                          description="Compile one `.wf` file to an executable plan (JSON). Diagnostics go "
                                      "to stderr; the plan to stdout or -o FILE.")
    comp.add_argument("file", metavar="FILE", help="the .wf file (`-` for standard input)")
    comp.add_argument("-o", "--output", metavar="PLAN", help="write the plan here (default: stdout)")
    comp.add_argument("--color", choices=("auto", "always", "never"), default="auto")
    sim = sub.add_parser("simulate", help="run a scenario and print its trace",
                         description="Run a scenario (RUNTIME.md §5) on an in-memory SQLite store with simulated "
                                     "executors and print the trace: one JSON object per line, or a table.")
    sim.add_argument("scenario", metavar="SCENARIO.yaml")
    sim.add_argument("--format", choices=("jsonl", "table"), default=None,
                     help="trace format (default: table on a terminal, jsonl otherwise)")
    sim.add_argument("--store", metavar="URL", default="sqlite://",
                     help="store URL (default: sqlite:// in memory; the store must be empty)")

    test = sub.add_parser("test", help="run scenarios that carry an `expect:` block, like a test runner",
                          description="Run every scenario with an `expect:` block (folders: *.yaml, *.yml, "
                                      "recursively) and report pass/fail.")
    test.add_argument("paths", nargs="+", metavar="PATH")
    test.add_argument("-v", "--verbose", action="store_true", help="print the trace of failing scenarios")

    db = sub.add_parser("db", help="database maintenance")
    dbsub = db.add_subparsers(dest="db_command", metavar="ACTION", required=True)
    up = dbsub.add_parser("upgrade", help="create or upgrade interlock's tables (alembic migrations)")
    up.add_argument("--url", required=True, help="database URL (sqlite:///file.db, postgresql+psycopg://...)")
    cur = dbsub.add_parser("current", help="print the database's schema revision")
    cur.add_argument("--url", required=True)
    return parser


def _use_color(choice: str, stream: TextIO) -> bool:
    if choice == "always":
        return True
    if choice == "never" or os.environ.get("NO_COLOR"):
        return False
    return stream.isatty()


def _collect(paths: Sequence[str]) -> list[str]:
    """Expand folders to their `*.wf` files (sorted); keep files and `-` as given."""
    found: list[str] = []
    for raw in paths or ["."]:
        if raw == "-":
            found.append(raw)
            continue
        path = Path(raw)
        if path.is_dir():
            files = sorted(p for p in path.rglob("*.wf")
                           if p.is_file() and not any(part.startswith(".") for part in p.relative_to(path).parts))
            if not files:
                raise UsageError(f"no .wf files under {raw}")
            found.extend(str(p) for p in files)
        elif path.exists():
            found.append(raw)
        else:
            raise UsageError(f"no such file or folder: {raw}")
    return found


def _compile_one(name: str, stdin_name: str, want_plan: bool) -> CompileResult:
    from interlock.compiler import compile_bytes, compile_path

    if name == "-":
        from interlock.dsl.parser import DEFAULT_LIMITS

        data = sys.stdin.buffer.read(DEFAULT_LIMITS.max_bytes + 1)  # never slurp an unbounded stream
        return compile_bytes(stdin_name, data, search_dir=Path.cwd(), want_plan=want_plan)
    return compile_path(Path(name), want_plan=want_plan)


def _check(args: argparse.Namespace) -> int:
    from interlock.dsl import render

    files = _collect(args.paths)
    if files.count("-") > 1:
        raise UsageError("`-` (standard input) may be given once")
    results = [_compile_one(f, args.stdin_filename, want_plan=False) for f in files]
    diagnostics = [d for r in results for d in r.diagnostics]
    sources = {name: src for r in results for name, src in r.sources.items()}
    errors = sum(1 for d in diagnostics if d.is_error)
    warnings = len(diagnostics) - errors
    summary = render.Summary(files=len(results), errors=errors, warnings=warnings)
    fmt = args.format
    out = sys.stdout
    if fmt == "full":
        text = render.render_full(diagnostics, sources, color=_use_color(args.color, out))
    elif fmt == "concise":
        text = render.render_concise(diagnostics)
    elif fmt == "json":
        text = render.render_json(diagnostics, summary=summary)
    elif fmt == "sarif":
        text = render.render_sarif(diagnostics, tool_version=__version__,
                                   files=[r.file for r in results])
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


def _compile(args: argparse.Namespace) -> int:
    from interlock.dsl import render
    from interlock.runtime.plan import dump_plan

    name = args.file
    if name != "-" and not Path(name).is_file():
        raise UsageError(f"no such file: {name}" if not Path(name).exists() else f"not a file: {name}")
    result = _compile_one(name, "<stdin>", want_plan=True)
    if result.diagnostics:
        sys.stderr.write(render.render_full(result.diagnostics, result.sources,
                                            color=_use_color(args.color, sys.stderr)) + "\n")
    if result.plan is None:
        sys.stderr.write(f"interlock: {name}: not compiled ({result.errors} error"
                         f"{'s' if result.errors != 1 else ''})\n")
        return EXIT_PROBLEMS
    text = dump_plan(result.plan)
    if args.output and args.output != "-":
        target = Path(args.output)
        tmp = target.with_name(target.name + ".tmp")
        tmp.write_text(text, encoding="utf-8")
        tmp.replace(target)
    else:
        sys.stdout.write(text)
    return EXIT_OK


def _fail(message: str) -> int:
    sys.stderr.write(f"interlock: error: {message}\n")
    return EXIT_USAGE


def _known_errors() -> tuple[type[Exception], ...]:
    """Errors that are the user's input, reported without a traceback (exit 2)."""
    errors: list[type[Exception]] = []
    if "interlock.commands" in sys.modules:
        from .commands import CommandError

        errors.append(CommandError)
    if "interlock.runtime.scenario" in sys.modules:
        from interlock.runtime.scenario import ScenarioError

        errors.append(ScenarioError)
    if "interlock.runtime.plan" in sys.modules:
        from interlock.runtime.plan import PlanError

        errors.append(PlanError)
    if "interlock.runtime.store" in sys.modules:
        from interlock.runtime.store import StoreError

        errors.append(StoreError)
    if "interlock.runtime.errors" in sys.modules:
        from interlock.runtime.errors import RuntimeFault

        errors.append(RuntimeFault)
    return tuple(errors) or (UsageError,)


def _import_front_end() -> None:
    """Import the compiler as a one-shot process should: importing pydantic's machinery, the IR's models and
    the parser allocates tens of thousands of objects that live as long as the process, so the cyclic
    collector is paused while they are made and they are then frozen (`gc.freeze`: later collections skip
    them) — a collector scanning them again and again took a sixth of an `interlock check` (ADR 0002)."""
    import gc

    if "interlock.compiler" in sys.modules:  # imported already: nothing to gain
        return
    enabled = gc.isenabled()
    gc.disable()
    try:
        import interlock.compiler
        import interlock.dsl.render  # noqa: F401
    finally:
        gc.freeze()
        if enabled:
            gc.enable()


def main(argv: Sequence[str] | None = None, *, one_shot: bool = False) -> int:
    """Run the CLI; returns the exit status.  `one_shot`: this process runs this one command and ends (the
    console script), so the front end may be imported as `_import_front_end` does; a host calling `main`
    in-process keeps its collector as it was."""
    parser = _parser()
    args = parser.parse_args(argv)
    if args.command is None:
        parser.print_help(sys.stderr)
        return EXIT_USAGE
    try:
        if args.command in ("check", "compile"):  # the pre-commit path: nothing of the runtime is imported
            if one_shot:
                _import_front_end()
            return (_check if args.command == "check" else _compile)(args)
        from . import commands

        handlers = {"simulate": commands.simulate, "test": commands.test, "db": commands.db}
        return handlers[args.command](args)
    except UsageError as exc:
        return _fail(str(exc))
    except _known_errors() as exc:
        return _fail(str(exc))
    except KeyboardInterrupt:
        sys.stderr.write("interlock: interrupted\n")
        return 130
    except BrokenPipeError:
        return EXIT_OK
    except Exception as exc:  # an internal fault: report it, never a bare traceback
        if os.environ.get("INTERLOCK_DEBUG"):
            raise
        sys.stderr.write(f"interlock: internal error: {type(exc).__name__}: {exc}\n"
                         "(set INTERLOCK_DEBUG=1 for a traceback; please report this)\n")
        return EXIT_USAGE


def console() -> None:
    """The `interlock` console script: one command, then exit with its status."""
    raise SystemExit(main(one_shot=True))


if __name__ == "__main__":  # pragma: no cover
    console()
