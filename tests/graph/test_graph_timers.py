"""`interlock graph` draws timers and retry policies (docs/graph.md, docs/language.md §2, §4): a timer that moves the task
is an edge from its step labelled with the timer (`after 3d`), dotted in DOT; a timer that only runs actions is
listed in its step with `--handlers`, by its label; an action whose kind has a retry policy carries it there; the
legend explains a timer edge only when one is drawn."""

from __future__ import annotations

import re

from interlock.compiler import compile_source
from interlock.diagrams import handler_lines, render_dot, render_mermaid, transitions
from interlock.dsl import SourceFile
from interlock.runtime.durations import retry_clause, seconds_duration
from interlock.runtime.plan import Plan

SOURCE = '''task notify(channel: str) on on_enter, on_comment retry 3 backoff 30s..10m
task ping on on_comment retry 2 backoff 90s
entry { dispatch notify }
workflow w "W" {
  step a "A" {
    start
    on on_enter { notify(channel: "ops") }
    on on_turn_complete { move_to_step(c) }
    after 48h { queue_run(target: workspace.ceo_agent, reason: "overdue") }
    every 30m { ping }
    after 3d { move_to_step(b) }
  }
  step b "B" { every 6h { move_to_step(a) when task.is_from_office } }
  step c "C" { terminal }
}
'''


def plan(text: str) -> Plan:
    result = compile_source(SourceFile("t.wf", text))
    assert result.plan is not None, [d.message for d in result.diagnostics]
    return result.plan


def dot_edges(text: str) -> list[tuple[str, str, str]]:
    return [e for e in re.findall(r'^\s*"([^"]+)" -> "([^"]+)"(.*);$', text, re.MULTILINE) if "style=invis" not in e[2]]


def test_a_timer_that_moves_the_task_is_an_edge_labelled_with_the_timer() -> None:
    wf = plan(SOURCE).workflows[0]
    assert [(e.source, e.target, e.trigger, e.timer) for e in transitions(wf)] == [
        ("a", "c", "on_turn_complete", False), ("a", "b", "after 3d", True), ("b", "a", "every 6h", True)]
    edge = transitions(wf)[2]
    assert edge.lines == ("every 6h", "when task.is_from_office")


def test_dot_draws_timer_edges_dotted_and_the_legend_says_so() -> None:
    dot = render_dot(plan(SOURCE))
    edges = dot_edges(dot)
    assert ("a", "b", ' [label="after 3d", style=dotted]') in edges
    assert ("b", "a", ' [label="every 6h\\nwhen task.is_from_office", style=dotted, constraint=false]') in edges
    assert ("a", "c", ' [label="on_turn_complete"]') in edges  # a trigger's transition stays solid
    assert "dotted arrow" in dot and "a timer's transition" in dot


def test_mermaid_labels_timer_edges() -> None:
    mmd = render_mermaid(plan(SOURCE)).splitlines()
    assert "  a --> b : after 3d" in mmd
    assert "  b --> a : every 6h<br/>when task.is_from_office" in mmd
    assert "  interlock_legend : arrow labelled after D / every D#58; a timer moves the task" in mmd


def test_the_legend_mentions_timers_only_when_a_timer_edge_is_drawn() -> None:
    quiet = plan('workflow w "W" { step a "A" { start  after 48h { queue_run(reason: "x") }\n'
                 '  on on_turn_complete { move_to_next } }\n step b "B" { terminal } }')
    assert "dotted arrow" not in render_dot(quiet)
    assert "after D" not in render_mermaid(quiet)
    assert "after 48h" not in render_dot(quiet)  # a timer that moves nothing is not drawn without --handlers


def test_handlers_list_timers_by_label_with_the_retry_policy_of_their_kinds() -> None:
    p = plan(SOURCE)
    a, b, _ = p.workflows[0].steps
    assert handler_lines(p, a) == [
        "on_enter: notify(channel: ops) retry 3 backoff 30s..10m",
        'after 48h: queue_run(target: "workspace.ceo_agent",',
        "    reason: overdue)",
        "every 30m: ping retry 2 backoff 90s",
    ]
    assert handler_lines(p, b) == []  # its only timer moves the task: an edge, not a line
    assert "every 30m: ping retry 2 backoff 90s" in render_dot(p, handlers=True)
    assert "  a : every 30m#58; ping retry 2 backoff 90s" in render_mermaid(p, handlers=True).splitlines()


def test_retry_policies_are_written_as_the_language_writes_them() -> None:
    assert [seconds_duration(s) for s in (1, 59, 60, 90, 3600, 5400, 86_400, 172_800, 31_536_000)] == [
        "1s", "59s", "1m", "90s", "1h", "90m", "1d", "2d", "365d"]
    assert retry_clause(3, 30, 600) == "retry 3 backoff 30s..10m"
    assert retry_clause(5, 3600, None) == "retry 5 backoff 1h"
