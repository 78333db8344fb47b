"""A plan in, a diagram of its workflows out: Mermaid state diagrams and Graphviz DOT (`interlock graph`).

Pure: no I/O, no subprocess; the same plan always gives the same bytes.  What is drawn
(docs/graph.md): a node per step, labelled with its title, in board order (by position; in DOT
an invisible edge ties each step to the next and arrows back do not constrain the layout, ADR
0041); `[*]` into the start step and
from every terminal step; an edge per transition whose destination resolves, labelled
with its trigger, its guard (`when EXPR`, as the source writes it) and `requires_approval`,
`move_to_next` / `move_to_previous` resolved by position; a dashed edge (DOT; a labelled
one in Mermaid, whose state diagrams have no dashed edges) from a `pull_from` source into
the step that pulls; `manual_move` steps shaded; under a step's title, each action that continues on
failure (`continue_on_failure`, ADR 0042); a dotted edge (DOT) labelled with the timer (`after 48h`) for each
transition of a timer; with `handlers`, each step's handlers and timers, and the retry policy of their actions
(interlock/diagrams/handlers.py); a legend of what is drawn, below the diagram in DOT.  Several
workflows are drawn as one diagram with a cluster (Mermaid: composite state) per workflow.

Node ids are the step ids where both formats accept them; other ids are sanitised to
`[A-Za-z0-9_]` (ADR 0024), made unique deterministically, and never a Mermaid keyword.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from itertools import pairwise

from interlock.compiler.guard_text import guard_text
from interlock.errors import InterlockError
from interlock.runtime.plan import Plan, PlanAction, PlanStep, PlanWorkflow

from .handlers import handler_lines

__all__ = ["Edge", "GraphError", "FORMATS", "DIRECTIONS", "transitions", "pulls", "node_ids", "select",
           "render", "render_mermaid", "render_dot", "guard_text", "by_position", "handler_lines", "continued_lines"]

FORMATS = ("mermaid", "dot")
DIRECTIONS = ("LR", "TB")

# Words Mermaid's state-diagram lexer takes as keywords in any case (a state named `state` or `Note` does not
# parse), and the ids Mermaid gives `[*]` itself (a step named `root_start` would merge with the start point).
_RESERVED = frozenset({
    "state", "note", "class", "classdef", "style", "click", "scale", "default", "statediagram", "end",
    "direction", "hide", "as", "left", "right", "of", "root_start", "root_end", "interlock_legend",
})
_VALID_ID = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")
_LEGEND_ID = "interlock_legend"
_STANDARD_MOVES = ("move_to_step", "move_to_next", "move_to_previous")

MANUAL_FILL, MANUAL_STROKE = "#fff4d6", "#b7791f"
LEGEND_FILL, LEGEND_STROKE = "#f7f7f7", "#999999"
PULL_COLOR = "#555555"


class GraphError(InterlockError):
    """The diagram asked for cannot be drawn (an unknown workflow, a plan without workflows)."""


@dataclass(frozen=True)
class Edge:
    """A transition of a step whose destination resolves: `source --trigger--> target`; a timer's transition has
    the timer's label (`after 48h`) for its trigger and `timer` set."""

    source: str
    target: str
    trigger: str
    action: PlanAction
    timer: bool = False

    @property
    def lines(self) -> tuple[str, ...]:
        """The edge's label, one item per line: the trigger, a non-standard transition kind, the guard,
        `requires_approval`."""
        out = [self.trigger]
        if self.action.kind not in _STANDARD_MOVES:
            out.append(f"via {self.action.kind}")
        guard = guard_text(self.action)
        if guard:
            out.append(guard)
        if self.action.requires_approval:
            out.append("requires_approval")
        return tuple(out)


def continued_lines(step: PlanStep) -> list[str]:
    """The lines under a step's title for each action whose failure does not stop its handler (`continue_on_failure`,
    ADR 0042), with its trigger."""
    return [f"{action.kind} continues on failure ({trigger})"
            for trigger, actions, _ in _handlers(step) for action in actions if action.continue_on_failure]


def _handlers(step: PlanStep) -> list[tuple[str, tuple[PlanAction, ...], bool]]:
    """`(trigger, actions, is_timer)` of each handler, then of each timer (named by its label, `after 48h`)."""
    return [*((t, a, False) for t, a in step.handlers.items()), *((t.label, t.actions, True) for t in step.timers)]


def _legend_keys(workflows: Sequence[PlanWorkflow], listed: bool) -> list[str]:
    """What the legend explains, in its order: only what the diagram draws — `start` always, `terminal`, `manual`
    (shaded steps), `transition`, `timer` (a timer's transition), `pull` (dashed arrows), `continued` (an action that continues on failure),
    `handlers` (`listed`: some step lists its handlers)."""
    drawn = {"start": True,
             "terminal": any(s.terminal for wf in workflows for s in wf.steps),
             "manual": any(s.manual_move for wf in workflows for s in wf.steps),
             "transition": any(not e.timer for wf in workflows for e in transitions(wf)),
             "timer": any(e.timer for wf in workflows for e in transitions(wf)),
             "pull": any(pulls(wf) for wf in workflows),
             "continued": any(continued_lines(s) for wf in workflows for s in wf.steps),
             "handlers": listed}
    return [key for key, shown in drawn.items() if shown]


def by_position(wf: PlanWorkflow) -> list[PlanStep]:
    """The workflow's steps by position (declaration order breaks ties)."""
    return [s for _, _, s in sorted((s.position, i, s) for i, s in enumerate(wf.steps))]


def transitions(wf: PlanWorkflow) -> list[Edge]:
    """Every transition of the workflow whose destination is one of its steps, by step position, then handler (the
    timers after the handlers) and action order.

    `move_to_next` / `move_to_previous` go to the next / previous step by position (none past either end);
    any other transition kind goes to the step its `step` argument names."""
    steps = by_position(wf)
    order = [s.id for s in steps]
    index = {sid: i for i, sid in reversed(list(enumerate(order)))}
    known = set(order)
    edges: list[Edge] = []
    for step in steps:
        here = index[step.id]
        for trigger, actions, timer in _handlers(step):
            for action in actions:
                if action.action_class != "transition":
                    continue
                target: str | None
                if action.kind == "move_to_next":
                    target = order[here + 1] if here + 1 < len(order) else None
                elif action.kind == "move_to_previous":
                    target = order[here - 1] if here > 0 else None
                else:
                    arg = action.args.get("step")
                    target = arg if isinstance(arg, str) else action.target_step
                if target is not None and target in known:
                    edges.append(Edge(step.id, target, trigger, action, timer))
    return edges


def pulls(wf: PlanWorkflow) -> list[tuple[str, str]]:
    """`(source, puller)` for every step with a `pull_from` that names a step of the workflow."""
    known = {s.id for s in wf.steps}
    return [(s.pull_from, s.id) for s in by_position(wf) if s.pull_from is not None and s.pull_from in known]


def select(plan: Plan, workflow: str | None) -> list[PlanWorkflow]:
    """The workflows to draw: all of them, or the one named (GraphError names the known ids)."""
    if not plan.workflows:
        raise GraphError("the plan declares no workflow: there is nothing to draw")
    if workflow is None:
        return list(plan.workflows)
    found = plan.workflow(workflow)
    if found is None:
        known = ", ".join(wf.id for wf in plan.workflows)
        raise GraphError(f"no workflow `{workflow}`; the file declares: {known}")
    return [found]


# ---- node ids ----------------------------------------------------------------------------


def _sanitise(raw: str) -> str:
    base = re.sub(r"[^A-Za-z0-9_]", "_", raw)
    if not base or base[0].isdigit() or base.lower() in _RESERVED:
        base = "s_" + base
    return base


def _allocate(raws: Sequence[str], taken: set[str]) -> list[str]:
    """An id per raw name, unique among themselves and `taken` (which grows): names both formats accept keep
    themselves first, then the others are sanitised, suffixed `_2`, `_3`, … on a clash, in the order given."""
    out: list[str | None] = [None] * len(raws)
    for i, raw in enumerate(raws):
        if _VALID_ID.match(raw) and raw.lower() not in _RESERVED and raw not in taken:
            taken.add(raw)
            out[i] = raw
    for i, raw in enumerate(raws):
        if out[i] is not None:
            continue
        base = _sanitise(raw)
        candidate, n = base, 2
        while candidate in taken or candidate.lower() in _RESERVED:
            candidate, n = f"{base}_{n}", n + 1
        taken.add(candidate)
        out[i] = candidate
    return [name for name in out if name is not None]


@dataclass(frozen=True)
class _Ids:
    steps: dict[tuple[str, str], str]  # (workflow id, step id) -> node id
    clusters: dict[str, str]  # workflow id -> cluster id (several workflows only)

    def start(self, wf: PlanWorkflow) -> str:
        """The start point's id: Mermaid's own for `[*]` (`root_start`, or `<composite>_start`)."""
        return f"{self.clusters[wf.id]}_start" if self.clusters else "root_start"

    def end(self, wf: PlanWorkflow) -> str:
        return f"{self.clusters[wf.id]}_end" if self.clusters else "root_end"


def _ids(workflows: Sequence[PlanWorkflow]) -> _Ids:
    taken: set[str] = set()
    clusters: dict[str, str] = {}
    if len(workflows) > 1:
        names = _allocate([wf.id for wf in workflows], taken)
        clusters = {wf.id: name for wf, name in zip(workflows, names)}
        for name in names:  # Mermaid names a composite's `[*]` points after it
            taken.update((f"{name}_start", f"{name}_end"))
    keys = [(wf.id, s.id) for wf in workflows for s in wf.steps]
    raws = [step if not clusters else f"{clusters[wf]}__{step}" for wf, step in keys]
    return _Ids(dict(zip(keys, _allocate(raws, taken))), clusters)


def node_ids(workflows: Sequence[PlanWorkflow]) -> dict[tuple[str, str], str]:
    """The node id of every step, keyed by (workflow id, step id): the same in both formats."""
    return dict(_ids(workflows).steps)


# ---- Mermaid -------------------------------------------------------------------------------

_MERMAID_SAFE = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789 _.,()'/!?+=@$^|~-")


def mermaid_text(text: str) -> str:
    """Text for a Mermaid label: ASCII punctuation and unprintable characters as Mermaid entity codes (`#35;`),
    printable non-ASCII as itself, a line break as `<br/>`."""
    out: list[str] = []
    for ch in text:
        if ch == "\n":
            out.append("<br/>")
        elif ch in _MERMAID_SAFE or (ord(ch) > 127 and ch.isprintable()):
            out.append(ch)
        else:
            out.append(f"#{ord(ch)};")
    return "".join(out)


_MERMAID_LEGEND = {
    "start": "[*] → step: the start step",
    "terminal": "step → [*]: a terminal step",
    "manual": "shaded: manual_move (moved by hand)",
    "transition": "arrow: transition (trigger, guard, requires_approval)",
    "timer": "arrow labelled after D / every D: a timer moves the task",
    "pull": "arrow labelled pull_from: the head pulls from the tail",
    "continued": "a step's line: an action that continues on failure (continue_on_failure)",
    "handlers": "lines in a step: its handlers and timers (transitions are arrows)",
}


def _mermaid_workflow(plan: Plan, wf: PlanWorkflow, node: dict[str, str], indent: str, handlers: bool) -> list[str]:
    """The states and transitions of one workflow, states in position order (the order Mermaid lays them out in)."""
    lines: list[str] = []
    for step in by_position(wf):
        lines.append(f'{indent}state "{mermaid_text(step.title)}" as {node[step.id]}')
        lines += [f"{indent}{node[step.id]} : {mermaid_text(line)}" for line in continued_lines(step)]
        if handlers:
            lines += [f"{indent}{node[step.id]} : {mermaid_text(line)}" for line in handler_lines(plan, step)]
    lines.append(f"{indent}[*] --> {node[wf.start_step]}")
    for edge in transitions(wf):
        label = "<br/>".join(mermaid_text(line) for line in edge.lines)
        lines.append(f"{indent}{node[edge.source]} --> {node[edge.target]} : {label}")
    for source, puller in pulls(wf):
        lines.append(f"{indent}{node[source]} --> {node[puller]} : pull_from")
    for step in by_position(wf):
        if step.terminal:
            lines.append(f"{indent}{node[step.id]} --> [*]")
    return lines


def render_mermaid(plan: Plan, workflow: str | None = None, direction: str = "LR", *, legend: bool = True,
                   handlers: bool = False) -> str:
    """A Mermaid `stateDiagram-v2` of the plan's workflows (or the one named); `legend=False` leaves the legend
    out, `handlers=True` writes each step's handlers in its box."""
    _check_direction(direction)
    workflows = select(plan, workflow)
    ids = _ids(workflows)
    lines: list[str] = []
    if len(workflows) == 1:
        lines += ["---", f"title: {_yaml_string(workflows[0].title)}", "---"]
    lines += ["stateDiagram-v2", f"  direction {direction}",
              f"  classDef manualMove fill:{MANUAL_FILL},stroke:{MANUAL_STROKE},color:#000000",
              "  classDef terminalStep stroke-width:3px"]
    if legend:
        lines.append(f"  classDef legendBox fill:{LEGEND_FILL},stroke:{LEGEND_STROKE},color:#333333,font-size:11px")
    for wf in workflows:
        indent = "  "
        lines.append(f"  %% workflow {mermaid_text(wf.id)}")
        if ids.clusters:
            lines.append(f'  state "{mermaid_text(wf.title)}" as {ids.clusters[wf.id]} {{')
            indent = "    "
            lines.append(f"{indent}direction {direction}")
        node = {s.id: ids.steps[(wf.id, s.id)] for s in wf.steps}
        lines += _mermaid_workflow(plan, wf, node, indent, handlers)
        if ids.clusters:
            lines.append("  }")
    if legend:
        lines.append(f'  state "Legend" as {_LEGEND_ID}')
        listed = handlers and any(handler_lines(plan, s) for wf in workflows for s in wf.steps)
        lines += [f"  {_LEGEND_ID} : {mermaid_text(_MERMAID_LEGEND[key])}" for key in _legend_keys(workflows, listed)]
    manual = [ids.steps[(wf.id, s.id)] for wf in workflows for s in by_position(wf) if s.manual_move]
    terminal = [ids.steps[(wf.id, s.id)] for wf in workflows for s in by_position(wf) if s.terminal]
    if manual:
        lines.append(f"  class {','.join(manual)} manualMove")
    if terminal:
        lines.append(f"  class {','.join(terminal)} terminalStep")
    if legend:
        lines.append(f"  class {_LEGEND_ID} legendBox")
    return "\n".join(lines) + "\n"


def _yaml_string(text: str) -> str:
    """A YAML double-quoted scalar (every escape used is one YAML defines)."""
    out = ['"']
    for ch in text:
        if ch in '"\\':
            out.append("\\" + ch)
        elif ch == "\n":
            out.append("\\n")
        elif not ch.isprintable():
            out.append(f"\\u{ord(ch):04x}" if ord(ch) <= 0xFFFF else f"\\U{ord(ch):08x}")
        else:
            out.append(ch)
    out.append('"')
    return "".join(out)


# ---- DOT --------------------------------------------------------------------------------------


def dot_string(text: str) -> str:
    """A DOT double-quoted string whose label shows `text` as written: backslashes and quotes escaped, `&`
    as `&amp;` (Graphviz reads entities in labels), a line break as `\\n`, other control characters as U+FFFD
    (SVG output cannot carry them)."""
    out = ['"']
    for ch in text:
        if ch == "\\":
            out.append("\\\\")
        elif ch == '"':
            out.append('\\"')
        elif ch == "&":
            out.append("&amp;")
        elif ch == "\n":
            out.append("\\n")
        elif ch in "\r\t" or (ord(ch) < 32 or 127 <= ord(ch) < 160):
            out.append("\ufffd" if ch not in "\r\t" else " ")
        else:
            out.append(ch)
    out.append('"')
    return "".join(out)


_DOT_LEGEND = {
    "start": ("\u25cf \u2192 step", "the start step"),
    "terminal": ("step \u2192 \u25c9, double border", "a terminal step"),
    "manual": ("shaded step", "manual_move: a person may move the task"),
    "transition": ("solid arrow", "a transition: trigger, guard, requires_approval"),
    "timer": ("dotted arrow", "a timer's transition: after D / every D, guard"),
    "pull": ("dashed arrow", "pull_from: the head pulls from the tail"),
    "continued": ("line under a title", "an action that continues on failure"),
    "handlers": ("lines under a title", "the step's handlers and timers (transitions are arrows)"),
}


def _html(text: str) -> str:
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;").replace('"', "&quot;")


def _dot_legend(direction: str, keys: list[str]) -> str:
    """The legend as an HTML-like table for the graph's label, below the diagram: only what the diagram draws, two
    entries a row left to right (one a row top to bottom), so it is never wider than it needs to be."""
    items = [_DOT_LEGEND[key] for key in keys]
    per_row = 2 if direction == "LR" and len(items) > 2 else 1
    rows: list[str] = []
    for first in range(0, len(items), per_row):
        cells = []
        for key, meaning in items[first:first + per_row]:
            shade = f' bgcolor="{MANUAL_FILL}"' if key == "shaded step" else ""
            cells.append(f'<td align="left"{shade}>{_html(key)}</td><td align="left">{_html(meaning)}</td>')
        rows.append("<tr>" + "".join(cells) + "</tr>")
    return ('<table border="0" cellborder="1" cellspacing="0" cellpadding="2" '
            f'bgcolor="{LEGEND_FILL}" color="{LEGEND_STROKE}"><tr><td colspan="{2 * per_row}" align="left">'
            "<b>Legend</b></td></tr>" + "".join(rows) + "</table>")


def _step_label(plan: Plan, step: PlanStep, handlers: bool) -> str:
    """A step's label: its title; under it each action that continues on failure and, with `handlers`, the lines of
    interlock/diagrams/handlers.py."""
    lines = continued_lines(step) + (handler_lines(plan, step) if handlers else [])
    if not lines:
        return dot_string(step.title)
    body = "".join(f'<tr><td align="left"><font point-size="9">{_html(line)}</font></td></tr>' for line in lines)
    return (f'<<table border="0" cellborder="0" cellspacing="0" cellpadding="1"><tr><td><b>{_html(step.title)}'
            f"</b></td></tr><hr/>{body}</table>>")


def _dot_workflow(plan: Plan, wf: PlanWorkflow, ids: _Ids, indent: str, handlers: bool) -> list[str]:
    """The nodes and edges of one workflow.  Steps are kept in board order: an invisible edge ties each step to the
    next by position, and an arrow back to an earlier step does not constrain the layout (`constraint=false`), so
    ranks follow positions whatever mix of transitions and manual moves the workflow has."""
    steps = by_position(wf)
    index = {s.id: i for i, s in reversed(list(enumerate(steps)))}
    node = {s.id: dot_string(ids.steps[(wf.id, s.id)]) for s in wf.steps}
    start, end = dot_string(ids.start(wf)), dot_string(ids.end(wf))
    lines = [f'{indent}{start} [shape=circle, style=filled, fillcolor="#000000", label="", width=0.18, '
             'fixedsize=true];']
    for step in steps:
        attrs = [f"label={_step_label(plan, step, handlers)}"]
        if step.manual_move:
            attrs += ['style="rounded,filled"', f'fillcolor="{MANUAL_FILL}"', f'color="{MANUAL_STROKE}"',
                      'class="manual_move"']
        if step.terminal:
            attrs.append("peripheries=2")
        lines.append(f"{indent}{node[step.id]} [{', '.join(attrs)}];")
    if any(s.terminal for s in wf.steps):
        lines.append(f'{indent}{end} [shape=doublecircle, style=filled, fillcolor="#000000", label="", '
                     'width=0.12, fixedsize=true];')
    for before, after in pairwise(steps):
        lines.append(f"{indent}{node[before.id]} -> {node[after.id]} [style=invis, weight=10];")
    lines.append(f"{indent}{start} -> {node[wf.start_step]};")

    def back(source: str, target: str) -> str:
        return ", constraint=false" if index[target] < index[source] else ""

    for edge in transitions(wf):
        label = dot_string("\n".join(edge.lines))
        style = ", style=dotted" if edge.timer else ""
        lines.append(f"{indent}{node[edge.source]} -> {node[edge.target]} [label={label}{style}"
                     f"{back(edge.source, edge.target)}];")
    for source, puller in pulls(wf):
        lines.append(f'{indent}{node[source]} -> {node[puller]} [style=dashed, color="{PULL_COLOR}", '
                     f'fontcolor="{PULL_COLOR}", label="pull_from"{back(source, puller)}];')
    for step in steps:
        if step.terminal:
            lines.append(f"{indent}{node[step.id]} -> {end};")
    return lines


def render_dot(plan: Plan, workflow: str | None = None, direction: str = "LR", *, legend: bool = True,
               handlers: bool = False) -> str:
    """A Graphviz `digraph` of the plan's workflows (or the one named); several workflows are clusters.  The
    legend (unless `legend=False`) is the graph's label, below the diagram; one workflow's title heads it."""
    _check_direction(direction)
    workflows = select(plan, workflow)
    ids = _ids(workflows)
    name = workflows[0].id if len(workflows) == 1 else "workflows"
    lines = [f"digraph {dot_string(name)} {{"]
    graph = [f"rankdir={direction}", 'fontname="Helvetica"', "fontsize=9"]
    if legend:
        listed = handlers and any(handler_lines(plan, s) for wf in workflows for s in wf.steps)
        graph += ["labelloc=b", "labeljust=l", f"label=<{_dot_legend(direction, _legend_keys(workflows, listed))}>"]
    lines += [f"  graph [{', '.join(graph)}];",
              '  node [shape=box, style="rounded", fontname="Helvetica", fontsize=11];',
              '  edge [fontname="Helvetica", fontsize=9];']
    for wf in workflows:
        lines.append(f"  // workflow {dot_string(wf.id)}")
        if ids.clusters:
            lines.append(f"  subgraph {dot_string('cluster_' + ids.clusters[wf.id])} {{")
            lines.append(f'    graph [label={dot_string(wf.title)}, labelloc=t, labeljust=c, fontsize=14, style="rounded", '
                         'color="#bbbbbb"];')
        else:  # the title above the diagram: the graph's own label is the legend's, below it
            lines.append("  subgraph \"cluster_title\" {")
            lines.append(f"    graph [label={dot_string(wf.title)}, labelloc=t, labeljust=c, fontsize=16, peripheries=0];")
        lines += _dot_workflow(plan, wf, ids, "    ", handlers)
        lines.append("  }")
    lines.append("}")
    return "\n".join(lines) + "\n"


def render(plan: Plan, fmt: str, workflow: str | None = None, direction: str = "LR", *, legend: bool = True,
           handlers: bool = False) -> str:
    """The diagram in `fmt` (`mermaid` or `dot`), with or without the legend and the steps' handlers."""
    if fmt == "mermaid":
        return render_mermaid(plan, workflow, direction, legend=legend, handlers=handlers)
    if fmt == "dot":
        return render_dot(plan, workflow, direction, legend=legend, handlers=handlers)
    raise ValueError(f"unknown graph format {fmt!r} (known: {', '.join(FORMATS)})")


def _check_direction(direction: str) -> None:
    if direction not in DIRECTIONS:
        raise ValueError(f"unknown direction {direction!r} (known: {', '.join(DIRECTIONS)})")
