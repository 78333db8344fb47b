"""`git:REV:PATH`, `git::PATH` and `--staged` in, the versions git holds compared out: a throwaway repository per
test; exit 2 with a one-line message for what cannot be read."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest

from interlock.cli import main

ROOT = Path(__file__).resolve().parents[2]
OFFICE = (ROOT / "examples" / "office_default.wf").read_text(encoding="utf-8")
BACKLOG = ('  step backlog "Backlog" {\n    position 0\n    manual_move\n    stage custom\n'
           '    color "bg-neutral-400"\n    show_in_command_panel\n  }\n')


def _git(root: Path, *args: str) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith("GIT_")}
    env.update(GIT_CONFIG_NOSYSTEM="1", GIT_CONFIG_GLOBAL=os.devnull)
    proc = subprocess.run(["git", *args], cwd=root, env=env, capture_output=True, text=True, check=False)
    assert proc.returncode == 0, proc.stderr


@pytest.fixture
def repo(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    root = tmp_path / "repo"
    (root / "flows").mkdir(parents=True)
    monkeypatch.setenv("GIT_CONFIG_NOSYSTEM", "1")
    monkeypatch.setenv("GIT_CONFIG_GLOBAL", os.devnull)
    for key in [k for k in os.environ if k.startswith("GIT_") and k not in ("GIT_CONFIG_NOSYSTEM", "GIT_CONFIG_GLOBAL")]:
        monkeypatch.delenv(key)
    _git(root, "init", "-q")
    _git(root, "config", "user.email", "t@example.invalid")
    _git(root, "config", "user.name", "T")
    _git(root, "config", "commit.gpgsign", "false")
    (root / "flows" / "office.wf").write_text(OFFICE, encoding="utf-8")
    _git(root, "add", "-A")
    _git(root, "commit", "-q", "-m", "v1")
    monkeypatch.chdir(root)
    return root


def _run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(["diff", *argv])
    out, err = capsys.readouterr()
    return code, out, err


def test_committed_version_against_the_work_tree(repo: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (repo / "flows" / "office.wf").write_text(OFFICE.replace(BACKLOG, ""), encoding="utf-8")
    code, out, err = _run(capsys, "git:HEAD:flows/office.wf", "flows/office.wf", "--fail-on-breaking")
    assert code == 1, err
    assert "--- git:HEAD:flows/office.wf" in out and "step `backlog` removed" in out
    # without --fail-on-breaking (and no store) a breaking change is reported, exit 0
    assert _run(capsys, "git:HEAD:flows/office.wf", "flows/office.wf")[0] == 0


def test_paths_from_the_current_folder_with_dot_slash(repo: Path, capsys: pytest.CaptureFixture[str],
                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(repo / "flows")
    code, out, err = _run(capsys, "git:HEAD:./office.wf", "office.wf")
    assert code == 0 and "no changes" in out, err


def test_staged_version_is_read_from_the_index(repo: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = repo / "flows" / "office.wf"
    path.write_text(OFFICE.replace('step done "Done"', 'step done "Finished"'), encoding="utf-8")
    _git(repo, "add", "flows/office.wf")
    path.write_text(OFFICE.replace(BACKLOG, ""), encoding="utf-8")  # unstaged: not what is committed
    code, out, _ = _run(capsys, "--staged", "flows/office.wf", "--fail-on-breaking", "--format", "json")
    assert code == 0
    doc = json.loads(out)
    [comparison] = doc["comparisons"]
    assert (comparison["old"], comparison["new"]) == ("git:HEAD:flows/office.wf", "git::flows/office.wf")
    assert [c["code"] for c in comparison["changes"]] == ["step.title"]
    assert _run(capsys, "git:HEAD:flows/office.wf", "git::flows/office.wf")[1].count("step.title") == 1


def test_staged_new_files_and_other_files_are_skipped(repo: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (repo / "flows" / "fresh.wf").write_text(OFFICE, encoding="utf-8")
    _git(repo, "add", "flows/fresh.wf")
    code, out, _ = _run(capsys, "--staged", "flows/fresh.wf", "notes.txt", "--fail-on-breaking")
    assert code == 0
    assert "skipped: new file" in out and "notes.txt" not in out


def test_staged_fix_of_a_broken_head_is_not_blocked(repo: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = repo / "flows" / "office.wf"
    path.write_text(OFFICE.replace("auto_start_agent", "launch_rockets", 1), encoding="utf-8")
    _git(repo, "commit", "-q", "-am", "broken")
    path.write_text(OFFICE, encoding="utf-8")
    _git(repo, "add", "flows/office.wf")
    code, out, _ = _run(capsys, "--staged", "flows/office.wf", "--fail-on-breaking")
    assert code == 0 and "skipped: HEAD's version cannot be read" in out


def test_sibling_modules_come_from_the_same_revision(repo: Path, capsys: pytest.CaptureFixture[str]) -> None:
    flows = repo / "flows"
    (flows / "roles.wf").write_text("role auditor\n", encoding="utf-8")
    (flows / "main.wf").write_text("use roles\nworkflow w { step a { start terminal } }\n", encoding="utf-8")
    _git(repo, "add", "-A")
    _git(repo, "commit", "-q", "-m", "modules")
    (flows / "roles.wf").write_text("role inspector\n", encoding="utf-8")  # the work tree's module changed
    code, out, _ = _run(capsys, "git:HEAD:flows/main.wf", "git::flows/main.wf")
    assert code == 0 and "no changes" in out  # both read roles.wf as committed/staged, not the work tree's
    code, out, _ = _run(capsys, "git:HEAD:flows/main.wf", "flows/main.wf")
    assert "role `auditor` removed" in out and "role `inspector` added" in out


@pytest.mark.parametrize(("argv", "says"), [
    (("git:nope:flows/office.wf", "flows/office.wf"), "git: unknown revision `nope`"),
    (("git:HEAD:flows/missing.wf", "flows/office.wf"), "git: `flows/missing.wf` is not in revision `HEAD`"),
    (("git::flows/missing.wf", "flows/office.wf"), "is not in the index"),
    (("git:HEAD", "flows/office.wf"), "write git:REV:PATH"),
    (("flows/office.wf", "flows/nope.wf"), "no such file: flows/nope.wf"),
    (("flows/office.wf",), "give OLD and NEW"),
])
def test_unreadable_versions_are_usage_errors(repo: Path, capsys: pytest.CaptureFixture[str], argv: tuple[str, ...],
                                              says: str) -> None:
    code, out, err = _run(capsys, *argv)
    assert code == 2 and out == ""
    assert err.startswith("interlock diff: error: ") and says in err and err.count("\n") == 1


def test_a_file_that_does_not_compile_is_a_usage_error(repo: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (repo / "bad.wf").write_text(OFFICE.replace("auto_start_agent", "launch_rockets", 1), encoding="utf-8")
    code, _out, err = _run(capsys, "flows/office.wf", "bad.wf")
    assert code == 2 and "bad.wf does not compile" in err and "IL101" in err and err.count("\n") == 1


def test_compiled_plans_compare_like_their_sources(repo: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["compile", "flows/office.wf", "-o", "office.json"]) == 0
    (repo / "v2.wf").write_text(OFFICE.replace(BACKLOG, ""), encoding="utf-8")
    capsys.readouterr()
    from_plan = _run(capsys, "office.json", "v2.wf", "--format", "json")[1]
    from_source = _run(capsys, "flows/office.wf", "v2.wf", "--format", "json")[1]
    strip = lambda doc: [c["code"] for c in json.loads(doc)["comparisons"][0]["changes"]]  # noqa: E731
    assert strip(from_plan) == strip(from_source) == ["step.removed"]
    (repo / "edited.json").write_text((repo / "office.json").read_text().replace('"Backlog"', '"Later"'))
    code, _out, err = _run(capsys, "edited.json", "v2.wf")
    assert code == 2 and "digest" in err
