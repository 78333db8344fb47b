"""A parse error in, a syntax diagnostic out: the expected tokens in words, and the slips that are named with
their fix (a guard before its transition, a missing comma, an `entry` block inside a workflow)."""

from __future__ import annotations

import re
from collections.abc import Mapping

from lark import Token
from lark.exceptions import UnexpectedCharacters, UnexpectedEOF, UnexpectedInput, UnexpectedToken

from .diagnostics import Diagnostic, make
from .source import SourceFile, Span

__all__ = ["describe_expected", "syntax_diagnostic"]


_GROUPS: tuple[tuple[str, frozenset[str]], ...] = (
    # a timer's or a backoff's duration: the parser also reads an integer or a name there, to say what is wrong
    ("a duration (`48h`)", frozenset({"DURATION", "INT", "NAME"})),
    ("a declaration", frozenset({"USE", "TRIGGER", "ROLE", "SESSION", "TASK", "TRANSITION", "RECORD",
                                 "ENTRY_OPEN", "WORKFLOW", "DISPATCH"})),
    ("a step attribute", frozenset({"START", "MANUAL_MOVE", "TERMINAL", "POSITION", "WIP_LIMIT", "STAGE",
                                    "PULL_FROM", "PROMPT", "SHOW_IN_COMMAND_PANEL", "AUTO_ADVANCE_REQUIRES_SIGNAL",
                                    "CANCEL_TRIGGERS_TURN_COMPLETE", "AUTO_ARCHIVE_AFTER_HOURS", "DESCRIPTION",
                                    "COLOR", "AGENT_PROFILE", "SESSION_TARGET", "AGENT_TAG"})),
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


def _terminal_word(name: str, literals: Mapping[str, str]) -> str:
    if name in _WORDS:
        return _WORDS[name]
    literal = literals.get(name)
    if literal is not None:
        return f"`{literal}`"
    return name.lower().replace("_", " ")


def describe_expected(expected: set[str] | frozenset[str], literals: Mapping[str, str]) -> tuple[str, list[str]]:
    """('a step attribute or `on`', closers) — human words for a set of terminal names (`literals`: the grammar's
    terminals that are one fixed string, by name)."""
    remaining = set(expected)
    words: list[str] = []
    for word, group in _GROUPS:
        if len(group) >= 3 and group <= remaining | {"LBRACE", "LSQB", "LPAR"} and len(group & remaining) >= 3:
            words.append(word)
            remaining -= group
    closers = sorted(remaining & _CLOSERS)
    rest = sorted(remaining - _CLOSERS)
    words.extend(_terminal_word(n, literals) for n in rest)
    closer_words = [_terminal_word(n, literals) for n in closers]
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


def syntax_diagnostic(source: SourceFile, exc: UnexpectedInput, literals: Mapping[str, str]) -> Diagnostic:
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
        wanted, closers = describe_expected(exc.expected, literals)
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
        wanted, _ = describe_expected(allowed, literals) if allowed else ("nothing", [])
        shown = repr(char)[1:-1] if not char.isprintable() else char
        return make("invalid-token", span, f"unexpected character `{shown}`: expected {wanted}")
    if isinstance(exc, UnexpectedEOF):
        end = len(source.text)
        return make("syntax-error", source.span(end, end), "unexpected end of file")
    pos = getattr(exc, "pos_in_stream", 0) or 0
    return make("syntax-error", source.span(pos, pos), str(exc).splitlines()[0])


# One match per token the lexer would produce; a comment matches as '' (no group).  No
# token spans a newline, so the text can be scanned in chunks that end at one.
