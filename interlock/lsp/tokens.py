"""A document's text and analysis in, its semantic tokens out (`textDocument/semanticTokens/full`).

Every token of the concrete parse is classified: keywords, strings (a block string one token per line,
for clients without multi-line tokens), numbers, comments and operators by their lexical kind; names by
what they name, from the analysis's index — a trigger is an `event`, an action kind a `function`, a step
an `enumMember`, a role a `variable`, a record a `type`, its fields `property`, parameters `parameter`,
a workflow a `namespace` — and, where the index has nothing (a type, a path into a record, a guard's
name), by the grammar rule the name stands in.  Declarations carry the `declaration` modifier, names
the prelude declares `defaultLibrary`.  A text that does not parse gets its comments, strings, numbers
and keywords only.  The legend uses LSP's standard token types, so every client's theme colours them.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import TYPE_CHECKING

from lark import Token, Tree

from .positions import to_units

if TYPE_CHECKING:
    from .analysis import Analysis
    from .occurrences import Occurrence

__all__ = ["TOKEN_TYPES", "TOKEN_MODIFIERS", "semantic_tokens", "decode"]

TOKEN_TYPES = ("keyword", "type", "function", "parameter", "variable", "property", "enumMember", "event",
               "namespace", "string", "number", "comment", "operator")
TOKEN_MODIFIERS = ("declaration", "defaultLibrary")

_BY_KEY = {"trigger": "event", "payload": "parameter", "kind": "function", "param": "parameter", "role": "variable",
           "record": "type", "field": "property", "workflow": "namespace", "module": "namespace",
           "step": "enumMember", "stage": "enumMember", "threshold": "enumMember", "dispatch": "function",
           "load": "variable"}
_BY_RULE = {"type": "type", "type_arg": "type", "skip_item": "enumMember", "load_case": "enumMember",
            "assignment": "property", "field": "property", "param": "parameter"}
_OPERATORS = {"CMP_OP", "COALESCE", "EQUAL", "__ANON_0"}
_WORD = re.compile(r"[A-Za-z_]+\Z")
# a duration (`48h`) is a number, as the parser's DURATION token is
_FALLBACK = re.compile(r'(#[^\n]*)|("""[\s\S]*?"""|"(?:[^"\\\n]|\\.)*")|(-?\b\d+[smhd]?\b)|([A-Za-z_][A-Za-z0-9_-]*)')

Span = tuple[int, int, int, str, int]  # 0-based line, 0-based column, length (code points), type, modifier bits


def _tokens(tree: Tree[Token]) -> Iterator[tuple[Token, str]]:
    """Every token of the tree with the rule it stands in, in source order."""
    stack: list[tuple[Tree[Token], int]] = [(tree, 0)]
    while stack:
        node, i = stack.pop()
        if i >= len(node.children):
            continue
        stack.append((node, i + 1))
        child = node.children[i]
        if isinstance(child, Tree):
            stack.append((child, 0))
        else:
            yield child, str(node.data)


def _lines(line: int, col: int, text: str, kind: str, mods: int) -> list[Span]:
    """A token as one span per line it covers (clients need not support multi-line tokens)."""
    out: list[Span] = []
    for i, part in enumerate(text.split("\n")):
        indent = 0 if i == 0 else len(part) - len(part.lstrip(" \t"))  # a later line's token starts at its text
        part = part[indent:].rstrip("\r")
        if part:
            out.append((line + i, col if i == 0 else indent, len(part), kind, mods))
    return out


class _Classifier:
    def __init__(self, analysis: Analysis | None) -> None:
        self.at: dict[tuple[int, int], Occurrence] = {}
        self.prelude: set[tuple[str, ...]] = set()
        if analysis is None or analysis.program is None:
            return
        index = analysis.index
        for occ in index.occurrences:
            if occ.span.file == analysis.name:
                self.at.setdefault((occ.span.line, occ.span.col), occ)
        self.prelude = {key for key, occ in index.declarations.items() if occ.span.file.startswith("<prelude")}

    def name(self, token: Token, rule: str, previous: str) -> tuple[str, int] | None:
        occ = self.at.get((token.line or 0, token.column or 0))
        if occ is not None and occ.span.end_col - occ.span.col == len(token.value) and occ.key[0] in _BY_KEY:
            mods = (1 if occ.declaration else 0) | (2 if occ.key in self.prelude else 0)
            return _BY_KEY[occ.key[0]], mods
        if rule == "path":
            return ("property" if previous == "DOT" else "variable"), 0
        if rule in _BY_RULE:
            return _BY_RULE[rule], 0
        return "variable", 0

    def token(self, token: Token, rule: str, previous: str) -> tuple[str, int] | None:
        kind = token.type
        if kind == "NAME":
            return self.name(token, rule, previous)
        if kind in ("STRING", "BLOCK_STRING") or "STRING" in kind:
            return "string", 0
        if kind in ("INT", "SIGNED_INT", "NUMBER", "DURATION"):
            return "number", 0
        if kind in _OPERATORS:
            return "operator", 0
        if _WORD.match(token.value):
            return "keyword", 0
        return None


def _spans(analysis: Analysis | None, text: str, name: str) -> list[Span]:
    from interlock.dsl import SourceFile
    from interlock.dsl.parser import parse_concrete

    tree, comments, refused = parse_concrete(SourceFile(name, text))
    if tree is None or refused is not None:
        return _fallback(text)
    classify = _Classifier(analysis if analysis is not None and analysis.source.text == text else None)
    out: list[Span] = []
    previous = ""
    for token, rule in _tokens(tree):
        found = classify.token(token, rule, previous)
        previous = token.type
        if found is not None and token.line is not None and token.column is not None:
            out += _lines(token.line - 1, token.column - 1, token.value, found[0], found[1])
    for comment in comments:
        if comment.line is not None and comment.column is not None:
            out += _lines(comment.line - 1, comment.column - 1, comment.value.rstrip("\r\n"), "comment", 0)
    return sorted(out)


def _fallback(text: str) -> list[Span]:
    """Comments, strings, numbers and keywords of a text that does not parse, by a lexical scan."""
    from .features import KEYWORDS

    out: list[Span] = []
    starts = [0] + [i + 1 for i, ch in enumerate(text) if ch == "\n"]
    for m in _FALLBACK.finditer(text):
        kind = ("comment" if m.group(1) else "string" if m.group(2) else "number" if m.group(3)
                else "keyword" if m.group(4) in KEYWORDS else None)
        if kind is None:
            continue
        line = text.count("\n", 0, m.start())
        out += _lines(line, m.start() - starts[line], m.group(0), kind, 0)
    return out


def semantic_tokens(analysis: Analysis | None, text: str, name: str, encoding: str) -> list[int]:
    """The LSP encoding of the document's tokens: five integers each (line and start relative to the previous
    token, length, type index, modifier bits), columns and lengths in the negotiated position encoding."""
    lines = text.split("\n")
    data: list[int] = []
    last_line = last_start = 0
    for line, col, length, kind, mods in _spans(analysis, text, name):
        source = lines[line].rstrip("\r") if line < len(lines) else ""
        start = to_units(source, col, encoding)
        units = to_units(source, col + length, encoding) - start
        delta_start = start - last_start if line == last_line else start
        data += [line - last_line, delta_start, units, TOKEN_TYPES.index(kind), mods]
        last_line, last_start = line, start
    return data


def decode(data: list[int]) -> list[tuple[int, int, int, str, tuple[str, ...]]]:
    """(line, start, length, type, modifiers) of each token in LSP-encoded `data` (for tests and tools)."""
    out = []
    line = start = 0
    for i in range(0, len(data), 5):
        d_line, d_start, length, kind, mods = data[i:i + 5]
        start = start + d_start if d_line == 0 else d_start
        line += d_line
        out.append((line, start, length, TOKEN_TYPES[kind],
                    tuple(m for b, m in enumerate(TOKEN_MODIFIERS) if mods & (1 << b))))
    return out
