"""A plan in, its lookups out, built once: workflows, steps, compiled handlers, exits, triggers, kinds, sequences.

Everything a runtime component asks of the plan goes through a `PlanIndex`: it never walks the
plan itself.  A step's handler for a trigger is compiled once into a `Handler`: the kinds it
runs through executors, and — when its first transition that needs no approval has no guard —
the transition's target, known before any action runs, so `fire` walks only the other actions.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from .errors import UnknownStepError, UnknownWorkflowError
from .options import transition_options
from .plan import Plan, PlanAction, PlanKind, PlanRetry, PlanSequence, PlanStep, PlanTrigger, PlanWorkflow

__all__ = ["EXIT_TRIGGER", "Handler", "NO_HANDLER", "PlanIndex", "compile_handler"]

EXIT_TRIGGER = "on_exit"
"""The trigger a step's exit handler is declared on (docs/runtime.md §2, "Leaving a step")."""


@dataclass(frozen=True, slots=True)
class Handler:
    """A step's handler of one trigger, compiled once.

    `runs` are the actions that run through executors (every non-transition action), `kinds` their
    kinds (the pre-dispatch walk's list).  `target_known` says the handler's first transition that
    needs no approval has no guard (or there is none): its `target` is then the step the task goes
    to whatever happens, no guard is evaluated, and only `runs` are walked.  `exit` is the step's own
    `on_exit` handler, run before a transition leaves the step; `destination` the step `target` names (when
    known); `options` the entry options of that transition's arrival."""

    actions: tuple[PlanAction, ...]
    kinds: tuple[str, ...]
    runs: tuple[PlanAction, ...]
    target_known: bool
    target: str | None
    workflow_steps: tuple[str, ...]
    exit: Handler | None = None
    destination: PlanStep | None = None
    options: str | None = None  # the known target's transition's arrival options, canonical JSON (ADR 0043)


NO_HANDLER = Handler((), (), (), True, None, ())
"""What a step with no handler for a trigger runs: nothing."""


def compile_handler(actions: Sequence[PlanAction], workflow_steps: tuple[str, ...],
                    exit: Handler | None = None, steps: Mapping[str, PlanStep] | None = None) -> Handler:
    """`steps`: the workflow's steps by id (the known target's `destination` is looked up there)."""
    runs = tuple(a for a in actions if a.action_class != "transition")
    first = next((a for a in actions if a.action_class == "transition" and not a.requires_approval), None)
    known = first is None or (first.guard is None and first.when is None)
    target = first.target_step if known and first is not None else None
    destination = steps.get(target) if steps is not None and target is not None else None
    options = transition_options(first.args, first.kind) if known and first is not None else None
    return Handler(tuple(actions), tuple(a.kind for a in runs), runs, known, target, workflow_steps, exit,
                   destination, options)


class PlanIndex:
    """The lookups of one plan (read-only after construction)."""

    def __init__(self, plan: Plan) -> None:
        self.plan = plan
        self.workflows: Mapping[str, PlanWorkflow] = {wf.id: wf for wf in plan.workflows}
        self.steps: Mapping[tuple[str, str], PlanStep] = {(wf.id, s.id): s for wf in plan.workflows for s in wf.steps}
        self.step_ids: Mapping[str, tuple[str, ...]] = {wf.id: tuple(s.id for s in wf.steps) for wf in plan.workflows}
        self.exits: Mapping[tuple[str, str], Handler] = {
            (wf.id, s.id): compile_handler(s.handlers[EXIT_TRIGGER], self.step_ids[wf.id])
            for wf in plan.workflows for s in wf.steps if s.handlers.get(EXIT_TRIGGER)}
        by_id = {wf.id: {s.id: s for s in wf.steps} for wf in plan.workflows}
        self.handlers: Mapping[tuple[str, str, str], Handler] = {
            (wf.id, s.id, trigger): compile_handler(actions, self.step_ids[wf.id], self.exits.get((wf.id, s.id)),
                                                    by_id[wf.id])
            for wf in plan.workflows for s in wf.steps for trigger, actions in s.handlers.items()}
        self.triggers: Mapping[str, PlanTrigger] = {t.name: t for t in plan.triggers}
        self.kinds: Mapping[str, PlanKind] = {k.name: k for k in plan.kinds}
        self.sequences: Mapping[str, PlanSequence] = {s.name: s for s in plan.sequences}
        self.records: Mapping[str, Mapping[str, str]] = {r.name: r.fields for r in plan.records}
        self.roles: frozenset[str] = frozenset(plan.roles)
        self.entry_trigger = plan.entry_policy.trigger
        # a step's timers (`after`/`every`, RUNTIME §7) compiled like handlers; the task kinds' retry policies
        self.timer_handlers: Mapping[tuple[str, str, int], Handler] = {
            (wf.id, s.id, i): compile_handler(t.actions, self.step_ids[wf.id], self.exits.get((wf.id, s.id)),
                                              by_id[wf.id])
            for wf in plan.workflows for s in wf.steps for i, t in enumerate(s.timers)}
        self.retries: Mapping[str, PlanRetry] = {k.name: k.retry for k in plan.kinds if k.retry is not None}
        # whether anything of this plan is ever due (timers, retries): arrivals then clear a task's old due rows
        self.due_work = bool(self.timer_handlers or self.retries)
        # triggers whose payload has nothing to check (no parameters): `fire` skips the check for them
        self.paramless: frozenset[str] = frozenset(t.name for t in plan.triggers
                                                   if not t.params and t.name != self.entry_trigger)

    def workflow(self, workflow_id: str) -> PlanWorkflow:
        wf = self.workflows.get(workflow_id)
        if wf is None:
            raise UnknownWorkflowError(f"workflow `{workflow_id}` is not in the plan (known: "
                                       f"{', '.join(sorted(self.workflows)) or 'none'})")
        return wf

    def step(self, workflow_id: str, step_id: str) -> PlanStep:
        self.workflow(workflow_id)
        step = self.steps.get((workflow_id, step_id))
        if step is None:
            raise UnknownStepError(f"workflow `{workflow_id}` has no step `{step_id}` (steps: "
                                   f"{', '.join(self.step_ids[workflow_id])})")
        return step

    def handler(self, workflow_id: str, step_id: str, trigger: str) -> Handler:
        """The step's compiled handler for `trigger` (`NO_HANDLER` when it has none); raises for an unknown step."""
        handler = self.handlers.get((workflow_id, step_id, trigger))
        if handler is None:
            if (workflow_id, step_id) not in self.steps:
                self.step(workflow_id, step_id)  # raises: the plan has no such workflow or step
            return NO_HANDLER
        return handler

    def workflow_steps(self, workflow_id: str | None, step_id: str) -> tuple[str, ...]:
        """Every step id of the workflow (the seats' scope), or the one step when the workflow is unknown."""
        return self.step_ids.get(workflow_id or "") or (step_id,)
