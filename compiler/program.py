"""A main `.wf` source in, a `Program` out: the prelude, every `use`d module and the main file, loaded once each.

`use NAME` resolves to a prelude shipped with the package (`interlock/compiler/prelude/NAME.wf`)
or to a sibling file `NAME.wf` next to the file that uses it.  Loading never raises: a
missing module is a diagnostic at the `use` line.
"""

from __future__ import annotations

import os
from functools import lru_cache
from pathlib import Path
from typing import NamedTuple

from interlock.dsl import Diagnostic, Limits, SourceFile, ir, parse_source
from interlock.dsl.diagnostics import InternalCompilerError, make
from interlock.dsl.parser import DEFAULT_LIMITS, package_text, read_limited

__all__ = ["Program", "load_program", "prelude_module", "PRELUDE_NAME"]

PRELUDE_NAME = "std"


class Program(NamedTuple):
    """Modules in dependency order (prelude first, the main file last), their sources, and
    which files are shipped preludes (a NamedTuple: cheaper to define than a dataclass)."""

    modules: tuple[ir.Module, ...]
    sources: dict[str, SourceFile]
    builtin_files: frozenset[str] = frozenset()

    @property
    def main(self) -> ir.Module:
        return self.modules[-1]

    def is_user(self, file: str) -> bool:
        return file not in self.builtin_files


def _prelude_text(name: str) -> str | None:
    return package_text("interlock.compiler.prelude", f"{name}.wf")


@lru_cache(maxsize=8)
def prelude_module(name: str) -> tuple[ir.Module, SourceFile] | None:
    """A shipped prelude, parsed once per process."""
    text = _prelude_text(name)
    if text is None:
        return None
    source = SourceFile(f"<prelude:{name}>", text)
    cached = _load_cached(name, text)
    if cached is not None:
        return cached, source
    module, diagnostics = parse_source(source)
    if module is None or diagnostics:
        raise InternalCompilerError(f"shipped prelude {name}.wf does not parse: {diagnostics}")
    _store_cached(name, text, module)
    return module, source


# The IR's shape is part of the key: a pickle of an older IR would load without error
# and lack fields.  Bump it whenever an IR node changes.
_IR_VERSION = 4


def _cache_name(name: str, text: str) -> str:
    import hashlib

    from interlock import __version__

    digest = hashlib.sha256(f"{__version__}\0{_IR_VERSION}\0{name}\0{text}".encode()).hexdigest()[:16]
    return f"prelude-{name}-{digest}.pickle"


def _load_cached(name: str, text: str) -> ir.Module | None:
    """The lowered prelude from the on-disk cache (keyed by its text and interlock's version).

    Read only through `interlock.dsl.cache`: unpickling runs code, so only a file in a
    folder nobody else can write is trusted.
    """
    import pickle

    from interlock.dsl.cache import open_cached

    fh = open_cached(_cache_name(name, text))
    if fh is None:
        return None
    try:
        with fh:
            module = pickle.load(fh)
    except Exception:  # unreadable or stale: parse instead
        return None
    return module if isinstance(module, ir.Module) else None


def _store_cached(name: str, text: str, module: ir.Module) -> None:
    import pickle

    from interlock.dsl.cache import write_cached

    # no safe folder, or a read-only one: only costs time
    write_cached(_cache_name(name, text), lambda fh: pickle.dump(module, fh, protocol=pickle.HIGHEST_PROTOCOL))


class _Using(NamedTuple):
    """A module whose `use` lines are being followed: the next one is `uses[index]`."""

    module: ir.Module
    here: Path | None
    real: str | None
    uses: list[ir.UseDecl]


def _uses(module: ir.Module) -> list[ir.UseDecl]:
    return [d for d in module.decls if isinstance(d, ir.UseDecl)]


def load_program(
    source: SourceFile,
    *,
    search_dir: Path | None = None,
    limits: Limits = DEFAULT_LIMITS,
    main_path: Path | None = None,
) -> tuple[Program | None, list[Diagnostic]]:
    """Load the main source and everything it uses.  `None` if the main file does not parse.

    `main_path`, the main file on disk (when it is one), lets a module that uses it back
    be reported as a cycle.  Modules are followed depth first with an explicit stack, so a
    chain of `use` lines of any length loads (a recursive walk overflowed Python's stack at
    about a thousand files); a `use` of a module on the current chain is a cycle.
    """
    from .siblings import find_sibling

    diagnostics: list[Diagnostic] = []
    main, problems = parse_source(source, limits)
    diagnostics.extend(problems)
    if main is None:
        return None, diagnostics

    std = prelude_module(PRELUDE_NAME)
    assert std is not None, "std.wf is shipped with the package"
    modules: list[ir.Module] = [std[0]]
    sources: dict[str, SourceFile] = {std[1].name: std[1], source.name: source}
    builtin = {std[1].name}
    preludes: set[str] = {PRELUDE_NAME}
    main_real = os.path.realpath(main_path) if main_path is not None else None
    loaded: set[str] = set()  # real paths of the sibling modules read so far
    chain: dict[str, str] = {}  # real path -> name, for every file on the current chain of `use`s
    if main_real is not None:
        chain[main_real] = source.name
    stack = [_Using(main, search_dir, main_real, _uses(main)[::-1])]
    while stack:
        top = stack[-1]
        if not top.uses:
            stack.pop()
            if top.real is not None:
                chain.pop(top.real, None)
            if stack:  # the main module goes last, below
                modules.append(top.module)
            continue
        decl = top.uses.pop()
        name = decl.name.name
        if name in preludes:
            continue
        shipped = prelude_module(name)
        if shipped is not None:
            preludes.add(name)
            modules.append(shipped[0])
            sources[shipped[1].name] = shipped[1]
            builtin.add(shipped[1].name)
            continue
        found = find_sibling(decl, top.here, top.module.file)
        if isinstance(found, Diagnostic):
            diagnostics.append(found)
            continue
        if found.real in chain:
            diagnostics.append(_cycle(decl, list(chain.items()), found.real))
            continue
        if found.real in loaded:
            continue
        loaded.add(found.real)
        sub_source, read_problems = read_limited(found.path, limits, name=found.name)
        diagnostics.extend(read_problems)
        if sub_source is None:
            continue
        sub, sub_problems = parse_source(sub_source, limits)
        diagnostics.extend(sub_problems)
        if sub is None:
            continue
        sources[sub_source.name] = sub_source
        chain[found.real] = sub_source.name
        stack.append(_Using(sub, found.path.parent, found.real, _uses(sub)[::-1]))
    modules.append(main)
    return Program(tuple(modules), sources, frozenset(builtin)), diagnostics


def _cycle(decl: ir.UseDecl, chain: list[tuple[str, str]], back_to: str) -> Diagnostic:
    """`use-cycle` at the `use` line that closes the cycle, naming the cycle's files in order."""
    names = [name for real, name in chain]
    start = next(i for i, (real, _) in enumerate(chain) if real == back_to)
    cycle = names[start:]
    here = decl.span.file
    if len(cycle) == 1:
        return make("use-cycle", decl.name.span, f"`use {decl.name.name}` makes {here} use itself",
                    help=f"remove `use {decl.name.name}`: a file always sees its own declarations")
    else:
        shown = cycle if len(cycle) <= 8 else [*cycle[:4], f"… {len(cycle) - 6} more …", *cycle[-2:]]
        message = f"`use {decl.name.name}` closes a cycle of `use` lines: " + " -> ".join([*shown, cycle[0]])
    return make("use-cycle", decl.name.span, message,
                help="a module cannot use, directly or through others, a file that uses it; move what both need "
                     "into a third file that both use")
