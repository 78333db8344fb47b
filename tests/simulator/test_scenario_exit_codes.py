"""What docs/scenarios.md says about exit statuses is what `simulate` and `test` do: a scenario that cannot run
(bad YAML, an unknown key or event, a workflow that does not compile) exits 1; exit 2 is for usage (ADR 0016)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from interlock.cli import main

ROOT = Path(__file__).resolve().parents[2]
WF = 'workflow w {\n  step a { start }\n}\n'
CANNOT_RUN = {
    "bad YAML": "workflow: w.wf\nevents: [\n",
    "an unknown key": "workflow: w.wf\ntasks: {}\nevents: []\nbogus: 1\n",
    "an unknown event": "workflow: w.wf\ntasks: {T1: {step: a}}\nevents:\n  - explode: {task: T1}\n",
    "a workflow that does not compile": "source: |\n  workflow w { step a { start } step a { } }\nevents: []\n",
}


@pytest.mark.parametrize("case", sorted(CANNOT_RUN))
def test_a_scenario_that_cannot_run_exits_1(case: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "w.wf").write_text(WF)
    scenario = tmp_path / "s.yaml"
    scenario.write_text(CANNOT_RUN[case] + ("expect: {final: {T1: a}}\n" if "bad YAML" not in case else ""))
    assert main(["simulate", str(scenario)]) == 1
    assert f"{scenario}:" in capsys.readouterr().err
    assert main(["test", str(scenario)]) == 1
    assert "0 passed, 0 failed, 1 error" in capsys.readouterr().out


def test_usage_errors_exit_2(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["simulate", str(tmp_path / "absent.yaml")]) == 2
    assert main(["simulate", str(tmp_path / "absent.yaml"), "--store", "nosuch://x"]) == 2
    assert main(["test", str(tmp_path / "absent.yaml")]) == 2


def test_the_docs_give_the_statuses_the_commands_exit_with() -> None:
    text = " ".join((ROOT / "docs" / "scenarios.md").read_text(encoding="utf-8").split())
    sentence = re.search(r"A scenario that cannot run \([^)]*\) is an error[^.]*\.[^.]*\.", text)
    assert sentence is not None
    assert "`simulate` exits 1" in sentence.group(0) and "exit status 2" not in sentence.group(0)
