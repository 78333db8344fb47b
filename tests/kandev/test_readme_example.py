"""The README's worked import ("Coming from kandev YAML") is what the command prints and writes."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from interlock.cli import main

README = Path(__file__).resolve().parents[2] / "README.md"
SECTION = README.read_text(encoding="utf-8").split("## Coming from kandev YAML", 1)[1].split("\n## ", 1)[0]
YAML = re.findall(r"```yaml\n(.*?)```", SECTION, re.S)
CONSOLE = re.findall(r"```console\n(.*?)```", SECTION, re.S)


def _run(tmp_path: Path, yaml_text: str, capsys: pytest.CaptureFixture[str]) -> tuple[int, str]:
    (tmp_path / "triage.yml").write_text(yaml_text, encoding="utf-8")
    code = main(["import", str(tmp_path / "triage.yml"), "-o", str(tmp_path / "triage.wf"), "--diagnostics-format", "concise",
                 "--color", "never"])
    out, err = capsys.readouterr()
    return code, (out + err).replace(f"{tmp_path}/", "")


def test_the_worked_import_prints_and_writes_what_the_readme_shows(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                                   capsys: pytest.CaptureFixture[str]) -> None:
    assert len(YAML) == 1 and len(CONSOLE) == 2
    first = CONSOLE[0].split("\n", 1)[1]  # after the `$ interlock import …` line
    code, shown = _run(tmp_path, YAML[0], capsys)
    assert (code, shown) == (1, first)
    assert not (tmp_path / "triage.wf").exists()

    second_run, cat = CONSOLE[1].split("$ cat triage.wf\n")
    code, shown = _run(tmp_path, YAML[0].replace(", {type: launch_rockets}", ""), capsys)
    assert (code, shown) == (0, second_run.split("\n", 1)[1])
    assert (tmp_path / "triage.wf").read_text(encoding="utf-8") == cat
