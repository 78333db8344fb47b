"""The trace reads causes first (docs/scenarios.md, "Record order"): a handler's `dispatch` record before its
actions' effects and the arrival its transition caused, a `decision` before the arrival and entry it caused, a
`timer` before its handler's dispatch, an arrival before its entry's effects and the `entry` record after them, and
`seq` strictly increasing (issue 24: the decision came after the arrival it caused, a dispatch after its effects)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from interlock.cli import main

SCENARIOS = Path(__file__).resolve().parents[2] / "examples" / "scenarios"


def kinds_by_event(name: str, capsys: pytest.CaptureFixture[str]) -> dict[int, list[str]]:
    assert main(["simulate", str(SCENARIOS / name), "--format", "jsonl"]) == 0
    records = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    seqs = [r["seq"] for r in records]
    assert seqs == sorted(set(seqs)), "seq is not strictly increasing"
    events: dict[int, list[str]] = {}
    for r in records:
        label = r["record"] if r["record"] != "timer" else f"timer {r['result']}"
        events.setdefault(r["event"], []).append(label)
    return events


def test_a_dispatch_comes_before_its_effects_and_a_decision_before_the_arrival_it_caused(
        capsys: pytest.CaptureFixture[str]) -> None:
    events = kinds_by_event("office_review_round_trip.yaml", capsys)
    # event 1, a turn completes in Work: the handler's dispatch, the arrival in Review, its entry's effects, the
    # entry record, and the fire's outcome last
    assert events[1] == ["dispatch", "arrival", "effect", "effect", "effect", "entry", "outcome"]
    # event 3, the second approval completes the quorum: the decision, then the arrival it caused and its entry
    assert events[3][:2] == ["decision", "arrival"] and events[3][-1] == "entry"


def test_a_timer_comes_before_its_handlers_dispatch_and_a_cancel_after_the_arrival_that_left(
        capsys: pytest.CaptureFixture[str]) -> None:
    events = kinds_by_event("review_overdue_timers.yaml", capsys)
    assert events[3] == ["timer fired", "dispatch", "effect", "outcome"]
    assert events[5] == ["timer fired", "dispatch", "effect", "outcome"] * 2
    assert events[7] == ["arrival", "timer cancelled", "entry"]


def test_the_docs_state_the_order() -> None:
    text = (SCENARIOS.parents[1] / "docs" / "scenarios.md").read_text(encoding="utf-8")
    assert "### Record order" in text  # runtime/recorder.py points readers there
