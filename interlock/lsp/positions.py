"""Columns between the compiler and the client: code points (the compiler's spans) <-> the negotiated
position encoding's units (utf-16 by default, utf-8, utf-32).  Lines are the client's lines; a `\\r`
before `\\n` is never counted (the compiler's `line_text` strips it)."""

from __future__ import annotations

__all__ = ["UTF8", "UTF16", "UTF32", "to_units", "from_units"]

UTF8, UTF16, UTF32 = "utf-8", "utf-16", "utf-32"


def _width(ch: str, encoding: str) -> int:
    code = ord(ch)
    if encoding == UTF16:
        return 2 if code > 0xFFFF else 1
    if encoding == UTF8:
        return 1 if code < 0x80 else 2 if code < 0x800 else 3 if code < 0x10000 else 4
    return 1


def to_units(line: str, col: int, encoding: str) -> int:
    """The client column of the 0-based code-point column `col` of `line`."""
    head = line[:col]
    if encoding == UTF32 or head.isascii():
        return col
    if encoding == UTF16:
        return col + sum(1 for ch in head if ord(ch) > 0xFFFF)
    return len(head.encode("utf-8", "surrogatepass"))


def from_units(line: str, units: int, encoding: str) -> int:
    """The 0-based code-point column of client column `units` on `line` (clamped to the line; a column
    inside a character counts as that character's start)."""
    if encoding == UTF32 or line.isascii():
        return max(0, min(units, len(line)))
    seen = 0
    for i, ch in enumerate(line):
        seen += _width(ch, encoding)
        if seen > units:
            return i
    return len(line)
