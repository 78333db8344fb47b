"""`interlock graph` keeps the board: Graphviz lays the steps out in position order — left to right (LR), top to
bottom (TB) — whatever mix of transitions (forward, backward, none at all) and manual moves a workflow has.  Checked
on the layout Graphviz computes (`dot -Tplain` node coordinates), for the examples and for generated workflows.

Also: `--no-legend` leaves the legend out, `--handlers` writes each step's handlers in its box (both formats, and
Mermaid's parser accepts the result), and the legend lists only what the diagram draws.
"""

from __future__ import annotations

import shlex
import subprocess
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, note, settings
from hypothesis import strategies as st

from interlock.cli import main
from interlock.compiler import compile_source
from interlock.diagrams import by_position, handler_lines, node_ids, render_dot, render_mermaid
from interlock.dsl import SourceFile
from interlock.runtime.plan import Plan

ROOT = Path(__file__).resolve().parents[2]
SOURCES = sorted([*(ROOT / "examples").glob("*.wf"), *(Path(__file__).parent / "fixtures").glob("*.wf")])
Parse = Callable[[Sequence[Path]], list[dict[str, Any]]]


def positions(dot_exe: str, text: str) -> dict[str, tuple[float, float]]:
    """Node name -> (x, y) as Graphviz lays the DOT out (y grows upwards in `-Tplain`)."""
    proc = subprocess.run([dot_exe, "-Tplain"], input=text.encode(), capture_output=True, timeout=120, check=False)
    assert proc.returncode == 0, proc.stderr.decode()
    out = {}
    for line in proc.stdout.decode().splitlines():
        if line.startswith("node "):
            fields = shlex.split(line)
            out[fields[1]] = (float(fields[2]), float(fields[3]))
    return out


def assert_board_order(plan: Plan, dot_exe: str, direction: str, **options: Any) -> None:
    where = positions(dot_exe, render_dot(plan, direction=direction, **options))
    ids = node_ids(list(plan.workflows))
    for wf in plan.workflows:
        order = [ids[(wf.id, s.id)] for s in by_position(wf)]
        coords = [where[n] for n in order]
        if direction == "LR":
            xs = [x for x, _ in coords]
            assert xs == sorted(xs) and len(set(xs)) == len(xs), f"{wf.id}: {list(zip(order, xs))}"
        else:
            ys = [y for _, y in coords]
            assert ys == sorted(ys, reverse=True) and len(set(ys)) == len(ys), f"{wf.id}: {list(zip(order, ys))}"


def compiled(text: str) -> Plan:
    result = compile_source(SourceFile("t.wf", text))
    assert result.plan is not None, [d.message for d in result.diagnostics]
    return result.plan


@pytest.mark.parametrize("direction", ["LR", "TB"])
@pytest.mark.parametrize("source", SOURCES, ids=[s.stem for s in SOURCES])
def test_examples_are_laid_out_in_board_order(source: Path, direction: str, dot_exe: str,
                                              plan_of: Callable[[Path], Plan]) -> None:
    plan = plan_of(source)
    assert_board_order(plan, dot_exe, direction)
    assert_board_order(plan, dot_exe, direction, handlers=True, legend=False)


ALL_MANUAL = """
workflow board "Board" {
  step done "Done" { position 3  manual_move  terminal }
  step review "Review" { position 2  manual_move }
  step todo "Todo" { position 0  manual_move  start }
  step doing "Doing" { position 1  manual_move }
}
"""

BACKWARDS = """
workflow back "Back" {
  step a "A" { start  manual_move }
  step b "B" { manual_move  on on_turn_complete { move_to_step(a) } }
  step c "C" { manual_move  on on_turn_complete { move_to_step(a) } }
  step d "D" { terminal  on on_turn_start { move_to_step(b) } }
}
"""


@pytest.mark.parametrize("text", [ALL_MANUAL, BACKWARDS], ids=["all-manual", "backwards"])
def test_flows_without_forward_transitions_keep_position_order(text: str, dot_exe: str) -> None:
    for direction in ("LR", "TB"):
        assert_board_order(compiled(text), dot_exe, direction)


@st.composite
def workflows(draw: st.DrawFn) -> str:
    """A workflow of 2 to 7 steps, positions shuffled, each step manual or not, with transitions of every kind to any
    step (backwards, forwards, to itself), `pull_from`s, and terminal steps anywhere."""
    n = draw(st.integers(2, 7))
    ids = [f"s{i}" for i in range(n)]
    order = draw(st.permutations(range(n)))
    start = draw(st.integers(0, n - 1))
    steps = []
    for i, sid in enumerate(ids):
        items = [f"position {order[i]}"]
        items += ["start"] if i == start else []
        items += [flag for flag in ("manual_move", "terminal") if draw(st.booleans())]
        if i and draw(st.booleans()):
            items.append(f"pull_from {draw(st.sampled_from(ids[:i]))}")
        moves = draw(st.lists(st.one_of(st.sampled_from(ids).map(lambda t: f"move_to_step({t})"),
                                        st.sampled_from(["move_to_next", "move_to_previous"])), max_size=3))
        if moves:
            trigger = draw(st.sampled_from(["on_turn_complete", "on_turn_start", "on_comment"]))
            items.append(f"on {trigger} {{ " + "  ".join(f"{m} when quorum(reviewer, all_approve)" for m in moves)
                         + " }")
        steps.append(f'  step {sid} "Step {sid}" {{ ' + "  ".join(items) + " }")
    return 'workflow w "W" {\n' + "\n".join(steps) + "\n}\n"


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(workflows(), st.sampled_from(["LR", "TB"]))
def test_any_mix_of_transitions_and_manual_moves_keeps_position_order(text: str, direction: str) -> None:
    note(text)
    import shutil

    exe = shutil.which("dot")
    if exe is None:
        pytest.skip("Graphviz's `dot` is not installed")
    assert_board_order(compiled(text), exe, direction)


# ---- legend and handlers -------------------------------------------------------------------------------------------


def test_no_legend(tmp_path: Path) -> None:
    for fmt in ("dot", "mermaid"):
        out = tmp_path / f"o.{fmt}"
        assert main(["graph", str(ROOT / "examples" / "office_default.wf"), "--format", fmt, "--no-legend",
                     "-o", str(out)]) == 0
        text = out.read_text(encoding="utf-8")
        assert "Legend" not in text and "legend" not in text.lower()
        assert main(["graph", str(ROOT / "examples" / "office_default.wf"), "--format", fmt, "-o", str(out)]) == 0
        assert "Legend" in out.read_text(encoding="utf-8")


def test_the_legend_explains_only_what_is_drawn() -> None:
    one_step = compiled('workflow w "W" { step a "A" { start manual_move } }')
    dot = render_dot(one_step)
    assert "the start step" in dot and "manual_move" in dot
    assert "terminal step" not in dot and "transition" not in dot and "pull_from" not in dot
    mmd = render_mermaid(one_step)
    assert "the start step" in mmd and "terminal step" not in mmd and "pull_from" not in mmd


def test_the_legend_is_below_the_diagram_and_compact() -> None:
    dot = render_dot(compiled(ALL_MANUAL))
    graph_line = dot.splitlines()[1]
    assert "labelloc=b" in graph_line and "<b>Legend</b>" in graph_line
    assert "rank=sink" not in dot  # no longer a column of its own right of the diagram
    assert graph_line.count("<tr>") == 3  # a title row, then two entries a row


def test_handlers_are_written_in_their_steps() -> None:
    plan = compiled(
        'task notify(channel: str, text: str = "") on on_enter, on_comment\n'
        'entry { dispatch notify }\n'
        'workflow w "W" {\n'
        '  step a "A" { start  on on_enter { auto_start_agent  notify(channel: "ops") }\n'
        '               on on_comment { notify(channel: "ops", text: "a comment") }\n'
        '               on on_turn_complete { move_to_next } }\n'
        '  step b "B" { terminal }\n}\n')
    step = plan.workflows[0].steps[0]
    # wrapped after an action at 44 characters; an argument equal to its default (`text: ""`) is not shown
    assert handler_lines(plan, step) == ["on_enter: auto_start_agent (inline),", "  notify(channel: ops)",
                                         'on_comment: notify(channel: ops, text: "a comment")']
    assert handler_lines(plan, plan.workflows[0].steps[1]) == []
    dot = render_dot(plan, handlers=True)
    assert '"a" [label=<<table' in dot and "on_enter: auto_start_agent (inline)," in dot
    assert '"b" [label="B"' in dot  # a step without handlers keeps its plain label
    assert "the step&#39;s handlers" in dot or "the step's handlers" in dot
    mmd = render_mermaid(plan, handlers=True)
    assert "  a : on_enter#58; auto_start_agent (inline)," in mmd and "  a :   notify(channel#58; ops)" in mmd
    assert render_dot(plan) == render_dot(plan, handlers=False) and "auto_start_agent" not in render_dot(plan)


def test_long_handlers_wrap() -> None:
    plan = compiled('workflow w "W" { step a "A" { start  on on_enter {\n'
                    '  clear_decisions  ensure_seats(role: reviewer)\n'
                    '  queue_run_for_each_participant(role: reviewer, reason: "review_started") } } }')
    assert handler_lines(plan, plan.workflows[0].steps[0]) == [
        "on_enter: clear_decisions,", "  ensure_seats(role: reviewer),",
        "  queue_run_for_each_participant(role: reviewer,", "    reason: review_started)"]


def test_handlers_render_in_graphviz_and_parse_in_mermaid(tmp_path: Path, dot_exe: str,
                                                          mermaid_parse: Parse) -> None:
    for source in SOURCES:
        dot = tmp_path / f"{source.stem}.dot"
        mmd = tmp_path / f"{source.stem}.mmd"
        assert main(["graph", str(source), "--handlers", "-o", str(dot)]) == 0
        assert main(["graph", str(source), "--handlers", "-o", str(mmd)]) == 0
        proc = subprocess.run([dot_exe, "-Tsvg", str(dot)], capture_output=True, timeout=120, check=False)
        assert proc.returncode == 0 and proc.stderr == b"", proc.stderr.decode()
    parsed = mermaid_parse(sorted(tmp_path.glob("*.mmd")))
    assert len(parsed) == len(SOURCES)
