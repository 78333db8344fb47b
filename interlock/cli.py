"""Command-line arguments in, exit status out: `interlock check`, `interlock compile` and friends.

This module parses the command line and dispatches: every subcommand is a module of `interlock.tools`, listed in
its registry (`interlock.tools.COMMANDS`), and what they all need (exit codes, `UsageError`, `-o`, folder walking)
is `interlock.cmdline`.  Exit codes: 0 clean (warnings allowed), 1 problems found, 2 usage or internal error.
`interlock check` imports neither SQLAlchemy nor alembic: it runs in pre-commit hooks.
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Sequence

from . import __version__
from .cmdline import EXIT_INTERRUPTED, EXIT_OK, EXIT_PROBLEMS, EXIT_USAGE, fail, short

# The names the subcommands once imported from here, kept importable for callers outside the package.
from .cmdline import UsageError as UsageError
from .cmdline import add_walk_options as add_walk_options
from .cmdline import collect_files as _collect  # noqa: F401
from .cmdline import collect_with_config as collect_with_config
from .cmdline import not_a_file as not_a_file
from .cmdline import output_target as output_target
from .cmdline import use_color as _use_color  # noqa: F401
from .errors import InterlockError

__all__ = ["main", "console", "EXIT_OK", "EXIT_PROBLEMS", "EXIT_USAGE"]


def _parser(command: str | None = None) -> tuple[argparse.ArgumentParser, dict[str, argparse.ArgumentParser]]:
    """The top-level parser and every subcommand's parser by name (`db upgrade` as "db upgrade").  `command`: the
    subcommand about to run (its parser alone is then built in full); None builds all in full."""
    from .tools import add_parsers

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
    parsers: dict[str, argparse.ArgumentParser] = {}
    add_parsers(sub, parsers, only=command)
    return parser, parsers


def _parse(argv: Sequence[str] | None) -> argparse.Namespace:
    """Parse, reporting an unknown option with the usage of the subcommand it was given to."""
    from .tools import COMMANDS, command

    given = sys.argv[1:] if argv is None else list(argv)
    # the subcommand is the first word that is not an option (the top level's options take no value)
    word = next((a for a in given if not a.startswith("-")), "")
    parser, parsers = _parser(word)
    if word and word not in COMMANDS:
        import difflib

        close = difflib.get_close_matches(word, list(COMMANDS), n=1, cutoff=0.6)
        hint = f"did you mean `{close[0]}`?" if close else f"the commands are {', '.join(COMMANDS)}"
        parser.error(f"unknown command `{short(word)}`: {hint} (`interlock --help` lists them)")
    args, extra = parser.parse_known_args(given)
    if extra:
        nested = getattr(args, f"{args.command}_command", None)  # an action of a command (`db upgrade`)
        name = " ".join(n for n in (args.command, nested) if n)
        reject = getattr(command(args.command), "reject_extra", None) if args.command else None
        why = reject(args, extra) if reject is not None else None
        parsers.get(name, parser).error(why or f"unrecognized arguments: {' '.join(extra)}")
    if args.command is None:
        parser.print_help(sys.stderr)
        raise SystemExit(EXIT_USAGE)
    return args


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


def _run(args: argparse.Namespace, one_shot: bool) -> int:
    """Run the parsed command.  A one-shot process running a command of the compiler alone (`FRONT_END`: check,
    compile) imports the front end as `_import_front_end` does and pauses the collector for the command: it would
    only re-scan the IR's acyclic objects (a third of a large file's compile); a library call never touches it."""
    from .tools import command

    module = command(args.command)
    if not (one_shot and getattr(module, "FRONT_END", False)):
        return int(module.run(args))
    _import_front_end()
    import gc

    enabled = gc.isenabled()
    gc.disable()
    try:
        return int(module.run(args))
    finally:
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
        return _run(args, one_shot)
    except InterlockError as exc:  # the user's input (interlock.errors), reported without a traceback
        return fail(str(exc))
    except KeyboardInterrupt:
        sys.stderr.write("interlock: interrupted\n")
        return EXIT_INTERRUPTED
    except BrokenPipeError:
        return EXIT_OK
    except OSError as exc:  # a path the system refuses (too long, unreadable, ...): the user's, not ours
        if exc.filename is not None and not os.environ.get("INTERLOCK_DEBUG"):
            return fail(f"{short(os.fsdecode(exc.filename))}: {exc.strerror or exc}")
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
