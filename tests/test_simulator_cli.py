"""`interlock simulate` and `interlock test`: the trace contract of docs/runtime.md §5, the shipped
scenarios, and clear errors for bad scenarios."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import typing
from pathlib import Path

import pytest

from interlock.cli import main
from interlock.runtime.results import DispatchResult

# every result a fire or a dispatch can end in (RUNTIME §6: `superseded`, `stranded`; §3: `in_progress`)
OUTCOME_RESULTS = set(typing.get_args(typing.get_type_hints(DispatchResult)["result"]))

ROOT = Path(__file__).resolve().parents[1]
SCENARIOS = ROOT / "examples" / "scenarios"

# docs/runtime.md §5: the fields each record kind must carry (extra fields are allowed)
REQUIRED = {
    "arrival": {"task", "from", "to", "ledger_id", "route"},
    "entry": {"task", "step", "entry_id", "attempted", "failed"},
    "effect": {"kind", "task", "step"},
    "inline": {"task", "step", "kinds"},
    "dispatch": {"trigger", "task", "session", "step", "operation_id", "actions", "level", "message"},
    "skip": {"sequence", "guard", "level", "message"},
    "outcome": {"result", "guard"},
    "warning": {"code", "message"},
    "error": {"task", "session", "message"},
    "decision": {"task", "step", "verdict", "role", "seated", "result"},
    "summary": {"tasks", "runs", "counters"},
}


def simulate_jsonl(path: Path) -> list[dict[str, object]]:
    proc = subprocess.run(
        [sys.executable, "-c", "import sys; from interlock.cli import main; raise SystemExit(main(sys.argv[1:]))",
         "simulate", str(path), "--format", "jsonl"],
        capture_output=True, text=True, timeout=120, env={**os.environ, "NO_COLOR": "1"})
    assert proc.returncode == 0, proc.stderr
    return [json.loads(line) for line in proc.stdout.splitlines()]


@pytest.mark.parametrize("scenario", sorted(p.name for p in SCENARIOS.glob("*.yaml")))
def test_trace_follows_the_contract(scenario: str) -> None:
    records = simulate_jsonl(SCENARIOS / scenario)
    assert records and records[-1]["record"] == "summary"
    seqs = [r["seq"] for r in records]
    assert seqs == sorted(seqs) and len(set(seqs)) == len(seqs), "seq increases strictly"
    arrivals = {}
    for r in records:
        assert {"seq", "event", "record"} <= set(r)
        missing = REQUIRED.get(str(r["record"]), set()) - set(r)
        assert not missing, (r, missing)
        if r["record"] == "outcome":
            assert "sequence" in r or "trigger" in r
            assert r["result"] in OUTCOME_RESULTS, r
        if r["record"] == "decision":  # forwarded from the runtime as it records them
            assert ("agent" in r) != ("user" in r) and isinstance(r["seated"], bool)
            assert r["result"] in ("moved", "pending", "approval_required", "ignored", "refused")
        if r["record"] == "redelivery_discarded":
            assert "task" in r and ("entry_id" in r or "operation_id" in r)
        if r["record"] == "arrival":
            arrivals[r["ledger_id"]] = r
    for r in records:
        if r["record"] == "entry":
            assert r["entry_id"] in arrivals, "entry_id equals an arrival's ledger_id"


def test_shipped_scenarios_pass(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["test", str(SCENARIOS)]) == 0
    out = capsys.readouterr().out
    count = len(list(SCENARIOS.glob("*.yaml")))
    assert out.strip().splitlines()[-1] == f"{count} passed, 0 failed, 0 errors"


def test_failing_expectation_fails(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    text = (SCENARIOS / "manual_move_no_session.yaml").read_text()
    (tmp_path / "office_default.wf").write_text((ROOT / "examples" / "office_default.wf").read_text())
    bad = tmp_path / "bad.yaml"
    bad.write_text(text.replace("workflow: ../office_default.wf", "workflow: office_default.wf")
                   .replace("tasks: {T1: {step: review}}", "tasks: {T1: {step: done}}"))
    assert main(["test", str(bad)]) == 1
    out = capsys.readouterr().out
    assert "FAIL" in out and "task T1: at step `review`, expected `done`" in out
    assert out.strip().splitlines()[-1] == "0 passed, 1 failed, 0 errors"


def test_bad_scenario_names_the_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    bad = tmp_path / "bad.yaml"
    bad.write_text("source: |\n  workflow w { step a { start } }\nevents:\n  - move: {task: T1, to: a}\n  - teleport: {}\n")
    assert main(["simulate", str(bad), "--format", "jsonl"]) == 1  # a scenario with errors: problems found
    err = capsys.readouterr().err
    assert f"{bad}:5:5: event 2: unknown event `teleport`" in err


def test_scenario_with_a_broken_workflow(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    bad = tmp_path / "bad.yaml"
    bad.write_text("source: |\n  workflow w { step a { start on on_enter { launch_rockets } } }\nevents: []\n")
    assert main(["simulate", str(bad)]) == 1
    err = capsys.readouterr().err
    assert "does not compile" in err and "IL101" in err
    assert f"{bad}:2:" in err  # the inline block's diagnostic at the YAML file's own line


def test_missing_scenario_file(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["simulate", "nope.yaml"]) == 2
    assert "no such scenario file: nope.yaml" in capsys.readouterr().err


def test_table_format(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["simulate", str(SCENARIOS / "crash_and_recover.yaml"), "--format", "table"]) == 0
    out = capsys.readouterr().out
    assert "redelivery_discarded" in out and "summary" in out
