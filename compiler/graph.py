"""A plan in, a diagram of its workflows out: Mermaid state diagrams and Graphviz DOT (`interlock graph`).

Pure: no I/O, no subprocess; the same plan always gives the same bytes.  What is drawn
(docs/graph.md): a node per step, labelled with its title; `[*]` into the start step and
from every terminal step; an edge per transition whose destination resolves, labelled
with its trigger, its guard (`when quorum(role, threshold)`) and `requires_approval`,
`move_to_next` / `move_to_previous` resolved by position; a dashed edge (DOT; a labelled
one in Mermaid, whose state diagrams have no dashed edges) from a `pull_from` source into
the step that pulls; `manual_move` steps shaded; a legend.  Several workflows are drawn as
one diagram with a cluster (Mermaid: composite state) per workflow.

Node ids are the step ids where both formats accept them; other ids are sanitised to
`[A-Za-z0-9_]` (ADR 0024), made unique deterministically, and never a Mermaid keyword.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from interlock.runtime.plan import Plan, PlanAction, PlanStep, PlanWorkflow

__all__ = ["Edge", "GraphError", "FORMATS", "DIRECTIONS", "transitions", "pulls", "node_ids", "select",
           "render", "render_mermaid", "render_dot", "guard_text"]

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


class GraphError(Exception):
    """The diagram asked for cannot be drawn (an unknown workflow, a plan without workflows)."""


@dataclass(frozen=True)
class Edge:
    """A transition of a step whose destination resolves: `source --trigger--> target`."""

    source: str
    target: str
    trigger: str
    action: PlanAction

    @property
    def lines(self) -> tuple[str, ...]:
        """The edge's label, one item per line: the trigger, a non-standard transition kind, the guard,
        `requires_approval`."""
        out = [self.trigger]
        if self.action.kind not in _STANDARD_MOVES:
            out.append(f"via {self.action.kind}")
        if self.action.guard is not None:
            out.append(guard_text(self.action))
        if self.action.requires_approval:
            out.append("requires_approval")
        return tuple(out)


def guard_text(action: PlanAction) -> str:
    """`when quorum(role, threshold)` as the source writes it (`n_approve(N)` with its count)."""
    guard = action.guard
    if guard is None:
        return ""
    threshold = guard.threshold if guard.count is None else f"{guard.threshold}({guard.count})"
    return f"when quorum({guard.role}, {threshold})"


def by_position(wf: PlanWorkflow) -> list[PlanStep]:
    """The workflow's steps by position (declaration order breaks ties)."""
    return [s for _, _, s in sorted((s.position, i, s) for i, s in enumerate(wf.steps))]


def transitions(wf: PlanWorkflow) -> list[Edge]:
    """Every transition of the workflow whose destination is one of its steps, by step position, then handler and
    action order.

    `move_to_next` / `move_to_previous` go to the next / previous step by position (none past either end);
    any other transition kind goes to the step its `step` argument names."""
    steps = by_position(wf)
    order = [s.id for s in steps]
    index = {sid: i for i, sid in reversed(list(enumerate(order)))}
    known = set(order)
    edges: list[Edge] = []
    for step in steps:
        here = index[step.id]
        for trigger, actions in step.handlers.items():
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
                    edges.append(Edge(step.id, target, trigger, action))
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


_MERMAID_LEGEND = (
    "[*] → step: the start step; step → [*]: a terminal step",
    "arrow: a transition, labelled with its trigger, its guard (when quorum(role, threshold)) "
    "and requires_approval",
    "arrow labelled pull_from: the step at the head pulls tasks from the step at the tail",
    "shaded step: manual_move (a person may move the task by hand)",
)


def render_mermaid(plan: Plan, workflow: str | None = None, direction: str = "LR") -> str:
    """A Mermaid `stateDiagram-v2` of the plan's workflows (or the one named)."""
    _check_direction(direction)
    workflows = select(plan, workflow)
    ids = _ids(workflows)
    lines: list[str] = []
    if len(workflows) == 1:
        lines += ["---", f"title: {_yaml_string(workflows[0].title)}", "---"]
    lines += ["stateDiagram-v2", f"  direction {direction}",
              f"  classDef manualMove fill:{MANUAL_FILL},stroke:{MANUAL_STROKE},color:#000000",
              "  classDef terminalStep stroke-width:3px",
              f"  classDef legendBox fill:{LEGEND_FILL},stroke:{LEGEND_STROKE},color:#333333,font-size:12px"]
    manual: list[str] = []
    terminal: list[str] = []
    for wf in workflows:
        indent = "  "
        lines.append(f"  %% workflow {mermaid_text(wf.id)}")
        if ids.clusters:
            lines.append(f'  state "{mermaid_text(wf.title)}" as {ids.clusters[wf.id]} {{')
            indent = "    "
            lines.append(f"{indent}direction {direction}")
        node = {s.id: ids.steps[(wf.id, s.id)] for s in wf.steps}
        for step in by_position(wf):
            lines.append(f'{indent}state "{mermaid_text(step.title)}" as {node[step.id]}')
            if step.manual_move:
                manual.append(node[step.id])
            if step.terminal:
                terminal.append(node[step.id])
        lines.append(f"{indent}[*] --> {node[wf.start_step]}")
        for edge in transitions(wf):
            label = "<br/>".join(mermaid_text(line) for line in edge.lines)
            lines.append(f"{indent}{node[edge.source]} --> {node[edge.target]} : {label}")
        for source, puller in pulls(wf):
            lines.append(f"{indent}{node[source]} --> {node[puller]} : pull_from")
        for step in by_position(wf):
            if step.terminal:
                lines.append(f"{indent}{node[step.id]} --> [*]")
        if ids.clusters:
            lines.append("  }")
    lines.append(f'  state "Legend" as {_LEGEND_ID}')
    lines += [f"  {_LEGEND_ID} : {mermaid_text(item)}" for item in _MERMAID_LEGEND]
    if manual:
        lines.append(f"  class {','.join(manual)} manualMove")
    if terminal:
        lines.append(f"  class {','.join(terminal)} terminalStep")
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


_DOT_LEGEND = (
    ("\u25cf \u2192 step", ("the start step",)),
    ("step \u2192 \u25c9", ("a terminal step", "(double border)")),
    ("solid arrow", ("a transition: its trigger,", "when quorum(role, threshold),", "requires_approval")),
    ("dashed arrow", ("pull_from: the step at the head", "pulls tasks from the one at the tail")),
    ("shaded step", ("manual_move: a person may", "move the task by hand")),
)


def _html(text: str) -> str:
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;").replace('"', "&quot;")


def _dot_legend(indent: str) -> list[str]:
    """The legend: an HTML-like table in the last rank (right of the diagram in LR, below it in TB)."""
    rows = ['<tr><td colspan="2"><b>Legend</b></td></tr>']
    for key, meaning in _DOT_LEGEND:
        cell = f' bgcolor="{MANUAL_FILL}"' if key == "shaded step" else ""
        text = '<br align="left"/>'.join(_html(line) for line in meaning) + '<br align="left"/>'
        rows.append(f'<tr><td align="left"{cell}>{_html(key)}</td><td align="left">{text}</td></tr>')
    table = ('<table border="0" cellborder="1" cellspacing="0" cellpadding="4" '
             f'bgcolor="{LEGEND_FILL}" color="{LEGEND_STROKE}">' + "".join(rows) + "</table>")
    return [f"{indent}{{", f"{indent}  rank=sink;",
            f'{indent}  "{_LEGEND_ID}" [shape=plaintext, fontsize=10, label=<{table}>];', f"{indent}}}"]


def render_dot(plan: Plan, workflow: str | None = None, direction: str = "LR") -> str:
    """A Graphviz `digraph` of the plan's workflows (or the one named); several workflows are clusters."""
    _check_direction(direction)
    workflows = select(plan, workflow)
    ids = _ids(workflows)
    name = workflows[0].id if len(workflows) == 1 else "workflows"
    lines = [f"digraph {dot_string(name)} {{"]
    graph = [f"rankdir={direction}", 'fontname="Helvetica"', "fontsize=16", "labelloc=t"]
    if len(workflows) == 1:
        graph.append(f"label={dot_string(workflows[0].title)}")
    lines += [f"  graph [{', '.join(graph)}];",
              '  node [shape=box, style="rounded", fontname="Helvetica", fontsize=11];',
              '  edge [fontname="Helvetica", fontsize=9];']
    for wf in workflows:
        indent = "  "
        lines.append(f"  // workflow {dot_string(wf.id)}")
        if ids.clusters:
            lines.append(f"  subgraph {dot_string('cluster_' + ids.clusters[wf.id])} {{")
            indent = "    "
            lines.append(f'{indent}graph [label={dot_string(wf.title)}, style="rounded", color="#bbbbbb"];')
        node = {s.id: dot_string(ids.steps[(wf.id, s.id)]) for s in wf.steps}
        start, end = dot_string(ids.start(wf)), dot_string(ids.end(wf))
        lines.append(f'{indent}{start} [shape=circle, style=filled, fillcolor="#000000", label="", width=0.18, '
                     'fixedsize=true];')
        for step in by_position(wf):
            attrs = [f"label={dot_string(step.title)}"]
            if step.manual_move:
                attrs += ['style="rounded,filled"', f'fillcolor="{MANUAL_FILL}"', f'color="{MANUAL_STROKE}"',
                          'class="manual_move"']
            if step.terminal:
                attrs.append("peripheries=2")
            lines.append(f"{indent}{node[step.id]} [{', '.join(attrs)}];")
        if any(s.terminal for s in wf.steps):
            lines.append(f'{indent}{end} [shape=doublecircle, style=filled, fillcolor="#000000", label="", '
                         'width=0.12, fixedsize=true];')
        lines.append(f"{indent}{start} -> {node[wf.start_step]};")
        for edge in transitions(wf):
            label = dot_string("\n".join(edge.lines))
            lines.append(f"{indent}{node[edge.source]} -> {node[edge.target]} [label={label}];")
        for source, puller in pulls(wf):
            lines.append(f'{indent}{node[source]} -> {node[puller]} [style=dashed, color="{PULL_COLOR}", '
                         f'fontcolor="{PULL_COLOR}", label="pull_from"];')
        for step in by_position(wf):
            if step.terminal:
                lines.append(f"{indent}{node[step.id]} -> {end};")
        if ids.clusters:
            lines.append("  }")
    lines += _dot_legend("  ")
    lines.append("}")
    return "\n".join(lines) + "\n"


def render(plan: Plan, fmt: str, workflow: str | None = None, direction: str = "LR") -> str:
    """The diagram in `fmt` (`mermaid` or `dot`)."""
    if fmt == "mermaid":
        return render_mermaid(plan, workflow, direction)
    if fmt == "dot":
        return render_dot(plan, workflow, direction)
    raise ValueError(f"unknown graph format {fmt!r} (known: {', '.join(FORMATS)})")


def _check_direction(direction: str) -> None:
    if direction not in DIRECTIONS:
        raise ValueError(f"unknown direction {direction!r} (known: {', '.join(DIRECTIONS)})")
