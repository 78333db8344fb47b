"""Block strings (ADR 0033): `\"\"\"`, a line break, the text, then `\"\"\"` on a line of its own.

The indentation of the closing line is taken off every line of the text; an empty line may
carry no indentation at all.  The text ends with the line break before the closing line, and
no escapes are read, so a prompt is written as it reads.  `encode` gives the block form of a
string only when `decode` gives the same string back; the printer falls back to a quoted
string otherwise.
"""

from __future__ import annotations

__all__ = ["decode", "encode", "can_encode"]

DELIM = '"""'


def decode(token: str) -> tuple[str, int | None]:
    """The text of a block string token and the offset (in the token) of the first badly indented line, if any."""
    start = token.index("\n") + 1
    body = token[start:-3]
    last = body.rfind("\n") + 1
    indent = body[last:]
    if indent.strip(" \t"):
        return "", start + last  # the closing `"""` is not on a line of its own
    out: list[str] = []
    offset = start
    for line in body[:last].splitlines(keepends=True):
        if line.startswith(indent):
            out.append(line[len(indent):])
        elif line == "\n":
            out.append(line)
        else:
            return "", offset
        offset += len(line)
    return "".join(out), None


def can_encode(text: str) -> bool:
    """Whether `text` has a block form: it ends with a line break, holds no `\"\"\"`, CR or other control character,
    and no line ends in whitespace, Unicode's included (the printed block would carry trailing whitespace, which editors and
    formatters strip, changing the text)."""
    return (text.endswith("\n") and DELIM not in text
            and all(c in "\n\t" or (c >= " " and c != "\x7f") for c in text)
            and all(line == line.rstrip() for line in text.split("\n")))


def encode(text: str, indent: str) -> str:
    """The block-string token for `text` (see `can_encode`), its lines indented by `indent`."""
    lines = [line if line == "\n" else indent + line for line in text.splitlines(keepends=True)]
    return DELIM + "\n" + "".join(lines) + indent + DELIM
