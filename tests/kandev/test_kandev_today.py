"""kandev as it is today in `interlock import` / `export` (ADR 0042, ADR 0043): `run_script`, `session_target`,
agent tags and entry options import without false errors and export back; every place the `.wf` behaves
differently from kandev has its note; comments and folded text are kept; `--strict`, the option names and the
summary; and every message names kandev."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from support.kandev import FIXTURES, comparable, compiled, data, export, import_clean, template

from interlock.cli import main
from interlock.kandev.importer import import_text

HEAD = "id: w\nname: W\nsteps:\n"
START = "  - id: a\n    name: A\n    position: 0\n    is_start_step: true\n    allow_manual_move: true\n"
DONE = "  - id: done\n    name: Done\n    position: 9\n    allow_manual_move: true\n"


def step(events: str = "", extra: str = "") -> str:
    return HEAD + START + extra + ("    events:\n" + events if events else "") + DONE


def codes(text: str) -> list[str]:
    return [d.code for d in import_text(text, "t.yml").diagnostics]


def wf(text: str) -> str:
    result = import_clean(text, "t.yml")
    return result.workflows[0][1]


SCRIPT = ("      on_enter:\n        - type: run_script\n          config:\n            command: make lint\n"
          "            timeout_seconds: 60\n            failure_policy: continue\n")


# ---- kandev today's forms import (they were refused: KV003, KV004) --------------------------------------------------

def test_run_script_and_session_target_import_without_false_errors() -> None:
    """The issue's first example: `KV003 … refuses the file` and `KV004 unknown action type run_script` were false."""
    text = step(SCRIPT, "    session_target: {kind: initial}\n")
    result = import_text(text, "t.yml")
    assert [d.code for d in result.diagnostics if d.is_error] == []
    written = result.workflows[0][1]
    assert 'run_script(command: "make lint", timeout_seconds: 60) continue_on_failure' in written
    assert "session_target initial" in written


def test_the_script_template_round_trips_in_both_formats() -> None:
    original = (FIXTURES / "scripted-release.yml").read_text()
    text = wf(original)
    plan = compiled("a.wf", text)
    prepare, build, review, _ = plan.workflows[0].steps
    assert prepare.session_target is not None and prepare.session_target.kind == "initial"
    assert build.session_target is not None and build.session_target.step_id == "prepare"
    assert review.agent_tag == "release-reviewers"
    script, move = prepare.handlers["on_turn_complete"]
    assert (script.kind, script.continue_on_failure) == ("run_script", True)
    assert move.args["options"] == {"instructions": "Start from the failing test, not from the spec.",
                                    "skip_step_prompt": False}
    yaml_text, diagnostics = export(text, "template")
    assert diagnostics == [] and data(yaml_text) == data(original)
    portable, dropped = export(text, "portable")
    scripts = [a for s in data(portable)["workflows"][0]["steps"] for t in s.get("events", {}).values() for a in t
               if a["type"] == "run_script"]
    # the portable format writes run_script's defaults out, as kandev's own export does
    assert all({"timeout_seconds", "failure_policy"} <= set(a["config"]) for a in scripts)
    assert {"session_target", "agent_tag"} <= {m for d in dropped for m in ("session_target", "agent_tag")
                                                if f"`{m}`" in d.message}
    again = import_clean(portable)
    assert comparable(compiled("b.wf", again.workflows[0][1]))["workflows"][0]["steps"][0]["handlers"] == \
        comparable(plan)["workflows"][0]["steps"][0]["handlers"]


@pytest.mark.parametrize(("config", "message"), [
    ("            command: ''\n", "needs a non-empty `command`"),
    ("            command: x\n            timeout_seconds: 0\n", "must be 1 or more"),
    ("            command: x\n            timeout_seconds: 86401\n", "86,400 or less"),
    ("            command: x\n            failure_policy: retry\n", "is not `block` or `continue`"),
])
def test_a_script_kandev_refuses_is_not_imported(config: str, message: str) -> None:
    result = import_text(step("      on_enter:\n        - type: run_script\n          config:\n" + config), "t.yml")
    errors = [d for d in result.diagnostics if d.is_error]
    assert [d.code for d in errors] == ["KV002"] and message in errors[0].message


@pytest.mark.parametrize(("extra", "code", "message"), [
    ("    session_target: {kind: step, step_id: nowhere}\n", "KV006", "names no step `nowhere`"),
    ("    session_target: {kind: step, step_id: done}\n", "KV002", "tag-configured"),
    ("    session_target: {kind: somewhere}\n", "KV002", "`{kind: initial}` or `{kind: step"),
    ("    session_target: {kind: initial, step_id: done}\n", "KV002", "`{kind: initial}` or `{kind: step"),
    ("    session_target: {kind: initial, colour: red}\n", "KV003", "has no key `colour`"),
    ("    session_target: {kind: initial}\n    events:\n      on_enter:\n        - type: configure_session\n",
     "KV002", "cannot be combined with `configure_session`"),
    ("    agent_tag: ''\n", "KV002", "`agent_tag` is empty"),
    ("    agent_tag: t\n    agent_profile_id: p\n", "KV002", "not both"),
])
def test_session_targets_and_tags_are_checked_as_kandev_checks_them(extra: str, code: str, message: str) -> None:
    text = HEAD + START + extra + DONE.replace("allow_manual_move: true\n", "allow_manual_move: true\n"
                                               "    agent_tag: reviewers\n")
    found = [d for d in import_text(text, "t.yml").diagnostics if d.code == code]
    assert any(message in d.message for d in found), [d.message for d in found]


def test_seats_on_entry_and_the_fan_out_payload_export_as_a_template() -> None:
    """Today's Office Default: `ensure_participant_seat` on entry is no longer refused (KV014)."""
    text = wf((FIXTURES / "office-default-current.yml").read_text())
    assert "ensure_seats(role: reviewer)" in text
    yaml_text, diagnostics = export(text, "template")
    assert diagnostics == []
    review = data(yaml_text)["steps"][2]
    assert [a["type"] for a in review["events"]["on_enter"]] == [
        "clear_decisions", "ensure_participant_seat", "queue_run_for_each_participant"]


# ---- where interlock differs: one code each ------------------------------------------------------------------

def test_a_step_without_allow_manual_move_is_imported_with_manual_move_and_a_note() -> None:
    """kandev never enforces the flag: without `manual_move` a board's drag-and-drop would stop working."""
    text = HEAD + "  - id: a\n    name: A\n    position: 0\n    is_start_step: true\n" + DONE
    result = import_text(text, "t.yml")
    (note,) = [d for d in result.diagnostics if d.code == "KV017"]
    assert (note.severity.value, note.span.line) == ("note", 4)
    plan = compiled("a.wf", result.workflows[0][1])
    assert plan.workflows[0].steps[0].manual_move is True
    yaml_text, _ = export(result.workflows[0][1], "template")
    assert data(yaml_text)["steps"][0]["allow_manual_move"] is True


def test_allow_manual_move_false_is_kept_and_warned_about() -> None:
    text = HEAD + START.replace("allow_manual_move: true", "allow_manual_move: false") + DONE
    result = import_text(text, "t.yml")
    assert [d.code for d in result.diagnostics] == ["KV018"]
    assert "manual_move false" in result.workflows[0][1]


def test_export_writes_false_for_a_step_without_manual_move_so_the_round_trip_keeps_the_plan() -> None:
    source = 'workflow w "W" {\n  step a "A" { start }\n  step b "B" { manual_move }\n}\n'
    yaml_text, _ = export(source, "template")
    assert [s["allow_manual_move"] for s in data(yaml_text)["steps"]] == [False, True]
    assert comparable(compiled("b.wf", wf(yaml_text))) == comparable(compiled("a.wf", source))


def test_a_blocking_entry_script_with_actions_after_it_is_warned_about() -> None:
    events = ("      on_enter:\n        - type: run_script\n          config: {command: make}\n"
              "        - type: auto_start_agent\n        - type: run_script\n          config: {command: last}\n")
    found = [(d.code, d.span.line) for d in import_text(step(events), "t.yml").diagnostics if d.code == "KV019"]
    assert found == [("KV019", 11)]  # the first script only: the last one has nothing after it


def test_generic_triggers_of_a_portable_document_are_a_difference_not_an_export_drop() -> None:
    text = ("version: 1\ntype: kandev_workflow\nworkflows:\n  - name: P\n    steps:\n      - name: A\n"
            "        position: 0\n        is_start_step: true\n        allow_manual_move: true\n        events:\n"
            "          on_comment:\n            - type: clear_decisions\n")
    assert "KV020" in codes(text) and "KV015" not in codes(text)


def test_script_timeouts_and_wip_limits_are_noted() -> None:
    assert codes(step(SCRIPT)).count("KV021") == 1
    assert "KV022" in codes(step(extra="    wip_limit: 3\n"))
    assert "KV022" not in codes(step(extra="    wip_limit: 0\n"))



def test_the_script_timeout_note_says_what_happens_at_the_executor_timeout() -> None:
    """KV021 ends by saying what interlock does when the script outlives `executor_timeout` (it ended on a dangling
    "which then decides")."""
    (note,) = [d for d in import_text(step(SCRIPT), "t.yml").diagnostics if d.code == "KV021"]
    assert note.message == ("kandev gives this script 60 seconds; interlock abandons a host executor after the "
                            "runtime's `executor_timeout` (60 seconds unless the host sets it) and records the call "
                            "as failed (`timed out`)")

# ---- comments and folded text --------------------------------------------------------------------------------

COMMENTED = """\
# The team's board.
# Two lines of header.
id: w   # the id
name: W
description: >-
  A long description that the YAML folds over
  two lines.
steps:
  # the first step
  - id: a  # starts here
    name: A
    position: 0
    is_start_step: true
    allow_manual_move: true
    events:
      on_enter:  # when a task arrives
        - type: auto_start_agent  # the agent
        - type: queue_run
          config:
            reason: go   # why
  - id: done
    name: Done
    position: 1
    allow_manual_move: true
# the end
"""


def test_comments_are_kept_at_the_nearest_place() -> None:
    text = wf(COMMENTED)
    lines = text.splitlines()
    assert lines[:2] == ["# The team's board.", "# Two lines of header."]
    assert lines[2].startswith('workflow w "W" {') and lines[2].endswith("# the id")
    assert any(line.strip() == "# the first step" for line in lines)
    assert any(line.strip().startswith('step a "A" {') and line.endswith("# starts here") for line in lines)
    assert any(line.strip().startswith("auto_start_agent") and line.endswith("# the agent") for line in lines)
    assert lines[-1] == "# the end"
    for comment in ("# when a task arrives", "# why"):
        assert sum(comment in line for line in lines) == 1
    # comments change nothing: the same plan as without them
    bare = "\n".join(line.split("#")[0].rstrip() for line in COMMENTED.splitlines()) + "\n"
    assert comparable(compiled("a.wf", text)) == comparable(compiled("b.wf", wf(bare)))


def test_a_comment_never_lands_inside_a_block_string() -> None:
    original = HEAD + START + "    prompt: |  # the prompt\n      line one\n      # not a comment\n" + DONE
    text = wf(original)
    assert compiled("a.wf", text).workflows[0].steps[0].prompt == "line one\n# not a comment\n"
    assert text.count("# the prompt") == 1


def test_folded_text_becomes_a_folded_block_string() -> None:
    """It was one line of 200+ characters."""
    text = wf(COMMENTED)
    assert 'description >"""' in text
    assert max(len(line) for line in text.splitlines()) <= 100
    plan = compiled("a.wf", text)
    assert plan.workflows[0].description == "A long description that the YAML folds over two lines."
    yaml_text, _ = export(text, "template")
    assert "description: >-" in yaml_text
    assert data(yaml_text)["description"] == plan.workflows[0].description


def test_every_template_comment_is_kept() -> None:
    for name in ("office-default", "office-default-current", "scripted-release"):
        original = template(name).read_text()
        text = wf(original)
        for line in original.splitlines():
            if line.lstrip().startswith("#"):
                assert line.strip() in text, (name, line)


# ---- the command line -----------------------------------------------------------------------------------------

OFFICE = FIXTURES / "office-default-current.yml"


def _run(args: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    code = main(args)
    out, err = capsys.readouterr()
    return code, out, err


def test_the_summary_counts_the_files_written(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """It said `1 file checked` when it wrote two files."""
    portable = FIXTURES / "portable-two-workflows.yml"
    code, out, _ = _run(["import", str(portable), "-o", str(tmp_path), "--diagnostics-format", "concise"], capsys)
    # KV018 (Done), and the liveness checks of what was written: Triage Board has no terminal step (IL509) and
    # its `needs-info` prompt is never sent (IL511) — both true of the fixture
    assert code == 0 and out.splitlines()[-1] == "1 file read, 2 files written: 3 warnings"
    code, out, _ = _run(["export", str(tmp_path / "triage-board.wf"), "-o", str(tmp_path / "t.yml")], capsys)
    assert code == 0 and out.splitlines()[-1].startswith("1 file read, 1 file written")


def test_export_strict_fails_on_any_drop(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """`export --format portable` of Office Default dropped its on_agent_error handlers and exited 0."""
    office = tmp_path / "office.wf"
    office.write_text(wf(OFFICE.read_text()))
    target = tmp_path / "o.yml"
    code, out, _ = _run(["export", str(office), "--yaml-format", "portable", "-o", str(target),
                         "--diagnostics-format", "json", "-q"], capsys)
    dropped = [d for d in json.loads(out)["diagnostics"] if d["code"] == "KV015"]
    assert code == 0 and target.exists() and {d["severity"] for d in dropped} == {"warning"}
    assert sum("`on_agent_error`" in d["message"] for d in dropped) == 3
    target.unlink()
    code, out, _ = _run(["export", str(office), "--yaml-format", "portable", "-o", str(target), "--strict",
                         "--diagnostics-format", "json", "-q"], capsys)
    doc = json.loads(out)
    assert code == 1 and not target.exists()
    assert {d["severity"] for d in doc["diagnostics"] if d["code"] == "KV015"} == {"error"}
    assert doc["summary"]["written"] == 0
    code, _, _ = _run(["export", str(office), "--strict", "-q", "-o", str(target)], capsys)
    assert code == 0 and target.exists()  # the template format carries all of it


def test_import_strict_fails_on_a_dropped_config_key(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    src = tmp_path / "t.yml"
    src.write_text(step("      on_enter:\n        - type: auto_start_agent\n          config: {prompt: hi}\n"))
    assert _run(["import", str(src), "-q", "-o", str(tmp_path / "a.wf")], capsys)[0] == 0
    code, out, _ = _run(["import", str(src), "--strict", "--diagnostics-format", "concise",
                         "-o", str(tmp_path / "b.wf")], capsys)
    assert code == 1 and "error[KV005]" in out and not (tmp_path / "b.wf").exists()


@pytest.mark.parametrize(("args", "same_as"), [
    (["import", "{yml}", "--format", "json"], ["import", "{yml}", "--diagnostics-format", "json"]),
    (["export", "{wf}", "--format", "portable"], ["export", "{wf}", "--yaml-format", "portable"]),
    (["export", "{wf}", "--diagnostics", "json"], ["export", "{wf}", "--diagnostics-format", "json"]),
])
def test_the_old_option_spellings_are_hidden_aliases(args: list[str], same_as: list[str], tmp_path: Path,
                                                     capsys: pytest.CaptureFixture[str]) -> None:
    yml = tmp_path / "t.yml"
    yml.write_text(step(extra="    wip_limit: 2\n"))
    wf_file = tmp_path / "t.wf"
    wf_file.write_text('workflow w "W" {\n  step a "A" { start manual_move  on on_comment { clear_decisions } }\n}\n')

    def run(argv: list[str]) -> tuple[int, str, str]:
        return _run([a.format(yml=yml, wf=wf_file) for a in argv], capsys)

    assert run(args) == run(same_as)
    for command in ("import", "export"):
        _, help_text, _ = _run_help(command, capsys)
        assert "--diagnostics-format" in help_text and "--strict" in help_text
        assert "--format " not in help_text and "--diagnostics " not in help_text
    assert "--yaml-format" in _run_help("export", capsys)[1]


def _run_help(command: str, capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    return _run([command, "--help"], capsys)


@pytest.mark.parametrize("argv", [["--help"], ["import", "--help"], ["export", "--help"]])
def test_the_help_names_kandev(argv: list[str], capsys: pytest.CaptureFixture[str]) -> None:
    assert main(argv) == 0
    out = capsys.readouterr().out
    assert "kandev" in out and "seed" not in out.lower()


def test_every_message_names_kandev() -> None:
    """Import and export messages say kandev (they said "the seed")."""
    texts: list[Any] = []
    bad = step("      on_enter:\n        - type: launch\n        - type: auto_start_agent\n          config: {x: 1}\n"
               "      on_turn_start:\n        - type: move_to_next\n          config: {requires_approval: true}\n",
               "    colour: red\n")
    texts += [d.message + (d.help or "") for d in import_text(bad, "t.yml").diagnostics]
    source = ('workflow w "W" {\n  description "d"\n  step a "A" { start description "x"\n'
              '    on on_comment { set_workflow_data(key: "k", value: 1) } }\n}\n')
    from interlock.dsl import parse_bytes
    from interlock.kandev.exporter import export_program
    module, _ = parse_bytes("w.wf", source.encode())
    assert module is not None
    texts += [d.message + (d.help or "") for fmt in ("template", "portable")
              for d in export_program(module, compiled("w.wf", source), fmt).diagnostics]
    assert texts and all("seed" not in t.lower() for t in texts), [t for t in texts if "seed" in t.lower()]
    assert sum("kandev" in t for t in texts) >= 5
