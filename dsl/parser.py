"""Source text in, IR module (or diagnostics) out: the LALR parse, lowering as it parses.

The parser is built once per process from `interlock/grammars/wf.lark` and kept on disk between
runs as a pickle (`interlock.dsl.cache`: read only from a folder nobody else can write).  It lowers
as it parses: the `Lowering` callbacks (`interlock.dsl.lower`) build IR nodes at each reduction, so
no parse tree is built; the formatter's concrete parser (`parse_concrete`) keeps the tree and the
comments.  What comes before and after the parse has modules of its own: the input limits
(`limits`), the pre-scan that enforces them before Lark sees the text (`prescan`), file reading and
decoding (`files`) and the words of syntax diagnostics (`expected`).
"""

from __future__ import annotations

import copyreg
import pickle
import re
import sys
import threading
from functools import lru_cache
from importlib import import_module
from pathlib import Path
from types import ModuleType
from typing import IO, TYPE_CHECKING, Any

from lark import Lark, Token, Tree
from lark.exceptions import UnexpectedInput

from .cache import cache_path, open_cached, write_cached
from .diagnostics import Diagnostic
from .expected import describe_expected, syntax_diagnostic
from .files import decode, display_name, not_regular, read_limited
from .limits import DEFAULT_LIMITS, Limits
from .prescan import prescan
from .source import SourceFile

if TYPE_CHECKING:
    from . import ir
    from .lower import Lowering

__all__ = ["Limits", "DEFAULT_LIMITS", "get_parser", "parse_module", "parse_concrete", "describe_expected",
           "read_limited", "decode", "display_name", "not_regular"]
# (the limits, the file reading, the pre-scan and the syntax diagnostics live in modules of their own; their
# names are re-exported here for the modules that import them from the parser)


def cache_dir() -> str:
    """Where interlock keeps its caches (the parser tables, the lowered prelude); they are
    read and written only if that folder is safe (`interlock.dsl.cache`)."""
    return cache_path()


def package_text(package: str, name: str) -> str | None:
    """A text file shipped inside an interlock package (None: no such file).

    Read from the package's folder when it has one: `importlib.resources` costs a few
    milliseconds of imports (zipfile among them) on every `interlock check`.
    """
    init = getattr(import_module(package), "__file__", None)
    if init is not None:
        path = Path(init).parent / name
        if path.is_file():
            return path.read_text(encoding="utf-8")
    from importlib import resources  # a zipped install

    resource = resources.files(package).joinpath(name)
    return resource.read_text(encoding="utf-8") if resource.is_file() else None


def grammar_text() -> str:
    text = package_text("interlock.grammars", "wf.lark")
    assert text is not None, "wf.lark is shipped with the package"
    return text


# The built parser (tables, lexer configuration, callbacks bound to the lowering) is pickled
# whole: loading it takes a fraction of the time of building it, which matters to
# `interlock check` in a pre-commit hook.  On CPython the pickle also carries every lexer
# state's compiled regular expression as SRE code (which CPython validates as it loads
# it), so no process compiles them again (`re` compiles in pure Python: a few
# milliseconds on the first parse).  The file starts with its key (the grammar text,
# Lark's and Python's exact versions); any mismatch or error means a rebuild, and a
# rebuild rewrites the file.  The file is read and written only through
# `interlock.dsl.cache` (a pickle runs code as it loads, so only a file in a folder nobody
# else can write is trusted); Lark's own cache, a pickle at a path Lark opens itself, is
# not used: it would only speed up the rare rebuild.
@lru_cache(maxsize=1)
def _parser() -> tuple[Lark, Lowering]:
    """The LALR parser with the lowering callbacks, from the pickle cache or built (and cached)."""
    import lark

    from .lower import Lowering

    text = grammar_text()
    key = _parser_key(text, lark.__version__)
    name = parser_cache_name(lark.__version__)
    loaded = _load_parser(name, key)
    if loaded is not None:
        return loaded
    lowering = Lowering()
    parser = Lark(
        text,
        parser="lalr",
        lexer="contextual",
        propagate_positions=False,
        maybe_placeholders=True,
        transformer=lowering,
    )
    _store_parser(name, key, parser, lowering)
    return parser, lowering


def parser_cache_name(lark_version: str) -> str:
    """The parser cache's file name in the cache folder."""
    return f"wf-parser-lark{lark_version}-py{sys.version_info[0]}{sys.version_info[1]}.pickle"


_PARSER_CACHE_VERSION = 4
_PRECOMPILED = sys.implementation.name == "cpython"


def _parser_key(text: str, lark_version: str) -> tuple[object, ...]:
    return (_PARSER_CACHE_VERSION, text, lark_version, sys.version, _PRECOMPILED)


def _by_name() -> dict[int, str]:
    """Objects Lark compares by identity: a pickle must refer to them by name, not copy them."""
    from lark.parsers.lalr_analysis import Reduce, Shift

    return {id(Shift): "Shift", id(Reduce): "Reduce"}


def _sre_args(pattern: re.Pattern[str]) -> tuple[object, ...]:
    """What `re` passes to `_sre.compile` for `pattern` (CPython's own compiler, re-run)."""
    from re import _compiler, _parser  # type: ignore[attr-defined]

    parsed = _parser.parse(pattern.pattern, pattern.flags)
    groupindex = dict(parsed.state.groupdict)
    indexgroup: list[str | None] = [None] * parsed.state.groups
    for name, index in groupindex.items():
        indexgroup[index] = name
    code = [int(op) for op in _compiler._code(parsed, pattern.flags)]  # opcodes are named int subclasses
    return (pattern.pattern, pattern.flags | parsed.state.flags, code, parsed.state.groups - 1, groupindex,
            tuple(indexgroup))


def _restore_pattern(*args: object) -> re.Pattern[str]:
    import _sre  # type: ignore[import-not-found]

    pattern: re.Pattern[str] = _sre.compile(*args)
    return pattern


class _ParserPickler(pickle.Pickler):
    """Pickles modules and Lark's action singletons by name, and (on CPython) compiled
    patterns as SRE code; all three load with the plain C unpickler."""

    def __init__(self, file: IO[bytes]) -> None:
        super().__init__(file, protocol=pickle.HIGHEST_PROTOCOL)
        self._names = _by_name()

    def reducer_override(self, obj: object) -> Any:
        name = self._names.get(id(obj))
        if name is not None:
            return name  # a module-level name of the object's module
        if type(obj) is Lark:
            # `grammar` (the grammar's own parse trees, a fifth of the objects) is only read
            # while Lark builds the tables, and by its Reconstructor, which we never use
            return copyreg.__newobj__, (Lark,), {**vars(obj), "grammar": None}  # type: ignore[attr-defined]
        if isinstance(obj, ModuleType):  # Lark keeps the `re` module in its lexer configuration
            return import_module, (obj.__name__,)
        if _PRECOMPILED and type(obj) is re.Pattern:
            return _restore_pattern, _sre_args(obj)
        return NotImplemented


def _load_parser(name: str, key: tuple[object, ...]) -> tuple[Lark, Lowering] | None:
    from .lower import Lowering

    loaded = _load_pickled(name, key, Lowering)
    return None if loaded is None else (loaded[0], loaded[1])


def _load_pickled(name: str, key: tuple[object, ...], companion: type) -> tuple[Lark, Any] | None:
    """A cached (parser, `companion` instance) pair, or None when absent, stale or not trusted."""
    fh = open_cached(name)
    if fh is None:  # absent, or not a file that may be trusted
        return None
    try:
        with fh:
            if pickle.load(fh) != key:
                return None
            loaded = pickle.load(fh)
    except Exception:  # stale or unreadable: rebuild
        return None
    if not (isinstance(loaded, tuple) and len(loaded) == 2 and isinstance(loaded[0], Lark)
            and isinstance(loaded[1], companion)):
        return None
    return loaded[0], loaded[1]


def _build_scanners(parser: Lark) -> None:
    """Compile every lexer state's scanner now (Lark builds them lazily, on first use)."""
    lexer = getattr(parser.parser, "lexer", None)
    for basic in [*getattr(lexer, "lexers", {}).values(), getattr(lexer, "root_lexer", None)]:
        if basic is not None and hasattr(basic, "scanner"):
            basic.scanner  # noqa: B018 - the property builds and keeps it


def _store_parser(name: str, key: tuple[object, ...], parser: Lark, companion: object) -> None:
    def write(fh: IO[bytes]) -> None:
        if _PRECOMPILED:
            _build_scanners(parser)
        pickle.dump(key, fh, protocol=pickle.HIGHEST_PROTOCOL)  # its own memo: loaded on its own
        _ParserPickler(fh).dump((parser, companion))

    # no safe folder, a full disk, or a Lark that cannot be pickled: only costs time
    write_cached(name, write)


@lru_cache(maxsize=1)
def terminal_literals() -> dict[str, str]:
    """The grammar's terminals that are one fixed string, by name (for the syntax diagnostics' words)."""
    return {t.name: str(t.pattern.value) for t in get_parser().terminals if t.pattern.type == "str"}


def get_parser() -> Lark:
    """The process-wide LALR parser (built from the on-disk cache when one exists).

    Its callbacks lower as they parse and keep per-file state: parse with `parse_module`,
    which serialises parses and resets that state, not with `get_parser().parse`.
    """
    return _parser()[0]


# One lowering state per process: parses take turns (they hold the GIL throughout anyway).
_PARSE_LOCK = threading.Lock()


# ---- the concrete parser (the formatter's) -------------------------------------------------------


class CommentSink:
    """The concrete parser's lexer callback on COMMENT: keeps the comments of one parse, in order.

    Comments are `%ignore`d, so the parse tree never holds them; Lark still hands every
    ignored token that has a callback to it first.
    """

    def __init__(self) -> None:
        self.comments: list[Token] = []

    def __call__(self, token: Token) -> Token:
        self.comments.append(token)
        return token


@lru_cache(maxsize=1)
def _concrete_parser() -> tuple[Lark, CommentSink]:
    """The same grammar and tables, building a full parse tree (every token kept) and
    collecting comments; cached on disk beside the lowering parser."""
    import lark

    text = grammar_text()
    key = (*_parser_key(text, lark.__version__), "concrete")
    name = "wf-concrete-" + parser_cache_name(lark.__version__)[len("wf-"):]
    loaded = _load_pickled(name, key, CommentSink)
    if loaded is not None:
        return loaded[0], loaded[1]
    sink = CommentSink()
    parser = Lark(text, parser="lalr", lexer="contextual", propagate_positions=False, maybe_placeholders=False,
                  keep_all_tokens=True, lexer_callbacks={"COMMENT": sink})
    _store_parser(name, key, parser, sink)
    return parser, sink


_CONCRETE_LOCK = threading.Lock()


def parse_concrete(source: SourceFile, limits: Limits = DEFAULT_LIMITS
                   ) -> tuple[Tree[Token] | None, list[Token], Diagnostic | None]:
    """The concrete syntax of one file: its parse tree (every token, in source order) and its
    comment tokens, or the diagnostic that refused it (a limit, or a syntax error exactly as
    `parse_module` reports it).  Nothing is lowered: the tree is what the formatter reads."""
    refused = prescan(source, limits)
    if refused is not None:
        return None, [], refused
    parser, sink = _concrete_parser()
    with _CONCRETE_LOCK:
        sink.comments = []
        try:
            tree = parser.parse(source.text)
        except UnexpectedInput as exc:
            return None, [], syntax_diagnostic(source, exc, terminal_literals())
        finally:
            comments, sink.comments = sink.comments, []
    return tree, comments, None


def parse_module(source: SourceFile, limits: Limits = DEFAULT_LIMITS) -> tuple[ir.Module | None, list[Diagnostic]]:
    """Parse and lower one file.  Returns the module and its lowering diagnostics, or None
    and the diagnostics that refused it (exactly one for a syntax error or a limit)."""
    from .lower import Refused

    refused = prescan(source, limits)
    if refused is not None:
        return None, [refused]
    parser, lowering = _parser()
    with _PARSE_LOCK:
        lowering.begin(source, limits)
        try:
            module: Any = parser.parse(source.text)  # the `start` callback's ir.Module
        except UnexpectedInput as exc:
            lowering.end()
            return None, [syntax_diagnostic(source, exc, terminal_literals())]
        except Refused:
            return None, lowering.end()
        except BaseException:
            lowering.end()
            raise
        return module, lowering.end()

