"""Source text in, IR module (or diagnostics) out: the limits pre-scan and the LALR parse.

The LALR parser is built once per process from `interlock/grammars/wf.lark` and cached
on disk between runs (Lark's own cache, keyed by grammar hash and Lark version).  It
lowers as it parses: the `Lowering` callbacks (`interlock.dsl.lower`) build IR nodes at
each reduction, so no parse tree is built.  Input limits are enforced before Lark sees
the text (size, nesting, operator chains, tokens, string and name lengths) and while
lowering (counts of declarations, steps, actions, …), so hostile input gets a diagnostic
instead of a hang or a traceback.
"""

from __future__ import annotations

import copyreg
import os
import pickle
import re
import stat
import sys
import threading
from collections.abc import Iterator
from functools import lru_cache
from importlib import import_module
from itertools import islice
from pathlib import Path
from types import ModuleType
from typing import IO, TYPE_CHECKING, Any, NamedTuple

from lark import Lark, Token, Tree
from lark.exceptions import UnexpectedCharacters, UnexpectedEOF, UnexpectedInput, UnexpectedToken

from .cache import cache_path, open_cached, write_cached
from .construct import construct
from .diagnostics import Diagnostic, label, make
from .source import SourceFile, Span

if TYPE_CHECKING:
    from . import ir
    from .lower import Lowering

__all__ = ["Limits", "DEFAULT_LIMITS", "get_parser", "parse_module", "parse_concrete", "describe_expected"]


class Limits(NamedTuple):
    """Hard limits on one file; each violation is a diagnostic (IL003, IL004 or IL009) and the file is refused.

    The defaults are far above any hand-written workflow file (the 20,000-line benchmark
    file uses under a sixth of the token budget) and keep every later pass fast.  Build
    one with keywords: `Limits(max_steps=50)`.
    """

    max_bytes: int = 8 * 1024 * 1024
    """File size in bytes (IL004)."""
    max_depth: int = 64
    """Bracket nesting plus `not` chains, and operator depth of an expression (IL003)."""
    max_tokens: int = 500_000
    """Tokens in the file: names, literals, operators and punctuation, not comments (IL009)."""
    max_string_length: int = 100_000
    """Characters between the quotes of one string literal, escapes as written (IL009)."""
    max_name_length: int = 256
    """Characters of one name (identifier) (IL009)."""
    max_declarations: int = 10_000
    """Top-level declarations in the file (IL009)."""
    max_steps: int = 1_000
    """Steps in one workflow (IL009)."""
    max_actions: int = 1_000
    """Actions in one handler (IL009)."""
    max_dispatch_items: int = 1_000
    """Lines (`event`, `skip`, `load`, `operation`, `payload`) in one dispatch block (IL009)."""
    max_items: int = 10_000
    """Entries of any other list or block: list and map values, arguments, parameters,
    record fields, names in `role`/`on`/entry lists, step attributes and handlers,
    payload assignments, parts of a dotted name (IL009)."""


DEFAULT_LIMITS = Limits()


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
    refused = _prescan(source, limits)
    if refused is not None:
        return None, [], refused
    parser, sink = _concrete_parser()
    with _CONCRETE_LOCK:
        sink.comments = []
        try:
            tree = parser.parse(source.text)
        except UnexpectedInput as exc:
            return None, [], _syntax_diagnostic(source, exc)
        finally:
            comments, sink.comments = sink.comments, []
    return tree, comments, None


# ---- words for expected tokens ----------------------------------------------------------

_GROUPS: tuple[tuple[str, frozenset[str]], ...] = (
    ("a declaration", frozenset({"USE", "TRIGGER", "ROLE", "SESSION", "TASK", "TRANSITION", "RECORD",
                                 "ENTRY_OPEN", "WORKFLOW", "DISPATCH"})),
    ("a step attribute", frozenset({"START", "MANUAL_MOVE", "TERMINAL", "POSITION", "WIP_LIMIT", "STAGE",
                                    "PULL_FROM", "PROMPT"})),
    ("a dispatch item (`event`, `skip`, `load`, `operation`, `payload`)",
     frozenset({"EVENT", "SKIP", "LOAD", "OPERATION", "PAYLOAD"})),
    ("a level (`silent`, `debug`, `info`, `warning`, `error`)",
     frozenset({"SILENT", "DEBUG", "INFO", "WARNING", "ERROR"})),
    ("an action class (`session`, `task`, `transition`)", frozenset({"SESSION", "TASK", "TRANSITION"})),
    ("a value", frozenset({"STRING", "INT", "TRUE", "FALSE", "NAME", "LSQB", "LBRACE"})),
    ("an expression", frozenset({"STRING", "INT", "TRUE", "FALSE", "NAME", "LPAR", "NOT"})),
)
_WORDS = {"NAME": "a name", "STRING": "a string", "INT": "an integer", "$END": "end of file",
          "ENTRY_OPEN": "`entry {`"}
_CLOSERS = frozenset({"RBRACE", "RPAR", "RSQB"})


def _terminal_word(name: str) -> str:
    if name in _WORDS:
        return _WORDS[name]
    for term in get_parser().terminals:
        if term.name == name:
            pattern = term.pattern
            if pattern.type == "str":
                return f"`{pattern.value}`"
            break
    return name.lower().replace("_", " ")


def describe_expected(expected: set[str] | frozenset[str]) -> tuple[str, list[str]]:
    """('a step attribute or `on`', closers) — human words for a set of terminal names."""
    remaining = set(expected)
    words: list[str] = []
    for word, group in _GROUPS:
        if len(group) >= 3 and group <= remaining | {"LBRACE", "LSQB", "LPAR"} and len(group & remaining) >= 3:
            words.append(word)
            remaining -= group
    closers = sorted(remaining & _CLOSERS)
    rest = sorted(remaining - _CLOSERS)
    words.extend(_terminal_word(n) for n in rest)
    closer_words = [_terminal_word(n) for n in closers]
    if not words:
        words, closer_words = closer_words, []
    return _join(words), closer_words


def _join(words: list[str]) -> str:
    if not words:
        return "nothing"
    if len(words) == 1:
        return words[0]
    return ", ".join(words[:-1]) + " or " + words[-1]


def _token_word(token: Token) -> str:
    if token.type == "$END":
        return "end of file"
    text = str(token)
    if len(text) > 30:
        text = text[:27] + "..."
    return f"`{text}`"


_ITEM_START = frozenset({"NAME", "STRING", "INT", "TRUE", "FALSE", "LSQB", "LBRACE"})
_LAST_TOKEN = re.compile(r'("[^"\n]*"|[^\s,(\[{]+)\s*$')


def _known_mistake(source: SourceFile, token: Token, span: Span, expected: set[str]) -> Diagnostic | None:
    """A syntax error that is a common, recognisable slip, explained with its fix (or None)."""
    if token.type == "ENTRY_OPEN" and "ENTRY_OPEN" not in expected:
        brace = source.text.find("{", token.end_pos or 0)  # the token only looks ahead at its `{`
        if brace >= 0:
            span = source.span(token.start_pos or 0, brace + 1)
        where = "a step" if "START" in expected or "MANUAL_MOVE" in expected else \
            "a workflow" if "HIDDEN" in expected or "STEP" in expected else "another block"
        return make("misplaced-entry-block", span, f"an `entry {{ … }}` block inside {where}: entry blocks are "
                    "top-level declarations",
                    help="move the block out, before or after the workflow: the entry policy holds for every workflow")
    if token.type in _ITEM_START and "COMMA" in expected and (expected & _CLOSERS or len(expected) == 1):
        before = _LAST_TOKEN.search(source.text, max(0, (token.start_pos or 0) - 200), token.start_pos or 0)
        previous = before.group(1) if before is not None else ""
        if len(previous) > 30:
            previous = previous[:27] + "..."
        between = f" between `{previous}` and {_token_word(token)}" if previous else f" before {_token_word(token)}"
        return make("missing-comma", span, f"missing `,`{between}",
                    help=f"separate the items with a comma: `{previous}, {str(token)[:30]}`" if previous
                    else "separate the items with a comma")
    return None


def _syntax_diagnostic(source: SourceFile, exc: UnexpectedInput) -> Diagnostic:
    if isinstance(exc, UnexpectedToken):
        token = exc.token
        if token.type == "$END":
            start = len(source.text)
            span = source.span(max(start - 1, 0), start) if start else source.span(0, 0)
        else:
            start = token.start_pos or 0
            span = source.span(start, token.end_pos if token.end_pos is not None else start + len(str(token)))
        special = _known_mistake(source, token, span, exc.expected)
        if special is not None:
            return special
        wanted, closers = describe_expected(exc.expected)
        help_text = f"or {_join(closers)} to close the block" if closers else None
        return make("syntax-error", span, f"unexpected {_token_word(token)}: expected {wanted}", help=help_text)
    if isinstance(exc, UnexpectedCharacters):
        pos = exc.pos_in_stream or 0
        span = source.span(pos, pos + 1)
        char = source.text[pos] if pos < len(source.text) else ""
        if char == '"':
            return make("invalid-token", span, "unterminated string",
                        help="close the string with `\"` on the same line (use `\\n` for a newline)")
        allowed = exc.allowed or set()
        wanted, _ = describe_expected(allowed) if allowed else ("nothing", [])
        shown = repr(char)[1:-1] if not char.isprintable() else char
        return make("invalid-token", span, f"unexpected character `{shown}`: expected {wanted}")
    if isinstance(exc, UnexpectedEOF):
        end = len(source.text)
        return make("syntax-error", source.span(end, end), "unexpected end of file")
    pos = getattr(exc, "pos_in_stream", 0) or 0
    return make("syntax-error", source.span(pos, pos), str(exc).splitlines()[0])


# One match per token the lexer would produce; a comment matches as '' (no group).  No
# token spans a newline, so the text can be scanned in chunks that end at one.
_SCAN = re.compile(r'#[^\n]*|([A-Za-z_][A-Za-z0-9_-]*|"[^"\\\n]*(?:\\.[^"\\\n]*)*"?|-?[0-9]+|\?\?|[=!]=|->|\S)')
_CHUNK = 1 << 16
_OPEN, _CLOSE, _NOT, _OR, _AND, _COALESCE, _COMPARE, _DOT, _PUNCT = range(9)
# Tokens that matter to nesting and operator chains; anything else is an operand (a name,
# a literal; a character the lexer will refuse anyway).
_KINDS = {
    "(": _OPEN, "[": _OPEN, "{": _OPEN, ")": _CLOSE, "]": _CLOSE, "}": _CLOSE, "not": _NOT, "or": _OR,
    "and": _AND, "??": _COALESCE, "==": _COMPARE, "!=": _COMPARE, ".": _DOT,
    ",": _PUNCT, ":": _PUNCT, "=": _PUNCT, "?": _PUNCT, "->": _PUNCT, "-": _PUNCT,
}


def _prescan(source: SourceFile, limits: Limits) -> Diagnostic | None:
    """Refuse, before the parser sees them: deep brackets, `not` chains and binary-operator
    chains (`a ?? b ?? …` is flat in the grammar but as deep as it is long in the IR), too
    many tokens, and over-long strings and names.  Expression depth is checked again,
    exactly, while lowering; this pass only has to catch what would be slow to parse."""
    text = source.text
    limit = limits.max_depth
    kind_of = _KINDS.get
    depth = nots = tokens = 0
    # Operator chains at the current bracket level: the expression's `or`s, the `and`s
    # since its last `or`, the `??`s since its last other operator.  An operand right after
    # an operand, or other punctuation, starts a new expression.
    ors = ands = coalesces = 0
    operand = False
    saved: list[tuple[int, int, int]] = []
    for pos, toks in _chunks(text, 0):
        tokens += len(toks) - toks.count("")
        if tokens > limits.max_tokens:
            return _too_many_tokens(source, pos, tokens - len(toks) + toks.count(""), limits.max_tokens)
        for index, tok in enumerate(toks):
            kind = kind_of(tok)
            if kind is None:
                if not tok:  # a comment
                    continue
                nots = 0
                if operand:
                    ors = ands = coalesces = 0
                operand = True
            elif kind == _OPEN:
                depth += 1
                if depth + nots > limit:
                    return make("nesting-too-deep", _locate(source, pos, index), f"nesting deeper than {limit} levels",
                                help="split the expression or value into smaller parts")
                saved.append((ors, ands, coalesces))
                ors = ands = coalesces = 0
                operand = False
            elif kind == _CLOSE:
                depth = depth - 1 if depth else 0
                ors, ands, coalesces = saved.pop() if saved else (0, 0, 0)
                operand = True
                nots = 0
            elif kind == _NOT:
                if operand:
                    ors = ands = coalesces = 0
                operand = False
                nots += 1
                if depth + nots > limit:
                    return make("nesting-too-deep", _locate(source, pos, index),
                                f"`not` chain deeper than {limit} levels", help="simplify the expression")
            else:
                nots = 0
                if kind in (_OR, _AND):
                    if not operand:  # a name that happens to be spelt `or`
                        operand = True
                        continue
                    if kind == _OR:
                        ors += 1
                        ands = coalesces = 0
                    else:
                        ands += 1
                        coalesces = 0
                    operand = False
                    if ors > limit or ands > limit:
                        return _chain_too_deep(source, pos, index, tok, limit)
                elif kind == _COALESCE:
                    coalesces += 1
                    operand = False
                    if coalesces > limit:
                        return _chain_too_deep(source, pos, index, tok, limit)
                elif kind == _COMPARE:
                    coalesces = 0
                    operand = False
                elif kind == _DOT:
                    operand = False
                else:
                    ors = ands = coalesces = 0
                    operand = False
    return _check_lengths(source, limits)


def _chunks(text: str, pos: int) -> Iterator[tuple[int, list[str]]]:
    """(start offset, token texts) for successive chunks of whole lines ('' for a comment)."""
    size = len(text)
    while pos < size:
        end = text.find("\n", pos + _CHUNK)
        end = size if end < 0 else end + 1
        if end - pos <= 4 * _CHUNK:
            yield pos, _SCAN.findall(text, pos, end)
            pos = end
        else:  # one very long line: a bounded number of tokens at a time
            matches = list(islice(_SCAN.finditer(text, pos, end), _CHUNK))
            yield pos, [m.group(1) or "" for m in matches]
            pos = matches[-1].end() if len(matches) == _CHUNK else end


def _locate(source: SourceFile, pos: int, index: int) -> Span:
    """The span of match number `index` (comments included) of a chunk starting at `pos`."""
    for i, m in enumerate(_SCAN.finditer(source.text, pos)):
        if i == index:
            return source.span(m.start(), m.end())
    raise AssertionError("token index past the chunk")  # pragma: no cover


def _chain_too_deep(source: SourceFile, pos: int, index: int, op: str, limit: int) -> Diagnostic:
    return make("nesting-too-deep", _locate(source, pos, index), f"`{op}` chain deeper than {limit} levels",
                help="split the expression; operator chains count as nesting")


def _too_many_tokens(source: SourceFile, pos: int, before: int, limit: int) -> Diagnostic:
    """IL009 at the first token past `limit`; `before` tokens precede the chunk at `pos`."""
    text = source.text
    for m in _SCAN.finditer(text, pos):
        if m.group(1) is not None:
            before += 1
            if before > limit:
                total = before + sum(len(toks) - toks.count("") for _, toks in _chunks(text, m.end()))
                return make("too-many-items", source.span(m.start(), m.end()),
                            f"the file has {total:,} tokens; the limit is {limit:,}",
                            help="split the rules into several files (`use NAME` pulls one into another)")
    raise AssertionError("fewer tokens than counted")  # pragma: no cover


def _check_lengths(source: SourceFile, limits: Limits) -> Diagnostic | None:
    """Over-long strings and names.  Neither spans a line, so only long lines are scanned."""
    max_name, max_string = limits.max_name_length, limits.max_string_length
    text = source.text
    for start, end in source.lines_longer_than(min(max_name, max_string + 2)):
        for m in _SCAN.finditer(text, start, end):
            tok = m.group(1)
            if tok is None:
                continue
            if tok[0] == '"':
                length = len(tok) - (2 if len(tok) > 1 and tok[-1] == '"' else 1)
                if length > max_string:
                    return make("too-many-items", source.span(m.start() + 1 + max_string, m.end()),
                                f"string is {length:,} characters long; the limit is {max_string:,}",
                                help="shorten the text")
            elif (tok[0].isalpha() or tok[0] == "_") and len(tok) > max_name:
                return make("too-many-items", source.span(m.start() + max_name, m.end()),
                            f"name is {len(tok):,} characters long; the limit is {max_name:,}",
                            help="use a shorter name")
    return None


def parse_module(source: SourceFile, limits: Limits = DEFAULT_LIMITS) -> tuple[ir.Module | None, list[Diagnostic]]:
    """Parse and lower one file.  Returns the module and its lowering diagnostics, or None
    and the diagnostics that refused it (exactly one for a syntax error or a limit)."""
    from .lower import Refused

    refused = _prescan(source, limits)
    if refused is not None:
        return None, [refused]
    parser, lowering = _parser()
    with _PARSE_LOCK:
        lowering.begin(source, limits)
        try:
            module: Any = parser.parse(source.text)  # the `start` callback's ir.Module
        except UnexpectedInput as exc:
            lowering.end()
            return None, [_syntax_diagnostic(source, exc)]
        except Refused:
            return None, lowering.end()
        except BaseException:
            lowering.end()
            raise
        return module, lowering.end()


def _file_start(name: str) -> Span:
    return construct(Span, {"file": name, "line": 1, "col": 1, "end_line": 1, "end_col": 1})


def read_limited(path: Path, limits: Limits = DEFAULT_LIMITS, *,
                 name: str | None = None) -> tuple[SourceFile | None, list[Diagnostic]]:
    """Read a file as a `SourceFile`, or explain why it cannot be one (type, size, encoding, I/O).

    `name` is what the source and its diagnostics are called (default: the path as given).
    Only a regular file is read: a FIFO would block forever and a device (`/dev/zero`)
    never ends, so the type is checked before the file is opened, and again on the open
    descriptor (opened non-blocking) in case the path changed in between.
    """
    name = display_name(path) if name is None else name
    where = _file_start(name)
    try:
        refused = not_regular(os.stat(path))
        if refused is None:
            fd = os.open(path, os.O_RDONLY | _OPEN_FLAGS)
            with os.fdopen(fd, "rb") as fh:
                st = os.fstat(fh.fileno())
                refused = not_regular(st)
                if refused is None:
                    if st.st_size > limits.max_bytes:
                        return None, [_too_large(where, st.st_size, limits)]
                    data = fh.read(limits.max_bytes + 1)  # the file may have grown since
    except OSError as exc:
        return None, [make("file-unreadable", where, f"cannot read file: {exc.strerror or exc}")]
    if refused is not None:
        return None, [make("file-unreadable", where, f"cannot read file: it is {refused}, not a regular file",
                           help="`.wf` sources are regular files")]
    return decode(name, data, limits)


def _too_large(where: Span, size: int, limits: Limits) -> Diagnostic:
    return make("file-too-large", where, f"file is {size} bytes; the limit is {limits.max_bytes} bytes")


# non-blocking: opening a FIFO nobody writes to returns at once instead of waiting for a writer
_OPEN_FLAGS = getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0) | getattr(os, "O_BINARY", 0)
_FILE_TYPES = ((stat.S_ISDIR, "a folder"), (stat.S_ISFIFO, "a FIFO (named pipe)"), (stat.S_ISCHR, "a character device"),
               (stat.S_ISBLK, "a block device"), (stat.S_ISSOCK, "a socket"))


def not_regular(st: os.stat_result) -> str | None:
    """What a non-regular file is ("a FIFO (named pipe)"), or None for a regular file."""
    if stat.S_ISREG(st.st_mode):
        return None
    return next((what for test, what in _FILE_TYPES if test(st.st_mode)), "a special file")


def display_name(path: Path | str) -> str:
    """A path as diagnostics and plans show it: bytes of a file name that are not UTF-8 (which
    Python keeps as lone surrogates, and no store or JSON encoder can keep) as `\\xNN`."""
    text = str(path)
    if text.isascii():
        return text
    return text.encode("utf-8", "surrogateescape").decode("utf-8", "backslashreplace")


def decode(name: str, data: bytes, limits: Limits = DEFAULT_LIMITS) -> tuple[SourceFile | None, list[Diagnostic]]:
    """Bytes as a `SourceFile` (a leading byte-order mark dropped), or why they cannot be one."""
    where = _file_start(name)
    if len(data) > limits.max_bytes:
        return None, [make("file-too-large", where, f"input exceeds the limit of {limits.max_bytes} bytes")]
    nul = data.find(b"\x00")
    if nul >= 0:
        # pointed at the first NUL, so that one stray NUL in a text file can be found
        src = SourceFile(name, data[:nul].decode("utf-8", "replace"))
        at = src.span(len(src.text), len(src.text) + 1)
        return None, [make("not-text", at, "file is binary (it contains NUL bytes)",
                           labels=(label(at, "first NUL byte"),),
                           help="`interlock check` reads UTF-8 `.wf` text files, and a NUL has no place in one")]
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        src = SourceFile(name, data[: exc.start].decode("utf-8", "replace"))
        at = src.span(len(src.text), len(src.text) + 1)
        return None, [make("not-text", at, f"file is not valid UTF-8 (byte 0x{data[exc.start]:02x})",
                           labels=(label(at, "first invalid byte"),))]
    if text.startswith("\ufeff"):
        text = text[1:]
    return SourceFile(name, text), []
