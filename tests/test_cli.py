"""The `interlock` command line: formats, exit codes, stdin, and bad input (never a traceback)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from interlock.cli import main
from interlock.runtime.plan import PlanError, load_plan

ROOT = Path(__file__).resolve().parents[1]
EXAMPLES = ROOT / "examples"
OFFICE = EXAMPLES / "office_default.wf"

BAD = """\
workflow w "W" {
  step a "A" {
    start
    on on_enter { queue_run(targt: primary) }
  }
}
"""


def run(*args: str, stdin: bytes | None = None, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    """The real console entry point in a child process (what a user or pre-commit runs)."""
    code = "import sys; from interlock.cli import main; raise SystemExit(main(sys.argv[1:]))"
    return subprocess.run([sys.executable, "-c", code, *args], input=stdin, capture_output=True,
                          cwd=cwd or ROOT, timeout=120, text=stdin is None,
                          env={**os.environ, "NO_COLOR": "1"})


@pytest.fixture
def bad_file(tmp_path: Path) -> Path:
    path = tmp_path / "bad.wf"
    path.write_text(BAD)
    return path


def test_examples_check_clean(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["check", str(EXAMPLES)]) == 0
    out = capsys.readouterr().out
    count = len(list(EXAMPLES.rglob("*.wf")))  # the nine kandev templates and the example host's flow
    assert count >= 10 and f"{count} files checked: no problems" in out


def test_errors_exit_1_with_location_and_help(bad_file: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["check", str(bad_file)]) == 1
    out = capsys.readouterr().out
    assert "error[IL102]" in out
    assert f"{bad_file}:4:29" in out
    assert "did you mean `target`?" in out
    assert "1 file checked: 1 error" in out


def test_concise_format_one_line_per_diagnostic(bad_file: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["check", "--format", "concise", "-q", str(bad_file)]) == 1
    lines = capsys.readouterr().out.strip().splitlines()
    # the help stays on the line (issue 22: concise dropped the did-you-mean)
    assert lines == [f"{bad_file}:4:29: error[IL102] unknown parameter `targt` for `queue_run` "
                     "(help: did you mean `target`?)"]


def test_json_format_is_pure_stdout(bad_file: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["check", "--format", "json", str(bad_file)]) == 1
    captured = capsys.readouterr()
    doc = json.loads(captured.out)
    assert doc["version"] == 1
    [diag] = doc["diagnostics"]
    assert (diag["code"], diag["line"], diag["col"]) == ("IL102", 4, 29)
    assert "1 error" in captured.err  # the summary goes to stderr for machine formats


def test_github_format(bad_file: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["check", "--format", "github", "-q", str(bad_file)]) == 1
    out = capsys.readouterr().out
    assert out.startswith(f"::error file={bad_file},line=4,col=29")


def test_warnings_do_not_fail_unless_asked(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "warn.wf"
    path.write_text('workflow w { step a { start on on_turn_complete { move_to_next } } }\n')
    assert main(["check", str(path)]) == 0
    assert "warning[IL502]" in capsys.readouterr().out
    assert main(["check", "-W", str(path)]) == 1


def test_stdin(capsys: pytest.CaptureFixture[str]) -> None:
    proc = run("check", "--format", "concise", "--stdin-filename", "piped.wf", "-", stdin=BAD.encode())
    assert proc.returncode == 1
    assert proc.stdout.decode().startswith("piped.wf:4:29: error[IL102]")


def test_missing_file_is_usage_error() -> None:
    proc = run("check", "does/not/exist.wf")
    assert proc.returncode == 2
    assert proc.stderr.strip() == "interlock: error: no such file or folder: does/not/exist.wf"


def test_folder_without_wf_files(tmp_path: Path) -> None:
    (tmp_path / "notes.txt").write_text("hello")
    proc = run("check", str(tmp_path))
    assert proc.returncode == 2
    assert f"no .wf files under {tmp_path}" in proc.stderr
    assert "Traceback" not in proc.stderr


def test_binary_file(tmp_path: Path) -> None:
    path = tmp_path / "blob.wf"
    path.write_bytes(b"\x7fELF\x00\x01\x02" * 100)
    proc = run("check", "--format", "concise", str(path))
    assert proc.returncode == 1
    assert "error[IL005]" in proc.stdout and "binary" in proc.stdout
    assert "Traceback" not in proc.stderr


def test_invalid_utf8_points_at_the_byte(tmp_path: Path) -> None:
    path = tmp_path / "latin.wf"
    path.write_bytes(b'workflow w {\n  step caf\xe9 { start }\n}\n')
    proc = run("check", "--format", "concise", str(path))
    assert proc.returncode == 1
    assert f"{path}:2:11: error[IL005]" in proc.stdout


def test_fifty_megabyte_file_is_refused_quickly(tmp_path: Path) -> None:
    path = tmp_path / "huge.wf"
    with path.open("wb") as fh:
        fh.truncate(50 * 1024 * 1024)  # sparse: 50 MB without writing them
    proc = run("check", "--format", "concise", str(path))
    assert proc.returncode == 1
    assert "error[IL004]" in proc.stdout


@pytest.mark.parametrize("text", ["(" * 100_000, "workflow w { step a { start on on_enter { x(" + "[" * 50_000 + " } } }",
                                  "dispatch d on on_agent_error { skip g silent when " + "not " * 100_000 + "x }"])
def test_deep_nesting_is_a_diagnostic(text: str) -> None:
    proc = run("check", "--format", "concise", "-", stdin=text.encode())
    assert proc.returncode == 1
    assert "error[IL003]" in proc.stdout.decode()
    assert b"Traceback" not in proc.stderr


def test_syntax_error_names_what_was_expected(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "syntax.wf"
    path.write_text('workflow w {\n  step a { start bogus }\n}\n')
    assert main(["check", "--format", "concise", "-q", str(path)]) == 1
    out = capsys.readouterr().out
    assert f"{path}:2:18: error[IL001] unexpected `bogus`: expected a step attribute, `after`, `every`, `false`, `on` or `true`" in out


def test_no_command_prints_help_and_exits_2(capsys: pytest.CaptureFixture[str]) -> None:
    assert main([]) == 2
    assert "usage: interlock" in capsys.readouterr().err


def test_help_exits_0() -> None:
    proc = run("--help")
    assert proc.returncode == 0
    assert "check" in proc.stdout and "compile" in proc.stdout


def test_unknown_format_is_usage_error() -> None:
    proc = run("check", "--format", "xml", str(OFFICE))
    assert proc.returncode == 2
    assert "invalid choice" in proc.stderr


def test_compile_to_stdout_and_file_byte_identical(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["compile", str(OFFICE)]) == 0
    first = capsys.readouterr().out
    out = tmp_path / "plan.json"
    assert main(["compile", str(OFFICE), "-o", str(out)]) == 0
    assert out.read_text() == first
    plan = load_plan(first)
    office = plan.workflow("office_default")
    assert office is not None and office.start_step == "work"
    review = next(s for s in office.steps if s.id == "review")
    assert [a.kind for a in review.entry_dispatch] == [
        "clear_decisions", "ensure_seats", "queue_run_for_each_participant"]


def test_compile_with_errors_writes_no_plan(bad_file: Path, tmp_path: Path,
                                            capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "plan.json"
    assert main(["compile", str(bad_file), "-o", str(out)]) == 1
    assert not out.exists()
    assert "error[IL102]" in capsys.readouterr().err


def test_compile_missing_file() -> None:
    proc = run("compile", "nope.wf")
    assert proc.returncode == 2
    assert "no such file: nope.wf" in proc.stderr


def test_plan_of_unknown_version_or_corrupted(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["compile", str(OFFICE)]) == 0
    text = capsys.readouterr().out
    doc = json.loads(text)
    doc["plan_version"] = 99
    with pytest.raises(PlanError, match="plan version 99 is not supported"):
        load_plan(json.dumps(doc))
    with pytest.raises(PlanError, match="not valid JSON"):
        load_plan(text[: len(text) // 2])
    edited = text.replace('"work"', '"wrok"', 1)
    with pytest.raises(PlanError, match="modified or truncated"):
        load_plan(edited)


def test_the_console_script_freezes_the_front_end_and_an_in_process_call_leaves_the_collector_alone() -> None:
    """`interlock` (one process, one command) imports the front end with the collector paused and freezes it;
    `main()` called by a host in its own process changes nothing of its garbage collector."""
    import gc

    frozen, enabled = gc.get_freeze_count(), gc.isenabled()
    assert main(["check", "-q", str(EXAMPLES / "office_default.wf")]) == 0
    assert (gc.get_freeze_count(), gc.isenabled()) == (frozen, enabled)
    printed = _check_in_a_process("print(done.code, 'interlock.compiler' in sys.modules, gc.get_freeze_count() > 1000, "
                                  "gc.isenabled())")
    assert printed.split() == ["0", "True", "True", "True"], printed


def _check_in_a_process(report: str) -> str:
    """`interlock check -q office_default.wf` through the console script in a new interpreter; `report`: a statement
    run once it exited (`done` is its SystemExit; `gc` and `sys` are imported).  What it printed, and stderr."""
    code = ("import gc, sys\n"
            "sys.argv = ['interlock', 'check', '-q', sys.argv[1]]\n"
            "from interlock.cli import console\n"
            "try:\n    console()\n"
            f"except SystemExit as done:\n    {report}\n")
    proc = subprocess.run([sys.executable, "-c", code, str(EXAMPLES / "office_default.wf")], capture_output=True,
                          text=True, timeout=120)
    return proc.stdout + proc.stderr


def test_check_loads_neither_the_plan_models_nor_the_stores() -> None:
    """`check` builds no plan: a pre-commit hook pays for the front end only (benchmarks: `check-startup`).  The
    plan models (pydantic classes, ~10 ms to define) and SQLAlchemy load only for commands that need them."""
    printed = _check_in_a_process(
        "print(done.code, 'interlock.compiler.passes' in sys.modules, *[m for m in ('interlock.runtime.plan_model', "
        "'interlock.compiler.lower_plan', 'sqlalchemy') if m in sys.modules])")
    assert printed.split() == ["0", "True"], printed
