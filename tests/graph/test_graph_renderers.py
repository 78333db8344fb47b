"""The real renderers read `interlock graph`'s output as meant: Graphviz's `dot` renders every DOT golden without
a warning, Mermaid's own parser accepts every Mermaid golden, and in what each renderer built there is a node per
step showing its exact title and exactly the edges the plan's resolved transitions, `pull_from`s, start and
terminal steps and timers call for — computed here from the plan (the compiler's `target_step`), not by the graph module."""

from __future__ import annotations

import subprocess
import xml.etree.ElementTree as ET
from collections import Counter
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import pytest

from interlock.compiler.guard_text import expr_text
from interlock.diagrams import node_ids
from interlock.runtime.plan import Plan, PlanAction, PlanWorkflow

ROOT = Path(__file__).resolve().parents[2]
GOLDEN = ROOT / "tests" / "golden" / "graph"
SOURCES = sorted([*(ROOT / "examples").glob("*.wf"), *(Path(__file__).parent / "fixtures").glob("*.wf")])
SVG = "{http://www.w3.org/2000/svg}"
STANDARD = ("move_to_step", "move_to_next", "move_to_previous")

Parse = Callable[[Sequence[Path]], list[dict[str, Any]]]
EdgeKey = tuple[str, str, str]


def _label(trigger: str, action: PlanAction) -> str:
    lines = [trigger]
    if action.kind not in STANDARD:
        lines.append(f"via {action.kind}")
    if action.guard is not None:
        g = action.guard
        lines.append(f"when quorum({g.role}, {g.threshold if g.count is None else f'{g.threshold}({g.count})'})")
    if action.when is not None:  # an expression guard, as the source writes it (checked against fmt's printer)
        lines.append(f"when {expr_text(action.when)}")
    if action.requires_approval:
        lines.append("requires_approval")
    return "\n".join(lines)


def expected(plan: Plan) -> tuple[dict[str, str], Counter[EdgeKey]]:
    """node id -> title for every step, and the edges (tail, head, label) the plan calls for."""
    workflows = list(plan.workflows)
    ids = node_ids(workflows)
    several = len(workflows) > 1
    nodes: dict[str, str] = {}
    edges: Counter[EdgeKey] = Counter()
    for wf in workflows:
        node = {s.id: ids[(wf.id, s.id)] for s in wf.steps}
        nodes.update({node[s.id]: s.title for s in wf.steps})
        start, end = _points(wf, ids, several)
        edges[(start, node[wf.start_step], "")] += 1
        for step in wf.steps:
            named = [*step.handlers.items(), *((timer.label, timer.actions) for timer in step.timers)]
            for trigger, actions in named:  # a timer's transition is labelled with the timer: `after 3d`
                for action in actions:
                    if action.action_class == "transition" and action.target_step is not None:
                        edges[(node[step.id], node[action.target_step], _label(trigger, action))] += 1
            if step.pull_from is not None:
                edges[(node[step.pull_from], node[step.id], "pull_from")] += 1
            if step.terminal:
                edges[(node[step.id], end, "")] += 1
    return nodes, edges


def _points(wf: PlanWorkflow, ids: dict[tuple[str, str], str], several: bool) -> tuple[str, str]:
    """Mermaid's ids for `[*]` (root_start/root_end, or <composite>_start/_end), which the DOT uses too."""
    if not several:
        return "root_start", "root_end"
    composite = ids[(wf.id, wf.steps[0].id)].split("__")[0]
    return f"{composite}_start", f"{composite}_end"


def test_examples_have_transitions_to_count() -> None:
    """The structural checks below would prove little if the examples drew no edges."""
    assert len(SOURCES) >= 9
    assert any(sum(c for (_, _, label), c in expected(plan)[1].items() if label) >= 5
               for plan in (_plan(s) for s in SOURCES))


def _plan(path: Path) -> Plan:
    from interlock.compiler import compile_path

    result = compile_path(path)
    assert result.plan is not None
    return result.plan


@pytest.mark.parametrize("source", SOURCES, ids=[s.stem for s in SOURCES])
def test_graphviz_renders_the_dot_with_every_step_and_edge(source: Path, dot_exe: str) -> None:
    dot_file = GOLDEN / f"{source.stem}.dot"
    proc = subprocess.run([dot_exe, "-Tsvg", str(dot_file)], capture_output=True, timeout=120, check=False)
    assert proc.returncode == 0 and proc.stderr == b"", proc.stderr.decode()
    svg = ET.fromstring(proc.stdout)
    shown_nodes: dict[str, str] = {}
    shown_edges: Counter[EdgeKey] = Counter()
    step_manual: dict[str, bool] = {}
    for group in svg.iter(f"{SVG}g"):
        title = group.findtext(f"{SVG}title") or ""
        text = "\n".join(t.text or "" for t in group.iter(f"{SVG}text"))
        classes = (group.get("class") or "").split()
        if "node" in classes:
            shown_nodes[title] = text
            step_manual[title] = "manual_move" in classes
        elif "edge" in classes:
            tail, head = title.split("->")
            shown_edges[(tail, head, text)] += 1
    plan = _plan(source)
    nodes, edges = expected(plan)
    for node_id, title in nodes.items():
        assert shown_nodes.get(node_id) == title, f"step node {node_id}"
    ids = node_ids(list(plan.workflows))
    assert {ids[(wf.id, s.id)]: s.manual_move for wf in plan.workflows for s in wf.steps} == {
        n: m for n, m in step_manual.items() if n in nodes}, "manual_move steps carry the SVG class manual_move"
    extra = set(shown_nodes) - set(nodes)
    assert all(n == "interlock_legend" or n.endswith(("_start", "_end")) for n in extra), extra
    assert shown_edges == edges


def test_mermaid_parses_every_golden_with_every_step_and_edge(mermaid_parse: Parse) -> None:
    files = [GOLDEN / f"{s.stem}.mmd" for s in SOURCES]
    diagrams = {Path(d["file"]).stem: d for d in mermaid_parse(files)}
    assert sorted(diagrams) == sorted(s.stem for s in SOURCES)
    for source in SOURCES:
        diagram = diagrams[source.stem]
        assert diagram["type"] == "stateDiagram"
        nodes, edges = expected(_plan(source))
        parsed = {n["id"]: n for n in diagram["nodes"]}
        for node_id, title in nodes.items():
            assert parsed[node_id]["label"] == title, f"{source.stem}: step node {node_id}"
        shown = Counter((e["start"], e["end"], e["label"] or "") for e in diagram["edges"])
        assert shown == edges, source.stem


def test_mermaid_styles_manual_move_steps(mermaid_parse: Parse) -> None:
    source = Path(__file__).parent / "fixtures" / "tricky.wf"
    (diagram,) = mermaid_parse([GOLDEN / "tricky.mmd"])
    plan = _plan(source)
    ids = node_ids(list(plan.workflows))
    classes = {n["id"]: n["classes"] for n in diagram["nodes"]}
    for wf in plan.workflows:
        for step in wf.steps:
            assert ("manualMove" in classes[ids[(wf.id, step.id)]]) == step.manual_move
            assert ("terminalStep" in classes[ids[(wf.id, step.id)]]) == step.terminal


def test_mermaid_rejects_what_the_sanitiser_avoids(mermaid_parse: Parse, tmp_path: Path) -> None:
    """The parser check is real: the raw ids `interlock graph` renames do not parse."""
    for raw in ("in-progress", "state", "Note"):
        bad = tmp_path / f"{raw}.mmd"
        bad.write_text(f"stateDiagram-v2\n  [*] --> {raw}\n", encoding="utf-8")
        with pytest.raises(AssertionError, match="Mermaid rejected"):
            mermaid_parse([bad])
