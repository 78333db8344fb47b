"""`interlock graph` on the command line: formats (chosen or from -o's suffix), byte-identical output across
processes, compiled plans as input, diagnostics and exit 1 for a file with errors, exit 2 with a clear line for
usage errors (unknown --workflow, SVG/PNG without Graphviz, bad paths)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from interlock.cli import main

ROOT = Path(__file__).resolve().parents[2]
OFFICE = ROOT / "examples" / "office_default.wf"
GOLDEN = ROOT / "tests" / "golden" / "graph"
TRICKY = Path(__file__).parent / "fixtures" / "tricky.wf"


def cli(*args: str, stdin: bytes | None = None, env: dict[str, str] | None = None,
        cwd: Path = ROOT) -> subprocess.CompletedProcess[bytes]:
    code = "import sys; from interlock.cli import main; raise SystemExit(main(sys.argv[1:]))"
    return subprocess.run([sys.executable, "-c", code, "graph", *args], input=stdin, capture_output=True,
                          cwd=cwd, timeout=120, env={**os.environ, "NO_COLOR": "1", **(env or {})})


def test_mermaid_to_stdout_by_default(capsysbinary: pytest.CaptureFixture[bytes]) -> None:
    assert main(["graph", str(OFFICE)]) == 0
    out = capsysbinary.readouterr().out
    assert out == (GOLDEN / "office_default.mmd").read_bytes()


@pytest.mark.parametrize(("suffix", "golden"), [(".mmd", "mmd"), (".dot", "dot"), (".gv", "dot")])
def test_the_format_follows_the_output_suffix(suffix: str, golden: str, tmp_path: Path) -> None:
    out = tmp_path / f"diagram{suffix}"
    assert main(["graph", str(OFFICE), "-o", str(out)]) == 0
    assert out.read_bytes() == (GOLDEN / f"office_default.{golden}").read_bytes()


def test_format_wins_over_the_suffix_and_direction_is_applied(tmp_path: Path) -> None:
    out = tmp_path / "diagram.txt"
    assert main(["graph", str(OFFICE), "--format", "dot", "--direction", "TB", "-o", str(out)]) == 0
    assert out.read_text(encoding="utf-8").splitlines()[1].startswith("  graph [rankdir=TB,")


@pytest.mark.parametrize("fmt", ["mermaid", "dot", "svg"])
def test_output_is_byte_identical_across_processes(fmt: str) -> None:
    if fmt == "svg" and not _has_dot():
        pytest.skip("Graphviz's `dot` is not installed")
    runs = [cli(str(TRICKY), "--format", fmt, env={"PYTHONHASHSEED": seed}) for seed in ("1", "2")]
    assert [r.returncode for r in runs] == [0, 0], runs[0].stderr
    assert runs[0].stdout == runs[1].stdout and runs[0].stdout


def _has_dot() -> bool:
    import shutil

    if shutil.which("dot") is None:
        if os.environ.get("CI") == "true":
            pytest.fail("Graphviz's `dot` is not installed and CI=true requires it")
        return False
    return True


def test_one_workflow_by_id(capsysbinary: pytest.CaptureFixture[bytes]) -> None:
    assert main(["graph", str(TRICKY), "--workflow", "Note"]) == 0
    out = capsysbinary.readouterr().out.decode()
    assert 'title: "Note\\nsecond line"' in out and "ship_it" not in out


def test_an_unknown_workflow_is_a_usage_error_naming_the_known_ids() -> None:
    proc = cli(str(TRICKY), "--workflow", "nope")
    assert proc.returncode == 2 and proc.stdout == b""
    assert proc.stderr.decode() == (f"interlock: error: {TRICKY}: no workflow `nope`; "
                                    "the file declares: ship-it, Note\n")


def test_a_file_with_errors_prints_its_diagnostics_and_exits_1(tmp_path: Path) -> None:
    bad = tmp_path / "bad.wf"
    bad.write_text("workflow w { step a { start  on on_turn_complete { move_to_step(nowhere) } } }\n",
                   encoding="utf-8")
    proc = cli(str(bad))
    assert proc.returncode == 1 and proc.stdout == b""
    err = proc.stderr.decode()
    assert "nowhere" in err and "bad.wf:1:" in err  # the `check` renderer's FILE:LINE:COL
    assert err.endswith(f"interlock: {bad}: not drawn (1 error)\n")


def test_a_compiled_plan_draws_the_same_diagram(tmp_path: Path) -> None:
    plan = tmp_path / "plan.json"
    assert main(["compile", str(OFFICE), "-o", str(plan)]) == 0
    out = tmp_path / "from_plan.dot"
    assert main(["graph", str(plan), "-o", str(out)]) == 0
    assert out.read_bytes() == (GOLDEN / "office_default.dot").read_bytes()


def test_an_edited_plan_is_refused_with_exit_1(tmp_path: Path) -> None:
    plan = tmp_path / "plan.json"
    assert main(["compile", str(OFFICE), "-o", str(plan)]) == 0
    plan.write_text(plan.read_text(encoding="utf-8").replace('"Review"', '"Rev"'), encoding="utf-8")
    proc = cli(str(plan))
    assert proc.returncode == 1 and proc.stdout == b""
    assert "plan digest does not match" in proc.stderr.decode()


def test_standard_input(tmp_path: Path) -> None:
    proc = cli("-", stdin=OFFICE.read_bytes())
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == (GOLDEN / "office_default.mmd").read_bytes()


@pytest.mark.parametrize(("args", "message"), [
    (["missing.wf"], "no such file: missing.wf"),
    (["examples"], "not a file: examples"),
    (["examples/office_default.wf", "-o", "no/such/folder/x.mmd"], "the folder no/such/folder does not exist"),
])
def test_bad_paths_are_one_clear_line_and_exit_2(args: list[str], message: str) -> None:
    proc = cli(*args)
    assert proc.returncode == 2
    lines = proc.stderr.decode().splitlines()
    assert len(lines) == 1 and message in lines[0]


def test_svg_and_png_without_graphviz_say_what_to_install(tmp_path: Path) -> None:
    empty = tmp_path / "bin"
    empty.mkdir()
    for fmt in ("svg", "png"):
        proc = cli(str(OFFICE), "--format", fmt, "-o", str(tmp_path / f"x.{fmt}"), env={"PATH": str(empty)})
        assert proc.returncode == 2
        err = proc.stderr.decode()
        assert f"--format {fmt} needs Graphviz's `dot`" in err and "apt-get install graphviz" in err
        assert not (tmp_path / f"x.{fmt}").exists()


def test_svg_and_png_through_graphviz(tmp_path: Path) -> None:
    if not _has_dot():
        pytest.skip("Graphviz's `dot` is not installed")
    assert main(["graph", str(OFFICE), "-o", str(tmp_path / "o.svg")]) == 0
    svg = (tmp_path / "o.svg").read_text(encoding="utf-8")
    assert "<svg" in svg and ">Office Default</text>" in svg
    assert main(["graph", str(OFFICE), "-o", str(tmp_path / "o.png")]) == 0
    assert (tmp_path / "o.png").read_bytes().startswith(b"\x89PNG\r\n\x1a\n")


def test_help_lists_the_formats_and_exit_codes() -> None:
    proc = cli("--help")
    out = proc.stdout.decode()
    assert proc.returncode == 0
    assert "{mermaid,dot,svg,png}" in out and "--workflow ID" in out and "--direction {LR,TB}" in out
    assert "Exit status: 0 drawn; 1" in " ".join(out.split())


def test_a_file_without_workflows_is_a_usage_error(tmp_path: Path) -> None:
    vocab = tmp_path / "vocab.wf"
    vocab.write_text("role lead\n", encoding="utf-8")
    proc = cli("vocab.wf", cwd=tmp_path)  # a short path: a long one (a worker's tmp folder) is cut in messages
    assert proc.returncode == 2 and proc.stdout == b""
    err = proc.stderr.decode()
    assert "warning[IL513]: the file declares no workflow" in err  # compile's own warning, then graph's refusal
    assert err.endswith("interlock: error: vocab.wf: the plan declares no workflow: there is nothing to draw\n")
