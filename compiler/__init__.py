"""The interlock compiler: `.wf` source in, diagnostics and (when clean) an executable plan out.

`compile_source` / `compile_path` run the whole pipeline: load the program (prelude,
`use`d modules, the file), collect symbols, run the ordered passes, and lower to a
`Plan` when no pass reported an error.  Nothing raises on bad input.
"""

from __future__ import annotations

from collections.abc import Collection
from dataclasses import dataclass, field
from functools import cached_property
from os import PathLike
from pathlib import Path
from typing import TYPE_CHECKING, NamedTuple

from interlock.dsl import Diagnostic, Limits, SourceFile
from interlock.dsl.diagnostics import sort_key
from interlock.dsl.parser import DEFAULT_LIMITS, decode, display_name, read_limited

if TYPE_CHECKING:
    from interlock.runtime.plan import Plan

    from .context import Context
    from .program import Program
    from .symbols import Symbols

__all__ = ["CompileResult", "Checked", "check_program", "compile_source", "compile_path", "compile_bytes"]


@dataclass(frozen=True)
class CompileResult:
    """The outcome of compiling one file."""

    file: str
    diagnostics: tuple[Diagnostic, ...]
    unsealed_plan: Plan | None = field(default=None, repr=False)
    """The plan with an empty `digest` (None: errors, or `want_plan=False`); read `plan` instead."""
    sources: dict[str, SourceFile] = field(default_factory=dict)

    @cached_property
    def plan(self) -> Plan | None:
        """The executable plan, its digest filled in on first use (None when there were errors).

        The digests hash the plan's canonical JSON (its meaning, and its layout); computing them only when the plan
        is used keeps `interlock check`, and compiles whose plan is never read, from paying
        for it.
        """
        if self.unsealed_plan is None:
            return None
        from .lower_plan import seal

        return seal(self.unsealed_plan)

    @property
    def errors(self) -> int:
        return sum(1 for d in self.diagnostics if d.is_error)

    @property
    def warnings(self) -> int:
        return len(self.diagnostics) - self.errors

    @property
    def ok(self) -> bool:
        return self.errors == 0


def compile_source(source: SourceFile, *, search_dir: Path | None = None, limits: Limits = DEFAULT_LIMITS,
                   want_plan: bool = True, ignore: Collection[str] = ()) -> CompileResult:
    """Compile one in-memory source; `search_dir` resolves `use NAME` sibling files; `ignore`: warning codes a
    configuration ignores."""
    return _collected(source, search_dir=search_dir, limits=limits, want_plan=want_plan, main_path=None,
                      ignore=ignore)


def _collected(source: SourceFile, *, search_dir: Path | None, limits: Limits, want_plan: bool,
               main_path: Path | None, ignore: Collection[str] = ()) -> CompileResult:
    # A library call leaves the host's garbage collector alone; the CLI, one command per process, pauses it
    # around a compile (the IR is a large graph of small acyclic objects the collector would only re-scan).
    return _compile(source, search_dir=search_dir, limits=limits, want_plan=want_plan, main_path=main_path,
                    ignore=ignore)


class Checked(NamedTuple):  # a NamedTuple: a frozen dataclass costs ~0.5 ms to define on every `check`
    """A source loaded and checked, not lowered: its diagnostics (sorted as `check` prints them) and, when the
    program loaded, the program, its symbol table and the passes' context (what an editor's requests read)."""

    source: SourceFile
    diagnostics: tuple[Diagnostic, ...]
    program: Program | None = None
    symbols: Symbols | None = None
    context: Context | None = None


def check_program(source: SourceFile, *, search_dir: Path | None = None, limits: Limits = DEFAULT_LIMITS,
                  main_path: Path | None = None, ignore: Collection[str] = ()) -> Checked:
    """The front half of the pipeline: load the program (prelude, `use`d siblings from `search_dir`, the
    file), collect symbols, run the ordered passes, drop what `# interlock: ignore[…]` comments and the `ignore`d
    codes (a configuration's: warnings only) suppress.  `compile_source` is this, then the plan."""
    from interlock.dsl.suppress import apply_suppressions

    from .context import Context
    from .passes import CLEAN_PASSES, PASSES
    from .program import load_program
    from .symbols import collect_symbols, suggestion_budget

    if not source.name.isascii() and display_name(source.name) != source.name:
        # a name with lone surrogates (a file name that is not UTF-8) could not be stored or printed
        source = SourceFile(display_name(source.name), source.text)
    program, diagnostics = load_program(source, search_dir=search_dir, limits=limits, main_path=main_path)
    if program is None:
        return Checked(source, tuple(sorted(diagnostics, key=sort_key)))
    symbols, found = collect_symbols(program)
    diagnostics.extend(d for d in found if program.is_user(d.file))
    ctx = Context(program, symbols)
    with suggestion_budget():
        for check in PASSES:
            diagnostics.extend(check(ctx))
        if not any(d.is_error for d in diagnostics):
            for check in CLEAN_PASSES:
                diagnostics.extend(check(ctx))
    user = [name for name in program.sources if program.is_user(name)]
    diagnostics = apply_suppressions(diagnostics, program.sources, user, ignore)
    return Checked(source, tuple(sorted(diagnostics, key=sort_key)), program, symbols, ctx)


def _compile(source: SourceFile, *, search_dir: Path | None, limits: Limits, want_plan: bool,
             main_path: Path | None, ignore: Collection[str] = ()) -> CompileResult:
    checked = check_program(source, search_dir=search_dir, limits=limits, main_path=main_path, ignore=ignore)
    name = checked.source.name
    if checked.program is None or checked.context is None:
        return CompileResult(name, checked.diagnostics, None, {name: checked.source})
    plan = None
    if want_plan and not any(d.is_error for d in checked.diagnostics):
        from .lower_plan import lower_plan

        plan = lower_plan(checked.context)
    return CompileResult(name, checked.diagnostics, plan, dict(checked.program.sources))


def compile_bytes(name: str, data: bytes, *, search_dir: Path | None = None, limits: Limits = DEFAULT_LIMITS,
                  want_plan: bool = True, ignore: Collection[str] = ()) -> CompileResult:
    name = display_name(name)
    source, problems = decode(name, data, limits)
    if source is None:
        return CompileResult(name, tuple(problems))
    return compile_source(source, search_dir=search_dir, limits=limits, want_plan=want_plan, ignore=ignore)


def compile_path(path: str | PathLike[str], *, display: str | None = None, limits: Limits = DEFAULT_LIMITS,
                 want_plan: bool = True, ignore: Collection[str] = ()) -> CompileResult:
    """Compile a file on disk, named by a `Path` or a str (`display` is the name diagnostics print, default the path
    as given)."""
    path = Path(path)
    source, problems = read_limited(path, limits, name=None if display is None else display_name(display))
    if source is None:
        return CompileResult(display_name(path if display is None else display), tuple(problems))
    return _collected(source, search_dir=path.parent, limits=limits, want_plan=want_plan, main_path=path,
                      ignore=ignore)
