"""Source text and limits in, the diagnostic that refuses it (or None) out: the pre-scan that enforces size,
nesting, operator chains, token counts and string and name lengths before Lark sees the text, so hostile input
gets a diagnostic instead of a hang."""

from __future__ import annotations

import re
from collections.abc import Iterator
from itertools import islice

from .diagnostics import Diagnostic, make
from .limits import Limits
from .source import SourceFile, Span

__all__ = ["prescan"]


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


def prescan(source: SourceFile, limits: Limits) -> Diagnostic | None:
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
