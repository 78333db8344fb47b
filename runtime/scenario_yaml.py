"""Scenario YAML text in, plain data with the position of every key path out: the bounded reader of scenario files.

The YAML is read defensively: nesting depth, alias expansion, integer size and file size are bounded,
a key given twice is an error, tags other than YAML's plain ones are refused, and a date stays the
text written.  Errors are `ScenarioError`s naming file:line:col.  `interlock.runtime.scenario`
validates what this reads.
"""

from __future__ import annotations

from typing import Any

import yaml
from yaml.constructor import SafeConstructor

from interlock.errors import InterlockError

__all__ = ["ScenarioError", "YamlReader", "count_nodes", "inline_source", "MAX_BYTES", "MAX_DEPTH",
           "MAX_ALIAS_VALUES"]

MAX_BYTES = 1024 * 1024
"""A scenario file larger than this is refused unread (scenarios are hand-written)."""
MAX_DEPTH = 64
"""Deepest nesting of lists and mappings a scenario may use."""
MAX_ALIAS_VALUES = 10_000
"""How many values YAML aliases may add beyond the file's own nodes (bounds an alias bomb)."""
_MAX_INT_CHARS = 30


class ScenarioError(InterlockError):
    """A scenario that cannot be run; each line of the message starts `file:line:col:` (or `file:`)."""

    def __init__(self, message: str, *, trace: Any = None) -> None:
        super().__init__(message)
        self.trace = trace  # the trace so far, when the scenario failed while it ran


_Loader: Any = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
_TAG = "tag:yaml.org,2002:"


class YamlReader:
    """YAML nodes in, plain data out, with the position of every key path and the bounds above."""

    def __init__(self, name: str) -> None:
        self.name = name
        self.where: dict[tuple[Any, ...], tuple[int, int]] = {}
        self.ctor = SafeConstructor()
        self.active: set[int] = set()
        self.count = 0
        self.limit = 0

    def fail(self, mark: Any, message: str) -> ScenarioError:
        return ScenarioError(f"{self.name}:{mark.line + 1}:{mark.column + 1}: {message}")

    def read(self, text: str) -> tuple[Any, yaml.Node | None]:
        try:
            depth = 0
            for event in yaml.parse(text, Loader=_Loader):
                if isinstance(event, yaml.CollectionStartEvent):
                    depth += 1
                    if depth > MAX_DEPTH:
                        raise self.fail(event.start_mark, f"nested deeper than {MAX_DEPTH} levels of lists and "
                                                          "mappings: a scenario never needs that")
                elif isinstance(event, yaml.CollectionEndEvent):
                    depth -= 1
            root = yaml.compose(text, Loader=_Loader)
        except yaml.YAMLError as exc:
            mark = getattr(exc, "problem_mark", None) or getattr(exc, "context_mark", None)
            problem = getattr(exc, "problem", None) or str(exc)
            if mark is None:
                raise ScenarioError(f"{self.name}: not valid YAML: {problem}") from None
            raise self.fail(mark, f"not valid YAML: {problem}") from None
        if root is None:
            return None, None
        self.limit = count_nodes(root) + MAX_ALIAS_VALUES
        return self.build(root, (), root.start_mark), root

    def build(self, node: yaml.Node, path: tuple[Any, ...], mark: Any) -> Any:
        self.count += 1
        if self.count > self.limit:
            raise self.fail(node.start_mark, f"YAML aliases expand this file beyond {MAX_ALIAS_VALUES} extra values "
                                             "(an alias bomb?): refused")
        self.where.setdefault(path, (mark.line + 1, mark.column + 1))
        if isinstance(node, yaml.ScalarNode):
            return self.scalar(node)
        if id(node) in self.active:
            raise self.fail(node.start_mark, "a YAML alias refers to a list or mapping that contains it")
        self.active.add(id(node))
        try:
            if isinstance(node, yaml.SequenceNode):
                if node.tag != _TAG + "seq":
                    raise self.fail(node.start_mark, f"unsupported YAML tag `{node.tag}`")
                return [self.build(item, (*path, i), item.start_mark) for i, item in enumerate(node.value)]
            assert isinstance(node, yaml.MappingNode)
            if node.tag != _TAG + "map":
                raise self.fail(node.start_mark, f"unsupported YAML tag `{node.tag}`")
            return self.mapping(node, path)
        finally:
            self.active.discard(id(node))

    def mapping(self, node: yaml.MappingNode, path: tuple[Any, ...]) -> dict[str, Any]:
        out: dict[str, Any] = {}
        lines: dict[str, int] = {}
        merged: dict[str, Any] = {}
        for key_node, value_node in node.value:
            if key_node.tag == _TAG + "merge":
                sources = value_node.value if isinstance(value_node, yaml.SequenceNode) else [value_node]
                for source in sources:
                    if not isinstance(source, yaml.MappingNode):
                        raise self.fail(source.start_mark, "`<<` merges mappings only")
                    for k, v in self.build(source, path, key_node.start_mark).items():
                        merged.setdefault(k, v)
                continue
            if not isinstance(key_node, yaml.ScalarNode):
                raise self.fail(key_node.start_mark, "a key is text, not a list or mapping")
            key = key_node.value  # keys stay text: `on:` or `1:` is the word the author wrote
            if "\0" in key:
                raise self.fail(key_node.start_mark, "a key contains a NUL character")
            if key in out:
                raise self.fail(key_node.start_mark, f"`{key}` is given twice in this mapping (first at line "
                                                     f"{lines[key]}): remove one")
            lines[key] = key_node.start_mark.line + 1
            out[key] = self.build(value_node, (*path, key), key_node.start_mark)
        return {**merged, **out}

    def scalar(self, node: yaml.ScalarNode) -> Any:
        tag = node.tag.removeprefix(_TAG)
        if tag == "str" or tag == "timestamp":  # a date stays the text written
            if "\0" in node.value:
                raise self.fail(node.start_mark, "text contains a NUL character (\\0)")
            return node.value
        if tag == "int" and len(node.value) > _MAX_INT_CHARS:
            raise self.fail(node.start_mark, f"a number of {len(node.value)} characters is too large: "
                                             f"scenarios use numbers of at most {_MAX_INT_CHARS} characters")
        if tag in ("int", "float", "bool", "null"):
            return self.ctor.construct_object(node)
        raise self.fail(node.start_mark, f"unsupported YAML tag `{node.tag}`")


def count_nodes(root: yaml.Node) -> int:
    seen: set[int] = set()
    stack = [root]
    while stack:
        node = stack.pop()
        if id(node) in seen:
            continue
        seen.add(id(node))
        if isinstance(node, yaml.SequenceNode):
            stack.extend(node.value)
        elif isinstance(node, yaml.MappingNode):
            for k, v in node.value:
                stack.extend((k, v))
    return len(seen)


def inline_source(text: str, root: yaml.Node) -> str | None:
    """The `source:` block padded with blank lines (and kept indented), so a diagnostic's line:col is the
    YAML file's own; the block's value itself when its style does not allow that."""
    if not isinstance(root, yaml.MappingNode):
        return None
    node = next((v for k, v in root.value if isinstance(k, yaml.ScalarNode) and k.value == "source"), None)
    if not isinstance(node, yaml.ScalarNode):
        return None
    first = node.start_mark.line + 1  # a block scalar's text starts on the line after `|`
    if node.style == "|":
        stop = node.end_mark.line + (1 if node.end_mark.column else 0)
        lines = text.splitlines(keepends=True)[first:stop]
        indent = min((len(s) - len(s.lstrip(" ")) for s in lines if s.strip()), default=0)
        if "".join(s[indent:] if s.strip() else s.lstrip(" ") for s in lines).rstrip("\n") == node.value.rstrip("\n"):
            return "\n" * first + "".join(lines)
    return "\n" * node.start_mark.line + str(node.value)
