"""A bounded YAML 1.2 reader that keeps positions: text in, a tree of `YNode`s (or one located error) out.

The seed system decodes with a YAML 1.2 reader, so `on`, `no` and `yes` are strings and only `true`/`false`
are booleans; ruamel.yaml reads YAML 1.2 the same way (PyYAML's 1.1 booleans would corrupt a step id `no`).
Bounds as for scenarios (runtime/scenario_yaml.py): file size, nesting depth and alias expansion; a key given twice in
one mapping is an error (the seed's decoder refuses it too).  Nothing in the file is ever run: no tags are
constructed, every scalar stays text with its resolved YAML type.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

__all__ = ["YNode", "YamlError", "read_yaml", "MAX_BYTES", "MAX_DEPTH", "MAX_ALIAS_VALUES"]

MAX_BYTES = 1024 * 1024
"""The largest document read (the seed's import endpoint takes at most 1 MB)."""
MAX_DEPTH = 64
MAX_ALIAS_VALUES = 10_000

_TAG = "tag:yaml.org,2002:"


class YamlError(Exception):
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
        raise YamlError(f"the document is larger than {MAX_BYTES:,} bytes (the seed's import limit): refused")
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
        return YNode("scalar", line, col, type=kind, text=str(node.value))


def _count(node: Any, seen: set[int]) -> int:
    if id(node) in seen:
        return 0
    seen.add(id(node))
    if node.id == "mapping":
        return 1 + sum(_count(k, seen) + _count(v, seen) for k, v in node.value)
    if node.id == "sequence":
        return 1 + sum(_count(i, seen) for i in node.value)
    return 1
