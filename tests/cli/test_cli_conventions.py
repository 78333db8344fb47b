"""Command-line conventions: usage errors name the subcommand, every option is explained, bad paths and store
URLs are exit 2 with one clear line, paths named twice run once, tables are never cut, plans are relocatable."""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
from pathlib import Path

import pytest

from interlock.cli import _parser, main

ROOT = Path(__file__).resolve().parents[2]
LONG = "a" * 5000

SCENARIO = """\
source: |
  workflow w {
    step a { start manual_move }
    step b { manual_move on on_enter { queue_run(target: primary, reason: "a reason long enough to be folded") } }
  }
tasks:
  T1: {workflow: w, step: a, description: "DESCRIPTION"}
events:
  - move: {task: T1, to: b}
expect:
  tasks: {T1: {step: b}}
"""


def cli(*args: str, stdin: str | None = None, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    code = "import sys; from interlock.cli import main; raise SystemExit(main(sys.argv[1:]))"
    return subprocess.run([sys.executable, "-c", code, *args], input=stdin, capture_output=True, text=True,
                          cwd=cwd or ROOT, timeout=120, env={**os.environ, "NO_COLOR": "1", "COLUMNS": "60"})


def one_clear_line(proc: subprocess.CompletedProcess[str]) -> str:
    assert proc.returncode == 2, proc.stdout + proc.stderr
    err = proc.stderr
    assert err.startswith("interlock: error: ") and err.count("\n") == 1, err
    assert "Traceback" not in err and "internal error" not in err
    return err


@pytest.mark.parametrize("command", [["check"], ["compile", "x.wf"], ["simulate", "x.yaml"], ["test", "x"],
                                     ["db", "upgrade", "--url", "sqlite://"]])
def test_an_unknown_option_prints_the_subcommands_usage(command: list[str]) -> None:
    proc = cli(*command, "--bogus")
    assert proc.returncode == 2
    name = " ".join(c for c in command if not c.startswith(("x", "sqlite", "--url")))
    assert proc.stderr.startswith(f"usage: interlock {name} "), proc.stderr
    assert "unrecognized arguments: --bogus" in proc.stderr


def test_the_registry_lists_each_commands_own_help_line() -> None:
    """`interlock --help` lists every command from the one registry without importing them: the lines must be the
    commands' own, in the registry's order, and every subcommand the parser knows is in the registry."""
    from interlock.tools import COMMANDS, command

    assert {name: command(name).HELP for name in COMMANDS} == COMMANDS
    shown = " ".join(cli("--help").stdout.split())  # the words of `interlock --help`, wrapping undone
    at = [shown.index(f"{name} {help_line}") for name, help_line in COMMANDS.items()]
    assert at == sorted(at)
    _, parsers = _parser()
    assert [name for name in parsers if " " not in name] == list(COMMANDS)


def test_commands_take_what_they_share_from_cmdline_never_from_cli() -> None:
    """`interlock.cli` parses and dispatches; a command importing from it would tie the two back together."""
    import ast

    offenders = []
    for path in sorted((ROOT / "interlock").rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ImportFrom) and node.module in ("interlock.cli", "cli") and path.name != "cli.py":
                offenders.append(f"{path.relative_to(ROOT)}:{node.lineno}")
    assert offenders == []


def test_every_option_and_argument_has_help() -> None:
    parser, parsers = _parser()
    for name, sub in {"": parser, **parsers}.items():
        for action in sub._actions:
            if isinstance(action, argparse._SubParsersAction):
                continue
            assert action.help, f"`interlock {name}` {action.option_strings or action.dest}: no help text"


@pytest.mark.parametrize("command", [["check", LONG], ["compile", LONG], ["simulate", LONG], ["test", LONG],
                                     ["compile", "examples/kanban.wf", "-o", LONG]])
def test_a_path_too_long_for_the_system(command: list[str]) -> None:
    err = one_clear_line(cli(*command))
    assert "File name too long" in err and "(5000 characters)" in err
    assert len(err) < 300


def test_compile_into_a_missing_folder_or_onto_a_folder(tmp_path: Path) -> None:
    wf = str(ROOT / "examples" / "kanban.wf")
    err = one_clear_line(cli("compile", wf, "-o", str(tmp_path / "nope" / "plan.json")))
    assert f"the folder {tmp_path / 'nope'} does not exist" in err
    err = one_clear_line(cli("compile", wf, "-o", str(tmp_path)))
    assert "is a folder" in err
    assert list(tmp_path.iterdir()) == []



@pytest.mark.parametrize("command", [["compile", "examples/kanban.wf"], ["graph", "examples/kanban.wf"],
                                     ["import", "tests/kandev/fixtures/scripted-release.yml"],
                                     ["export", "examples/kanban.wf"]])
def test_an_output_ending_in_a_slash_is_a_folder_never_a_file(command: list[str], tmp_path: Path) -> None:
    """`-o out/` names a folder: when there is none, nothing is written as a file called `out` (it was), and a file
    called `out` is not overwritten."""
    err = one_clear_line(cli(*command, "-o", f"{tmp_path / 'out'}/"))
    assert f"{tmp_path / 'out'}/" in err and "does not exist" in err
    assert list(tmp_path.iterdir()) == []
    (tmp_path / "out").write_text("keep")
    err = one_clear_line(cli(*command, "-o", f"{tmp_path / 'out'}/"))
    assert "is not a folder" in err and (tmp_path / "out").read_text() == "keep"

BAD_URLS = {
    "": "empty database URL",
    "   ": "empty database URL",
    "nonsense": "cannot parse the database URL `nonsense`",
    "mysql://u@h/db": "unsupported database `mysql`",
    "mongodb://h/db": "unsupported database `mongodb`",
    "postgresql+psycopg2://u@h/db": "unsupported driver `postgresql+psycopg2`",
    "sqlite+aiosqlite:///x.db": "unsupported driver `sqlite+aiosqlite`",
    "sqlite:///x.db?timeout=abc": "`timeout=abc` is not a number of seconds",
    "sqlite:///x.db?foo=bar": "SQLite reads no query argument `foo`",
    "sqlite://:memory:x": "cannot parse the database URL",
    "sqlite://host/x.db": "a SQLite URL names no host",
}


@pytest.mark.parametrize("url", sorted(BAD_URLS))
@pytest.mark.parametrize("command", [["db", "upgrade", "--url"], ["db", "current", "--url"],
                                     ["simulate", "examples/scenarios/crash_and_recover.yaml", "--store"]])
def test_a_bad_store_url_is_a_usage_error(command: list[str], url: str, tmp_path: Path) -> None:
    proc = cli(*[c if not c.startswith("examples") else str(ROOT / c) for c in command], url, cwd=tmp_path)
    err = one_clear_line(proc)
    assert BAD_URLS[url] in err, err
    assert list(tmp_path.iterdir()) == []  # no database file left behind


def test_compile_reads_standard_input_under_a_given_name(tmp_path: Path) -> None:
    proc = cli("compile", "-", "--stdin-filename", "piped.wf", stdin="workflow w { step a { start bogus } }\n")
    assert proc.returncode == 1
    assert "--> piped.wf:1:29" in proc.stderr and "interlock: piped.wf: not compiled" in proc.stderr


def test_plans_are_byte_identical_wherever_they_are_compiled_from(tmp_path: Path) -> None:
    flows = tmp_path / "flows"
    flows.mkdir()
    (flows / "helpers.wf").write_text('workflow helper "H" { step a "A" { start } }\n')
    (flows / "main.wf").write_text('use helpers\nworkflow main "M" { step a "A" { start } }\n')
    plans = [cli("compile", "main.wf", cwd=flows).stdout, cli("compile", "flows/main.wf", cwd=tmp_path).stdout,
             cli("compile", str(flows / "main.wf"), cwd=ROOT).stdout,
             cli("compile", "-", "--stdin-filename", "main.wf", stdin=(flows / "main.wf").read_text(), cwd=flows).stdout]
    out = tmp_path / "plan.json"
    assert main(["compile", str(flows / "main.wf"), "-o", str(out)]) == 0
    plans.append(out.read_text())
    assert plans[0] and all(p == plans[0] for p in plans)
    assert '"helpers.wf"' in plans[0] and '"main.wf"' in plans[0] and str(tmp_path) not in plans[0]


def test_a_file_named_twice_is_checked_once(capsys: pytest.CaptureFixture[str]) -> None:
    wf = str(ROOT / "examples" / "kanban.wf")
    main(["check", wf, wf, os.path.relpath(wf)])
    assert capsys.readouterr().out.strip().endswith(("1 file checked: no problems", "1 file checked"))


def test_a_scenario_named_twice_runs_once(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "s.yaml").write_text(SCENARIO)
    assert main(["test", str(tmp_path / "s.yaml"), str(tmp_path), str(tmp_path / "s.yaml")]) == 0
    assert capsys.readouterr().out.strip().splitlines() == [f"PASS {tmp_path / 's.yaml'}", "1 passed, 0 failed, 0 errors"]


def test_test_reports_a_broken_scenario_and_goes_on(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "a_broken.yaml").write_text("workfow: x.wf\n")
    (tmp_path / "b_refused.yaml").write_text(SCENARIO.replace("to: b}", "to: q}"))
    (tmp_path / "c_fails.yaml").write_text(SCENARIO.replace("{T1: {step: b}}", "{T1: {step: a}}"))
    (tmp_path / "d_passes.yaml").write_text(SCENARIO)
    (tmp_path / "e_plain.yaml").write_text(SCENARIO.split("expect:")[0])
    assert main(["test", str(tmp_path)]) == 1
    lines = capsys.readouterr().out.strip().splitlines()
    assert lines[0] == f"ERROR {tmp_path / 'a_broken.yaml'}"
    assert lines[1].startswith(f"  {tmp_path / 'a_broken.yaml'}:1:1: workfow: unknown key")
    assert lines[2] == f"ERROR {tmp_path / 'b_refused.yaml'}"
    assert f"FAIL {tmp_path / 'c_fails.yaml'}" in lines and f"PASS {tmp_path / 'd_passes.yaml'}" in lines
    assert f"SKIP {tmp_path / 'e_plain.yaml'}: no `expect:` block" in lines
    assert lines[-1] == "1 passed, 1 failed, 2 errors, 1 skipped"


def test_the_table_is_never_cut_when_piped(tmp_path: Path) -> None:
    (tmp_path / "s.yaml").write_text(SCENARIO)
    proc = cli("simulate", str(tmp_path / "s.yaml"), "--format", "table")  # COLUMNS=60, stdout a pipe
    assert proc.returncode == 0, proc.stderr
    assert "…" not in proc.stdout
    [effect] = [line for line in proc.stdout.splitlines() if " effect " in line]
    assert "reason=a reason long enough to be folded" in effect
    [summary] = [line for line in proc.stdout.splitlines() if " summary " in line]
    assert '"guard_skips":{}' in summary and summary.rstrip().endswith("}")


def test_a_folder_with_a_fifo_or_a_dangling_link_named_wf_reports_them(tmp_path: Path) -> None:
    """They were skipped in silence when a folder was checked."""
    (tmp_path / "ok.wf").write_text('workflow w "W" { step a "A" { start } }\n', encoding="utf-8")
    os.mkfifo(tmp_path / "pipe.wf")
    (tmp_path / "gone.wf").symlink_to(tmp_path / "nowhere.wf")
    proc = cli("check", "--format", "concise", str(tmp_path))
    assert proc.returncode == 1
    text = proc.stdout + proc.stderr
    assert "pipe.wf" in text and "FIFO" in text and "gone.wf" in text and "Traceback" not in text
