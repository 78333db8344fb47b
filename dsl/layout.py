"""A layout document in, text at a line width out: the printer `interlock fmt` lays its output out with.

A document is a str (text), a list (one after another), one of the break markers (`LINE`, `SOFT`,
`HARD`, `FRESH`) or one of the node classes (`Group`, `Flat`, `Indent`, `IfBreak`, `Suffix`,
`Fill`).  `render` prints it in the style of Wadler's and Prettier's printers: a group is printed
flat when it fits in what is left of the line, else broken; a fill breaks a separator only when
the next part does not fit; comments at the end of a line (`Suffix`) are aligned with those of the
neighbouring lines.  Nothing here knows the `.wf` language (`interlock.dsl.format` builds the
documents).
"""

from __future__ import annotations

from typing import Any, Union

__all__ = ["WIDTH", "INDENT", "COMMENT_GAP", "LINE", "SOFT", "HARD", "FRESH", "Group", "Flat", "Indent", "IfBreak",
           "Suffix", "Fill", "Doc", "flat_width", "render"]

WIDTH = 100
"""The line width the formatter wraps at (a string or a name longer than that is never split)."""
INDENT = 2
"""Spaces per block level."""
COMMENT_GAP = 2
"""Blanks at least between code and a comment at the end of its line."""


class _Break:
    __slots__ = ("flat",)

    def __init__(self, flat: str) -> None:
        self.flat = flat  # what it prints as when its group is flat


LINE = _Break(" ")
"""A blank, or a line break when the enclosing group does not fit."""
SOFT = _Break("")
"""Nothing, or a line break when the enclosing group does not fit."""


class _Hard:
    __slots__ = ()


HARD = _Hard()
"""Always a line break."""


class _Fresh:
    __slots__ = ()


FRESH = _Fresh()
"""A line break unless the current line is still empty (a comment of its own line starts here)."""


class Group:
    """Printed flat (every LINE a blank) when it fits in what is left of the line, else broken."""

    __slots__ = ("broken", "doc")

    def __init__(self, doc: Doc, broken: bool = False) -> None:
        self.doc = doc
        self.broken = broken  # holds a line break of its own (a comment): never flat


class Flat:
    """Always printed flat (a block the formatter already decided fits on one line)."""

    __slots__ = ("doc",)

    def __init__(self, doc: Doc) -> None:
        self.doc = doc


class Indent:
    __slots__ = ("by", "doc")

    def __init__(self, doc: Doc, by: int = INDENT) -> None:
        self.doc = doc
        self.by = by


class IfBreak:
    """`broken` when the enclosing group is broken, else `flat`."""

    __slots__ = ("broken", "flat")

    def __init__(self, broken: Doc, flat: Doc = "") -> None:
        self.broken = broken
        self.flat = flat


class Suffix:
    """A comment written at the end of the current line (at the next line break)."""

    __slots__ = ("text",)

    def __init__(self, text: str) -> None:
        self.text = text


class Fill:
    """[content, separator, content, …]: each separator breaks only when the next content does not fit."""

    __slots__ = ("parts",)

    def __init__(self, parts: list[Doc]) -> None:
        self.parts = parts


Doc = Union[str, list["Doc"], _Break, _Hard, _Fresh, Group, Flat, Indent, IfBreak, Suffix, Fill]

_FLAT, _BROKEN = 0, 1


def flat_width(doc: Doc) -> int:
    """Columns `doc` takes when printed flat (comments at the end of a line do not count)."""
    total = 0
    stack: list[Any] = [doc]
    while stack:
        d = stack.pop()
        t = type(d)
        if t is str:
            total += len(d)
        elif t is list:
            stack.extend(d)
        elif t is _Break:
            total += len(d.flat)
        elif t is IfBreak:
            stack.append(d.flat)
        elif t is Fill:
            stack.extend(d.parts)
        elif t is Group or t is Flat or t is Indent:
            stack.append(d.doc)
        elif t is _Hard or t is _Fresh:
            total += WIDTH * 10
    return total


def _fits(doc: Doc, mode: int, rest: list[tuple[int, int, Any]], width: int, with_rest: bool = True) -> bool:
    """Whether `doc` (in `mode`), then what follows it up to the next line break, fits in `width` columns."""
    todo: list[tuple[int, Any]] = [(mode, doc)]
    r = len(rest)
    while width >= 0:
        if not todo:
            if not with_rest or r == 0:
                return True
            r -= 1
            _, m, d = rest[r]
            todo.append((m, d))
            continue
        m, d = todo.pop()
        t = type(d)
        if t is str:
            width -= len(d)
        elif t is list:
            todo.extend((m, x) for x in reversed(d))
        elif t is _Break:
            if m == _BROKEN:
                return True
            width -= len(d.flat)
        elif t is _Hard or t is _Fresh:
            return True
        elif t is Group:
            todo.append((_BROKEN if d.broken and m == _BROKEN else m, d.doc))
        elif t is Flat:
            todo.append((_FLAT, d.doc))
        elif t is Indent:
            todo.append((m, d.doc))
        elif t is IfBreak:
            todo.append((m, d.broken if m == _BROKEN else d.flat))
        elif t is Fill:
            todo.extend((m, x) for x in reversed(d.parts))
        elif t is Suffix and not with_rest:  # a fill's separator breaks after a comment
            return False
    return False


def _group_mode(group: Group, mode: int, comment_waits: bool, stack: list[tuple[int, int, Any]], room: int) -> int:
    """How a group is laid out: flat inside a flat one; broken when it must be, or when a comment waits for the end
    of this line (the group's first break ends it); else flat if it fits in the `room` left on the line."""
    if mode == _FLAT:
        return _FLAT
    if group.broken or comment_waits:
        return _BROKEN
    return _FLAT if _fits(group.doc, _FLAT, stack, room) else _BROKEN


def _push_fill(stack: list[tuple[int, int, Any]], ind: int, mode: int, parts: list[Any], room: int,
               comment_waits: bool) -> None:
    """Push a fill's parts (content, separator, content, …): each separator breaks only when the content after it
    does not fit in the `room` left on the line."""
    if not parts:
        return
    if mode == _FLAT:
        stack.extend((ind, _FLAT, x) for x in reversed(parts))
        return
    first = parts[0]
    first_mode = _FLAT if _fits(first, _FLAT, [], room, with_rest=False) else _BROKEN
    if len(parts) >= 3:
        pair_fits = not comment_waits and _fits([first, parts[1], parts[2]], _FLAT, [], room, with_rest=False)
        stack.append((ind, mode, Fill(parts[2:])))
        stack.append((ind, _FLAT if pair_fits else _BROKEN, parts[1]))
    stack.append((ind, first_mode, first))


def render(doc: Doc, width: int = WIDTH) -> str:
    """Lay `doc` out at `width` columns; trailing comments of neighbouring lines are aligned."""
    lines: list[tuple[str, int, str | None]] = []  # (code, indentation, comment at its end)
    cur: list[str] = []
    col = 0
    indent_now = 0
    content = False  # the current line has text beyond its indentation
    suffix: str | None = None  # the comment waiting for the end of the current line
    suffix_at = 0  # where in `cur` the code it trails ends

    def newline(ind: int) -> None:
        nonlocal col, content, indent_now, suffix
        code = "".join(cur).rstrip()
        lines.append((code, indent_now, suffix))
        suffix = None
        cur.clear()
        cur.append(" " * ind)
        col = ind
        indent_now = ind
        content = False

    def split(ind: int) -> None:
        """A second comment for this line: the first ends the line right after the code it trails."""
        nonlocal col, content
        rest = "".join(cur[suffix_at:]).lstrip()
        del cur[suffix_at:]
        newline(ind)
        if rest:
            cur.append(rest)
            col += len(rest)
            content = True

    stack: list[tuple[int, int, Any]] = [(0, _BROKEN, doc)]
    while stack:
        ind, mode, d = stack.pop()
        t = type(d)
        if t is str:
            if d:
                cur.append(d)
                col += len(d)
                content = True
        elif t is list:
            stack.extend((ind, mode, x) for x in reversed(d))
        elif t is _Break:
            if mode == _FLAT:
                flat = d.flat
                if flat:
                    cur.append(flat)
                    col += len(flat)
            else:
                newline(ind)
        elif t is _Hard:
            newline(ind)
        elif t is _Fresh:
            if content or suffix is not None:
                newline(ind)
        elif t is Group:
            stack.append((ind, _group_mode(d, mode, suffix is not None, stack, width - col), d.doc))
        elif t is Flat:
            stack.append((ind, _FLAT, d.doc))
        elif t is Indent:
            stack.append((ind + d.by, mode, d.doc))
        elif t is IfBreak:
            stack.append((ind, mode, d.broken if mode == _BROKEN else d.flat))
        elif t is Suffix:
            if suffix is not None:  # two comments never share a line
                split(ind)
            suffix = d.text
            suffix_at = len(cur)
        elif t is Fill:
            _push_fill(stack, ind, mode, d.parts, width - col, suffix is not None)
    if content or suffix is not None:
        newline(0)
    return _join(lines)


def _join(lines: list[tuple[str, int, str | None]]) -> str:
    """The lines as text, each run of neighbouring lines (same indentation) with end comments aligned."""
    out: list[str] = []
    i, n = 0, len(lines)
    while i < n:
        code, ind, comment = lines[i]
        if comment is None:
            out.append(code)
            i += 1
            continue
        if not code.strip():  # nothing before it any more: a comment of its own line
            out.append(" " * ind + comment)
            i += 1
            continue
        j = i
        while j < n and lines[j][2] is not None and lines[j][0].strip() and lines[j][1] == ind:
            j += 1
        column = max(len(lines[k][0]) for k in range(i, j)) + COMMENT_GAP
        out.extend(lines[k][0].ljust(column) + (lines[k][2] or "") for k in range(i, j))
        i = j
    while out and not out[-1]:
        out.pop()
    return "\n".join(out) + "\n" if out else ""
