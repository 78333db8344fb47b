"""`[tool.interlock]` / `interlock.toml` and the folder walk (docs/language.md, "Configuration"; ADR 0039): `ignore`,
`exclude`, the default excludes (hidden folders, venv/, .venv/, node_modules/, .tox/, build/, dist/, .gitignore'd
files), `--exclude` and `--no-default-excludes`, for `check`, `fmt` and `test`."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from interlock.cli import main
from interlock.config import ConfigError, load_config

ROOT = Path(__file__).resolve().parents[2]
CLEAN = 'workflow w {\n  step a { start manual_move  on on_turn_complete { move_to_step(done) } }\n' \
        '  step done { manual_move terminal }\n}\n'
WARNS = CLEAN.replace("  step done", "  step b { terminal }\n  step done")  # IL504 on line 3
UNFORMATTED = "workflow w { step a { start terminal } }\n"
SCENARIO = "source: |\n  workflow w { step a { start terminal } }\ntasks: {T1: {workflow: w, step: a}}\n" \
           "events: []\nexpect: {tasks: {T1: {step: a}}}\n"


def write(root: Path, files: dict[str, str]) -> None:
    for name, text in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)


def checked(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, list[str]]:
    """Exit status and the files `check --format concise` reported (a warning each) or the error line."""
    status = main(["check", "--format", "concise", "-q", *args])
    captured = capsys.readouterr()
    return status, sorted({line.split(":")[0] for line in captured.out.splitlines()} | (
        {captured.err.strip()} if captured.err else set()))


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.chdir(tmp_path)
    (tmp_path / ".git").mkdir()  # a repository: its .gitignore files count
    return tmp_path


# ---- the default excludes ---------------------------------------------------------------------------


@pytest.mark.parametrize("folder", ["venv", ".venv", "node_modules", ".tox", "build", "dist", ".hidden",
                                    "src/node_modules"])
def test_vendored_and_generated_folders_are_skipped(project: Path, capsys: pytest.CaptureFixture[str],
                                                    folder: str) -> None:
    write(project, {"flow.wf": WARNS, f"{folder}/pkg/vendored.wf": WARNS})
    assert checked(capsys) == (0, ["flow.wf"])
    assert checked(capsys, "--no-default-excludes") == (0, sorted(["flow.wf", f"{folder}/pkg/vendored.wf"]))


def test_a_bare_fmt_leaves_vendored_files_alone(project: Path, capsys: pytest.CaptureFixture[str]) -> None:
    write(project, {"flow.wf": UNFORMATTED, "venv/lib/vendored.wf": UNFORMATTED,
                    "node_modules/x/vendored.wf": UNFORMATTED})
    assert main(["fmt", "-q"]) == 0
    assert (project / "flow.wf").read_text() != UNFORMATTED
    assert (project / "venv/lib/vendored.wf").read_text() == UNFORMATTED
    assert (project / "node_modules/x/vendored.wf").read_text() == UNFORMATTED


def test_gitignored_files_are_skipped_deeper_files_overriding(project: Path,
                                                              capsys: pytest.CaptureFixture[str]) -> None:
    write(project, {".gitignore": "generated/\n*.tmp.wf\n", "flow.wf": WARNS, "generated/out.wf": WARNS,
                    "a/x.tmp.wf": WARNS, "a/.gitignore": "!keep.tmp.wf\n", "a/keep.tmp.wf": WARNS})
    assert checked(capsys) == (0, ["a/keep.tmp.wf", "flow.wf"])


def test_a_gitignore_above_the_folder_walked_counts(project: Path, capsys: pytest.CaptureFixture[str]) -> None:
    write(project, {".gitignore": "sub/skip/\n", "sub/skip/x.wf": WARNS, "sub/y.wf": WARNS})
    assert checked(capsys, "sub") == (0, ["sub/y.wf"])


def test_a_file_named_on_the_command_line_is_always_checked(project: Path,
                                                            capsys: pytest.CaptureFixture[str]) -> None:
    write(project, {"venv/x.wf": WARNS, ".gitignore": "venv/\n"})
    assert checked(capsys, "venv/x.wf") == (0, ["venv/x.wf"])


def test_a_folder_with_only_excluded_files_is_a_usage_error(project: Path,
                                                            capsys: pytest.CaptureFixture[str]) -> None:
    write(project, {"src/build/x.wf": WARNS, "src/.cache/y.wf": WARNS, "flow.wf": CLEAN})
    status, lines = checked(capsys, "src")
    assert status == 2 and "no .wf files under src" in lines[0] and "--no-default-excludes" in lines[0]
    assert checked(capsys, "src/build") == (0, ["src/build/x.wf"])  # a folder named is walked, whatever its name


# ---- --exclude and the configuration ---------------------------------------------------------------------


def test_exclude_on_the_command_line(project: Path, capsys: pytest.CaptureFixture[str]) -> None:
    write(project, {"flow.wf": WARNS, "gen/a.wf": WARNS, "gen/keep/b.wf": WARNS, "c.gen.wf": WARNS})
    assert checked(capsys, "--exclude", "gen/", "--exclude", "*.gen.wf") == (0, ["flow.wf"])


@pytest.mark.parametrize("config_file", ["pyproject.toml", "interlock.toml"])
def test_the_configuration_ignores_and_excludes(project: Path, capsys: pytest.CaptureFixture[str],
                                                config_file: str) -> None:
    body = 'ignore = ["IL504"]\nexclude = ["vendor/**"]\n'
    write(project, {config_file: body if config_file == "interlock.toml" else "[tool.interlock]\n" + body,
                    "flow.wf": WARNS, "vendor/x.wf": WARNS})
    assert checked(capsys) == (0, [])
    assert main(["check", "-q", "-W", "vendor/x.wf"]) == 0  # named: checked, and IL504 is ignored there too


def test_exclude_globs_are_relative_to_the_configurations_folder(project: Path,
                                                                 capsys: pytest.CaptureFixture[str]) -> None:
    write(project, {"pyproject.toml": '[tool.interlock]\nexclude = ["/fixtures/", "gen/"]\n',
                    "sub/fixtures/x.wf": WARNS, "fixtures/y.wf": WARNS, "sub/deep/gen/z.wf": WARNS})
    os.chdir(project / "sub")
    # gitignore's rules: `/fixtures/` is anchored at the configuration's folder, `gen/` matches at any depth
    assert checked(capsys) == (0, ["fixtures/x.wf"])
    assert checked(capsys, "..") == (0, ["../sub/fixtures/x.wf"])


def test_the_nearest_configuration_wins(tmp_path: Path) -> None:
    write(tmp_path, {"pyproject.toml": '[tool.interlock]\nignore = ["IL504"]\n',
                     "inner/pyproject.toml": "[project]\nname = 'x'\n",  # no [tool.interlock]: passed over
                     "inner/deeper/interlock.toml": 'ignore = ["IL503"]\n',
                     "inner/deeper/pyproject.toml": '[tool.interlock]\nignore = ["IL501"]\n'})
    assert load_config(tmp_path / "inner").ignore == {"IL504"}
    assert load_config(tmp_path / "inner" / "deeper").ignore == {"IL503"}  # interlock.toml beside it wins


@pytest.mark.parametrize(("body", "message"), [
    ('ignore = ["IL102"]', "an error: errors cannot be ignored"),
    ('ignore = ["IL9999"]', "not a diagnostic code"),
    ('ignore = "IL504"', "must be a list of strings"),
    ('exlude = ["x"]', "did you mean `exclude`?"),
    ('docs_url = "https://example.org/diagnostics"', "with `{code}`"),
    ("ignore = [", "not readable as TOML"),
])
def test_a_bad_configuration_is_a_usage_error(project: Path, capsys: pytest.CaptureFixture[str], body: str,
                                              message: str) -> None:
    write(project, {"interlock.toml": body + "\n", "flow.wf": CLEAN})
    with pytest.raises(ConfigError, match=r"interlock\.toml"):
        load_config(project)
    status, lines = checked(capsys)
    assert status == 2 and message in lines[0] and "interlock.toml" in lines[0]


def test_test_walks_folders_with_the_same_excludes(project: Path, capsys: pytest.CaptureFixture[str]) -> None:
    write(project, {"scenarios/ok.yaml": SCENARIO, "node_modules/pkg/broken.yaml": "not: [a scenario",
                    "scenarios/gen/broken.yaml": "not: [a scenario"})
    assert main(["test", ".", "--exclude", "gen/"]) == 0
    assert "1 passed, 0 failed, 0 errors" in capsys.readouterr().out


# ---- the project's own checkout ------------------------------------------------------------------------


def test_a_bare_check_in_the_checkout_is_clean() -> None:
    """The repository's own pyproject.toml excludes what is broken on purpose (tests/golden, the prelude, the VS
    Code grammar's test file), so `interlock check` in its root reports nothing (it reported 115 errors)."""
    code = "import sys; from interlock.cli import main; raise SystemExit(main(sys.argv[1:]))"
    proc = subprocess.run([sys.executable, "-c", code, "check", "-W"], capture_output=True, text=True, cwd=ROOT,
                          timeout=300, env={**os.environ, "NO_COLOR": "1"})
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr
    assert "no problems" in proc.stdout


def test_compile_honours_the_configurations_ignore(project: Path, capsys: pytest.CaptureFixture[str]) -> None:
    write(project, {"flow.wf": WARNS})
    assert main(["compile", "flow.wf", "-o", "plan.json"]) == 0
    assert "IL504" in capsys.readouterr().err
    write(project, {"interlock.toml": 'ignore = ["IL504"]\n'})
    assert main(["compile", "flow.wf", "-o", "plan.json"]) == 0
    assert "IL504" not in capsys.readouterr().err
