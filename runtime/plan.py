"""Plan JSON in, validated `Plan` out (and back): the versioned contract between compiler and runtime.

The runtime owns these models; the compiler only fills them.  A plan is self-contained:
vocabulary, entry policy, workflows with their handlers, and dispatch sequences, each
action and guard carrying a `SourceRef` back to the `.wf` line it came from.  A plan
carries a digest of its own content, so a hand-edited or truncated plan is refused.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from typing import Annotated, Any, Literal, Union

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from .vocabulary import ActionClass, Level, Stage, Threshold

__all__ = [
    "PLAN_VERSION", "PlanError", "SourceRef", "PlanParam", "PlanTrigger", "PlanKind", "PlanRecord",
    "PlanGuard", "PlanAction", "AgentProfile", "PlanStep", "PlanWorkflow", "EntryPolicy", "PathX", "LitX", "NotX",
    "BinX", "PlanExpr", "GuardOutcome", "SkipStep", "LoadStep", "PlanOperation", "PlanSequence",
    "Plan", "load_plan", "dump_plan", "plan_digest", "reference_problems",
]

PLAN_VERSION = 1

JsonValue = Any


class PlanError(Exception):
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


class PlanKind(_PlanModel):
    """An action kind: its class (session, task or transition), parameters and the triggers it may be declared on."""

    name: str
    action_class: ActionClass
    params: tuple[PlanParam, ...] = ()
    triggers: tuple[str, ...]
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
    """One declared action of a handler, arguments resolved and defaults filled in."""

    position: int
    kind: str
    action_class: ActionClass
    args: dict[str, JsonValue] = {}
    guard: PlanGuard | None = None
    requires_approval: bool = False
    target_step: str | None = None  # transitions: the resolved destination (None: no such step)
    source: SourceRef


class AgentProfile(_PlanModel):
    """An agent profile the host should use (ADR 0033): an id, or a portable (agent_name, model, mode) triple."""

    id: str | None = None
    agent_name: str | None = None
    model: str | None = None
    mode: str | None = None


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
    handlers: dict[str, tuple[PlanAction, ...]] = {}
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


PlanExpr = Annotated[Union[PathX, LitX, NotX, BinX], Field(discriminator="op")]



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
    digest: str = ""

    def workflow(self, workflow_id: str) -> PlanWorkflow | None:
        for wf in self.workflows:
            if wf.id == workflow_id:
                return wf
        return None


def _canonical(data: dict[str, Any]) -> str:
    body = {k: v for k, v in data.items() if k != "digest"}
    return json.dumps(body, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def plan_digest(data: dict[str, Any]) -> str:
    """sha256 over the plan's canonical JSON without its `digest` field."""
    return "sha256:" + hashlib.sha256(_canonical(data).encode()).hexdigest()


def dump_plan(plan: Plan) -> str:
    """Deterministic JSON text for a plan, digest filled in (byte-identical for identical plans)."""
    data = plan.model_dump(mode="json")
    data["digest"] = plan_digest(data)
    return json.dumps(data, indent=2, ensure_ascii=False) + "\n"


def load_plan(text: str | bytes, *, verify_digest: bool = True) -> Plan:
    """Parse and validate a plan; raise `PlanError` with a one-paragraph explanation."""
    try:
        data = json.loads(text)
    except (ValueError, UnicodeDecodeError, RecursionError) as exc:  # RecursionError: `[[[[…` nested too deep
        raise PlanError(f"plan is not valid JSON: {exc}") from None
    if not isinstance(data, dict):
        raise PlanError("plan is not a JSON object")
    bad = _unstorable_text(data)
    if bad is not None:
        raise PlanError(f"plan contains a string that {bad}: no store can keep it (a plan `interlock compile` "
                        "writes never does); recompile the workflow")
    version = data.get("plan_version")
    if version != PLAN_VERSION:
        raise PlanError(
            f"plan version {version!r} is not supported: this runtime reads plan version {PLAN_VERSION}; "
            "recompile the workflow with `interlock compile`")
    if verify_digest:
        digest = data.get("digest")
        try:
            expected = plan_digest(data)
        except RecursionError:  # nested just below the JSON decoder's limit: not a plan either way
            raise PlanError("plan is nested too deeply to be a plan") from None
        if not isinstance(digest, str) or digest != expected:
            raise PlanError("plan digest does not match its content: the plan was modified or truncated "
                            "after compilation; recompile it with `interlock compile`")
    try:
        plan = Plan.model_validate(data)
    except ValidationError as exc:
        problems = "; ".join(
            f"{'.'.join(str(p) for p in err['loc'])}: {err['msg']}" for err in exc.errors()[:5])
        more = f" (and {exc.error_count() - 5} more)" if exc.error_count() > 5 else ""
        raise PlanError(f"plan does not match the plan schema: {problems}{more}") from None
    unresolved = reference_problems(plan)
    if unresolved:
        more = f" (and {len(unresolved) - 5} more)" if len(unresolved) > 5 else ""
        raise PlanError(f"plan references do not resolve: {'; '.join(unresolved[:5])}{more}; "
                        "recompile the workflow with `interlock compile`")
    return plan


def _unstorable_text(data: Any) -> str | None:
    """What is wrong with the first string of a JSON value (keys included) that a store cannot keep, or None."""
    from .checks import text_problem

    stack = [data]
    while stack:
        item = stack.pop()
        if isinstance(item, str):
            problem = text_problem(item)
            if problem is not None:
                return problem
        elif isinstance(item, dict):
            stack.extend(item.keys())
            stack.extend(item.values())
        elif isinstance(item, list):
            stack.extend(item)
    return None


def value_problem(value: Any, type_: str, records: Mapping[str, Mapping[str, str]]) -> str | None:
    """Why `value` is not of the plan type `type_` (None: it is).  Record types are checked field by
    field; `any` is anything; step, role, target and task references are strings; a threshold is a name
    or `{threshold, count}`."""
    if type_.endswith("?"):
        if value is None:
            return None
        type_ = type_[:-1]
    if type_ == "any":
        return None
    if type_.startswith("list[") and type_.endswith("]"):
        if not isinstance(value, (list, tuple)):
            return f"expected a list, got {type(value).__name__}"
        for i, item in enumerate(value):
            problem = value_problem(item, type_[5:-1], records)
            if problem:
                return f"item {i}: {problem}"
        return None
    if type_ == "map":
        return None if isinstance(value, Mapping) else f"expected a mapping, got {type(value).__name__}"
    if type_ == "threshold":
        if isinstance(value, str) or (isinstance(value, Mapping) and isinstance(value.get("threshold"), str)):
            return None
        return f"expected a threshold, got {type(value).__name__}"
    record = records.get(type_)
    if record is not None:
        if not isinstance(value, Mapping):
            return f"expected a `{type_}` mapping, got {type(value).__name__}"
        for name, item in value.items():
            if name not in record:
                return f"`{type_}` has no field `{name}`"
            problem = value_problem(item, record[name], records)
            if problem:
                return f"field `{name}`: {problem}"
        return None
    python = {"int": int, "bool": bool}.get(type_, str)
    if (isinstance(value, bool) and python is not bool) or not isinstance(value, python):
        return f"expected {type_}, got {type(value).__name__}"
    return None


def _action_problems(action: PlanAction, kind: PlanKind | None, roles: set[str],
                     records: Mapping[str, Mapping[str, str]], where: str) -> list[str]:
    """What an action's resolved arguments get wrong about its kind's declaration."""
    if kind is None:
        return []
    problems: list[str] = []
    label = f"{where}: `{action.kind}`"
    if action.action_class != kind.action_class:
        problems.append(f"{label} is a {kind.action_class} kind, the action says {action.action_class}")
    params = {p.name: p for p in kind.params}
    for name in sorted(set(action.args) - set(params)):
        problems.append(f"{label} has no parameter `{name}`")
    for p in kind.params:
        value = action.args.get(p.name)
        if value is None:
            if p.required:
                problems.append(f"{label} lacks its required argument `{p.name}`")
            continue
        problem = value_problem(value, p.type, records)
        if problem:
            problems.append(f"{label} argument `{p.name}` ({p.type}): {problem}")
        elif p.type.rstrip("?") == "role" and value not in roles:
            problems.append(f"{label} argument `{p.name}` names undeclared role `{value}`")
    if action.guard is not None and action.guard.role not in roles:
        problems.append(f"{label} guard names undeclared role `{action.guard.role}`")
    step_arg = action.args.get("step")
    if kind.action_class == "transition" and isinstance(step_arg, str) and step_arg != action.target_step:
        problems.append(f"{label} moves to `{step_arg}` but its target is `{action.target_step}`")
    return problems


def reference_problems(plan: Plan) -> list[str]:
    """What a schema-valid plan names but does not declare (a compiler never writes such a plan;
    a hand-edited one given a fresh digest can).  Empty when every reference resolves."""
    problems: list[str] = []
    triggers = {t.name for t in plan.triggers}
    kinds = {k.name for k in plan.kinds}
    kind_decls = {k.name: k for k in plan.kinds}
    roles = set(plan.roles)
    records = {r.name: r.fields for r in plan.records}
    policy = plan.entry_policy
    workflow_ids = [wf.id for wf in plan.workflows]
    for wf_id in sorted({w for w in workflow_ids if workflow_ids.count(w) > 1}):
        problems.append(f"workflow `{wf_id}` is declared twice")
    if plan.entry_policy.trigger not in triggers:
        problems.append(f"entry trigger `{plan.entry_policy.trigger}` is not a trigger of the plan")
    for kind in (*plan.entry_policy.exclude, *plan.entry_policy.dispatch):
        if kind not in kinds:
            problems.append(f"entry policy kind `{kind}` is not a kind of the plan")
    for wf in plan.workflows:
        step_ids = [s.id for s in wf.steps]
        for step_id in sorted({s for s in step_ids if step_ids.count(s) > 1}):
            problems.append(f"workflow `{wf.id}`: step `{step_id}` is declared twice")
        if wf.start_step not in step_ids:
            problems.append(f"workflow `{wf.id}`: start step `{wf.start_step}` is not one of its steps")
        for step in wf.steps:
            where = f"workflow `{wf.id}`, step `{step.id}`"
            for trigger, actions in step.handlers.items():
                if trigger not in triggers:
                    problems.append(f"{where}: handler for unknown trigger `{trigger}`")
                for action in actions:
                    if action.kind not in kinds:
                        problems.append(f"{where}: `{trigger}` action `{action.kind}` is not a kind of the plan")
                    if action.target_step is not None and action.target_step not in step_ids:
                        problems.append(f"{where}: `{trigger}` transition to unknown step `{action.target_step}`")
                    problems.extend(_action_problems(action, kind_decls.get(action.kind), roles, records,
                                                     f"{where}, `{trigger}`"))
            declared = step.handlers.get(policy.trigger, ())
            for action in step.entry_dispatch:
                problems.extend(_action_problems(action, kind_decls.get(action.kind), roles, records,
                                                 f"{where}, entry"))
            if [a for a in declared if a.kind in policy.dispatch] != list(step.entry_dispatch):
                problems.append(f"{where}: its entry dispatch list does not match its `{policy.trigger}` handler")
            if [a.kind for a in declared if a.kind in policy.exclude] != list(step.entry_inline):
                problems.append(f"{where}: its inline entry kinds do not match its `{policy.trigger}` handler")
            for action in step.entry_dispatch:
                if action.kind not in plan.entry_policy.dispatch:
                    problems.append(f"{where}: entry action `{action.kind}` is not in the entry policy's dispatch list")
            for kind in step.entry_inline:
                if kind not in plan.entry_policy.exclude:
                    problems.append(f"{where}: inline entry kind `{kind}` is not in the entry policy's exclude list")
            if step.pull_from is not None and step.pull_from not in step_ids:
                problems.append(f"{where}: pulls from unknown step `{step.pull_from}`")
    for seq in plan.sequences:
        if seq.trigger not in triggers:
            problems.append(f"dispatch sequence `{seq.name}`: unknown trigger `{seq.trigger}`")
    return problems
