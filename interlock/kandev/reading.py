"""YAML nodes in, typed values out: the import's typed reads of kandev's YAML, each problem a `KVnnn` diagnostic at
its node; and the result an import fills in (`Imported`).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from interlock.dsl.diagnostics import Diagnostic

from .codes import kv, span_at
from .yamlread import YNode

__all__ = ["Imported", "NodeReader", "wf_ident"]

_IDENT = re.compile(r"[A-Za-z_][A-Za-z0-9_-]*\Z")


@dataclass
class Imported:
    """The workflows read (id, `.wf` text), the format (`template` or `portable`) and the diagnostics."""

    kind: str = "template"
    workflows: list[tuple[str, str]] = field(default_factory=list)
    diagnostics: list[Diagnostic] = field(default_factory=list)

    @property
    def errors(self) -> int:
        return sum(1 for d in self.diagnostics if d.is_error)


def wf_ident(raw: str) -> str:
    """The deterministic `.wf` identifier for a kandev id the language cannot hold as it is."""
    if _IDENT.match(raw):
        return raw
    return "id_" + re.sub(r"[^A-Za-z0-9_-]", "_", raw)


class NodeReader:
    """Typed reads of YAML nodes for the file `name`; every problem is reported into `out`."""

    def __init__(self, name: str, out: Imported) -> None:
        self.name = name
        self.out = out

    # ---- diagnostics and typed reads -----------------------------------------------------------
    def at(self, node: YNode) -> Any:
        return span_at(self.name, node.line, node.col)

    def report(self, code: str, node: YNode, message: str, help: str | None = None) -> None:
        self.out.diagnostics.append(kv(code, self.at(node), message, help=help))

    def keys(self, node: YNode, allowed: tuple[str, ...], what: str) -> None:
        for k in node.key_nodes():
            if k.text not in allowed:
                self.report("unknown-key", k, f"{what} has no key `{k.text}`: kandev's loader refuses the file",
                            help="its keys are " + ", ".join(f"`{a}`" for a in allowed))

    def mapping(self, node: YNode | None, what: str) -> YNode | None:
        if node is None or (node.kind == "scalar" and node.type == "null"):
            return None
        if node.kind != "map":
            self.report("format-invalid", node, f"{what} must be a mapping")
            return None
        return node

    def seq(self, node: YNode | None, what: str) -> list[YNode]:
        if node is None or (node.kind == "scalar" and node.type == "null"):
            return []
        if node.kind != "seq":
            self.report("format-invalid", node, f"{what} must be a list")
            return []
        return node.items

    def string(self, node: YNode | None, what: str) -> str | None:
        if node is None or (node.kind == "scalar" and node.type == "null"):
            return None
        if node.kind != "scalar":
            self.report("format-invalid", node, f"{what} must be a string")
            return None
        return node.text

    def boolean(self, node: YNode | None, what: str) -> bool | None:
        if node is None:
            return None
        if node.kind != "scalar" or node.type != "bool":
            self.report("format-invalid", node, f"{what} must be `true` or `false`")
            return None
        return bool(node.data())

    def integer(self, node: YNode | None, what: str, minimum: int = 0) -> int | None:
        if node is None:
            return None
        if node.kind != "scalar" or node.type != "int":
            self.report("format-invalid", node, f"{what} must be an integer")
            return None
        value = int(node.data())
        if value < minimum:
            self.report("format-invalid", node, f"{what} must be {minimum} or more")
            return None
        return value
