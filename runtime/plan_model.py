"""Nothing in, the plan's data models out: the versioned contract between compiler and runtime, as frozen
pydantic models (`Plan` and its parts) and `PlanError`.

The runtime owns these models; the compiler only fills them.  Reading, checking and writing plan JSON is
`plan.py` (which re-exports every name here); the structural rules a plan obeys are `plan_rules.py`.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal, Union

from pydantic import BaseModel, ConfigDict, Field, SerializerFunctionWrapHandler, model_serializer

from interlock.errors import InterlockError

from .vocabulary import ActionClass, Level, Stage, Threshold, TimerKind

__all__ = [
    "PLAN_VERSION", "PlanError", "SourceRef", "PlanParam", "PlanTrigger", "PlanKind", "PlanRecord",
    "PlanGuard", "PlanAction", "PlanTimer", "PlanRetry", "AgentProfile", "SessionTarget", "PlanStep", "PlanWorkflow", "EntryPolicy", "PathX", "LitX", "NotX",
    "BinX", "QuorumX", "PlanExpr", "GuardOutcome", "SkipStep", "LoadStep", "PlanOperation", "PlanSequence", "Plan",
]

PLAN_VERSION = 2

JsonValue = Any


class PlanError(InterlockError):
    """A plan that cannot be used: unreadable, of another version, corrupted or edited."""


class _PlanModel(BaseModel):
    """The base of every plan model: frozen, extra keys forbidden (a hand-edited plan is refused, not guessed at)."""

    model_config = ConfigDict(frozen=True, extra="forbid", defer_build=True)


class SourceRef(_PlanModel):
    """Where a plan node was written: the `.wf` file (relative to the main file's folder) and line, column."""

    file: str
    line: int
    col: int


class PlanParam(_PlanModel):
    """A declared parameter of a trigger or an action kind: its name, plan type, whether it is required, its default."""

    name: str
    type: str
    required: bool
    default: JsonValue = None


class PlanTrigger(_PlanModel):
    """A trigger: its name, whether it is the entry trigger, and its payload's parameters."""

    name: str
    entry: bool = False
    params: tuple[PlanParam, ...] = ()


class PlanRetry(_PlanModel):
    """`retry N backoff D[..MAX]` of a task kind (LANGUAGE §6, RUNTIME §7): a failed call is tried again up to
    `attempts` more times, `backoff` seconds after the failure, the delay doubling up to `max_backoff`."""

    attempts: int  # N: tries after the first, 1..100
    backoff: int  # D, seconds
    max_backoff: int | None = None  # MAX, seconds: the delay doubles from D up to MAX; None: D every time


class PlanKind(_PlanModel):
    """An action kind: its class (session, task or transition), parameters, the triggers it may be declared on
    and, for a task kind, its retry policy."""

    name: str
    action_class: ActionClass
    params: tuple[PlanParam, ...] = ()
    triggers: tuple[str, ...]
    retry: PlanRetry | None = None
    source: SourceRef


class PlanRecord(_PlanModel):
    """A record type dispatch sequences read: its fields and their plan types."""

    name: str
    fields: dict[str, str]


class PlanGuard(_PlanModel):
    """A transition's `when quorum(role, threshold)`; `count` is N of `n_approve(N)`."""

    role: str
    threshold: Threshold
    count: int | None = None
    source: SourceRef


class PlanAction(_PlanModel):
    """One declared action of a handler, arguments resolved and defaults filled in.  A transition's guard is
    `guard` when it is one `quorum(…)`, `when` when it is any other expression (ADR 0038): at most one of the two
    is set."""

    position: int
    kind: str
    action_class: ActionClass
    args: dict[str, JsonValue] = {}
    guard: PlanGuard | None = None
    when: PlanExpr | None = None
    requires_approval: bool = False
    target_step: str | None = None  # transitions: the resolved destination (None: no such step)
    continue_on_failure: bool = False  # ADR 0042: a failure is recorded and the rest of the handler runs
    source: SourceRef

    @model_serializer(mode="wrap")
    def _without_absent_when(self, handler: SerializerFunctionWrapHandler) -> dict[str, Any]:
        data: dict[str, Any] = handler(self)  # no `when`: written as before (same bytes, same digest; ADR 0038)
        return data if self.when is not None else {k: v for k, v in data.items() if k != "when"}


class PlanTimer(_PlanModel):
    """A step's `after D { … }` or `every D { … }` handler (LANGUAGE §6, RUNTIME §7): its actions run once, D
    after the entry (`after`), or at entry + D, + 2D, … (`every`), while the task stays on that entry."""

    kind: TimerKind
    seconds: int  # the duration, 1 .. 365 * 86400
    label: str  # "after 48h", "every 30m": the duration as written, normalised; records name the timer by it
    actions: tuple[PlanAction, ...]  # positions 0.. within the timer, like a handler's
    source: SourceRef


class AgentProfile(_PlanModel):
    """An agent profile the host should use (ADR 0033): an id, or a portable (agent_name, model, mode) triple."""

    id: str | None = None
    agent_name: str | None = None
    model: str | None = None
    mode: str | None = None


class SessionTarget(_PlanModel):
    """Which agent conversation a step continues (ADR 0043): the task's first (`initial`) or another step's."""

    kind: Literal["initial", "step"]
    step_id: str | None = None


class PlanStep(_PlanModel):
    """A step: its attributes, its handlers by trigger, and its entry split into the actions the runtime dispatches and the kinds the host runs inline."""

    id: str
    title: str
    position: int
    start: bool = False
    manual_move: bool = False
    terminal: bool = False
    stage: Stage = "custom"
    prompt: str | None = None
    wip_limit: int = 0
    pull_from: str | None = None
    # Host metadata (ADR 0033): kept for the host, never run by the runtime.
    description: str | None = None
    color: str | None = None
    show_in_command_panel: bool = False
    auto_archive_after_hours: int = 0
    auto_advance_requires_signal: bool = False
    cancel_triggers_turn_complete: bool = False
    agent_profile: AgentProfile | None = None
    session_target: SessionTarget | None = None  # ADR 0043: host metadata, like the above
    agent_tag: str | None = None  # a tag-configured step: the host picks a profile of this tag at entry
    handlers: dict[str, tuple[PlanAction, ...]] = {}
    timers: tuple[PlanTimer, ...] = ()  # `after`/`every` handlers, in declaration order
    entry_dispatch: tuple[PlanAction, ...] = ()  # on_enter actions the runtime dispatches, declared order
    entry_inline: tuple[str, ...] = ()  # on_enter kinds the host runs inline (excluded), declared order
    source: SourceRef


class PlanWorkflow(_PlanModel):
    """A workflow: its steps in position order and its start step."""

    id: str
    title: str
    hidden: bool = False
    description: str | None = None  # host metadata (ADR 0033)
    prompt: str | None = None  # workflow-level instructions the host prepends at every step entry
    agent_profile: AgentProfile | None = None
    start_step: str
    steps: tuple[PlanStep, ...]
    source: SourceRef


class EntryPolicy(_PlanModel):
    """The entry policy: the entry trigger and the kinds it dispatches or excludes (every entry-capable kind in exactly one list)."""

    trigger: str
    exclude: tuple[str, ...]
    dispatch: tuple[str, ...]


# ---- dispatch-sequence expressions ------------------------------------------------------


class PathX(_PlanModel):
    """An expression reading a field path (`event.session_id`) of the given plan type."""

    op: Literal["path"] = "path"
    path: tuple[str, ...]
    type: str


class LitX(_PlanModel):
    """An expression that is a literal string, integer or boolean."""

    op: Literal["lit"] = "lit"
    value: str | int | bool


class NotX(_PlanModel):
    """`not ARG`."""

    op: Literal["not"] = "not"
    arg: PlanExpr


class BinX(_PlanModel):
    """A binary expression: `or`, `and`, `==`, `!=` or `??` (the first non-empty)."""

    op: Literal["or", "and", "==", "!=", "??"]
    left: PlanExpr
    right: PlanExpr


class QuorumX(_PlanModel):
    """`quorum(role, threshold)` in a transition's guard (never in a dispatch sequence): a bool."""

    op: Literal["quorum"] = "quorum"
    role: str
    threshold: Threshold
    count: int | None = None


PlanExpr = Annotated[Union[PathX, LitX, NotX, BinX, QuorumX], Field(discriminator="op")]



class GuardOutcome(_PlanModel):
    """What a `load` case leads to: the guard that matches, its level and message."""

    guard: str
    level: Level
    message: str | None = None


class SkipStep(_PlanModel):
    """A `skip` guard of a dispatch sequence: matched when its `when` holds; recording unless `silent`."""

    step: Literal["skip"] = "skip"
    guard: str
    level: Level
    message: str | None = None
    when: PlanExpr
    source: SourceRef


class LoadStep(_PlanModel):
    """A `load` of a dispatch sequence: a record read by the host's loader, with its missing and error cases."""

    step: Literal["load"] = "load"
    name: str
    loader: str
    args: tuple[PlanExpr, ...]
    on_missing: GuardOutcome | None = None
    on_error: GuardOutcome | None = None
    source: SourceRef


class PlanOperation(_PlanModel):
    """An `operation` line: the operation id's template, split into literal text and field paths, and its `when`."""

    template: str
    parts: tuple[str | tuple[str, ...], ...]  # literal text or a field path
    when: PlanExpr | None = None
    source: SourceRef


class PlanSequence(_PlanModel):
    """A dispatch sequence: its trigger, event record, guards and loads in order, operation lines and payload."""

    name: str
    trigger: str
    event: str
    steps: tuple[Annotated[Union[SkipStep, LoadStep], Field(discriminator="step")], ...]
    operations: tuple[PlanOperation, ...]
    payload: dict[str, PlanExpr]
    source: SourceRef


class Plan(_PlanModel):
    """A compiled plan: versioned, digested, data only; what the runtime interprets (`load_plan` checks it)."""

    plan_version: int = PLAN_VERSION
    compiler: str
    sources: tuple[str, ...]
    triggers: tuple[PlanTrigger, ...]
    roles: tuple[str, ...]
    kinds: tuple[PlanKind, ...]
    records: tuple[PlanRecord, ...]
    entry_policy: EntryPolicy
    workflows: tuple[PlanWorkflow, ...]
    sequences: tuple[PlanSequence, ...]
    digest: str = ""  # the revision: sha256 over the meaning (runtime/plan_digest.py)
    layout_digest: str = ""  # sha256 over the layout: source positions, `sources`, `compiler`

    def workflow(self, workflow_id: str) -> PlanWorkflow | None:
        for wf in self.workflows:
            if wf.id == workflow_id:
                return wf
        return None
