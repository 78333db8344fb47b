"""Source text in, positions out: a `SourceFile` maps byte offsets to 1-based line/column spans."""

from __future__ import annotations

import bisect
import operator
from typing import Any

from pydantic import BaseModel, ConfigDict

from .construct import construct

__all__ = ["Span", "SourceFile", "NO_SPAN", "normalise_line_ends"]


def normalise_line_ends(text: str) -> str:
    """`text` with every `\r\n` and every lone `\r` made `\n` (the text itself when it has no `\r`)."""
    if "\r" not in text:
        return text
    return text.replace("\r\n", "\n").replace("\r", "\n")


class Span(BaseModel):
    """A half-open region of one file: 1-based lines and columns, end column exclusive."""

    model_config = ConfigDict(frozen=True, extra="forbid", defer_build=True)

    file: str
    line: int
    col: int
    end_line: int
    end_col: int

    def merge(self, other: Span) -> Span:
        """The smallest span covering both (same file assumed)."""
        start = min((self.line, self.col), (other.line, other.col))
        end = max((self.end_line, self.end_col), (other.end_line, other.end_col))
        return construct(Span, {"file": self.file, "line": start[0], "col": start[1], "end_line": end[0],
                                "end_col": end[1]})

    def short(self) -> str:
        return f"{self.file}:{self.line}:{self.col}"

    def __reduce__(self) -> tuple[Any, ...]:
        return construct, (Span, self.__dict__)  # as `ir.Node.__reduce__`


NO_SPAN = construct(Span, {"file": "<builtin>", "line": 1, "col": 1, "end_line": 1, "end_col": 1})


class SourceFile:
    """One file's text and its line index; `name` is what diagnostics print.

    Every line end is kept as `\n`: `\r\n` (Windows) and a lone `\r` (classic Mac OS) are line ends too, and
    are made `\n` here, the one place every text enters the front end (ADR 0044), so the lexer, the
    positions (line:col) and the formatter see one kind of line end.  `text` is the text so normalised.

    Immutable, compared by name and text.  (A plain class: a frozen dataclass costs most of a
    millisecond to define, on every `interlock check`.)
    """

    __slots__ = ("_starts", "name", "text")
    name: str
    text: str
    _starts: list[int]

    def __init__(self, name: str, text: str) -> None:
        text = normalise_line_ends(text)
        starts = [0]
        find = text.find
        i = find("\n")
        while i >= 0:
            starts.append(i + 1)
            i = find("\n", i + 1)
        object.__setattr__(self, "name", name)
        object.__setattr__(self, "text", text)
        object.__setattr__(self, "_starts", starts)

    def __setattr__(self, name: str, value: object) -> None:
        raise AttributeError(f"SourceFile is immutable (cannot set {name!r})")

    def __delattr__(self, name: str) -> None:
        raise AttributeError(f"SourceFile is immutable (cannot delete {name!r})")

    def __eq__(self, other: object) -> bool:
        if other.__class__ is not self.__class__:
            return NotImplemented
        assert isinstance(other, SourceFile)
        return self.name == other.name and self.text == other.text

    def __hash__(self) -> int:
        return hash((self.name, self.text))

    def __repr__(self) -> str:
        return f"SourceFile(name={self.name!r}, text={self.text!r})"

    def __reduce__(self) -> tuple[Any, ...]:
        return SourceFile, (self.name, self.text)

    def line_col(self, offset: int) -> tuple[int, int]:
        """1-based (line, col) of a character offset."""
        line = bisect.bisect_right(self._starts, offset) - 1
        return line + 1, offset - self._starts[line] + 1

    def span(self, start: int, end: int) -> Span:
        line, col = self.line_col(start)
        end_line, end_col = self.line_col(max(end, start))
        return construct(Span, {"file": self.name, "line": line, "col": col, "end_line": end_line, "end_col": end_col})

    def line_text(self, line: int) -> str:
        """The text of a 1-based line without its newline ('' past the end)."""
        if line < 1 or line > len(self._starts):
            return ""
        start = self._starts[line - 1]
        end = self._starts[line] - 1 if line < len(self._starts) else len(self.text)
        return self.text[start:end]

    def lines_longer_than(self, length: int) -> list[tuple[int, int]]:
        """(start, end) offsets of every line with more than `length` characters."""
        starts = self._starts
        ends = [*starts[1:], len(self.text) + 1]
        if max(map(operator.sub, ends, starts)) <= length + 1:  # the common case, at C speed
            return []
        return [(a, b - 1) for a, b in zip(starts, ends) if b - a - 1 > length]

    @property
    def line_count(self) -> int:
        return len(self._starts)
