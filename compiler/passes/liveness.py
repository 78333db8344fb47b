"""Checked workflows in, liveness warnings out (docs/language.md §6): where a task can stall or loop for ever.

- `no-way-to-finish`: a non-terminal step from which no terminal step can be reached;
- `workflow-never-finishes`: a workflow whose start step reaches no terminal step (or that has none);
- `replay-loop`: a cycle of transitions that needs no person and no quorum, fired by the agent's own turn,
  through steps that all start the agent on entry;
- `prompt-never-sent`: a step with a `prompt` whose entry never starts the agent;
- `no-workflow`: a file with no workflow at all, whose plan has nothing to run.

The moves are `compiler.flow`'s (transitions, pulls, moves by hand into `manual_move` steps); every walk is linear
in the size of the workflow.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from interlock.dsl import Diagnostic, ir
from interlock.dsl.diagnostics import label, make

from ..context import Context
from ..flow import Flow, Move

__all__ = ["liveness", "SELF_DRIVEN"]

SELF_DRIVEN = frozenset({"on_turn_start", "on_turn_complete", "on_agent_error"})
"""Triggers the agent's own run fires (its turn starting, ending or failing): a transition on one of them needs
nobody else to happen.  A comment, a resolved blocker or an approval comes from outside the loop."""


def liveness(ctx: Context) -> list[Diagnostic]:
    out: list[Diagnostic] = _no_workflow(ctx)
    entry = ctx.symbols.entry_trigger or "on_enter"
    for wf in ctx.workflows():
        if not wf.steps:
            continue
        flow = Flow(wf, ctx.symbols)
        _finishing(wf, flow, out)
        starts = {sid for sid, step in flow.steps.items() if _starts_agent(step, entry)}
        _replay_loops(flow, starts, out)
        for step in wf.steps:
            prompt = next((s for s in step.settings if s.name == "prompt"), None)
            if prompt is not None and step.name.name not in starts:
                out.append(make("prompt-never-sent", prompt.span,
                                f"step `{step.name.name}` has a prompt, but its entry never starts the agent: the "
                                "prompt is never sent",
                                help=f"start the agent on entry: `on {entry} {{ auto_start_agent }}`, or drop the "
                                     "prompt"))
    return out


def _starts_agent(step: ir.StepDecl, entry: str) -> bool:
    return any(a.name.name == "auto_start_agent" for h in step.handlers if h.trigger.name == entry
               for a in h.actions)


def _finishing(wf: ir.WorkflowDecl, flow: Flow, out: list[Diagnostic]) -> None:
    start = flow.start()
    terminal = flow.terminal()
    finishing = flow.finishing(terminal)
    if start is not None and start.name.name not in finishing:
        why = ("no step is `terminal`" if not terminal else
               f"no transition, pull or move by hand leads from `{start.name.name}` to a terminal step")
        out.append(make("workflow-never-finishes", wf.name.span,
                        f"workflow `{wf.name.name}` never finishes: {why}",
                        labels=(label(start.name.span, "the start step"),),
                        help="mark the last step `terminal`, and give every step a way towards it (a transition, "
                             "or `manual_move` on the steps a person may move a task into)"))
    if not terminal:
        return  # said once, for the workflow: every step would say it again
    for sid, step in flow.steps.items():
        if sid in finishing or (start is not None and sid == start.name.name):
            continue
        out.append(make("no-way-to-finish", step.name.span,
                        f"a task in `{sid}` can never finish: no transition, pull or move by hand leads from it to "
                        f"a terminal step ({', '.join(f'`{t}`' for t in sorted(terminal))})",
                        help="add a transition out of it, or `manual_move` to a step on the way to the end"))


def _replay_loops(flow: Flow, starts: set[str], out: list[Diagnostic]) -> None:
    """Cycles of transitions that need no person and no quorum, on triggers the agent's own run fires, through
    steps that all start the agent on entry: each entry starts a run whose end moves the task on, for ever."""
    loop = {sid: [m for m in moves if m.via == "transition" and not m.person and not m.quorum
                  and m.trigger in SELF_DRIVEN and m.target != sid and m.source in starts and m.target in starts]
            for sid, moves in flow.edges.items() if sid in starts}
    for component in _cycles(loop):
        ordered = [sid for sid in flow.order.ids if sid in component]
        moves = [m for sid in ordered for m in loop[sid] if m.target in component]
        first = moves[0]
        assert first.action is not None
        path = " -> ".join(f"`{sid}`" for sid in [*ordered, ordered[0]])
        out.append(make("replay-loop", first.action.span,
                        f"{path}: these transitions need no person and no quorum, and every step on the cycle starts "
                        "the agent on entry: each run that ends moves the task on and starts the next, with no "
                        "bound",
                        labels=tuple(label(m.action.span, f"`{m.source}` -> `{m.target}`") for m in moves[1:]
                                     if m.action is not None),
                        help="guard one of the moves (`when quorum(…)`), make it `requires_approval`, or stop "
                             "starting the agent on one of the steps"))


def _cycles(edges: Mapping[str, Iterable[Move]]) -> list[set[str]]:
    """The strongly connected components with more than one step (Tarjan's algorithm, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[set[str]] = []
    counter = 0
    for root in edges:
        if root in index:
            continue
        work = [(root, iter([m.target for m in edges[root]]))]
        index[root] = low[root] = counter
        counter += 1
        stack.append(root)
        on_stack.add(root)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = counter
                    counter += 1
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter([m.target for m in edges.get(child, ())])))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component: set[str] = set()
                while True:
                    top = stack.pop()
                    on_stack.discard(top)
                    component.add(top)
                    if top == node:
                        break
                if len(component) > 1:
                    found.append(component)
    return found


def _no_workflow(ctx: Context) -> list[Diagnostic]:
    """An empty file, or one of declarations alone, compiles to a plan with no workflow: say so (a module meant
    only for `use` may ignore it)."""
    if next(ctx.workflows(), None) is not None:
        return []
    main = ctx.program.main
    at = main.span.model_copy(update={"line": 1, "col": 1, "end_line": 1, "end_col": 1})
    return [make("no-workflow", at, "the file declares no workflow: its plan has nothing to run",
                 help='declare one, e.g. `workflow w "W" { step work "Work" { start } }` (a file meant only for '
                      "`use` by other files needs none)")]
