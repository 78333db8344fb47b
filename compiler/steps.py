"""A workflow's steps in, their order by position and where each transition goes out: the step helpers the passes
and the plan lowering share (so no pass imports another)."""

from __future__ import annotations

from interlock.dsl import ir

__all__ = ["step_position", "ordered_steps", "StepOrder", "transition_target"]


def step_position(step: ir.StepDecl, index: int) -> int:
    for s in step.settings:
        if s.name == "position" and isinstance(s.value, ir.IntLit):
            return s.value.value
    return index


def ordered_steps(wf: ir.WorkflowDecl) -> list[ir.StepDecl]:
    """Steps by position (declaration order breaks ties)."""
    return [s for _, _, s in sorted((step_position(s, i), i, s) for i, s in enumerate(wf.steps))]


class StepOrder:
    """A workflow's step ids by position, computed once (the same for every action of the workflow)."""

    __slots__ = ("ids", "index", "steps")

    def __init__(self, wf: ir.WorkflowDecl) -> None:
        self.steps = ordered_steps(wf)
        self.ids = [s.name.name for s in self.steps]
        self.index: dict[str, int] = {}
        for i, sid in enumerate(self.ids):
            self.index.setdefault(sid, i)  # a duplicated id (an error) moves by its first step


def transition_target(order: StepOrder, step: ir.StepDecl, action: ir.ActionCall) -> str | None:
    """The step a transition action moves to (None: no such step)."""
    name = action.name.name
    ids = order.ids
    here = order.index.get(step.name.name, -1)
    if name == "move_to_next":
        return ids[here + 1] if 0 <= here < len(ids) - 1 else None
    if name == "move_to_previous":
        return ids[here - 1] if here > 0 else None
    for arg in action.args:
        if arg.name is None or arg.name.name == "step":
            v = arg.value
            if isinstance(v, ir.NameValue) and len(v.parts) == 1:
                return v.parts[0]
            if isinstance(v, ir.StrLit):
                return v.value
    return None
