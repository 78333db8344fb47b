"""One document's text in, its analysis out: the compiler's diagnostics plus the program and symbol
table the requests read (hover, definition, completion never recompile).

`analyse` runs the same pipeline as `compile_source` (load the program, collect symbols, the ordered
passes; the same diagnostics, sorted the same way) but keeps the program and symbols and skips
lowering to a plan, which no editor feature needs.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from interlock.compiler.program import Program
    from interlock.compiler.symbols import Symbols
    from interlock.dsl import Diagnostic, SourceFile

    from .index import Index

__all__ = ["Analysis", "analyse", "prelude_path", "PRELUDE_FILE"]

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

    @cached_property
    def index(self) -> Index:
        from .index import build_index

        return build_index(self)


def prelude_path() -> Path:
    """The shipped `std.wf` on disk (definitions into the prelude open it)."""
    from importlib.resources import files

    return Path(str(files("interlock.compiler.prelude").joinpath("std.wf")))


def analyse(name: str, text: str, version: int | None, path: Path | None) -> Analysis:
    """Check `text` as the file `name` (on disk at `path`, whose folder resolves `use`)."""
    from interlock.compiler.context import Context
    from interlock.compiler.passes import PASSES
    from interlock.compiler.program import load_program
    from interlock.compiler.symbols import collect_symbols, suggestion_budget
    from interlock.dsl import SourceFile
    from interlock.dsl.diagnostics import sort_key

    source = SourceFile(name, text)
    search = path.parent if path is not None else None
    program, diagnostics = load_program(source, search_dir=search, main_path=path)
    if program is None:
        return Analysis(name, version, source, tuple(sorted(diagnostics, key=sort_key)))
    symbols, found = collect_symbols(program)
    diagnostics.extend(d for d in found if program.is_user(d.file))
    ctx = Context(program, symbols)
    with suggestion_budget():
        for check in PASSES:
            diagnostics.extend(check(ctx))
    used = frozenset(n for n in program.sources if n != name and program.is_user(n))
    return Analysis(name, version, source, tuple(sorted(diagnostics, key=sort_key)), program, symbols, used)
