"""`interlock test --coverage [--threshold N]`: per workflow the steps entered, transitions taken, guard outcomes and
entry kinds dispatched, per plan the dispatch-sequence guards matched, with what was never exercised; guard outcomes
read from the `guards` lists of `dispatch`/`decision` records when the runtime writes them, and left out of the
percentage (said so) when it does not; the threshold fails the run."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

from interlock.compiler import compile_path
from interlock.runner.coverage import CoverageMap, PlanCoverage

Run = Callable[..., tuple[int, str, str]]
ROOT = Path(__file__).resolve().parents[2]
PASSING = "not failing and not broken"


def office(doc: dict[str, Any]) -> dict[str, Any]:
    plan = next(p for p in doc["coverage"]["plans"] if p["source"].endswith("office_default.wf"))
    assert plan["scenarios"] == 5  # the five scenarios on office_default.wf share one plan
    workflow: dict[str, Any] = plan["workflows"][0]
    return workflow


def test_coverage_of_the_shipped_scenarios(suite: Path, run: Run) -> None:
    code, out, _ = run(str(suite), "-k", PASSING, "--coverage", "--format", "json")
    assert code == 0
    doc = json.loads(out)
    wf = office(doc)
    assert wf["id"] == "office_default"
    assert wf["steps"]["missed"] == ["backlog"]  # no scenario moves a task into Backlog
    assert set(wf["steps"]["covered"]) == {"work", "review", "approval", "done"}
    assert "work on_turn_complete #1 -> review" in wf["transitions"]["covered"]
    assert "review on_turn_complete #2 -> work" in wf["transitions"]["covered"]  # the rejection round
    assert wf["transitions"]["missed"] == ["approval on_turn_complete #2 -> work",
                                           "approval on_approval_resolved #1 -> done",
                                           "approval on_approval_resolved #2 -> work"]
    assert wf["entry_kinds"]["missed"] == [] and "review: clear_decisions" in wf["entry_kinds"]["covered"]
    # the runtime writes `guards` lists on its dispatch and decision records: every guard evaluated, both outcomes
    assert wf["guards"]["counted"] is True
    assert {"review on_turn_complete #1 -> approval: true",
            "review on_turn_complete #1 -> approval: false"} <= set(wf["guards"]["covered"])
    assert "approval on_turn_complete #2 -> work: true" in wf["guards"]["missed"]
    counted = [wf[c] for c in ("steps", "transitions", "guards", "entry_kinds")]
    assert wf["covered_units"] == sum(len(p["covered"]) for p in counted)
    assert wf["total_units"] == wf["covered_units"] + sum(len(p["missed"]) for p in counted)
    inline = next(p for p in doc["coverage"]["plans"] if "agent_error_guards" in p["source"])
    assert inline["sequences"]["missed"] == [] and "agent_error: sibling_working" in inline["sequences"]["covered"]
    assert doc["coverage"]["threshold"] is None and doc["coverage"]["below_threshold"] is False


def test_coverage_text_lists_what_was_never_exercised(suite: Path, run: Run) -> None:
    code, out, _ = run(str(suite), "-k", PASSING, "--coverage")
    assert code == 0
    lines = out.splitlines()
    assert lines[-1] == "7 passed, 0 failed, 0 errors, 1 skipped, 2 deselected"  # plain.yaml has no expect
    assert any(line.startswith("coverage: ") for line in lines)
    assert "      steps: 4 of 5" in lines and "        never: backlog" in lines
    assert "      guards: 5 of 8" in lines  # recorded by the runtime (the `guards` of its records), and counted


def test_threshold_fails_the_run_under_it(suite: Path, run: Run) -> None:
    code, out, _ = run(str(suite), "-k", PASSING, "--threshold", "99.5")
    assert code == 1
    assert "is under the threshold 99.5%" in out and out.splitlines()[-1].startswith("7 passed, 0 failed")
    code, out, _ = run(str(suite), "-k", PASSING, "--threshold", "10")
    assert code == 0 and "is at or above the threshold 10.0%" in out


def test_threshold_must_be_a_percentage(suite: Path, run: Run) -> None:
    for bad in ("-1", "101", "x", "nan"):
        code, _, err = run(str(suite), "--threshold", bad)
        assert code == 2 and "--threshold" in err


# ---- guard outcomes from the records --------------------------------------------------------------------------


def office_coverage() -> PlanCoverage:
    result = compile_path(ROOT / "examples" / "office_default.wf")
    assert result.plan is not None
    return PlanCoverage("office_default.wf", result.plan)


def test_guard_outcomes_are_read_from_dispatch_and_decision_records() -> None:
    cov = office_coverage()
    records: list[dict[str, Any]] = [
        {"seq": 1, "event": 1, "record": "dispatch", "trigger": "on_turn_complete", "task": "T1", "step": "review",
         "guards": [{"position": 0, "to": "approval", "result": False}, {"position": 1, "to": "work", "result": True}]},
        {"seq": 2, "event": 1, "record": "arrival", "task": "T1", "from": "review", "to": "work",
         "route": "engine_transition", "workflow": "office_default"},
        {"seq": 3, "event": 2, "record": "decision", "task": "T1", "step": "approval", "result": "pending",
         "guards": [{"position": 0, "to": "done", "result": False}, {"position": 1, "to": "work", "result": False}]},
    ]
    cov.add({"T1": "office_default"}, records)
    report = cov.report()
    guards = report["workflows"][0]["guards"]
    assert report["guards_recorded"] is True and guards["counted"] is True
    assert set(guards["covered"]) == {"review on_turn_complete #1 -> approval: false",
                                      "review on_turn_complete #2 -> work: true",
                                      "approval on_turn_complete #1 -> done: false",
                                      "approval on_turn_complete #2 -> work: false"}
    # the arrival is the transition the record's true guard names, not merely the first to `work`
    assert report["workflows"][0]["transitions"]["covered"] == ["review on_turn_complete #2 -> work"]


def test_records_without_guards_are_handled_and_say_so() -> None:
    cov = office_coverage()
    cov.add({"T1": "office_default"}, [
        {"seq": 1, "event": 1, "record": "dispatch", "trigger": "on_turn_complete", "task": "T1", "step": "work"},
        {"seq": 2, "event": 1, "record": "arrival", "task": "T1", "from": "work", "to": "review",
         "route": "engine_transition", "workflow": "office_default"},
        {"seq": 3, "event": 1, "record": "entry", "task": "T1", "step": "review", "workflow": "office_default",
         "attempted": ["clear_decisions", "ensure_seats"]},
        {"seq": 4, "event": 2, "record": "skip", "sequence": "agent_error", "guard": "no_session"},
        {"seq": 5, "event": 2, "record": "outcome", "sequence": "agent_error", "result": "skipped", "guard": "shape"},
    ])
    report = cov.report()
    wf = report["workflows"][0]
    assert report["guards_recorded"] is False and wf["guards"]["counted"] is False
    assert wf["steps"]["covered"] == ["review"]
    assert wf["transitions"]["covered"] == ["work on_turn_complete #1 -> review"]
    assert wf["entry_kinds"]["covered"] == ["review: clear_decisions", "review: ensure_seats"]
    assert report["sequences"]["covered"] == ["agent_error: no_session", "agent_error: shape"]
    # guards are out of every count
    units = sum(len(wf[c]["covered"]) + len(wf[c]["missed"]) for c in ("steps", "transitions", "entry_kinds"))
    assert wf["total_units"] == units


def test_plans_are_merged_by_digest_and_the_total_is_over_all() -> None:
    cov = CoverageMap()
    plan = office_coverage().plan
    cov.add("a.wf", plan, {}, [])
    cov.add("b.wf", plan, {}, [])
    report = cov.report(50.0)
    assert len(report["plans"]) == 1 and report["plans"][0]["scenarios"] == 2
    assert report["covered_units"] == 0 and report["percent"] == 0.0 and report["below_threshold"] is True
