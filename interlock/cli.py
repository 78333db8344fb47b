"""Command-line arguments in, exit status out: `interlock check`, `interlock compile` and friends.

Exit codes: 0 clean (warnings allowed), 1 problems found, 2 usage or internal error.
Machine formats (json, sarif, github) keep stdout pure; the summary then goes to stderr.
`interlock check` imports neither SQLAlchemy nor alembic: it runs in pre-commit hooks.
"""

from __future__ import annotations

import argparse
import copy
import os
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, TextIO

from . import __version__

if TYPE_CHECKING:
    from interlock.compiler import CompileResult

__all__ = ["main", "console", "EXIT_OK", "EXIT_PROBLEMS", "EXIT_USAGE"]

EXIT_OK, EXIT_PROBLEMS, EXIT_USAGE = 0, 1, 2
FORMATS = ("full", "concise", "json", "sarif", "github")


class UsageError(Exception):
    """A problem with how the command was called (exit 2)."""


def _test_parser(sub: argparse._SubParsersAction) -> argparse.ArgumentParser:  # type: ignore[type-arg]
    """`interlock test`'s parser (interlock/runner/)."""
    test: argparse.ArgumentParser = sub.add_parser(
                          "test", help="run scenarios that carry an `expect:` block, like a test runner",
                          description="Run every scenario with an `expect:` block (folders: *.yaml, *.yml, "
                                      "recursively) and report pass/fail; a scenario that cannot be loaded or "
                                      "run is reported as an error and the others still run. A failure names "
                                      "the expectation's file:line:col and shows the nearest actual record as "
                                      "YAML. Ends with `N passed, M failed, K errors` (docs/scenarios.md).",
                          epilog="Exit status: 0 all passed (and coverage at or above --threshold), 1 a scenario "
                                 "failed or had errors, or coverage is under --threshold, 2 usage or internal "
                                 "error (no scenario found, a bad -k expression).")
    test.add_argument("paths", nargs="+", metavar="PATH", help="scenario files or folders (a file named twice "
                                                                "runs once)")
    test.add_argument("-k", dest="keyword", metavar="EXPRESSION", default=None,
                      help="run only the scenarios whose name matches (its path under the folder given, or its "
                           "file name): words are case-insensitive substrings, combined with and, or, not and "
                           "parentheses (as pytest's -k)")
    test.add_argument("--format", choices=("text", "json", "junit"), default="text",
                      help="report format: text (default), json (versioned, `test_version`) or junit (JUnit XML "
                           "for CI)")
    test.add_argument("-o", "--output", metavar="FILE", default=None,
                      help="write the report to FILE instead of standard output")
    test.add_argument("--coverage", action="store_true",
                      help="report, per workflow, the steps entered, transitions taken, guard outcomes and entry "
                           "kinds dispatched, and the dispatch-sequence guards matched, with what was never "
                           "exercised")
    test.add_argument("--threshold", type=_percent, metavar="N", default=None,
                      help="with coverage (implies --coverage): exit 1 when it is under N percent")
    test.add_argument("-v", "--verbose", action="store_true", help="print the trace of failing scenarios")
    return test


def _parser(command: str | None = None) -> tuple[argparse.ArgumentParser, dict[str, argparse.ArgumentParser]]:
    """The top-level parser and every subcommand's parser by name (`db upgrade` as "db upgrade").  `command`: the
    subcommand about to run (the tools' parsers are then built in full for it alone); None builds all in full."""
    parser = argparse.ArgumentParser(
        prog="interlock",
        description="Typed workflow rules for agent/task orchestrators: check, compile, format, draw and diff `.wf` "
                    "files, import and export kandev's workflow YAML, serve editors (a language server), simulate "
                    "scenarios, and keep the runtime's database.",
        epilog="Exit status: 0 clean, 1 problems found, 2 usage or internal error.",
    )
    parser.add_argument("--version", action="version", version=f"interlock {__version__}",
                        help="print the version and exit")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    color_help = "colour diagnostics: auto (a terminal without NO_COLOR), always or never (default: auto)"
    stdin_help = "name to report for `-` (default: <stdin>)"

    check = _check_parser(sub, color_help, stdin_help)

    comp = sub.add_parser("compile", help="compile one .wf file to a versioned JSON plan",
                          description="Compile one `.wf` file to an executable plan (JSON). Diagnostics go "
                                      "to stderr; the plan to stdout or -o FILE. Source paths in the plan are "
                                      "relative to the main file's folder, so a plan is byte-identical wherever "
                                      "it is compiled from.",
                          epilog="Exit status: 0 compiled, 1 errors found (no plan written), 2 usage or "
                                 "internal error (e.g. -o into a missing folder).")
    comp.add_argument("file", metavar="FILE", help="the .wf file (`-` for standard input)")
    comp.add_argument("-o", "--output", metavar="PLAN", help="write the plan to this file (default: stdout)")
    comp.add_argument("--color", choices=("auto", "always", "never"), default="auto", help=color_help)
    comp.add_argument("--stdin-filename", metavar="NAME", default="<stdin>", help=stdin_help)

    sim = sub.add_parser("simulate", help="run a scenario and print its trace",
                         description="Run a scenario (docs/runtime.md §5) on an in-memory SQLite store with simulated "
                                     "executors and print the trace: one JSON object per line, or a table. "
                                     "Names the scenario uses are checked against the plan before it runs.",
                         epilog="Exit status: 0 the scenario ran; 1 the scenario has errors (each as "
                                "FILE:LINE:COL on stderr; when the runtime refused an event, the trace up to it "
                                "is printed first); 2 usage or internal error: no such file, a bad --store URL, "
                                "or a --store database that already holds interlock data.")
    sim.add_argument("scenario", metavar="SCENARIO.yaml",
                     help="the scenario file (`-` reads it from standard input; its relative `workflow:` path is "
                          "then taken from the current folder)")
    sim.add_argument("--format", choices=("jsonl", "table"), default=None,
                     help="trace format (default: table on a terminal, jsonl otherwise); the table never cuts a "
                          "record: on a terminal long values wrap, piped each record stays on one line")
    sim.add_argument("--store", metavar="URL", default="sqlite://",
                     help="store URL (default: sqlite://, in memory). For an empty database only: one that holds "
                          "any interlock rows is refused (exit 2)")

    test = _test_parser(sub)
    add_walk_options(test)

    db = sub.add_parser("db", help="database maintenance",
                        description="Create, upgrade or inspect interlock's tables in a database.",
                        epilog="Exit status: 0 done, 2 usage error (e.g. a bad URL) or database error.")
    dbsub = db.add_subparsers(dest="db_command", metavar="ACTION", required=True)
    url_help = "database URL: sqlite:///FILE.db, sqlite:// (in memory) or postgresql://USER@HOST/DATABASE"
    up = dbsub.add_parser("upgrade", help="create or upgrade interlock's tables (alembic migrations)",
                          description="Create or upgrade interlock's tables (replayable).")
    up.add_argument("--url", required=True, help=url_help)
    cur = dbsub.add_parser("current", help="print the database's schema revision",
                           description="Print the database's interlock schema revision.")
    cur.add_argument("--url", required=True, help=url_help)
    parsers = {"check": check, "compile": comp, "simulate": sim, "test": test, "db": db,
               "db upgrade": up, "db current": cur}
    from .tools import add_parsers

    add_parsers(sub, parsers, only=command)
    return parser, parsers


def _check_parser(sub: argparse._SubParsersAction[argparse.ArgumentParser], color_help: str,
                  stdin_help: str) -> argparse.ArgumentParser:
    """`interlock check`'s parser."""
    check = sub.add_parser("check", help="check .wf files and report diagnostics",
                           description="Check `.wf` files. Folders are searched for `*.wf` recursively (hidden, "
                                       ".gitignore'd and excluded files skipped); `-` reads one file from standard "
                                       "input. A file named twice is checked once. Settings: `[tool.interlock]` "
                                       "of the nearest pyproject.toml, or interlock.toml.",
                           epilog="Exit status: 0 clean (warnings allowed), 1 errors found (or warnings with -W), "
                                  "2 usage or internal error.")
    check.add_argument("paths", nargs="*", metavar="PATH", help="files or folders (default: .)")
    check.add_argument("--format", choices=FORMATS, default="full", help="output format (default: full)")
    check.add_argument("--color", choices=("auto", "always", "never"), default="auto", help=color_help)
    check.add_argument("--warnings-as-errors", "-W", action="store_true", help="exit 1 on warnings too")
    check.add_argument("--stdin-filename", metavar="NAME", default="<stdin>", help=stdin_help)
    check.add_argument("--quiet", "-q", action="store_true", help="print only diagnostics, no summary")
    add_walk_options(check)
    return check


def _parse(argv: Sequence[str] | None) -> argparse.Namespace:
    """Parse, reporting an unknown option with the usage of the subcommand it was given to."""
    given = sys.argv[1:] if argv is None else list(argv)
    # the subcommand is the first word that is not an option (the top level's options take no value)
    word = next((a for a in given if not a.startswith("-")), "")
    parser, parsers = _parser(word)
    commands = [name for name in parsers if " " not in name]
    if word and word not in commands:
        import difflib

        close = difflib.get_close_matches(word, commands, n=1, cutoff=0.6)
        hint = f"did you mean `{close[0]}`?" if close else f"the commands are {', '.join(commands)}"
        parser.error(f"unknown command `{_short(word)}`: {hint} (`interlock --help` lists them)")
    args, extra = parser.parse_known_args(given)
    if extra:
        name = " ".join(n for n in (args.command, getattr(args, "db_command", None)) if n)
        if name == "compile" and not any(e.startswith("-") for e in extra):
            parsers[name].error(f"compile takes one file at a time, and was given {len(extra) + 1}: "
                                f"{', '.join(_short(f, 40) for f in [args.file, *extra])}; compile each with its "
                                "own `-o PLAN`, or check them all with `interlock check FILE...`")
        parsers.get(name, parser).error(f"unrecognized arguments: {' '.join(extra)}")
    if args.command is None:
        parser.print_help(sys.stderr)
        raise SystemExit(EXIT_USAGE)
    return args


def _use_color(choice: str, stream: TextIO) -> bool:
    if choice == "always":
        return True
    if choice == "never" or os.environ.get("NO_COLOR"):
        return False
    return stream.isatty()


def add_walk_options(parser: argparse.ArgumentParser) -> None:
    """`--exclude GLOB` and `--no-default-excludes`: the options of every command that walks folders."""
    parser.add_argument("--exclude", action="append", default=[], metavar="GLOB",
                        help="skip files and folders matching this gitignore-style glob, relative to the current "
                             "folder, when walking folders (repeatable; adds to the configuration's `exclude`)")
    parser.add_argument("--no-default-excludes", action="store_true",
                        help="also walk hidden folders, venv/, .venv/, node_modules/, .tox/, build/, dist/ and "
                             ".gitignore'd files (skipped by default)")


def collect_with_config(paths: Sequence[str], args: argparse.Namespace | None = None,
                        suffixes: tuple[str, ...] = (".wf",), what: str = ".wf files") -> list[tuple[str, Any]]:
    """Each file to work on and the configuration that governs it (`interlock.walk.collect`); folders are walked
    with the excludes of `args` (docs/language.md, "Configuration")."""
    from .config import ConfigError
    from .walk import Excludes, NothingFound, collect

    excludes = Excludes(tuple(getattr(args, "exclude", None) or ()), not getattr(args, "no_default_excludes", False))
    try:
        return collect(paths, suffixes, excludes)
    except NothingFound as exc:
        raise UsageError(f"no {what} under {_short(str(exc))} (hidden, ignored and excluded files are skipped: "
                         "--no-default-excludes walks them)") from None
    except FileNotFoundError as exc:
        raise UsageError(f"no such file or folder: {_short(str(exc))}") from None
    except ConfigError as exc:
        raise UsageError(f"configuration: {exc}") from None


def _collect(paths: Sequence[str], args: argparse.Namespace | None = None) -> list[str]:
    """Expand folders to their `*.wf` files (sorted, excludes applied); keep files and `-` as given."""
    return [name for name, _ in collect_with_config(paths, args)]


def _short(text: str, limit: int = 80) -> str:
    """A path as messages show it: a very long one is cut, with its length."""
    return text if len(text) <= limit else f"{text[:limit]}… ({len(text)} characters)"


def _compile_one(name: str, stdin_name: str, want_plan: bool, ignore: frozenset[str] = frozenset()) -> CompileResult:
    from interlock.compiler import compile_bytes, compile_path

    if name == "-":
        from interlock.dsl.parser import DEFAULT_LIMITS

        data = sys.stdin.buffer.read(DEFAULT_LIMITS.max_bytes + 1)  # never slurp an unbounded stream
        return compile_bytes(stdin_name, data, search_dir=Path.cwd(), want_plan=want_plan, ignore=ignore)
    return compile_path(Path(name), want_plan=want_plan, ignore=ignore)


def _check(args: argparse.Namespace) -> int:
    from interlock.dsl import render

    entries = collect_with_config(args.paths, args)
    files = [name for name, _ in entries]
    if files.count("-") > 1:
        raise UsageError("`-` (standard input) may be given once")
    results = [_compile_one(f, args.stdin_filename, want_plan=False, ignore=config.ignore) for f, config in entries]
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
        from .explain import help_url

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


def not_a_file(name: str, what: str, example: str, instead: str) -> str:
    """Why `name`, given as a command's input file, is not one: absent, or a folder or something else, saying
    `what` the command takes (one file, like `example` in that folder) and what to do `instead` with a folder."""
    path, shown = Path(name), _short(name)
    if not path.exists():
        return f"no such file: {shown}"
    if not path.is_dir():
        return f"not a file: {shown} (not a regular file): {what}"
    return f"{shown} is a folder: {what} (e.g. {shown}/{example}); {instead}"
def _percent(raw: str) -> float:
    """A `--threshold` value: a number from 0 to 100."""
    try:
        value = float(raw)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number: {raw!r}") from None
    if not 0 <= value <= 100:
        raise argparse.ArgumentTypeError(f"a percentage from 0 to 100, not {raw}")
    return value


def output_target(raw: str, example: str) -> Path:
    """Where `-o` writes, refused (`UsageError`) before anything is done when it cannot be written there; `example`
    names a file the command would write (every command's `-o` says the same).  The file is then written with
    `interlock.atomic.write_atomic`."""
    target = Path(raw)
    if target.is_dir():
        raise UsageError(f"-o {_short(raw)}: is a folder: give the file's name (e.g. {_short(raw)}/{example})")
    parent = target.parent
    if not parent.is_dir():
        what = "is not a folder" if parent.exists() else "does not exist"
        raise UsageError(f"-o {_short(raw)}: the folder {_short(str(parent))} {what}: create it first")
    from .atomic import refusal

    why = refusal(target)
    if why is not None:
        raise UsageError(f"-o {_short(raw)}: {why}")
    return target


def _relocate(plan_data: Any, main_dir: str) -> Any:
    """The plan with every source path relative to the main file's folder (`<prelude:...>`-style names kept).  The
    source positions are found by the plan models' types (`plan_layout`), never by their keys: an action argument
    that happens to be a `{file, line, col}` map is left as written."""
    from interlock.runtime.plan import plan_layout

    def rel(name: Any) -> Any:
        if not isinstance(name, str) or name.startswith("<"):
            return name
        return Path(os.path.relpath(os.path.abspath(name), main_dir)).as_posix()

    data = copy.deepcopy(plan_data)
    for path, value in plan_layout(data)[1]:
        if path[-1] == "source" and isinstance(value, dict):
            node = data
            for key in path[:-1]:
                node = node[key]
            node[path[-1]] = {**value, "file": rel(value.get("file"))}
    data["sources"] = [rel(name) for name in data.get("sources", [])]
    return data


def _compile(args: argparse.Namespace) -> int:
    from interlock.dsl import render
    from interlock.runtime.plan import Plan, dump_plan

    name = args.file
    if name != "-" and not Path(name).is_file():
        raise UsageError(not_a_file(name, "compile takes one .wf file", "FILE.wf",
                                    f"`interlock check {_short(name)}` checks every .wf file of a folder"))
    target = output_target(args.output, "plan.json") if args.output and args.output != "-" else None
    ((_, config),) = collect_with_config([name])  # the warnings the project's configuration ignores stay quiet
    result = _compile_one(name, args.stdin_filename, want_plan=True, ignore=config.ignore)
    if result.diagnostics:
        sys.stderr.write(render.render_full(result.diagnostics, result.sources,
                                            color=_use_color(args.color, sys.stderr)) + "\n")
    if result.plan is None:
        shown = args.stdin_filename if name == "-" else name
        sys.stderr.write(f"interlock: {_short(shown)}: not compiled ({result.errors} error"
                         f"{'s' if result.errors != 1 else ''})\n")
        return EXIT_PROBLEMS
    main_file = args.stdin_filename if name == "-" else name
    main_dir = os.path.dirname(os.path.abspath(main_file)) if not main_file.startswith("<") else os.getcwd()
    plan = Plan.model_validate(_relocate(result.plan.model_dump(mode="json"), main_dir))
    text = dump_plan(plan)
    if target is not None:
        from .atomic import write_atomic

        write_atomic(target, text)
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
    try:
        args = _parse(argv)
    except SystemExit as done:  # --help, --version, or a usage error argparse has printed
        return done.code if isinstance(done.code, int) else EXIT_USAGE
    try:
        if args.command in ("check", "compile"):  # the pre-commit path: nothing of the runtime is imported
            run = _check if args.command == "check" else _compile
            if not one_shot:
                return run(args)
            _import_front_end()
            # one command, then the process ends: the collector would only re-scan the IR's acyclic objects (a
            # third of a large file's compile), so it is paused for the command; a library call never touches it
            import gc

            enabled = gc.isenabled()
            gc.disable()
            try:
                return run(args)
            finally:
                if enabled:
                    gc.enable()
        from .tools import TOOLS, tool

        if args.command in TOOLS:
            return int(tool(args.command).run(args))
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
    except OSError as exc:  # a path the system refuses (too long, unreadable, ...): the user's, not ours
        if exc.filename is not None and not os.environ.get("INTERLOCK_DEBUG"):
            return _fail(f"{_short(os.fsdecode(exc.filename))}: {exc.strerror or exc}")
        return _internal(exc)
    except Exception as exc:
        return _internal(exc)


def _internal(exc: Exception) -> int:
    """An internal fault: reported, never a bare traceback (unless INTERLOCK_DEBUG asks for one)."""
    if os.environ.get("INTERLOCK_DEBUG"):
        raise exc
    sys.stderr.write(f"interlock: internal error: {type(exc).__name__}: {exc}\n"
                     "(set INTERLOCK_DEBUG=1 for a traceback; please report this)\n")
    return EXIT_USAGE


def console() -> None:
    """The `interlock` console script: one command, then exit with its status."""
    raise SystemExit(main(one_shot=True))


if __name__ == "__main__":  # pragma: no cover
    console()
