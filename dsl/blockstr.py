"""Block strings (ADR 0033): `\"\"\"`, a line break, the text, then `\"\"\"` on a line of its own; and folded block
strings (ADR 0043): the same after a `>`, whose lines are joined with single spaces.

The indentation of the closing line is taken off every line of the text; an empty line may
carry no indentation at all.  The text ends with the line break before the closing line, and
no escapes are read, so a prompt is written as it reads.  A folded block string is a long
one-line text (what YAML's `>-` writes) broken over lines for reading: its value joins the
lines with one space each and has no final line break.  `encode` / `fold` give the block
forms of a string only when `decode` / `unfold` give the same string back; the printer falls
back to a quoted string otherwise.
"""

from __future__ import annotations

__all__ = ["decode", "encode", "can_encode", "FOLD", "can_fold", "fold", "unfold", "WIDTH"]

DELIM = '"""'
FOLD = ">"
"""What opens a folded block string before its `\"\"\"`."""
WIDTH = 100
"""The longest line `fold` writes (indentation included), unless a single word is longer."""


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


def unfold(token: str) -> tuple[str, int | None]:
    """The text of a folded block string token (`>\"\"\"` …): its lines joined with single spaces, an empty line
    kept as a line break; and the offset of the first badly indented line, if any (as `decode`)."""
    text, bad = decode(token[len(FOLD):])
    if bad is not None:
        return "", bad + len(FOLD)
    out: list[str] = []
    for line in text[:-1].split("\n") if text else ():
        if not line:
            out.append("\n")
        elif out and out[-1] != "\n":
            out.append(" " + line)
        else:
            out.append(line)
    return "".join(out), None


def can_fold(text: str) -> bool:
    """Whether `text` has a folded form: one line of words separated by single spaces (no line break, no tab, no
    space at either end or twice in a row), no `\"\"\"` and no control character."""
    return (bool(text) and "\n" not in text and DELIM not in text and "  " not in text and text == text.strip(" ")
            and all(c >= " " and c != "\x7f" for c in text))


def fold(text: str, indent: str, width: int = WIDTH) -> str:
    """The folded block-string token for `text` (see `can_fold`): its words packed into lines of at most `width`
    columns, indented by `indent`."""
    room = max(width - len(indent), 20)
    lines: list[str] = []
    for word in text.split(" "):
        if lines and len(lines[-1]) + 1 + len(word) <= room:
            lines[-1] += " " + word
        else:
            lines.append(word)
    return FOLD + DELIM + "\n" + "".join(indent + line + "\n" for line in lines) + indent + DELIM
