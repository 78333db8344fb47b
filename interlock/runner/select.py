"""A `-k` expression in, a predicate over scenario names out: `interlock test -k`, as pytest reads `-k`.

Words match as case-insensitive substrings of the scenario's name (its path under the folder given, or
its file name when the file itself is given: folders above never select); `and`, `or`,
`not` and parentheses combine them, `not` binding tightest and `or` loosest: `-k "review and not
rejection"`.  A malformed expression is a `SelectError` that says where.
"""

from __future__ import annotations

import re
from collections.abc import Callable

from interlock.errors import InterlockError

__all__ = ["SelectError", "compile_expression"]

_TOKEN = re.compile(r"\s*(\(|\)|[^\s()]+)")
_KEYWORDS = ("and", "or", "not")


class SelectError(InterlockError):
    """A `-k` expression that does not parse."""


Predicate = Callable[[str], bool]


class _Parser:
    def __init__(self, text: str) -> None:
        self.text = text
        self.tokens: list[str] = []
        at = 0
        while at < len(text):
            m = _TOKEN.match(text, at)
            if m is None:  # only trailing white space is left
                break
            self.tokens.append(m.group(1))
            at = m.end()
        self.pos = 0

    def peek(self) -> str | None:
        return self.tokens[self.pos] if self.pos < len(self.tokens) else None

    def take(self) -> str:
        token = self.peek()
        if token is None:
            raise SelectError(f"-k {self.text!r}: the expression ends too early")
        self.pos += 1
        return token

    def expression(self) -> Predicate:
        left = self.conjunction()
        while self.peek() == "or":
            self.take()
            right, first = self.conjunction(), left
            left = (lambda a, b: lambda name: a(name) or b(name))(first, right)
        return left

    def conjunction(self) -> Predicate:
        left = self.negation()
        while self.peek() == "and":
            self.take()
            right, first = self.negation(), left
            left = (lambda a, b: lambda name: a(name) and b(name))(first, right)
        return left

    def negation(self) -> Predicate:
        token = self.take()
        if token == "not":
            inner = self.negation()
            return lambda name: not inner(name)
        if token == "(":
            inner = self.expression()
            if self.take() != ")":
                raise SelectError(f"-k {self.text!r}: a `(` is not closed")
            return inner
        if token == ")" or token in _KEYWORDS:
            raise SelectError(f"-k {self.text!r}: expected a word, `not` or `(`, got `{token}`")
        word = token.lower()
        return lambda name: word in name.lower()


def compile_expression(text: str) -> Predicate:
    """The predicate of a `-k` expression; an empty expression selects everything."""
    parser = _Parser(text)
    if not parser.tokens:
        return lambda name: True
    predicate = parser.expression()
    if parser.peek() is not None:
        raise SelectError(f"-k {text!r}: unexpected `{parser.peek()}`")
    return predicate
