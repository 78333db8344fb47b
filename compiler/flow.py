"""A workflow's steps in, the ways a task moves between them out: every edge out of each step, the graph the
reachability and liveness checks walk (docs/language.md §5, §6).

A task leaves a step by one of its transitions (a handler's or a timer's transition action), is pulled from it by
a step whose `pull_from` names it, or is moved by a person into any `manual_move` step.  `step_edges` yields a
step's transitions and pulls and is the one place that knows them: a timer's transition (`after 48h { move… }`)
needs nobody, so it makes its step finishable, and every check that walks the graph sees it.  Moves by hand go from any step to every `manual_move` step, so they are kept as one set (`Flow.manual`),
not as an edge per pair: the walks stay linear in the size of the workflow.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Iterable, Iterator, Mapping
from typing import Literal, NamedTuple

from interlock.dsl import ir

from .guards import quorums
from .steps import StepOrder, transition_target
from .symbols import Symbols

__all__ = ["Move", "Flow", "step_edges", "pulls"]

Via = Literal["transition", "pull_from"]


class Move(NamedTuple):
    """One way from `source` to `target`.  `action` and `trigger`: the transition (None for a pull; the trigger of a
    timer's transition is the timer as written, `after 48h`); `person`: a
    person must act (a `requires_approval` transition); `quorum`: the guard counts decisions."""

    source: str
    target: str
    via: Via
    trigger: str | None = None
    action: ir.ActionCall | None = None
    person: bool = False
    quorum: bool = False


def pulls(wf: ir.WorkflowDecl) -> dict[str, list[str]]:
    """Step id -> the steps that pull from it (`pull_from`), in declaration order."""
    out: dict[str, list[str]] = {}
    for step in wf.steps:
        for s in step.settings:
            if s.name == "pull_from" and isinstance(s.value, ir.Ident):
                out.setdefault(s.value.name, []).append(step.name.name)
    return out


def step_edges(step: ir.StepDecl, order: StepOrder, symbols: Symbols,
               pulled_by: Mapping[str, list[str]]) -> Iterator[Move]:
    """Every way out of `step` but a move by hand: its transitions (in handler and action order), then the steps
    that pull from it (`pulled_by`: `pulls(wf)`).  A target may be no step of the workflow (an unknown step is
    reported elsewhere)."""
    here = step.name.name
    blocks = [(h.trigger.name, h.actions) for h in step.handlers] + [(t.written, t.actions) for t in step.timers]
    for trigger, actions in blocks:
        for action in actions:
            kind = symbols.kinds.get(action.name.name)
            if kind is None or kind.action_class != "transition":
                continue
            target = transition_target(order, step, action)
            if target is None:
                continue
            counts = action.guard is not None and next(quorums(action.guard), None) is not None
            yield Move(here, target, "transition", trigger, action,
                       person=action.requires_approval is not None, quorum=counts)
    for puller in pulled_by.get(here, ()):
        yield Move(here, puller, "pull_from")


class Flow:
    """A workflow's steps by id (the first of a duplicated id), every step's edges and the `manual_move` steps,
    computed once."""

    def __init__(self, wf: ir.WorkflowDecl, symbols: Symbols) -> None:
        self.wf = wf
        self.order = StepOrder(wf)
        self.steps: dict[str, ir.StepDecl] = {}
        for decl in wf.steps:
            self.steps.setdefault(decl.name.name, decl)
        pulled_by = pulls(wf)
        self.edges: dict[str, list[Move]] = {
            sid: [m for m in step_edges(decl, self.order, symbols, pulled_by) if m.target in self.steps]
            for sid, decl in self.steps.items()}
        self.manual: list[str] = [sid for sid in self.order.ids if self.steps[sid].has("manual_move")]

    def start(self) -> ir.StepDecl | None:
        return next((s for s in self.order.steps if s.has("start")), None)

    def terminal(self) -> set[str]:
        return {sid for sid, decl in self.steps.items() if decl.has("terminal")}

    def reachable(self, sources: Iterable[str]) -> set[str]:
        """The steps a task in `sources` can reach: by transitions, pulls, and by hand into `manual_move` steps."""
        seen = set(sources)
        queue = deque(seen)
        if seen:  # a person may move a task from anywhere into any `manual_move` step
            fresh = [m for m in self.manual if m not in seen]
            seen.update(fresh)
            queue.extend(fresh)
        while queue:
            for move in self.edges.get(queue.popleft(), ()):
                if move.target not in seen:
                    seen.add(move.target)
                    queue.append(move.target)
        return seen

    def finishing(self, targets: Iterable[str]) -> set[str]:
        """The steps from which a task can reach one of `targets` (the same ways as `reachable`)."""
        back: dict[str, list[str]] = {}
        for moves in self.edges.values():
            for m in moves:
                back.setdefault(m.target, []).append(m.source)
        seen = set(targets)
        queue = deque(seen)
        while queue:
            for source in back.get(queue.popleft(), ()):
                if source not in seen:
                    seen.add(source)
                    queue.append(source)
        # a step that reaches a target and that a person may move a task into: every step reaches it by hand
        if any(m in seen for m in self.manual):
            return set(self.steps)
        return seen
