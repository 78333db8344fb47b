"""Paths named on the command line in, the files a command works on out: folders are walked for files of the
command's kind (`*.wf` for `check` and `fmt`, scenarios for `test`), skipping what is excluded (ADR 0039).

Skipped when walking a folder, unless `--no-default-excludes`: hidden folders, `venv/`, `.venv/`,
`node_modules/`, `.tox/`, `build/`, `dist/`, and whatever the `.gitignore` files of the git repository say
(those from the repository's top down to each folder, deeper ones overriding, as git reads them).  Always skipped:
the configuration's `exclude` globs (`interlock.config`) and `--exclude GLOB` (relative to the current folder).
A file named on the command line is taken as it is.  `pathspec` reads the gitignore-style patterns; it is imported
only when there is a pattern to read.
"""

from __future__ import annotations

import os
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

from interlock.errors import InterlockError

from .config import Config

__all__ = ["DEFAULT_EXCLUDES", "Excludes", "walk_files", "collect", "NothingFound"]

DEFAULT_EXCLUDES = frozenset({"venv", ".venv", "node_modules", ".tox", "build", "dist"})
"""Folder names skipped at any depth unless `--no-default-excludes` (hidden folders are skipped too)."""


class Excludes:
    """What a walk skips: the CLI's `--exclude` globs (relative to `cwd`) and whether the defaults apply.  (A plain
    class: a dataclass costs most of a millisecond to define, on every `interlock check`.)"""

    __slots__ = ("_spec", "cwd", "defaults", "globs")

    def __init__(self, globs: Sequence[str] = (), defaults: bool = True, cwd: Path | None = None) -> None:
        self.globs = tuple(globs)
        self.defaults = defaults
        self.cwd = cwd if cwd is not None else Path(os.path.abspath("."))
        self._spec: Any = None

    def cli_excluded(self, path: Path, is_dir: bool) -> bool:
        if not self.globs:
            return False
        try:
            rel = Path(os.path.abspath(path)).relative_to(self.cwd).as_posix()
        except ValueError:
            rel = Path(os.path.abspath(path)).as_posix()
        if self._spec is None:
            import pathspec

            self._spec = pathspec.GitIgnoreSpec.from_lines(list(self.globs))
        return bool(self._spec.match_file(rel + ("/" if is_dir else "")))


class _GitIgnores:
    """The `.gitignore` files that govern a walk: (folder, spec) from the repository's top down."""

    def __init__(self, root: Path) -> None:
        self.layers: list[tuple[Path, Any]] = []
        top = _repository(root)
        if top is not None:
            for folder in reversed(root.parents):  # the walk adds `root` and what is under it
                if folder == top or top in folder.parents:
                    self.add(folder)

    def add(self, folder: Path) -> None:
        ignore = folder / ".gitignore"
        if not ignore.is_file():
            return
        try:
            lines = ignore.read_text(encoding="utf-8", errors="replace").splitlines()
        except OSError:
            return
        import pathspec  # only when a .gitignore exists

        self.layers.append((folder, pathspec.GitIgnoreSpec.from_lines(lines)))

    def ignored(self, path: Path, is_dir: bool) -> bool:
        verdict = None
        for folder, spec in self.layers:
            try:
                rel = path.relative_to(folder).as_posix()
            except ValueError:
                continue
            result = spec.check_file(rel + "/" if is_dir else rel)
            if result.include is not None:
                verdict = result.include
        return bool(verdict)


def _repository(start: Path) -> Path | None:
    for folder in (start, *start.parents):
        if (folder / ".git").exists():
            return folder
    return None


def walk_files(root: Path, suffixes: tuple[str, ...], excludes: Excludes, config: Config) -> Iterator[Path]:
    """The files under folder `root` whose name ends with one of `suffixes`, sorted, what is excluded left out.
    Links to folders are not followed; a file that is not a folder is yielded even when unreadable (the reader
    reports it, never the walk in silence)."""
    root = Path(os.path.abspath(root))
    ignores = _GitIgnores(root) if excludes.defaults else None
    stack = [root]
    found: list[Path] = []
    while stack:
        folder = stack.pop()
        if ignores is not None:
            ignores.add(folder)
        try:
            entries = sorted(os.scandir(folder), key=lambda e: e.name)
        except OSError:
            continue
        for entry in entries:
            path = Path(entry.path)
            is_dir = entry.is_dir(follow_symlinks=False)
            if excludes.defaults and (entry.name.startswith(".") or (is_dir and entry.name in DEFAULT_EXCLUDES)):
                continue
            if not is_dir and not entry.name.endswith(suffixes):
                continue
            if ignores is not None and ignores.ignored(path, is_dir):
                continue
            if config.excluded(path) or excludes.cli_excluded(path, is_dir):
                continue
            if is_dir:
                stack.append(path)
            else:
                found.append(path)
    yield from sorted(found)


class NothingFound(InterlockError):
    """A folder named on the command line holds no file of the kind (the message names it)."""


def collect(paths: Sequence[str], suffixes: tuple[str, ...], excludes: Excludes,
            load: Any = None) -> list[tuple[str, Config]]:
    """Each file to work on, as the command line names it (a folder's files as `FOLDER/relative/path`), with the
    configuration that governs it; `-` (standard input) is kept as given, governed by the current folder's.  A
    file named twice, or also found in a folder given, is listed once.  `load(path)` reads a configuration
    (default `interlock.config.load_config`, once per folder); `FileNotFoundError` for a path that does not exist,
    `NothingFound` for a folder without a file of the kind."""
    from .config import load_config

    reader = load or load_config
    cache: dict[Path, Config] = {}

    def config_of(path: Path) -> Config:
        folder = Path(os.path.abspath(path if path.is_dir() else path.parent))
        if folder not in cache:
            cache[folder] = reader(folder)
        return cache[folder]

    found: list[tuple[str, Config]] = []
    seen: set[str] = set()
    for raw in paths or ["."]:
        if raw == "-":
            found.append((raw, config_of(Path("."))))
            continue
        path = Path(raw)
        if path.is_dir():
            config = config_of(path)
            base = Path(os.path.abspath(path))
            names = [str(path / f.relative_to(base)) for f in walk_files(path, suffixes, excludes, config)]
            if not names:
                raise NothingFound(raw)
            entries = [(n, config) for n in names]
        elif path.exists():
            entries = [(raw, config_of(path))]
        else:
            raise FileNotFoundError(raw)
        for name, config in entries:
            key = os.path.realpath(name)
            if key not in seen:  # named twice, or also inside a folder given: once
                seen.add(key)
                found.append((name, config))
    return found
