"""What every command needs, in one place: exit codes, the usage error, how a path is shown, where `-o` may write,
which files a folder holds for a command, and whether to colour.

Each subcommand (a module of `interlock.tools`, listed in its registry) imports these from here, never from
`interlock.cli`, which only parses the command line and dispatches.  Only the standard library is imported at the
top: `interlock check` must start fast.
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any, TextIO

from interlock.errors import UsageError

__all__ = ["EXIT_OK", "EXIT_PROBLEMS", "EXIT_USAGE", "EXIT_INTERRUPTED", "UsageError", "COLOR_HELP", "STDIN_HELP",
           "short", "use_color", "fail", "add_walk_options", "collect_with_config", "collect_files", "not_a_file",
           "output_target"]

EXIT_OK, EXIT_PROBLEMS, EXIT_USAGE = 0, 1, 2
"""0 clean (warnings allowed), 1 problems found, 2 usage or internal error."""
EXIT_INTERRUPTED = 130
"""Ctrl-C, as a shell reports a process ended by SIGINT."""

COLOR_HELP = "colour diagnostics: auto (a terminal without NO_COLOR), always or never (default: auto)"
STDIN_HELP = "name to report for `-` (default: <stdin>)"


def short(text: str, limit: int = 80) -> str:
    """A path as messages show it: a very long one is cut, with its length."""
    return text if len(text) <= limit else f"{text[:limit]}… ({len(text)} characters)"


def use_color(choice: str, stream: TextIO) -> bool:
    """Whether `--color CHOICE` colours what goes to `stream` (auto: a terminal, unless NO_COLOR is set)."""
    if choice == "always":
        return True
    if choice == "never" or os.environ.get("NO_COLOR"):
        return False
    return stream.isatty()


def fail(message: str) -> int:
    """Report a usage error on standard error; returns its exit status."""
    sys.stderr.write(f"interlock: error: {message}\n")
    return EXIT_USAGE


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
        raise UsageError(f"no {what} under {short(str(exc))} (hidden, ignored and excluded files are skipped: "
                         "--no-default-excludes walks them)") from None
    except FileNotFoundError as exc:
        raise UsageError(f"no such file or folder: {short(str(exc))}") from None
    except ConfigError as exc:
        raise UsageError(f"configuration: {exc}") from None


def collect_files(paths: Sequence[str], args: argparse.Namespace | None = None) -> list[str]:
    """Expand folders to their `*.wf` files (sorted, excludes applied); keep files and `-` as given."""
    return [name for name, _ in collect_with_config(paths, args)]


def not_a_file(name: str, what: str, example: str, instead: str) -> str:
    """Why `name`, given as a command's input file, is not one: absent, or a folder or something else, saying
    `what` the command takes (one file, like `example` in that folder) and what to do `instead` with a folder."""
    path, shown = Path(name), short(name)
    if not path.exists():
        return f"no such file: {shown}"
    if not path.is_dir():
        return f"not a file: {shown} (not a regular file): {what}"
    return f"{shown} is a folder: {what} (e.g. {shown}/{example}); {instead}"


def output_target(raw: str, example: str) -> Path:
    """Where `-o` writes, refused (`UsageError`) before anything is done when it cannot be written there; `example`
    names a file the command would write (every command's `-o` says the same).  The file is then written with
    `interlock.atomic.write_atomic`."""
    target = Path(raw)
    if raw.endswith(("/", os.sep)) and not target.is_dir():  # Path() drops the slash: `out/` would write a file `out`
        if target.exists():
            raise UsageError(f"-o {short(raw)}: ends in `/` but {short(str(target))} is not a folder: drop the `/` "
                             "to write to the file")
        raise UsageError(f"-o {short(raw)}: the folder {short(raw)} does not exist (a name ending in `/` is a "
                         "folder): create it first")
    if target.is_dir():
        raise UsageError(f"-o {short(raw)}: is a folder: give the file's name (e.g. {short(raw)}/{example})")
    parent = target.parent
    if not parent.is_dir():
        what = "is not a folder" if parent.exists() else "does not exist"
        raise UsageError(f"-o {short(raw)}: the folder {short(str(parent))} {what}: create it first")
    from .atomic import refusal

    why = refusal(target)
    if why is not None:
        raise UsageError(f"-o {short(raw)}: {why}")
    return target
