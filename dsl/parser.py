"""Source text in, Lark parse tree (or diagnostics) out.

The LALR parser is built once per process from `interlock/grammars/wf.lark` and cached
on disk between runs (Lark's own cache, keyed by grammar hash and Lark version).
Input limits are enforced here, before Lark sees the text, so hostile input gets a
diagnostic instead of a hang or a traceback.
"""

from __future__ import annotations

import os
import re
import tempfile
from functools import lru_cache
from importlib import resources
from pathlib import Path

from lark import Lark, Token, Tree
from lark.exceptions import UnexpectedCharacters, UnexpectedEOF, UnexpectedInput, UnexpectedToken

from .diagnostics import Diagnostic, label, make
from .source import SourceFile

__all__ = ["Limits", "DEFAULT_LIMITS", "get_parser", "parse_tree", "describe_expected"]


class Limits:
    """Hard limits on one file; each violation is a diagnostic."""

    def __init__(self, max_bytes: int = 8 * 1024 * 1024, max_depth: int = 64) -> None:
        self.max_bytes = max_bytes
        self.max_depth = max_depth


DEFAULT_LIMITS = Limits()


def cache_dir() -> str:
    """Where interlock keeps its caches (the parser tables, the lowered prelude)."""
    return _cache_dir()


@lru_cache(maxsize=1)
def _cache_dir() -> str:
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    path = os.path.join(base, "interlock")
    try:
        os.makedirs(path, exist_ok=True)
        probe = os.path.join(path, ".w")
        with open(probe, "w"):
            pass
        os.unlink(probe)
        return path
    except OSError:
        return tempfile.gettempdir()


def grammar_text() -> str:
    return resources.files("interlock.grammars").joinpath("wf.lark").read_text(encoding="utf-8")


@lru_cache(maxsize=1)
def get_parser() -> Lark:
    """The process-wide LALR parser (built from the on-disk cache when one exists)."""
    import hashlib

    import lark

    text = grammar_text()
    digest = hashlib.sha256((text + lark.__version__).encode()).hexdigest()[:16]
    cache_file = str(Path(_cache_dir()) / f"wf-{digest}.lark-cache")
    return Lark(
        text,
        parser="lalr",
        lexer="contextual",
        propagate_positions=False,
        maybe_placeholders=True,
        cache=cache_file,
    )


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


def _syntax_diagnostic(source: SourceFile, exc: UnexpectedInput) -> Diagnostic:
    if isinstance(exc, UnexpectedToken):
        token = exc.token
        if token.type == "$END":
            start = len(source.text)
            span = source.span(max(start - 1, 0), start) if start else source.span(0, 0)
        else:
            start = token.start_pos or 0
            span = source.span(start, token.end_pos if token.end_pos is not None else start + len(str(token)))
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


_SCAN = re.compile(r'"(?:[^"\\\n]|\\.)*"?|#[^\n]*|[A-Za-z_][A-Za-z0-9_-]*|[()\[\]{}]')


def _check_nesting(source: SourceFile, limits: Limits) -> Diagnostic | None:
    """Reject bracket nesting and `not` chains past the limit before the parser builds deep trees."""
    depth = 0
    nots = 0
    limit = limits.max_depth
    for m in _SCAN.finditer(source.text):
        tok = m.group()
        c = tok[0]
        if c in "([{":
            depth += 1
            if depth + nots > limit:
                return make("nesting-too-deep", source.span(m.start(), m.end()),
                            f"nesting deeper than {limit} levels",
                            help="split the expression or value into smaller parts")
        elif c in ")]}":
            depth = depth - 1 if depth else 0
            nots = 0
        elif tok == "not":
            nots += 1
            if depth + nots > limit:
                return make("nesting-too-deep", source.span(m.start(), m.end()),
                            f"`not` chain deeper than {limit} levels", help="simplify the expression")
        elif c != "#":
            nots = 0
    return None


def parse_tree(source: SourceFile, limits: Limits = DEFAULT_LIMITS) -> tuple[Tree[Token] | None, list[Diagnostic]]:
    """Parse one file.  Returns the tree, or None and exactly one diagnostic."""
    deep = _check_nesting(source, limits)
    if deep is not None:
        return None, [deep]
    try:
        return get_parser().parse(source.text), []
    except UnexpectedInput as exc:
        return None, [_syntax_diagnostic(source, exc)]


def read_limited(path: Path, limits: Limits = DEFAULT_LIMITS, *,
                 name: str | None = None) -> tuple[SourceFile | None, list[Diagnostic]]:
    """Read a file as a `SourceFile`, or explain why it cannot be one (size, encoding, I/O).

    `name` is what the source and its diagnostics are called (default: the path as given).
    """
    from .source import Span

    name = str(path) if name is None else name
    where = Span.model_construct(file=name, line=1, col=1, end_line=1, end_col=1)
    try:
        size = path.stat().st_size
        if size > limits.max_bytes:
            return None, [make("file-too-large", where,
                               f"file is {size} bytes; the limit is {limits.max_bytes} bytes")]
        data = path.read_bytes()
    except OSError as exc:
        return None, [make("file-unreadable", where, f"cannot read file: {exc.strerror or exc}")]
    return decode(name, data, limits)


def decode(name: str, data: bytes, limits: Limits = DEFAULT_LIMITS) -> tuple[SourceFile | None, list[Diagnostic]]:
    from .source import Span

    where = Span.model_construct(file=name, line=1, col=1, end_line=1, end_col=1)
    if len(data) > limits.max_bytes:
        return None, [make("file-too-large", where, f"input exceeds the limit of {limits.max_bytes} bytes")]
    if b"\x00" in data:
        return None, [make("not-text", where, "file is binary (it contains NUL bytes)",
                           help="`interlock check` reads UTF-8 `.wf` text files")]
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        src = SourceFile(name, data[: exc.start].decode("utf-8", "replace"))
        line, col = src.line_col(len(src.text))
        at = Span.model_construct(file=name, line=line, col=col, end_line=line, end_col=col + 1)
        return None, [make("not-text", at, f"file is not valid UTF-8 (byte 0x{data[exc.start]:02x})",
                           labels=(label(at, "first invalid byte"),))]
    if text.startswith("\ufeff"):
        text = text[1:]
    return SourceFile(name, text), []
