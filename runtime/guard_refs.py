"""A schema-valid plan in, what its transition guards name but do not declare out (and any `quorum(…)` outside a
transition's guard): the guard part of `plan.reference_problems` (ADR 0038).

It reads expressions by their `op` tag, never by class, so it needs nothing of `plan` at run time (`plan` imports
this module when it loads a plan); its annotations name the models (`plan_model`), never `plan`.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .plan_model import Plan, PlanExpr

__all__ = ["GUARD_NAMES", "nodes", "guard_problems"]

GUARD_NAMES = ("payload", "task", "host")
"""The names a transition's guard reads (docs/language.md §5)."""


def nodes(expr: PlanExpr) -> Iterator[Any]:
    """Every node of an expression, depth first."""
    stack: list[Any] = [expr]
    while stack:
        node = stack.pop()
        yield node
        if node.op == "not":
            stack.append(node.arg)
        elif node.op in ("or", "and", "==", "!=", "??"):
            stack.extend((node.right, node.left))


def _expr_problems(expr: PlanExpr, fields: Mapping[str, Mapping[str, str]], roles: set[str],
                   label: str) -> list[str]:
    problems: list[str] = []
    for node in nodes(expr):
        if node.op == "quorum" and node.role not in roles:
            problems.append(f"{label} guard names undeclared role `{node.role}`")
        elif node.op == "path":
            head = node.path[0]
            if head not in fields:
                problems.append(f"{label} guard reads `{'.'.join(node.path)}`: a guard reads "
                                f"{', '.join(GUARD_NAMES)}")
            elif len(node.path) > 1 and node.path[1] not in fields[head]:
                problems.append(f"{label} guard reads `{'.'.join(node.path)}`, which `{head}` does not have")
    return problems


def guard_problems(plan: Plan) -> list[str]:
    """What a plan's transition guards name but do not declare, and quorums outside transition guards (a compiler
    never writes such a plan)."""
    problems: list[str] = []
    roles = set(plan.roles)
    records = {r.name: r.fields for r in plan.records}
    params = {t.name: {p.name: p.type for p in t.params} for t in plan.triggers}
    for wf in plan.workflows:
        for step in wf.steps:
            blocks = [(trigger, actions, params.get(trigger, {})) for trigger, actions in step.handlers.items()]
            blocks += [(timer.label, timer.actions, {}) for timer in step.timers]  # a timer carries no payload
            for trigger, actions, payload in blocks:
                fields = {"payload": payload, "task": records.get("task", {}), "host": records.get("host", {})}
                for action in actions:
                    label = f"workflow `{wf.id}`, step `{step.id}`, `{trigger}`: `{action.kind}`"
                    if action.guard is not None and action.when is not None:
                        problems.append(f"{label} has both a `guard` and a `when`")
                    if action.when is not None:
                        if action.action_class != "transition":
                            problems.append(f"{label} is not a transition but has a `when`")
                        problems.extend(_expr_problems(action.when, fields, roles, label))
    for seq in plan.sequences:
        exprs: list[Any] = [s.when for s in seq.steps if s.step == "skip"]
        exprs += [a for s in seq.steps if s.step == "load" for a in s.args]
        exprs += [o.when for o in seq.operations if o.when is not None]
        exprs += list(seq.payload.values())
        if any(n.op == "quorum" for e in exprs for n in nodes(e)):
            problems.append(f"dispatch sequence `{seq.name}`: `quorum(…)` outside a transition's guard")
    return problems
