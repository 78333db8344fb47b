"""`interlock diff` output: host settings reported, each change classified as behaviour or metadata (text sections
and JSON `category`), and a long or multi-line text shown as a unified diff in every format, never as one line."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from interlock.cli import main

LINES = [f"Line {i} of the instructions: read the task, plan the change, write the tests first." for i in range(80)]


def flow(prompt_lines: list[str], *, color: str = "red", archive: int = 0, title: str = "B") -> str:
    body = "\n".join(f"    {line}" for line in prompt_lines)
    return f'''workflow w "W" {{
  prompt """
{body}
    """
  step a "A" {{ start manual_move color "{color}" auto_archive_after_hours {archive} }}
  step b "{title}" {{ terminal manual_move }}
}}
'''


@pytest.fixture()
def versions(tmp_path: Path) -> tuple[Path, Path]:
    old, new = tmp_path / "old.wf", tmp_path / "new.wf"
    old.write_text(flow(LINES), encoding="utf-8")
    edited = [*LINES[:40], "An inserted line.", *LINES[40:70], LINES[70].replace("tests", "docs"), *LINES[71:]]
    new.write_text(flow(edited, color="blue", archive=6, title="Bee"), encoding="utf-8")
    return old, new


def run(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str]:
    code = main(["diff", *args])
    return code, capsys.readouterr().out


def test_text_sections_and_a_unified_diff_of_the_prompt(versions: tuple[Path, Path],
                                                         capsys: pytest.CaptureFixture[str]) -> None:
    code, out = run(capsys, str(versions[0]), str(versions[1]))
    assert code == 0
    assert "4 changes: 2 behaviour, 2 metadata" in out
    assert out.index("\nbehaviour\n") < out.index("\nmetadata\n")
    behaviour = out[out.index("\nbehaviour\n"):out.index("\nmetadata\n")]
    metadata = out[out.index("\nmetadata\n"):]
    assert "`prompt` changed (80 lines -> 81 lines)  [workflow.attribute]" in behaviour
    assert "`auto_archive_after_hours` 0 -> 6  [step.attribute]" in behaviour
    assert '`color` "red" -> "blue"  [step.attribute]' in metadata and 'title "B" -> "Bee"' in metadata
    for line in ("        --- old", "        +++ new", "        +An inserted line.",
                 f"        -{LINES[70]}", f"        +{LINES[70].replace('tests', 'docs')}"):
        assert line in out.splitlines(), line
    # the 6,000-character prompt is not one line (the files' paths, as long as the temporary folder's, left out)
    shown = out.replace(str(versions[0]), "old.wf").replace(str(versions[1]), "new.wf")
    assert max(len(line) for line in shown.splitlines()) < 160
    assert sum(line.startswith("         Line") for line in out.splitlines()) <= 8  # context, not the whole text


def test_json_carries_the_category_and_the_unified_diff(versions: tuple[Path, Path],
                                                        capsys: pytest.CaptureFixture[str]) -> None:
    code, out = run(capsys, str(versions[0]), str(versions[1]), "--format", "json")
    assert code == 0
    doc = json.loads(out)
    assert doc["summary"] == {"changes": 4, "breaking": 0, "behaviour": 2, "metadata": 2, "stranded": None}
    changes = {c["subject"]: c for c in doc["comparisons"][0]["changes"]}
    prompt = changes["prompt"]
    assert prompt["category"] == "behaviour" and prompt["code"] == "workflow.attribute"
    assert prompt["old"] == "\n".join(LINES) + "\n" and prompt["new"].count("\n") == 81
    assert prompt["text_diff"][:2] == ["--- old", "+++ new"]
    assert "+An inserted line." in prompt["text_diff"]
    assert changes["color"]["category"] == "metadata" and changes["color"]["text_diff"] is None
    assert all(set(c) >= {"category", "text_diff"} for c in doc["comparisons"][0]["changes"])


def test_breaking_changes_are_counted_apart(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    old, new = tmp_path / "old.wf", tmp_path / "new.wf"
    old.write_text(flow(LINES[:2]), encoding="utf-8")
    new.write_text(flow(LINES[:2]).replace('step b "B" { terminal manual_move }\n', ""), encoding="utf-8")
    code, out = run(capsys, str(old), str(new))
    assert code == 0
    # `b` removed, and `a` lost its only way out (no other step allows a manual move)
    assert "2 changes: 2 breaking" in out and "\nBREAKING\n" in out and "\nbehaviour\n" not in out
