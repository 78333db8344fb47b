"""docs/scenarios.md shows real output of `interlock test`: each block that starts with `$ interlock test …` is the
command's output today, run the way the page says (a failure in `flows/review.yaml`, built here as the page describes
it; the coverage of the shipped Office scenarios from the repository's top folder).  Only the plan's digest is
shortened on the page (`sha256:…`)."""

from __future__ import annotations

import re
import shlex
import shutil
from pathlib import Path

import pytest

from interlock.cli import main

ROOT = Path(__file__).resolve().parents[2]
PAGE = ROOT / "docs" / "scenarios.md"
BLOCKS = re.findall(r"```\n\$ (interlock test [^\n]*)\n(.*?)```", PAGE.read_text(encoding="utf-8"), re.S)
DIGEST = re.compile(r"sha256:[0-9a-f]{64}")


def review_folder(tmp_path: Path) -> Path:
    """`flows/review.yaml` as the page describes it: the Office review round trip beside a copy of
    `office_default.wf`, its last `records:` item expecting the arrival in Done by a manual move."""
    flows = tmp_path / "flows"
    flows.mkdir()
    shutil.copy(ROOT / "examples" / "office_default.wf", flows)
    text = (ROOT / "examples" / "scenarios" / "office_review_round_trip.yaml").read_text(encoding="utf-8")
    last = "{record: arrival, task: T1, from: approval, to: done, route: decision}"
    assert text.count(last) == 1
    text = text.replace("workflow: ../office_default.wf", "workflow: office_default.wf")
    (flows / "review.yaml").write_text(text.replace(last, last.replace("decision", "manual_move")), encoding="utf-8")
    return tmp_path


def test_the_page_has_both_blocks() -> None:
    assert [command for command, _ in BLOCKS] == [
        "interlock test flows/review.yaml",
        "interlock test examples/scenarios/ -k office --coverage --threshold 80"]


@pytest.mark.parametrize(("command", "shown"), BLOCKS, ids=[c for c, _ in BLOCKS])
def test_each_block_is_the_commands_output_today(command: str, shown: str, tmp_path: Path,
                                                 monkeypatch: pytest.MonkeyPatch,
                                                 capsys: pytest.CaptureFixture[str]) -> None:
    args = shlex.split(command)[2:]
    monkeypatch.chdir(review_folder(tmp_path) if "flows/" in command else ROOT)
    code = main(["test", *args])
    out = capsys.readouterr().out
    assert code == 1  # a failure, and a coverage under the threshold
    assert DIGEST.sub("sha256:…", out) == shown
