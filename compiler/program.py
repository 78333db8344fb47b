"""A main `.wf` source in, a `Program` out: the prelude, every `use`d module and the main file, loaded once each.

`use NAME` resolves to a prelude shipped with the package (`interlock/compiler/prelude/NAME.wf`)
or to a sibling file `NAME.wf` next to the file that uses it.  Loading never raises: a
missing module is a diagnostic at the `use` line.
"""

from __future__ import annotations

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
_IR_VERSION = 2


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


def load_program(
    source: SourceFile,
    *,
    search_dir: Path | None = None,
    limits: Limits = DEFAULT_LIMITS,
) -> tuple[Program | None, list[Diagnostic]]:
    """Load the main source and everything it uses.  `None` if the main file does not parse."""
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
    seen: set[str] = {PRELUDE_NAME}

    def visit(module: ir.Module, here: Path | None, stack: tuple[str, ...]) -> None:
        for decl in module.decls:
            if not isinstance(decl, ir.UseDecl):
                continue
            name = decl.name.name
            if name in seen:
                continue
            seen.add(name)
            shipped = prelude_module(name)
            if shipped is not None:
                modules.append(shipped[0])
                sources[shipped[1].name] = shipped[1]
                builtin.add(shipped[1].name)
                continue
            path = (here / f"{name}.wf") if here is not None else None
            if path is None or not path.is_file():
                where = f" next to {module.file}" if here is not None else " (the input has no directory)"
                diagnostics.append(make("unknown-module", decl.name.span,
                                        f"no shipped prelude and no file `{name}.wf`{where}",
                                        help="`use NAME` loads a shipped prelude or a sibling file NAME.wf"))
                continue
            sub_source, read_problems = read_limited(path, limits)
            diagnostics.extend(read_problems)
            if sub_source is None:
                continue
            sub, sub_problems = parse_source(sub_source, limits)
            diagnostics.extend(sub_problems)
            if sub is None:
                continue
            sources[sub_source.name] = sub_source
            visit(sub, path.parent, (*stack, name))
            modules.append(sub)

    visit(main, search_dir, ())
    modules.append(main)
    return Program(tuple(modules), sources, frozenset(builtin)), diagnostics
