"""Imported `.wf` lines (each with the YAML line it was read from) and the YAML's comments in, `.wf` text with
every comment at the nearest place out; and the text forms of imported strings.

A comment that ends a YAML line which gave a one-line `.wf` item ends that item's line.  Any other comment (one on
a line of its own, or after a key that has no item of its own, such as `events:` or a `config` key) goes on a
line of its own before the first item read from a later YAML line — or at the end of the text when there is
none.  So a template's opening comment opens the `.wf` file, and a comment above a step stays above it.  A
comment never lands inside a block string: they are items of their own.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from interlock.dsl import blockstr
from interlock.dsl.escapes import quote

from .yamlread import Comment, YNode

__all__ = ["Line", "place", "text_of"]


@dataclass
class Line:
    """One item of imported `.wf` text (more than one physical line for a block string), indented as written; `at`
    is the YAML line it was read from (None: a closing brace or a blank line)."""

    text: str
    at: int | None = None
    ends: bool = True  # whether a comment that ends YAML line `at` may end this line (not a declared role's)
    before: list[str] = field(default_factory=list)  # comments placed on lines of their own before it
    after: str = ""  # a comment placed at the end of its (last) line


def text_of(value: str, indent: str, node: YNode | None = None) -> str:
    """A string as `.wf` text: folded (`>\"\"\"`) when the YAML folded it (`>`) and it reads back exactly, a block
    string when it has several lines and reads back exactly, a quoted string otherwise."""
    if node is not None and node.style == ">" and blockstr.can_fold(value):
        return blockstr.fold(value, indent)
    if "\n" in value and blockstr.can_encode(value):
        return blockstr.encode(value, indent)
    return quote(value)


def place(workflows: list[list[Line]], comments: list[Comment]) -> list[str]:
    """The text of each workflow's lines with `comments` placed in them (see the module's docstring)."""
    flat = [line for lines in workflows for line in lines]
    by_at: dict[int, Line] = {}
    for line in flat:
        if line.at is not None and line.ends:
            by_at.setdefault(line.at, line)
    trailing: list[str] = []
    for comment in comments:
        exact = by_at.get(comment.line)
        if not comment.own_line and exact is not None and "\n" not in exact.text and not exact.after:
            exact.after = comment.text
            continue
        later = next((line for line in flat if line.at is not None and line.at > comment.line), None)
        (later.before if later is not None else trailing).append(comment.text)
    texts = [_render(lines) for lines in workflows]
    if trailing and texts:
        texts[-1] += "".join(f"{c}\n" for c in trailing)
    return texts


def _render(lines: list[Line]) -> str:
    out: list[str] = []
    for line in lines:
        indent = line.text[:len(line.text) - len(line.text.lstrip(" "))]
        out.extend(f"{indent}{c}" for c in line.before)
        out.append(line.text + (f"  {line.after}" if line.after else ""))
    return "\n".join(out) + "\n"
