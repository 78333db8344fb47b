"""A folder in, the project configuration that governs it out: `[tool.interlock]` of the nearest `pyproject.toml` that
has one, or the nearest `interlock.toml` (docs/language.md, "Configuration"; ADR 0039).

    [tool.interlock]
    ignore = ["IL504"]                      # warning codes never reported
    exclude = ["vendor/**", "tests/golden/"]  # gitignore-style globs, relative to the file's folder
    docs_url = "https://example.org/interlock/diagnostics#{code}"   # where diagnostics link (SARIF, editors)

`interlock.toml` holds the same keys at its top level.  Looking up stops at the first folder that has either file
(an `interlock.toml` wins over a `pyproject.toml` beside it); a `pyproject.toml` without `[tool.interlock]` is passed
over.  A configuration that is not valid — an unknown key, a value of the wrong type, an error code in `ignore`
(errors cannot be ignored: the file would not compile) — raises `ConfigError` naming the file; the CLI exits 2.
Only the standard library is imported at the top (`interlock check` reads this on every run); `tomllib` only when a
file may hold a configuration.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from interlock.errors import InterlockError

__all__ = ["Config", "ConfigError", "find_config", "load_config", "NO_CONFIG", "KEYS"]

KEYS = ("ignore", "exclude", "docs_url")


class ConfigError(InterlockError):
    """A configuration file that cannot be used (the message names the file and the key)."""


class Config:
    """One project's settings; `root` is the folder `exclude` globs are relative to (None: no file).  (A plain
    class: a dataclass costs most of a millisecond to define, on every `interlock check`.)"""

    __slots__ = ("_spec", "docs_url", "exclude", "file", "ignore", "root")

    def __init__(self, ignore: frozenset[str] = frozenset(), exclude: tuple[str, ...] = (),
                 docs_url: str | None = None, file: Path | None = None, root: Path | None = None) -> None:
        self.ignore = ignore
        self.exclude = exclude
        self.docs_url = docs_url
        self.file = file
        self.root = root
        self._spec: Any = None

    def __repr__(self) -> str:
        return f"Config(ignore={sorted(self.ignore)}, exclude={list(self.exclude)}, file={self.file})"

    def excluded(self, path: Path) -> bool:
        """Whether `path` (a file or folder) matches one of the `exclude` globs."""
        if not self.exclude or self.root is None:
            return False
        try:
            rel = path.resolve().relative_to(self.root)
        except ValueError:  # outside the configured project
            return False
        spec = self._spec
        if spec is None:
            import pathspec  # only when a configuration excludes anything

            spec = self._spec = pathspec.GitIgnoreSpec.from_lines(self.exclude)
        text = rel.as_posix()
        return bool(spec.match_file(text) or (path.is_dir() and spec.match_file(text + "/")))

    def help_url(self, code: str) -> str | None:
        """The documentation link of a code under `docs_url` (None: no template configured)."""
        return None if self.docs_url is None else self.docs_url.replace("{code}", code)


NO_CONFIG = Config()


def _candidates(start: Path) -> list[Path]:
    folder = Path(os.path.abspath(start if start.is_dir() else start.parent))
    out: list[Path] = []
    for here in (folder, *folder.parents):
        own = here / "interlock.toml"
        if own.is_file():
            out.append(own)
        project = here / "pyproject.toml"
        if project.is_file() and _may_have_section(project):
            out.append(project)
    return out


def _may_have_section(path: Path) -> bool:
    """A cheap look before parsing: most `pyproject.toml` files never mention interlock."""
    try:
        text = path.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return False
    return "interlock" in text and "tool" in text


def _read(path: Path) -> dict[str, Any] | None:
    """The settings table of a candidate file (None: a `pyproject.toml` without `[tool.interlock]`)."""
    import tomllib

    try:
        with path.open("rb") as fh:
            data = tomllib.load(fh)
    except (OSError, tomllib.TOMLDecodeError) as exc:
        raise ConfigError(f"{path}: not readable as TOML: {exc}") from None
    if path.name == "interlock.toml":
        return data
    tool = data.get("tool")
    table = tool.get("interlock") if isinstance(tool, dict) else None
    if table is not None and not isinstance(table, dict):
        raise ConfigError(f"{path} [tool.interlock]: must be a table of settings")
    return table


def find_config(start: Path) -> Path | None:
    """The configuration file that governs `start` (a file or a folder), or None."""
    for path in _candidates(start):
        if _read(path) is not None:
            return path
    return None


def load_config(start: Path) -> Config:
    """The configuration governing `start` (`NO_CONFIG` when no file does); `ConfigError` when it is not valid."""
    for path in _candidates(start):
        table = _read(path)
        if table is not None:
            where = f"{path}" + ("" if path.name == "interlock.toml" else " [tool.interlock]")
            return _parse(table, where, path)
    return NO_CONFIG


def _strings(table: dict[str, Any], key: str, where: str) -> tuple[str, ...]:
    value = table.get(key, [])
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise ConfigError(f"{where}: `{key}` must be a list of strings, e.g. {key} = [\"…\"]")
    return tuple(value)


def _parse(table: dict[str, Any], where: str, path: Path) -> Config:
    from interlock.dsl.diagnostics import CODES, Severity

    for key in table:
        if key not in KEYS:
            import difflib

            close = difflib.get_close_matches(key, KEYS, n=1)
            hint = f" (did you mean `{close[0]}`?)" if close else f" (known: {', '.join(KEYS)})"
            raise ConfigError(f"{where}: unknown setting `{key}`{hint}")
    ignore = set()
    for code in _strings(table, "ignore", where):
        info = CODES.get(code.upper())
        if info is None:
            raise ConfigError(f"{where}: `ignore` names `{code}`, which is not a diagnostic code "
                              "(`interlock explain CODE` lists them)")
        if info.severity is Severity.ERROR:
            raise ConfigError(f"{where}: `ignore` names `{info.code}` ({info.name}), an error: errors cannot be "
                              "ignored, a file with an error does not compile")
        ignore.add(info.code)
    docs_url = table.get("docs_url")
    if docs_url is not None and (not isinstance(docs_url, str) or "{code}" not in docs_url):
        raise ConfigError(f"{where}: `docs_url` must be a string with `{{code}}` where the code goes, e.g. "
                          "\"https://example.org/diagnostics#{code}\"")
    return Config(frozenset(ignore), _strings(table, "exclude", where), docs_url, path,
                  Path(os.path.abspath(path.parent)).resolve())
