"""What a scenario means (docs/runtime.md §5): `missing` executors, tasks on no step, names checked against the plan
before anything runs, events the runtime refuses, `-` for standard input and the empty-store rule of `--store`."""

from __future__ import annotations

import io
import json
import sqlite3
import sys
from pathlib import Path

import pytest

from interlock.cli import main

ROOT = Path(__file__).resolve().parents[2]
KANBAN = ROOT / "examples" / "kanban.wf"

QUEUE_ON_ENTRY = """\
source: |
  workflow w {
    step a { start manual_move }
    step b { manual_move on on_enter { queue_run(target: primary, reason: "go") } }
  }
tasks:
  T1: {workflow: w, step: a}
"""


def run(tmp_path: Path, capsys: pytest.CaptureFixture[str], text: str, *extra: str) -> tuple[int, list[dict[str, object]], str]:
    path = tmp_path / "s.yaml"
    path.write_text(text)
    code = main(["simulate", str(path), "--format", "jsonl", *extra])
    out, err = capsys.readouterr()
    assert "Traceback" not in err and "internal error" not in err, err
    return code, [json.loads(line) for line in out.splitlines()], err


def test_a_missing_builtin_executor_is_missing(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """`executors: {queue_run: missing}` leaves the built-in store-backed kind with no executor at all."""
    text = QUEUE_ON_ENTRY + "executors: {queue_run: missing}\nevents:\n  - move: {task: T1, to: b}\n"
    code, records, err = run(tmp_path, capsys, text)
    assert code == 0, err
    [entry] = [r for r in records if r["record"] == "entry"]
    assert entry["attempted"] == ["queue_run"]
    assert entry["failed"] == [{"kind": "queue_run", "error": "no executor"}]
    # at set-up (event 0) the runtime says what it cannot run (Runtime.check()), then the entry's warning
    built, warning = [r for r in records if r["record"] == "warning"]
    assert (built["event"], built["code"], built["kinds"]) == (0, "runtime_misconfigured", ["queue_run"])
    assert warning["code"] == "no_executor" and warning["kind"] == "queue_run"
    assert records[-1]["runs"] == []


def test_without_missing_the_builtin_runs(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, records, err = run(tmp_path, capsys, QUEUE_ON_ENTRY + "events:\n  - move: {task: T1, to: b}\n")
    assert code == 0, err
    assert records[-1]["runs"] == [{"task": "T1", "agent": "primary", "reason": "go"}]


def test_a_task_on_no_step_is_skipped_by_the_shape_guard(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    text = (f"workflow: {KANBAN}\ntasks:\n  T1: {{workflow: simple, step: \"\"}}\nsessions:\n"
            "  S1: {task: T1, state: failed}\nevents:\n"
            "  - dispatch: {sequence: agent_error, event: {task_id: T1, session_id: S1, execution_id: E1,\n"
            "               agent_profile_id: '', error_message: boom, user_initiated: false}}\n")
    code, records, err = run(tmp_path, capsys, text)
    assert code == 0, err
    [outcome] = [r for r in records if r["record"] == "outcome"]
    assert (outcome["sequence"], outcome["result"], outcome["guard"]) == ("agent_error", "skipped", "shape")
    assert records[-1]["tasks"] == {"T1": {"step": ""}}


PLAN_MISTAKES = {
    "a misspelt trigger": ("  - fire: {trigger: on_comennt, task: T1}\n", "11:12",
                           "event 1 (`fire`): trigger: no trigger `on_comennt` (did you mean `on_comment`?)"),
    "the entry trigger fired": ("  - fire: {trigger: on_enter, task: T1}\n", "11:12", "is the entry trigger"),
    "an unknown task": ("  - move: {task: T9, to: b}\n", "11:12", "event 1 (`move`): task: no task `T9`"),
    "an unknown session": ("  - turn_complete: {task: T1, session: S9}\n", "11:31",
                           "event 1 (`turn_complete`): session: no session `S9`"),
    "an unknown target step": ("  - move: {task: T1, to: c}\n", "11:22", "event 1 (`move`): to: no step `c`"),
    "an unknown sequence": ("  - dispatch: {sequence: agent_eror, event: {}}\n", "11:16",
                            "no sequence `agent_eror` (did you mean `agent_error`?)"),
    "an unknown role": ("  - decide: {task: T1, agent: x, role: reviwer, verdict: approved}\n", "11:34",
                        "event 1 (`decide`): role: no role `reviwer` (did you mean `reviewer`?)"),
    "a creation of an existing task": ("  - create: {task: T1, workflow: w}\n", "11:14", "task `T1` exists already"),
}


@pytest.mark.parametrize("case", sorted(PLAN_MISTAKES))
def test_names_are_checked_against_the_plan_before_anything_runs(case: str, tmp_path: Path,
                                                                 capsys: pytest.CaptureFixture[str]) -> None:
    event, where, words = PLAN_MISTAKES[case]
    text = QUEUE_ON_ENTRY + "sessions:\n  S1: {task: T1}\nevents:\n" + event
    code, records, err = run(tmp_path, capsys, text)
    assert code == 1
    assert records == []  # nothing ran
    assert err.startswith(f"{tmp_path / 's.yaml'}:{where}: "), err
    assert words in err, err


SETUP_MISTAKES = {
    "a participant at an unknown step": ("participants:\n  - {task: T1, step: reveiw, role: reviewer, agent: x}\n",
                                         "9:16", "participants.0.step: no step `reveiw` in workflow `w`"),
    "a participant with an unknown role": ("participants:\n  - {step: b, role: revewer, agent: x}\n", "9:15",
                                           "participants.0.role: no role `revewer` (did you mean `reviewer`?)"),
    "a participant of an unknown task": ("participants:\n  - {task: T2, step: b, role: reviewer, agent: x}\n",
                                         "9:6", "participants.0.task: no task `T2`"),
    "a session of an unknown task": ("sessions:\n  S1: {task: T7}\n", "9:8", "sessions.S1.task: no task `T7`"),
    "an unknown executor kind": ("executors: {queue_rn: missing}\n", "8:13",
                                 "executors.queue_rn: no action kind `queue_rn` (did you mean `queue_run`?)"),
}


@pytest.mark.parametrize("case", sorted(SETUP_MISTAKES))
def test_setup_names_are_checked_against_the_plan(case: str, tmp_path: Path,
                                                  capsys: pytest.CaptureFixture[str]) -> None:
    block, where, words = SETUP_MISTAKES[case]
    code, records, err = run(tmp_path, capsys, QUEUE_ON_ENTRY + block)
    assert code == 1 and records == []
    assert err.startswith(f"{tmp_path / 's.yaml'}:{where}: "), err
    assert words in err, err


def test_a_task_in_an_unknown_workflow_or_step(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    text = QUEUE_ON_ENTRY.replace("T1: {workflow: w, step: a}", "T1: {workflow: x, step: a}\n  T2: {workflow: w, step: q}")
    code, _, err = run(tmp_path, capsys, text)
    assert code == 1
    path = tmp_path / "s.yaml"
    assert err.splitlines() == [
        f"{path}:7:8: tasks.T1.workflow: no workflow `x` (workflows: w)",
        f"{path}:8:21: tasks.T2.step: no step `q` in workflow `w` (steps: a, b)",
    ]


def test_an_event_the_runtime_refuses_is_an_error_after_the_trace_so_far(tmp_path: Path,
                                                                       capsys: pytest.CaptureFixture[str]) -> None:
    """A decision on a task that stands on no step: the runtime refuses it (`RuntimeFault`)."""
    text = (QUEUE_ON_ENTRY.replace("step: a}", "step: a}\n  T2: {workflow: w, step: \"\"}")
            + "events:\n  - move: {task: T1, to: b}\n  - decide: {task: T2, user: u1, verdict: approved}\n"
            "  - move: {task: T1, to: a}\n")
    code, records, err = run(tmp_path, capsys, text)
    assert code == 1
    assert [r["record"] for r in records if r["event"] == 1][:1] == ["arrival"]
    assert all(r["event"] <= 2 for r in records) and records[-1]["record"] != "summary"
    assert err.startswith(f"{tmp_path / 's.yaml'}:11:5: event 2 (`decide`): "), err
    assert "is at no step" in err


def test_a_scenario_from_standard_input(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                        monkeypatch: pytest.MonkeyPatch) -> None:
    """`simulate -`: a relative `workflow:` path is taken from the current folder."""
    (tmp_path / "flows").mkdir()
    (tmp_path / "flows" / "kanban.wf").write_text(KANBAN.read_text())
    monkeypatch.chdir(tmp_path)
    text = "workflow: flows/kanban.wf\ntasks:\n  T1: {workflow: simple, step: backlog}\nevents:\n" \
           "  - move: {task: T1, to: in-progress}\n"
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(text.encode())))
    assert main(["simulate", "-", "--format", "jsonl"]) == 0
    records = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert records[-1]["tasks"] == {"T1": {"step": "in-progress"}}
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(b"workfow: x\n")))
    assert main(["simulate", "-"]) == 1
    assert capsys.readouterr().err.startswith("<stdin>:1:1: workfow: unknown key")


def test_a_store_that_holds_interlock_rows_is_refused(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    db = tmp_path / "real.db"
    url = f"sqlite:///{db}"
    assert main(["db", "upgrade", "--url", url]) == 0
    capsys.readouterr()
    text = QUEUE_ON_ENTRY + "events:\n  - move: {task: T1, to: b}\n"
    code, records, err = run(tmp_path, capsys, text, "--store", url)  # an upgraded, empty database is fine
    assert code == 0, err
    with sqlite3.connect(db) as conn:
        before = conn.execute("SELECT id, step_id, description FROM interlock_tasks").fetchall()
    assert before
    code, records, err = run(tmp_path, capsys, text, "--store", url)
    assert code == 2 and records == []
    assert "holds interlock data" in err and "`--store` is for an empty database" in err, err
    with sqlite3.connect(db) as conn:
        assert conn.execute("SELECT id, step_id, description FROM interlock_tasks").fetchall() == before
