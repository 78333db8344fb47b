"""A workflow and one of its steps in, whether a task on the step can leave it out: one of the two judgements the
comparison makes about behaviour (docs/diff.md §3); the other, a guard tightened or loosened, is `guard_changes`'.
"""

from __future__ import annotations

from interlock.runtime.plan import PlanStep, PlanWorkflow

__all__ = ["has_way_out", "MOVES_TASK"]

MOVES_TASK = frozenset({"switch_workflow"})
"""Non-transition kinds that take a task out of its step (the prelude's `switch_workflow`)."""

# ---- ways out ---------------------------------------------------------------------------------------------


def has_way_out(workflow: PlanWorkflow, step: PlanStep) -> bool:
    """Whether a task on `step` can leave it: the step is terminal (it needs none), or one of its handlers has a
    transition to another step or a `switch_workflow`, or another step of the workflow allows `manual_move` (a
    person can move the task there).  Guards are not weighed: a guarded transition is a way out."""
    if step.terminal:
        return True
    for actions in step.handlers.values():
        for action in actions:
            if action.action_class == "transition" and action.target_step not in (None, step.id):
                return True
            if action.kind in MOVES_TASK:
                return True
    return any(other.manual_move for other in workflow.steps if other.id != step.id)
