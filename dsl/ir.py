"""Parse trees go in elsewhere; this module only defines the IR: frozen pydantic nodes.

Every node carries a `kind` tag and a `span`.  Nodes are data only; traversal lives in
`walk`.  Lowering (`interlock.dsl.lower`) is the one place that builds them.
"""

from collections.abc import Iterator
from typing import Any, Literal, Union

from pydantic import BaseModel, ConfigDict

from .construct import construct
from .source import Span

__all__ = [
    "Node", "Ident", "TypeRef", "Param", "UseDecl", "TriggerDecl", "RoleDecl", "ActionKindDecl",
    "Field", "RecordDecl", "EntryClause", "EntryDecl", "StepFlag", "StepSetting", "Threshold",
    "QuorumGuard", "Arg", "ActionCall", "Handler", "StepDecl", "WorkflowDecl", "StrLit", "IntLit",
    "BoolLit", "NameValue", "CallValue", "ListValue", "MapEntry", "MapValue", "Value", "PathExpr",
    "NotExpr", "BinaryExpr", "Expr", "EventItem", "SkipItem", "LoadCase", "LoadItem", "OperationItem",
    "Assignment", "PayloadItem", "DispatchItem", "DispatchDecl", "Decl", "Module", "walk",
]


class Node(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid", defer_build=True)

    span: Span

    def __reduce__(self) -> tuple[Any, ...]:
        # unpickles through `construct` (one call per node instead of pydantic's
        # `__setstate__`): the lowered prelude is cached as a pickle
        return construct, (type(self), self.__dict__)


class Ident(Node):
    kind: Literal["ident"] = "ident"
    name: str


# ---- values and expressions --------------------------------------------------------------


class StrLit(Node):
    kind: Literal["str"] = "str"
    value: str


class IntLit(Node):
    kind: Literal["int"] = "int"
    value: int


class BoolLit(Node):
    kind: Literal["bool"] = "bool"
    value: bool


class NameValue(Node):
    """A bare or dotted name in value position: a step, role, target, `this`…"""

    kind: Literal["name"] = "name"
    parts: tuple[str, ...]

    @property
    def dotted(self) -> str:
        return ".".join(self.parts)


class CallValue(Node):
    """`n_approve(2)` in value position."""

    kind: Literal["call"] = "call"
    name: NameValue
    args: tuple["Value", ...]


class ListValue(Node):
    kind: Literal["list"] = "list"
    items: tuple["Value", ...]


class MapEntry(Node):
    kind: Literal["map_entry"] = "map_entry"
    key: str
    value: "Value"
    key_span: Span | None = None  # the key as written (a duplicate key is reported there)


class MapValue(Node):
    kind: Literal["map"] = "map"
    entries: tuple[MapEntry, ...]


Value = Union[StrLit, IntLit, BoolLit, NameValue, CallValue, ListValue, MapValue]


class PathExpr(Node):
    kind: Literal["path"] = "path"
    parts: tuple[str, ...]

    @property
    def dotted(self) -> str:
        return ".".join(self.parts)


class NotExpr(Node):
    kind: Literal["not"] = "not"
    operand: "Expr"


class BinaryExpr(Node):
    """`or`, `and`, `==`, `!=`, `??` — left-associative chains are nested pairs."""

    kind: Literal["binary"] = "binary"
    op: Literal["or", "and", "==", "!=", "??"]
    left: "Expr"
    right: "Expr"


Expr = Union[PathExpr, StrLit, IntLit, BoolLit, NotExpr, BinaryExpr]

# ---- vocabulary ------------------------------------------------------------------------


class TypeRef(Node):
    kind: Literal["type"] = "type"
    name: str
    arg: "TypeRef | None" = None
    optional: bool = False

    def render(self) -> str:
        inner = f"{self.name}[{self.arg.render()}]" if self.arg is not None else self.name
        return inner + ("?" if self.optional else "")


class Param(Node):
    kind: Literal["param"] = "param"
    name: Ident
    type: TypeRef
    default: Value | None = None


class UseDecl(Node):
    kind: Literal["use"] = "use"
    name: Ident


class TriggerDecl(Node):
    kind: Literal["trigger"] = "trigger"
    name: Ident
    params: tuple[Param, ...] = ()
    entry: bool = False


class RoleDecl(Node):
    kind: Literal["role"] = "role"
    names: tuple[Ident, ...]


class ActionKindDecl(Node):
    kind: Literal["action_kind"] = "action_kind"
    action_class: Literal["session", "task", "transition"]
    name: Ident
    params: tuple[Param, ...] = ()
    triggers: tuple[Ident, ...] | None = None  # None: no `on` clause, every trigger


class Field(Node):
    kind: Literal["field"] = "field"
    name: Ident
    type: TypeRef


class RecordDecl(Node):
    kind: Literal["record"] = "record"
    name: Ident
    fields: tuple[Field, ...]


class EntryClause(Node):
    kind: Literal["entry_clause"] = "entry_clause"
    mode: Literal["exclude", "dispatch"]
    kinds: tuple[Ident, ...]


class EntryDecl(Node):
    kind: Literal["entry"] = "entry"
    clauses: tuple[EntryClause, ...]


# ---- workflows ---------------------------------------------------------------------------


class StepFlag(Node):
    kind: Literal["step_flag"] = "step_flag"
    name: Literal["start", "manual_move", "terminal"]


class StepSetting(Node):
    kind: Literal["step_setting"] = "step_setting"
    name: Literal["position", "wip_limit", "stage", "pull_from", "prompt"]
    value: IntLit | StrLit | Ident


class Threshold(Node):
    kind: Literal["threshold"] = "threshold"
    name: Ident
    count: IntLit | None = None


class QuorumGuard(Node):
    kind: Literal["quorum"] = "quorum"
    role: Ident
    threshold: Threshold


class Arg(Node):
    kind: Literal["arg"] = "arg"
    name: Ident | None
    value: Value


class ActionCall(Node):
    kind: Literal["action"] = "action"
    name: Ident
    args: tuple[Arg, ...] = ()
    has_parens: bool = False
    guard: QuorumGuard | None = None
    requires_approval: Span | None = None


class Handler(Node):
    kind: Literal["handler"] = "handler"
    trigger: Ident
    actions: tuple[ActionCall, ...]


class StepDecl(Node):
    kind: Literal["step"] = "step"
    name: Ident
    title: StrLit | None = None
    flags: tuple[StepFlag, ...] = ()
    settings: tuple[StepSetting, ...] = ()
    handlers: tuple[Handler, ...] = ()


class WorkflowDecl(Node):
    kind: Literal["workflow"] = "workflow"
    name: Ident
    title: StrLit | None = None
    hidden: bool = False
    steps: tuple[StepDecl, ...] = ()


# ---- dispatch sequences -------------------------------------------------------------------

Level = Literal["silent", "debug", "info", "warning", "error"]


class EventItem(Node):
    kind: Literal["event"] = "event"
    record: Ident


class SkipItem(Node):
    kind: Literal["skip"] = "skip"
    name: Ident
    level: Level
    message: StrLit | None
    condition: Expr


class LoadCase(Node):
    kind: Literal["load_case"] = "load_case"
    outcomes: tuple[Literal["missing", "error"], ...]
    guard: Ident
    level: Level
    message: StrLit | None


class LoadItem(Node):
    kind: Literal["load"] = "load"
    name: Ident
    loader: Ident
    args: tuple[Expr, ...]
    cases: tuple[LoadCase, ...]


class OperationItem(Node):
    kind: Literal["operation"] = "operation"
    template: StrLit
    condition: Expr | None = None


class Assignment(Node):
    kind: Literal["assignment"] = "assignment"
    name: Ident
    value: Expr


class PayloadItem(Node):
    kind: Literal["payload"] = "payload"
    assignments: tuple[Assignment, ...]


DispatchItem = Union[EventItem, SkipItem, LoadItem, OperationItem, PayloadItem]


class DispatchDecl(Node):
    kind: Literal["dispatch"] = "dispatch"
    name: Ident
    trigger: Ident
    items: tuple[DispatchItem, ...]


Decl = Union[UseDecl, TriggerDecl, RoleDecl, ActionKindDecl, RecordDecl, EntryDecl, WorkflowDecl, DispatchDecl]


class Module(Node):
    """One parsed `.wf` file."""

    kind: Literal["module"] = "module"
    file: str
    decls: tuple[Decl, ...]


def walk(node: Node) -> Iterator[Node]:
    """Every node under `node` (itself included), depth-first, pre-order, iteratively."""
    stack: list[Node] = [node]
    while stack:
        current = stack.pop()
        yield current
        children: list[Node] = []
        for name in type(current).model_fields:
            if name == "span":
                continue
            value = getattr(current, name)
            if isinstance(value, Node):
                children.append(value)
            elif isinstance(value, tuple):
                children.extend(v for v in value if isinstance(v, Node))
        stack.extend(reversed(children))
