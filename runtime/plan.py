"""Plan JSON in, validated `Plan` out (and back): the versioned contract between compiler and runtime.

The runtime owns the models (`plan_model.py`, re-exported here); the compiler only fills them.  A plan is self-contained:
vocabulary, entry policy, workflows with their handlers, and dispatch sequences, each
action and guard carrying a `SourceRef` back to the `.wf` line it came from.  A plan
carries a digest of its meaning (its revision: source positions, file names and the compiler
version are left out, so reformatting never changes it) and one of that layout, so a hand-edited
or truncated plan is refused (runtime/plan_digest.py, ADR 0040).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from pydantic import ValidationError

from .plan_model import (
    PLAN_VERSION,
    AgentProfile,
    BinX,
    EntryPolicy,
    GuardOutcome,
    LitX,
    LoadStep,
    NotX,
    PathX,
    Plan,
    PlanAction,
    PlanError,
    PlanExpr,
    PlanGuard,
    PlanKind,
    PlanOperation,
    PlanParam,
    PlanRecord,
    PlanRetry,
    PlanSequence,
    PlanStep,
    PlanTimer,
    PlanTrigger,
    PlanWorkflow,
    QuorumX,
    SessionTarget,
    SkipStep,
    SourceRef,
)
from .plan_rules import structure_problems

__all__ = [
    "PLAN_VERSION", "PlanError", "SourceRef", "PlanParam", "PlanTrigger", "PlanKind", "PlanRecord",
    "PlanGuard", "PlanAction", "PlanTimer", "PlanRetry", "AgentProfile", "SessionTarget", "PlanStep", "PlanWorkflow", "EntryPolicy", "PathX", "LitX", "NotX",
    "BinX", "QuorumX", "PlanExpr", "GuardOutcome", "SkipStep", "LoadStep", "PlanOperation", "PlanSequence",
    "Plan", "load_plan", "dump_plan", "plan_digest", "layout_digest", "seal_digests", "plan_layout",
    "reference_problems",
]


def plan_layout(data: Any) -> tuple[Any, list[tuple[tuple[str | int, ...], Any]]]:
    """Plan JSON data split into its meaning and its layout (runtime/plan_digest.py)."""
    from .plan_digest import split_layout

    return split_layout(data, Plan, SourceRef)


def plan_digest(data: dict[str, Any]) -> str:
    """sha256 over the canonical JSON of the plan's meaning: everything but its layout (every source position,
    `sources`, `compiler`) and its two digests.  The plan's revision: `fmt` never changes it."""
    from .plan_digest import sha256_of

    return sha256_of(plan_layout(data)[0])


def layout_digest(data: dict[str, Any]) -> str:
    """sha256 over the canonical JSON of the plan's layout, as `[path, value]` pairs in document order."""
    from .plan_digest import sha256_of

    return sha256_of([[list(path), value] for path, value in plan_layout(data)[1]])


def seal_digests(data: dict[str, Any]) -> dict[str, Any]:
    """Plan JSON data with `digest` and `layout_digest` computed from its content (a new dict)."""
    return {**data, "digest": plan_digest(data), "layout_digest": layout_digest(data)}


def dump_plan(plan: Plan) -> str:
    """Deterministic JSON text for a plan, digests filled in (byte-identical for identical plans)."""
    data = seal_digests(plan.model_dump(mode="json"))
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
        older = isinstance(version, int) and not isinstance(version, bool) and 1 <= version < PLAN_VERSION
        raise PlanError(
            f"plan version {version!r} is not supported: this runtime reads plan version {PLAN_VERSION}; "
            "recompile the workflow with `interlock compile`"
            + (" (the plan was written by an older interlock)" if older else ""))
    if verify_digest:
        try:
            expected = seal_digests(data)
        except RecursionError:  # nested just below the JSON decoder's limit: not a plan either way
            raise PlanError("plan is nested too deeply to be a plan") from None
        if any(not isinstance(data.get(k), str) or data.get(k) != expected[k] for k in ("digest", "layout_digest")):
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
    broken = structure_problems(plan)
    if broken:
        more = f" (and {len(broken) - 5} more)" if len(broken) > 5 else ""
        raise PlanError(f"plan breaks the compiler's rules: {'; '.join(broken[:5])}{more}; a compiled plan never "
                        "does: recompile the workflow with `interlock compile`")
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
            for trigger in step.handlers:
                if trigger not in triggers:
                    problems.append(f"{where}: handler for unknown trigger `{trigger}`")
            blocks = [*step.handlers.items(), *((timer.label, timer.actions) for timer in step.timers)]
            for trigger, actions in blocks:
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
            target = step.session_target
            if target is not None and (target.kind == "step") != (target.step_id in step_ids):
                problems.append(f"{where}: its session target names no step of the workflow")
    for seq in plan.sequences:
        if seq.trigger not in triggers:
            problems.append(f"dispatch sequence `{seq.name}`: unknown trigger `{seq.trigger}`")
    from .guard_refs import guard_problems

    return problems + guard_problems(plan)
