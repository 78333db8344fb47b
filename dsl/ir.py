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
    "Field", "RecordDecl", "EntryClause", "EntryDecl", "StepFlag", "StepSetting", "WorkflowSetting", "Threshold",
    "QuorumGuard", "Arg", "ActionCall", "Handler", "Duration", "Timer", "RetryPolicy", "StepDecl", "WorkflowDecl", "StrLit", "IntLit",
    "BoolLit", "NameValue", "CallValue", "ListValue", "MapEntry", "MapValue", "Value", "PathExpr",
    "NotExpr", "BinaryExpr", "Expr", "EventItem", "SkipItem", "LoadCase", "LoadItem", "OperationItem",
    "Assignment", "PayloadItem", "DispatchItem", "DispatchDecl", "Decl", "Module", "walk",
]


class Node(BaseModel):
    """The base of every IR node: frozen data with a `kind` tag and the span it was written at."""

    model_config = ConfigDict(frozen=True, extra="forbid", defer_build=True)

    span: Span

    def __reduce__(self) -> tuple[Any, ...]:
        # unpickles through `construct` (one call per node instead of pydantic's
        # `__setstate__`): the lowered prelude is cached as a pickle
        return construct, (type(self), self.__dict__)


class Ident(Node):
    """A name as written, with its span."""

    kind: Literal["ident"] = "ident"
    name: str


# ---- values and expressions --------------------------------------------------------------


class StrLit(Node):
    """A string literal, its escapes resolved."""

    kind: Literal["str"] = "str"
    value: str


class IntLit(Node):
    """An integer literal."""

    kind: Literal["int"] = "int"
    value: int


class BoolLit(Node):
    """`true` or `false`."""

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
    """A list literal `[a, b]`."""

    kind: Literal["list"] = "list"
    items: tuple["Value", ...]


class MapEntry(Node):
    """One `key: value` of a map literal (the key a name or a string)."""

    kind: Literal["map_entry"] = "map_entry"
    key: str
    value: "Value"
    key_span: Span | None = None  # the key as written (a duplicate key is reported there)


class MapValue(Node):
    """A map literal `{k: v}`."""

    kind: Literal["map"] = "map"
    entries: tuple[MapEntry, ...]


Value = Union[StrLit, IntLit, BoolLit, NameValue, CallValue, ListValue, MapValue]


class PathExpr(Node):
    """A field path in an expression (`event.session_id`)."""

    kind: Literal["path"] = "path"
    parts: tuple[str, ...]

    @property
    def dotted(self) -> str:
        return ".".join(self.parts)


class NotExpr(Node):
    """`not EXPR`."""

    kind: Literal["not"] = "not"
    operand: "Expr"


class BinaryExpr(Node):
    """`or`, `and`, `==`, `!=`, `??` — left-associative chains are nested pairs."""

    kind: Literal["binary"] = "binary"
    op: Literal["or", "and", "==", "!=", "??"]
    left: "Expr"
    right: "Expr"


class Threshold(Node):
    """A quorum threshold: `all_approve`, …, or `n_approve(N)`."""

    kind: Literal["threshold"] = "threshold"
    name: Ident
    count: IntLit | None = None


class QuorumGuard(Node):
    """`quorum(ROLE, THRESHOLD)` in a transition's guard: whether the role's seats reached the threshold."""

    kind: Literal["quorum"] = "quorum"
    role: Ident
    threshold: Threshold


# `QuorumGuard` is an expression of transition guards only; the type checker refuses it in a dispatch block.
Expr = Union[PathExpr, StrLit, IntLit, BoolLit, NotExpr, BinaryExpr, QuorumGuard]

# ---- vocabulary ------------------------------------------------------------------------


class TypeRef(Node):
    """A parameter type as written: a name, `list[T]`, optional with `?`."""

    kind: Literal["type"] = "type"
    name: str
    arg: "TypeRef | None" = None
    optional: bool = False

    def render(self) -> str:
        inner = f"{self.name}[{self.arg.render()}]" if self.arg is not None else self.name
        return inner + ("?" if self.optional else "")


class Param(Node):
    """A parameter of a trigger or an action kind, with its type and default."""

    kind: Literal["param"] = "param"
    name: Ident
    type: TypeRef
    default: Value | None = None


class UseDecl(Node):
    """`use NAME`: a prelude shipped with the package or a sibling `NAME.wf`."""

    kind: Literal["use"] = "use"
    name: Ident


class TriggerDecl(Node):
    """`trigger NAME (params)`, `entry` marking the step-entry trigger."""

    kind: Literal["trigger"] = "trigger"
    name: Ident
    params: tuple[Param, ...] = ()
    entry: bool = False


class RoleDecl(Node):
    """`role NAME, …`."""

    kind: Literal["role"] = "role"
    names: tuple[Ident, ...]


class Duration(Node):
    """A duration as written (`48h`, `90s`): the compiler checks it is an integer and a unit, `s`, `m`, `h` or
    `d`, of 1 s to 365 d (the parser also reads `48`, `2w` or `soon` here, so the mistake is reported at it)."""

    kind: Literal["duration"] = "duration"
    text: str


class RetryPolicy(Node):
    """`retry N backoff D` or `retry N backoff D..MAX` of a task kind (docs/language.md §6)."""

    kind: Literal["retry"] = "retry"
    attempts: IntLit
    backoff: Duration
    max_backoff: Duration | None = None


class ActionKindDecl(Node):
    """`session|task|transition NAME(params) on TRIGGERS retry …`: an action kind, its class and retry policy."""

    kind: Literal["action_kind"] = "action_kind"
    action_class: Literal["session", "task", "transition"]
    name: Ident
    params: tuple[Param, ...] = ()
    triggers: tuple[Ident, ...] | None = None  # None: no `on` clause, every trigger
    retry: RetryPolicy | None = None


class Field(Node):
    """One field of a record declaration, with its type."""

    kind: Literal["field"] = "field"
    name: Ident
    type: TypeRef


class RecordDecl(Node):
    """`record NAME { field: type … }`."""

    kind: Literal["record"] = "record"
    name: Ident
    fields: tuple[Field, ...]


class EntryClause(Node):
    """One `exclude` or `dispatch` list of an entry block."""

    kind: Literal["entry_clause"] = "entry_clause"
    mode: Literal["exclude", "dispatch"]
    kinds: tuple[Ident, ...]


class EntryDecl(Node):
    """`entry { exclude … dispatch … }`: additions to the entry policy."""

    kind: Literal["entry"] = "entry"
    clauses: tuple[EntryClause, ...]


# ---- workflows ---------------------------------------------------------------------------


FlagName = Literal["start", "manual_move", "terminal", "show_in_command_panel", "auto_advance_requires_signal",
                   "cancel_triggers_turn_complete"]


class StepFlag(Node):
    """A step flag: `start`, `manual_move`, `terminal`, …, optionally followed by `true` or `false` (ADR 0033)."""

    kind: Literal["step_flag"] = "step_flag"
    name: FlagName
    value: bool = True
    explicit: bool = False  # written with `true` or `false`


class StepSetting(Node):
    """A step attribute with a value: `position N`, `stage NAME`, `prompt "…"`, `wip_limit N`, `pull_from STEP`."""

    kind: Literal["step_setting"] = "step_setting"
    name: Literal["position", "wip_limit", "stage", "pull_from", "prompt", "auto_archive_after_hours", "description",
                  "color", "agent_profile", "session_target", "agent_tag"]
    value: Ident | Value  # `agent_profile` and `session_target` take any literal, checked by the passes
    block: bool = False  # a prompt or description written as a block string
    folded: bool = False  # … a folded one (`>"""`, ADR 0043)


class WorkflowSetting(Node):
    """Workflow metadata (ADR 0033): `description "…"`, `prompt "…"`, `agent_profile {…}` or `agent_profile "ID"`."""

    kind: Literal["workflow_setting"] = "workflow_setting"
    name: Literal["description", "prompt", "agent_profile"]
    value: Value
    block: bool = False
    folded: bool = False


class Arg(Node):
    """One argument of an action call, positional or named."""

    kind: Literal["arg"] = "arg"
    name: Ident | None
    value: Value


class ActionCall(Node):
    """An action in a handler: its kind, arguments, guard (`when EXPR`), `requires_approval` and
    `continue_on_failure`."""

    kind: Literal["action"] = "action"
    name: Ident
    args: tuple[Arg, ...] = ()
    has_parens: bool = False
    guard: Expr | None = None
    requires_approval: Span | None = None
    continue_on_failure: Span | None = None  # ADR 0042: a failure is recorded and the handler goes on


class Handler(Node):
    """`on TRIGGER { actions }`: a step's actions for one trigger, in order."""

    kind: Literal["handler"] = "handler"
    trigger: Ident
    actions: tuple[ActionCall, ...]


class Timer(Node):
    """`after DURATION { actions }` or `every DURATION { actions }`: a step's timer handler (docs/language.md §6).
    Its span is the keyword and the duration."""

    kind: Literal["timer"] = "timer"
    mode: Literal["after", "every"]
    duration: Duration
    actions: tuple[ActionCall, ...]

    @property
    def written(self) -> str:
        """`after 48h`, as written (the plan's label is its normal form)."""
        return f"{self.mode} {self.duration.text}"


class StepDecl(Node):
    """`step ID "Title" { attributes and handlers }`, items in the order written."""

    kind: Literal["step"] = "step"
    name: Ident
    title: StrLit | None = None
    flags: tuple[StepFlag, ...] = ()
    settings: tuple[StepSetting, ...] = ()
    handlers: tuple[Handler, ...] = ()
    timers: tuple[Timer, ...] = ()

    def has(self, flag: str) -> bool:
        """Whether the step carries `flag` set (written bare or `true`)."""
        return any(f.name == flag and f.value for f in self.flags)


class WorkflowDecl(Node):
    """`workflow ID "Title" { steps }`."""

    kind: Literal["workflow"] = "workflow"
    name: Ident
    title: StrLit | None = None
    hidden: bool = False
    settings: tuple[WorkflowSetting, ...] = ()
    steps: tuple[StepDecl, ...] = ()


# ---- dispatch sequences -------------------------------------------------------------------

Level = Literal["silent", "debug", "info", "warning", "error"]


class EventItem(Node):
    """`event RECORD` of a dispatch block: the record its event is."""

    kind: Literal["event"] = "event"
    record: Ident


class SkipItem(Node):
    """`skip GUARD LEVEL "message" when EXPR` of a dispatch block."""

    kind: Literal["skip"] = "skip"
    name: Ident
    level: Level
    message: StrLit | None
    condition: Expr


class LoadCase(Node):
    """One case of a `load`: `missing`, `error` or both, and the skip it leads to."""

    kind: Literal["load_case"] = "load_case"
    outcomes: tuple[Literal["missing", "error"], ...]
    guard: Ident
    level: Level
    message: StrLit | None


class LoadItem(Node):
    """`load NAME = LOADER(args) { cases }` of a dispatch block."""

    kind: Literal["load"] = "load"
    name: Ident
    loader: Ident
    args: tuple[Expr, ...]
    cases: tuple[LoadCase, ...]


class OperationItem(Node):
    """`operation "template" when EXPR` of a dispatch block."""

    kind: Literal["operation"] = "operation"
    template: StrLit
    condition: Expr | None = None


class Assignment(Node):
    """One `name = EXPR` of a payload block."""

    kind: Literal["assignment"] = "assignment"
    name: Ident
    value: Expr


class PayloadItem(Node):
    """`payload { assignments }` of a dispatch block."""

    kind: Literal["payload"] = "payload"
    assignments: tuple[Assignment, ...]


DispatchItem = Union[EventItem, SkipItem, LoadItem, OperationItem, PayloadItem]


class DispatchDecl(Node):
    """`dispatch NAME on TRIGGER { items }`: a dispatch sequence as written."""

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
