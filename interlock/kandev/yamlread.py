"""A bounded YAML 1.2 reader that keeps positions: text in, a tree of `YNode`s (or one located error) out.

kandev decodes with a YAML 1.2 reader, so `on`, `no` and `yes` are strings and only `true`/`false`
are booleans; ruamel.yaml reads YAML 1.2 the same way (PyYAML's 1.1 booleans would corrupt a step id `no`).
Bounds as for scenarios (runtime/scenario_yaml.py): file size, nesting depth and alias expansion; a key given twice in
one mapping is an error (kandev's decoder refuses it too).  Nothing in the file is ever run: no tags are
constructed, every scalar stays text with its resolved YAML type.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from interlock.errors import InterlockError

__all__ = ["YNode", "YamlError", "Comment", "read_yaml", "comments", "MAX_BYTES", "MAX_DEPTH", "MAX_ALIAS_VALUES"]

MAX_BYTES = 1024 * 1024
"""The largest document read (kandev's import endpoint takes at most 1 MB)."""
MAX_DEPTH = 64
MAX_ALIAS_VALUES = 10_000

_TAG = "tag:yaml.org,2002:"


class YamlError(InterlockError):
    """The text is not a YAML document this reader accepts; `line`/`col` are 1-based."""

    def __init__(self, message: str, line: int = 1, col: int = 1) -> None:
        super().__init__(message)
        self.message, self.line, self.col = message, line, col


@dataclass
class YNode:
    """A YAML node: `kind` map, seq or scalar; `type` the resolved scalar type (str, int, bool, null, float)."""

    kind: str
    line: int
    col: int
    type: str = "str"
    text: str = ""
    items: list[YNode] = field(default_factory=list)
    pairs: list[tuple[YNode, YNode]] = field(default_factory=list)
    end_line: int = 0  # where the node ends (1-based, exclusive column): comments inside it are its text
    end_col: int = 0
    style: str | None = None  # a scalar's YAML style: None (plain), `'`, `"`, `|` (literal) or `>` (folded)

    def get(self, key: str) -> YNode | None:
        for k, v in self.pairs:
            if k.text == key:
                return v
        return None

    def key_nodes(self) -> list[YNode]:
        return [k for k, _ in self.pairs]

    def data(self) -> Any:
        """Plain data, as a YAML 1.2 loader gives it."""
        if self.kind == "map":
            return {k.text: v.data() for k, v in self.pairs}
        if self.kind == "seq":
            return [i.data() for i in self.items]
        if self.type == "int":
            return int(self.text.replace("_", ""), 0) if not self.text.lstrip("+-").isdigit() else int(self.text)
        if self.type == "bool":
            return self.text.lower() == "true"
        if self.type == "null":
            return None
        if self.type == "float":
            return float(self.text)
        return self.text


def read_yaml(text: str) -> YNode:
    """The document's root node; `YamlError` for anything refused."""
    from ruamel.yaml import YAML
    from ruamel.yaml.error import MarkedYAMLError, YAMLError
    from ruamel.yaml.events import CollectionEndEvent, CollectionStartEvent

    if len(text.encode("utf-8", "surrogatepass")) > MAX_BYTES:
        raise YamlError(f"the document is larger than {MAX_BYTES:,} bytes (kandev's import limit): refused")
    yaml = YAML(typ="safe", pure=True)
    yaml.version = (1, 2)
    try:
        depth = 0
        for event in yaml.parse(text):
            if isinstance(event, CollectionStartEvent):
                depth += 1
                if depth > MAX_DEPTH:
                    mark = event.start_mark
                    raise YamlError(f"nested deeper than {MAX_DEPTH} levels of lists and mappings", mark.line + 1,
                                    mark.column + 1)
            elif isinstance(event, CollectionEndEvent):
                depth -= 1
        root = yaml.compose(text)
    except MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        where = (mark.line + 1, mark.column + 1) if mark is not None else (1, 1)
        raise YamlError(f"not valid YAML: {exc.problem or exc.context}", *where) from None
    except YAMLError as exc:
        raise YamlError(f"not valid YAML: {exc}") from None
    if root is None:
        raise YamlError("the document is empty")
    return _Converter(root).convert(root, ())


class _Converter:
    def __init__(self, root: Any) -> None:
        self.budget = _count(root, set()) + MAX_ALIAS_VALUES

    def convert(self, node: Any, stack: tuple[int, ...]) -> YNode:
        self.budget -= 1
        line, col = node.start_mark.line + 1, node.start_mark.column + 1
        if self.budget < 0:
            raise YamlError(f"YAML aliases expand this document beyond {MAX_ALIAS_VALUES:,} extra values (an alias "
                            "bomb?): refused", line, col)
        if id(node) in stack:
            raise YamlError("a YAML alias refers to a list or mapping that contains it", line, col)
        tag = str(node.tag)
        if node.id in ("mapping", "sequence") and tag not in (_TAG + "map", _TAG + "seq"):
            raise YamlError(f"the tag `{tag}` is not read (only plain YAML values)", line, col)
        if node.id == "mapping":
            out = YNode("map", line, col)
            seen: dict[str, YNode] = {}
            for k, v in node.value:
                key = self.convert(k, (*stack, id(node)))
                if key.kind != "scalar":
                    raise YamlError("a mapping key must be a plain value", key.line, key.col)
                if k.tag == _TAG + "merge":
                    raise YamlError("merge keys (`<<`) are not read: write the keys out", key.line, key.col)
                if key.text in seen:
                    first = seen[key.text]
                    raise YamlError(f"key `{key.text}` is given twice in this mapping (first at line {first.line})",
                                    key.line, key.col)
                seen[key.text] = key
                out.pairs.append((key, self.convert(v, (*stack, id(node)))))
            return out
        if node.id == "sequence":
            return YNode("seq", line, col, items=[self.convert(i, (*stack, id(node))) for i in node.value])
        kind = tag[len(_TAG):] if tag.startswith(_TAG) else "str"
        if kind not in ("str", "int", "bool", "null", "float"):
            raise YamlError(f"the tag `{tag}` is not read (only plain YAML values)", line, col)
        return YNode("scalar", line, col, type=kind, text=str(node.value), end_line=node.end_mark.line + 1,
                     end_col=node.end_mark.column + 1, style=getattr(node, "style", None) or None)


def _count(node: Any, seen: set[int]) -> int:
    if id(node) in seen:
        return 0
    seen.add(id(node))
    if node.id == "mapping":
        return 1 + sum(_count(k, seen) + _count(v, seen) for k, v in node.value)
    if node.id == "sequence":
        return 1 + sum(_count(i, seen) for i in node.value)
    return 1


@dataclass(frozen=True)
class Comment:
    """A YAML comment: where its `#` is (1-based), its text from the `#` on, and whether it has its line alone."""

    line: int
    col: int
    text: str
    own_line: bool


_INDICATOR = re.compile(r"[|>][0-9+-]*")


def comments(text: str, root: YNode) -> list[Comment]:
    """Every comment of the document `root` was read from, in order.  A `#` starts a comment at the start of a line
    or after a blank, outside every scalar (quoted and block scalars hold `#` as text)."""
    whole: set[int] = set()
    parts: dict[int, list[tuple[int, int]]] = {}
    lines = text.split("\n")
    for node in _scalars(root):
        _occupy(node, lines, whole, parts)
    out: list[Comment] = []
    for number, line in enumerate(lines, start=1):
        if number in whole or "#" not in line:
            continue
        taken = parts.get(number, ())
        for at in (m.start() for m in re.finditer("#", line)):
            if (at == 0 or line[at - 1] in " \t") and not any(a <= at < b for a, b in taken):
                out.append(Comment(number, at + 1, line[at:].rstrip(), not line[:at].strip()))
                break
    return out


def _scalars(root: YNode) -> list[YNode]:
    found: list[YNode] = []
    stack = [root]
    while stack:
        node = stack.pop()
        if node.kind == "scalar":
            found.append(node)
        stack.extend(node.items)
        for key, value in node.pairs:
            stack.extend((key, value))
    return found


def _occupy(node: YNode, lines: list[str], whole: set[int], parts: dict[int, list[tuple[int, int]]]) -> None:
    """Mark the columns a scalar covers (0-based, end exclusive): a block scalar its indicator (a comment may follow
    it on its line) and its lines."""
    first, last, start, end = node.line, node.end_line or node.line, node.col - 1, (node.end_col or node.col) - 1
    if node.style in ("|", ">"):
        indicator = _INDICATOR.match(lines[first - 1], start) if first <= len(lines) else None
        parts.setdefault(first, []).append((start, indicator.end() if indicator else start + 1))
        whole.update(range(first + 1, last if end == 0 else last + 1))
        return
    if first == last:
        parts.setdefault(first, []).append((start, end))
        return
    parts.setdefault(first, []).append((start, 1 << 30))
    whole.update(range(first + 1, last))
    parts.setdefault(last, []).append((0, end))
