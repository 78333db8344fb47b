"""Comment tokens and the source text in, each comment handed out once, in order, next to the token it belongs to.

The concrete parser (`interlock.dsl.parser.parse_concrete`) collects every comment token
as the lexer meets it.  The formatter visits the tokens of the parse tree in source
order and asks the cursor, for each token, for the comments that come *before* it (they
are written on lines of their own, above the token) and for the comment that *trails*
it (the comment that starts on the token's line, with nothing but blanks between the
two: it stays at the end of that line).  A comment is handed out at most once and only
in source order, so the formatter cannot duplicate or reorder one; whatever is left at
the end of the file is handed out by `rest`, and `done` says whether anything was
missed.
"""

from __future__ import annotations

from typing import NamedTuple

from lark import Token

__all__ = ["Comment", "CommentCursor", "collect"]

_NEVER = 1 << 62  # past any offset: no comment left


class Comment(NamedTuple):
    """One `# …` comment as written (trailing blanks and a CR of a CRLF line dropped)."""

    text: str
    line: int
    """1-based line of the `#`."""
    start: int
    """Offset of the `#` in the source text."""
    own_line: bool
    """Nothing but blanks before it on its line."""


def collect(tokens: list[Token], text: str) -> list[Comment]:
    """The comment tokens of one parse as `Comment`s, in source order."""
    out: list[Comment] = []
    for tok in tokens:
        start = tok.start_pos or 0
        line_start = text.rfind("\n", 0, start) + 1
        own = not text[line_start:start].strip()
        out.append(Comment(str(tok).rstrip(), tok.line or 1, start, own))
    return out


class CommentCursor:
    """Hands out comments in source order as the tokens around them are visited in source order."""

    __slots__ = ("_comments", "_i", "_text", "next_line", "next_start")

    def __init__(self, comments: list[Comment], text: str) -> None:
        self._comments = comments
        self._text = text
        self._i = 0
        self.next_start = _NEVER
        """Offset of the next comment not yet handed out (a huge number when none is left)."""
        self.next_line = -1
        """Its line (-1 when none is left)."""
        self._advance(0)

    def _advance(self, i: int) -> None:
        self._i = i
        if i < len(self._comments):
            c = self._comments[i]
            self.next_start, self.next_line = c.start, c.line
        else:
            self.next_start, self.next_line = _NEVER, -1

    @property
    def index(self) -> int:
        """How many comments have been handed out so far."""
        return self._i

    def before(self, offset: int) -> list[Comment]:
        """Every comment not yet handed out that starts before `offset` (a token's start)."""
        if offset < self.next_start:
            return []
        i = j = self._i
        comments = self._comments
        while j < len(comments) and comments[j].start < offset:
            j += 1
        self._advance(j)
        return comments[i:j]

    def first_line_before(self, offset: int, default: int) -> int:
        """The line of the first comment that `before(offset)` would hand out, else `default`."""
        return self.next_line if self.next_start < offset else default

    def after(self, end: int, line: int) -> Comment | None:
        """The comment trailing a token that ends at offset `end` on `line`, if there is one."""
        if line != self.next_line or self.next_start < end or self._text[end:self.next_start].strip():
            return None
        c = self._comments[self._i]
        self._advance(self._i + 1)
        return c

    def touches(self, start: int, end: int, line: int) -> bool:
        """Whether a token at `start`..`end` on `line` has a comment before it or trailing it."""
        if self.next_start < start:
            return True
        return line == self.next_line and not self._text[end:self.next_start].strip()

    def rest(self) -> list[Comment]:
        """Every comment not yet handed out (those after the last token)."""
        return self.before(_NEVER)

    @property
    def done(self) -> bool:
        """Every comment has been handed out."""
        return self._i == len(self._comments)
