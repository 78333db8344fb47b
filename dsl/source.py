"""Source text in, positions out: a `SourceFile` maps byte offsets to 1-based line/column spans."""

from __future__ import annotations

import bisect
from dataclasses import dataclass, field

from pydantic import BaseModel, ConfigDict

__all__ = ["Span", "SourceFile", "NO_SPAN"]


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
        return Span.model_construct(file=self.file, line=start[0], col=start[1], end_line=end[0], end_col=end[1])

    def short(self) -> str:
        return f"{self.file}:{self.line}:{self.col}"


NO_SPAN = Span.model_construct(file="<builtin>", line=1, col=1, end_line=1, end_col=1)


@dataclass(frozen=True)
class SourceFile:
    """One file's text and its line index; `name` is what diagnostics print."""

    name: str
    text: str
    _starts: list[int] = field(default_factory=list, repr=False, compare=False)

    def __post_init__(self) -> None:
        starts = [0]
        find = self.text.find
        i = find("\n")
        while i >= 0:
            starts.append(i + 1)
            i = find("\n", i + 1)
        object.__setattr__(self, "_starts", starts)

    def line_col(self, offset: int) -> tuple[int, int]:
        """1-based (line, col) of a character offset."""
        line = bisect.bisect_right(self._starts, offset) - 1
        return line + 1, offset - self._starts[line] + 1

    def span(self, start: int, end: int) -> Span:
        line, col = self.line_col(start)
        end_line, end_col = self.line_col(max(end, start))
        return Span.model_construct(file=self.name, line=line, col=col, end_line=end_line, end_col=end_col)

    def line_text(self, line: int) -> str:
        """The text of a 1-based line without its newline ('' past the end)."""
        if line < 1 or line > len(self._starts):
            return ""
        start = self._starts[line - 1]
        end = self._starts[line] - 1 if line < len(self._starts) else len(self.text)
        return self.text[start:end].rstrip("\r")

    @property
    def line_count(self) -> int:
        return len(self._starts)
