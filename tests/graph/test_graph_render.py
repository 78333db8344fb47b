"""interlock/diagrams/__init__.py: a plan in, Mermaid and DOT text out — what is drawn, how ids are sanitised, how labels
are escaped.  Pure: no renderer needed here (tests/graph/test_graph_renderers.py feeds the output to the real
ones)."""

from __future__ import annotations

import re

import pytest

from interlock.compiler import compile_source
from interlock.diagrams import (
    GraphError,
    dot_string,
    mermaid_text,
    node_ids,
    render,
    render_dot,
    render_mermaid,
    transitions,
)
from interlock.dsl import SourceFile
from interlock.runtime.plan import Plan

OUT_OF_ORDER = """
workflow w "W" {
  step c "C" { position 2  manual_move  terminal  on on_turn_start { move_to_previous } }
  step a "A" { position 0  start  on on_turn_complete { move_to_next } }
  step b "B" { position 1  pull_from a
               on on_turn_complete {
                 move_to_step(c) when quorum(reviewer, n_approve(2)) requires_approval
                 move_to_next    when quorum(reviewer, any_reject)
               } }
}
"""

TWO = """
workflow one "One" { step in-progress "P" { start  terminal } }
workflow two "Two" { step in-progress "P" { start  terminal } }
"""


def plan(text: str) -> Plan:
    result = compile_source(SourceFile("t.wf", text))
    assert result.plan is not None, [d.message for d in result.diagnostics]
    return result.plan


def edges_of_dot(text: str) -> list[tuple[str, str, str]]:
    """(tail, head, attributes) of every edge line but the invisible ones that keep the board order."""
    return [e for e in re.findall(r'^\s*"([^"]+)" -> "([^"]+)"(.*);$', text, re.MULTILINE) if "style=invis" not in e[2]]


def order_edges_of_dot(text: str) -> list[tuple[str, str]]:
    """(tail, head) of every invisible ordering edge."""
    return re.findall(r'^\s*"([^"]+)" -> "([^"]+)" \[style=invis, weight=10\];$', text, re.MULTILINE)


# ---- what is drawn -----------------------------------------------------------------------------


def test_move_to_next_and_previous_go_by_position_not_declaration_order() -> None:
    wf = plan(OUT_OF_ORDER).workflows[0]
    assert [(e.source, e.target, e.trigger) for e in transitions(wf)] == [
        ("a", "b", "on_turn_complete"), ("b", "c", "on_turn_complete"), ("b", "c", "on_turn_complete"),
        ("c", "b", "on_turn_start")]


def test_mermaid_draws_every_part() -> None:
    text = render_mermaid(plan(OUT_OF_ORDER))
    assert text.startswith('---\ntitle: "W"\n---\nstateDiagram-v2\n  direction LR\n')
    body = text.splitlines()
    # nodes in position order, titles as labels
    assert [line for line in body if line.startswith("  state ") and " as " in line][:3] == [
        '  state "A" as a', '  state "B" as b', '  state "C" as c']
    assert "  [*] --> a" in body
    assert "  c --> [*]" in body
    assert "  b --> c : on_turn_complete<br/>when quorum(reviewer, n_approve(2))<br/>requires_approval" in body
    assert "  b --> c : on_turn_complete<br/>when quorum(reviewer, any_reject)" in body
    assert "  a --> b : pull_from" in body  # b pulls from a: the arrow runs from a into b
    assert "  class c manualMove" in body
    assert "  class c terminalStep" in body
    assert any(line.startswith('  state "Legend" as interlock_legend') for line in body)


def test_dot_draws_every_part() -> None:
    text = render_dot(plan(OUT_OF_ORDER), direction="TB")
    assert text.startswith('digraph "w" {\n  graph [rankdir=TB,')
    # the title heads the diagram (a borderless cluster); the graph's own label is the legend, below it
    assert '  subgraph "cluster_title" {\n    graph [label="W", labelloc=t' in text
    assert "labelloc=b" in text.splitlines()[1] and "<b>Legend</b>" in text.splitlines()[1]
    edges = edges_of_dot(text)
    assert ("root_start", "a", "") in edges
    assert ("c", "root_end", "") in edges
    assert ("b", "c", ' [label="on_turn_complete\\nwhen quorum(reviewer, n_approve(2))\\nrequires_approval"]') in edges
    # an arrow back to an earlier step does not push it down the board; invisible edges chain the steps in order
    assert ("c", "b", ' [label="on_turn_start", constraint=false]') in edges
    assert order_edges_of_dot(text) == [("a", "b"), ("b", "c")]
    pull = [e for e in edges if "dashed" in e[2]]
    assert [(t, h) for t, h, _ in pull] == [("a", "b")] and 'label="pull_from"' in pull[0][2]
    manual = [line for line in text.splitlines() if 'class="manual_move"' in line]
    assert len(manual) == 1 and manual[0].lstrip().startswith('"c" [label="C"') and "peripheries=2" in manual[0]


def test_a_workflow_without_terminal_steps_has_no_end_point() -> None:
    p = plan('workflow w { step a { start  on on_turn_complete { move_to_next } }  step b { } }')
    assert "--> [*]" not in render_mermaid(p)
    assert "root_end" not in render_dot(p)


def test_transitions_past_either_end_draw_no_edge() -> None:
    p = plan("workflow w { step a { start  on on_turn_start { move_to_previous } }\n"
             "  step b { on on_turn_start { move_to_next } } }")
    assert transitions(p.workflows[0]) == []
    assert [e for e in edges_of_dot(render_dot(p)) if e[0] != "root_start"] == []


# ---- several workflows, --workflow ----------------------------------------------------------------


def test_several_workflows_are_clusters_with_their_own_start_points() -> None:
    p = plan(TWO)
    mmd = render_mermaid(p)
    assert "title:" not in mmd
    assert '  state "One" as one {' in mmd and '  state "Two" as two {' in mmd
    assert "    [*] --> one__in_progress" in mmd and "    [*] --> two__in_progress" in mmd
    dot = render_dot(p)
    assert 'subgraph "cluster_one"' in dot and 'subgraph "cluster_two"' in dot
    assert ("one_start", "one__in_progress", "") in edges_of_dot(dot)
    assert ("two__in_progress", "two_end", "") in edges_of_dot(dot)


def test_one_workflow_by_id_and_an_unknown_id_lists_the_known_ones() -> None:
    p = plan(TWO)
    assert '  state "P" as in_progress' in render_mermaid(p, "two")
    with pytest.raises(GraphError, match="no workflow `three`; the file declares: one, two"):
        render(p, "dot", "three")


def test_a_plan_without_workflows_is_refused() -> None:
    with pytest.raises(GraphError, match="declares no workflow"):
        render_mermaid(plan("role lead\n"))


# ---- ids ------------------------------------------------------------------------------------------


def _ids(step_ids: list[str]) -> list[str]:
    steps = "\n".join(f"  step {sid} {{ {'start' if i == 0 else ''} }}" for i, sid in enumerate(step_ids))
    wf = plan(f"workflow w {{\n{steps}\n}}").workflows[0]
    ids = node_ids([wf])
    return [ids[("w", sid)] for sid in step_ids]


def test_ids_mermaid_accepts_are_kept_and_others_sanitised() -> None:
    assert _ids(["work", "in-progress", "ci-fixup"]) == ["work", "in_progress", "ci_fixup"]


def test_a_sanitised_id_never_takes_an_existing_id() -> None:
    # `in_progress` is declared after `in-progress` and still keeps its own id
    assert _ids(["in-progress", "in_progress", "in__progress", "in-_progress"]) == [
        "in_progress_2", "in_progress", "in__progress", "in__progress_2"]


def test_mermaid_keywords_and_its_own_start_ids_are_renamed_in_any_case() -> None:
    assert _ids(["state", "Note", "CLASS", "end", "root_start", "s_state"]) == [
        "s_state_2", "s_Note", "s_CLASS", "s_end", "s_root_start", "s_state"]


def test_ids_are_deterministic() -> None:
    p = plan(OUT_OF_ORDER + TWO.replace("one", "x1").replace("two", "x2"))
    assert render_mermaid(p) == render_mermaid(p)
    assert render_dot(p) == render_dot(plan(OUT_OF_ORDER + TWO.replace("one", "x1").replace("two", "x2")))


# ---- escaping -----------------------------------------------------------------------------------


def test_mermaid_text_escapes_what_its_parser_reads() -> None:
    assert mermaid_text('Say "hi" #1: a;b %% <b> & {x} [*] `c`') == (
        "Say #34;hi#34; #35;1#58; a#59;b #37;#37; #60;b#62; #38; #123;x#125; #91;#42;#93; #96;c#96;")
    assert mermaid_text("Ende — fertig 完了 ✓") == "Ende — fertig 完了 ✓"
    assert mermaid_text("two\nlines") == "two<br/>lines"
    assert mermaid_text("nbsp\u00a0tab\t") == "nbsp#160;tab#9;"


def test_dot_string_escapes_quotes_backslashes_entities_and_newlines() -> None:
    assert dot_string('a "b" \\ c') == '"a \\"b\\" \\\\ c"'
    assert dot_string("AT&T &amp;") == '"AT&amp;T &amp;amp;"'
    assert dot_string("x\ny") == '"x\\ny"'
    assert dot_string("#1: é ✓ <b>") == '"#1: é ✓ <b>"'
    assert dot_string("bell\x07") == '"bell\ufffd"'


def test_titles_reach_both_formats_escaped() -> None:
    p = plan('workflow w "W: #1" { step s "Say \\"hi\\" & go" { start } }')
    assert '  state "Say #34;hi#34; #38; go" as s' in render_mermaid(p)
    assert 'title: "W: #1"' in render_mermaid(p)
    assert '"s" [label="Say \\"hi\\" &amp; go"];' in render_dot(p)


def test_unknown_format_or_direction_is_an_error() -> None:
    p = plan(TWO)
    with pytest.raises(ValueError, match="unknown graph format"):
        render(p, "svg")
    with pytest.raises(ValueError, match="unknown direction"):
        render(p, "dot", direction="RL")
