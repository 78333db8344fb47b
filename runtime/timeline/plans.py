"""Plan revisions kept by the store in, what the timeline reads of them out: a step's entry actions and excluded
kinds, its handlers' transitions and their guards written as in `.wf` source.

A revision the store does not keep (or cannot parse) is None: the timeline then says what the rows say and no
more.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from ..plan import BinX, LitX, NotX, PathX, Plan, PlanAction, PlanError, PlanExpr, PlanStep, QuorumX, load_plan

__all__ = ["Revisions", "expr_text", "guard_text", "Transition"]


def expr_text(expr: PlanExpr) -> str:
    """A guard expression as `.wf` source writes it (parenthesised where it nests)."""
    if isinstance(expr, PathX):
        return ".".join(expr.path)
    if isinstance(expr, LitX):
        if isinstance(expr.value, bool):
            return "true" if expr.value else "false"
        return f'"{expr.value}"' if isinstance(expr.value, str) else str(expr.value)
    if isinstance(expr, NotX):
        return f"not {_nested(expr.arg)}"
    if isinstance(expr, QuorumX):
        threshold = f"n_approve({expr.count})" if expr.threshold == "n_approve" else expr.threshold
        return f"quorum({expr.role}, {threshold})"
    assert isinstance(expr, BinX)
    return f"{_nested(expr.left)} {expr.op} {_nested(expr.right)}"


def _nested(expr: PlanExpr) -> str:
    return f"({expr_text(expr)})" if isinstance(expr, BinX) else expr_text(expr)


def guard_text(action: PlanAction) -> str | None:
    """A transition's guard (`when …`), None when it has none."""
    if action.when is not None:
        return expr_text(action.when)
    g = action.guard
    if g is None:
        return None
    return expr_text(QuorumX(role=g.role, threshold=g.threshold, count=g.count))


@dataclass(frozen=True)
class Transition:
    """A transition of a step's handler: its position, target, guard text and whether it needs approval."""

    position: int
    to: str | None
    guard: str | None
    requires_approval: bool
    action: PlanAction


class Revisions:
    """The plan revisions a task's rows name (digest -> plan JSON), parsed once each."""

    def __init__(self, texts: Mapping[str, str]) -> None:
        self._texts = dict(texts)
        self._plans: dict[str, Plan | None] = {}

    def plan(self, digest: str | None) -> Plan | None:
        if digest is None:
            return None
        if digest not in self._plans:
            text = self._texts.get(digest)
            try:
                self._plans[digest] = None if text is None else load_plan(text)
            except PlanError:
                self._plans[digest] = None
        return self._plans[digest]

    def step(self, digest: str | None, workflow_id: str | None, step_id: str | None) -> PlanStep | None:
        plan = self.plan(digest)
        if plan is None or workflow_id is None or step_id is None:
            return None
        wf = plan.workflow(workflow_id)
        if wf is None:
            return None
        return next((s for s in wf.steps if s.id == step_id), None)

    def transitions(self, step: PlanStep | None, trigger: str | None) -> list[Transition]:
        if step is None or trigger is None:
            return []
        return [Transition(a.position, a.target_step, guard_text(a), a.requires_approval, a)
                for a in step.handlers.get(trigger, ()) if a.action_class == "transition"]
