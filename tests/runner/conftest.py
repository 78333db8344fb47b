"""Fixtures for the `interlock test` tests: a folder of scenarios on the Office Default example (passing, failing,
broken, without `expect:`), and a runner of the command that returns its exit status and output.

Helpers reach the tests through fixtures, never imports: the suite runs in pytest's importlib mode.
"""

from __future__ import annotations

import shutil
from collections.abc import Callable
from pathlib import Path

import pytest

from interlock.cli import main

ROOT = Path(__file__).resolve().parents[2]
SCENARIOS = ROOT / "examples" / "scenarios"

FAILING = """\
workflow: office_default.wf
tasks:
  T1: {workflow: office_default, step: work}
sessions:
  S1: {task: T1}
participants:
  - {task: T1, step: review, role: reviewer, agent: rev-a}
events:
  - turn_complete: {task: T1, session: S1}
expect:
  tasks: {T1: {step: done}}
  counters: {arrivals: 1, transitions: 7}
  records:
    - {record: arrival, task: T1, to: review}
    - {record: decision, task: T1, result: moved}
"""

SHIPPED = ("agent_error_guards", "crash_and_recover", "manual_move_no_session", "manual_move_refused",
           "office_rejection_reentry", "office_review_round_trip", "redelivery_and_restart")
"""The shipped scenarios the suite copies: a fixed list, so that a scenario shipped later changes no count here."""

BROKEN = "workflow: office_default.wf\nevents:\n  - teleport: {}\nexpect: {tasks: {}}\n"
NO_EXPECT = "workflow: office_default.wf\nevents: []\n"


@pytest.fixture()
def suite(tmp_path: Path) -> Path:
    """A folder: the seven shipped scenarios (passing), `failing.yaml`, `broken.yaml`, `plain.yaml` (no expect)."""
    folder = tmp_path / "suite"
    folder.mkdir()
    shutil.copy(ROOT / "examples" / "office_default.wf", folder)
    shutil.copy(ROOT / "examples" / "routine.wf", folder)
    for scenario in (SCENARIOS / f"{name}.yaml" for name in SHIPPED):
        text = scenario.read_text(encoding="utf-8").replace("workflow: ../", "workflow: ")
        (folder / scenario.name).write_text(text, encoding="utf-8")
    (folder / "failing.yaml").write_text(FAILING, encoding="utf-8")
    (folder / "broken.yaml").write_text(BROKEN, encoding="utf-8")
    (folder / "plain.yaml").write_text(NO_EXPECT, encoding="utf-8")
    return folder


@pytest.fixture()
def run(capsys: pytest.CaptureFixture[str]) -> Callable[..., tuple[int, str, str]]:
    def go(*args: str) -> tuple[int, str, str]:
        code = main(["test", *args])
        out, err = capsys.readouterr()
        return code, out, err

    return go
