"""One document's text in, its analysis out: the compiler's diagnostics plus the program and symbol
table the requests read (hover, definition, completion never recompile).

`analyse` runs `interlock.compiler.check_program`, the front half of `compile_source` (the same
diagnostics, sorted the same way), and keeps the program and symbols; it skips lowering to a plan,
which no editor feature needs.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from interlock.compiler.program import Program
    from interlock.compiler.symbols import Symbols
    from interlock.config import Config
    from interlock.dsl import Diagnostic, SourceFile

    from .occurrences import Index

__all__ = ["Analysis", "analyse", "completion_analysis", "prelude_analysis", "prelude_path", "PRELUDE_FILE"]

PRELUDE_FILE = "<prelude:std>"


@dataclass
class Analysis:
    """A document at one version: what `check` reports for it, and (when it parsed) its program."""

    name: str
    version: int | None
    source: SourceFile
    diagnostics: tuple[Diagnostic, ...]
    program: Program | None = None
    symbols: Symbols | None = None
    used_files: frozenset[str] = field(default_factory=frozenset)
    """The names (paths) of the sibling files the program read through `use`."""
    docs_url: str | None = None
    """The project configuration's `docs_url` template (where diagnostics link), if it sets one."""

    @cached_property
    def index(self) -> Index:
        from .occurrences import build_index

        return build_index(self.program, self.symbols)


def prelude_path() -> Path:
    """The shipped `std.wf` on disk (definitions into the prelude open it)."""
    from importlib.resources import files

    return Path(str(files("interlock.compiler.prelude").joinpath("std.wf")))


def analyse(name: str, text: str, version: int | None, path: Path | None) -> Analysis:
    """Check `text` as the file `name` (on disk at `path`, whose folder resolves `use`)."""
    from interlock.compiler import check_program
    from interlock.dsl import SourceFile

    search = path.parent if path is not None else None
    config = _config(path)
    checked = check_program(SourceFile(name, text), search_dir=search, main_path=path, ignore=config.ignore)
    program = checked.program
    if program is None:
        return Analysis(name, version, checked.source, checked.diagnostics, docs_url=config.docs_url)
    used = frozenset(n for n in program.sources if n != name and program.is_user(n))
    return Analysis(name, version, checked.source, checked.diagnostics, program, checked.symbols, used,
                    config.docs_url)


def completion_analysis(name: str, text: str, line: int, version: int | None, path: Path | None) -> Analysis | None:
    """An analysis with a symbol table for completing on `line` of `text`, a text that does not parse (a handler
    begun, `on ` typed): the text with that line blanked — what is being typed left out, the rest of the file as it
    is now — or None when that does not parse either."""
    lines = text.split("\n")
    if not 0 <= line < len(lines):
        return None
    found = analyse(name, "\n".join([*lines[:line], "", *lines[line + 1:]]), version, path)
    return found if found.symbols is not None else None


def prelude_analysis(name: str) -> Analysis:
    """The analysis of an empty file: the prelude's triggers, kinds and roles (completion's last resort)."""
    return analyse(name, "", None, None)


def _config(path: Path | None) -> Config:
    """The project configuration of a file on disk (`interlock check`'s); none for an unsaved buffer, and none
    while the configuration file is not valid (`check` reports that; an editor keeps working)."""
    from interlock.config import NO_CONFIG, ConfigError, load_config

    if path is None:
        return NO_CONFIG
    try:
        return load_config(path)
    except ConfigError:
        return NO_CONFIG
