"""Hostile and mistaken scenario files: each is refused with `file:line:col` and exit 1, never a traceback."""

from __future__ import annotations

import tracemalloc
from pathlib import Path

import pytest

from interlock.cli import main
from interlock.runtime.scenario import ScenarioError, parse_scenario

SOURCE = "source: |\n  workflow w { step a { start manual_move } step b { manual_move } }\n"
TASK = "tasks:\n  T1: {workflow: w, step: a}\n"


def simulate(tmp_path: Path, capsys: pytest.CaptureFixture[str], text: str) -> tuple[int, str, Path]:
    path = tmp_path / "s.yaml"
    path.write_text(text)
    code = main(["simulate", str(path), "--format", "jsonl"])
    err = capsys.readouterr().err
    assert "Traceback" not in err and "internal error" not in err, err
    return code, err, path


BOMB = "".join([SOURCE, "x:\n", "  - &a [l,l,l,l,l,l,l,l,l,l]\n"]
               + [f"  - &{c} [{', '.join(['*' + p] * 10)}]\n" for p, c in zip("abcdefgh", "bcdefghi", strict=True)])

HOSTILE = {
    "deep nesting": (SOURCE + "events: " + "[" * 5000 + "]" * 5000 + "\n", "3:", "nest"),
    "nesting past the scenario bound": (SOURCE + "events: " + "[" * 70 + "]" * 70 + "\n", "3:",
                                        "nested deeper than 64 levels"),
    "5000-digit integer": (SOURCE + "events:\n  - redeliver: " + "9" * 5000 + "\n", "4:16",
                           "a number of 5000 characters is too large"),
    "30-digit position": (SOURCE + "participants:\n  - {step: a, role: reviewer, agent: x, position: " + "9" * 30
                          + "}\n", "4:41", "participants.0.position: `999999999999999999999999999999` is out of range"),
    "NUL in a workflow path": ('workflow: "office\\0.wf"\n', "1:11", "NUL character"),
    "a mapping where a step id belongs": (SOURCE + "tasks:\n  T1: {workflow: w, step: {x: 1}}\n", "4:21",
                                          "tasks.T1.step: expected text, got a mapping"),
    "a list where a dispatch event belongs": (
        SOURCE + TASK + "events:\n  - dispatch: {sequence: agent_error, event: [1, 2]}\n", "6:39",
        "event 1 (`dispatch`): event: expected a mapping (`key: value`), got a list"),
    "a key given twice": (SOURCE + "tasks:\n  T1: {workflow: w, step: a}\n  T1: {workflow: w, step: b}\n", "5:3",
                          "`T1` is given twice in this mapping (first at line 4)"),
    "a key given twice in an event": (SOURCE + TASK + "events:\n  - move: {task: T1, to: b, to: a}\n", "6:29",
                                      "`to` is given twice"),
    "an alias bomb": (BOMB, "", "YAML aliases expand this file beyond 10000 extra values"),
    "a recursive alias": (SOURCE + "x: &a [*a]\n", "3:", "refers to a list or mapping that contains it"),
    "an unsupported tag": (SOURCE + "x: !!python/object:os.system ls\n", "3:4", "unsupported YAML tag"),
    "a top-level list": ("- a\n", "1:1", "a scenario is a YAML mapping"),
    "not YAML": (SOURCE + "tasks: {T1: [\n", "4:", "not valid YAML"),
    "a bare word event": (SOURCE + "events:\n  - restrat\n", "4:5", "`restrat` is not an event (did you mean `restart`?)"),
    "an event with two keys": (SOURCE + "events:\n  - {move: {}, fire: {}}\n", "4:5",
                               "an event is a mapping with exactly one key"),
}


@pytest.mark.parametrize("case", sorted(HOSTILE))
def test_hostile_scenario_is_a_located_error(case: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    text, where, words = HOSTILE[case]
    code, err, path = simulate(tmp_path, capsys, text)
    assert code == 1, err
    assert err.startswith(f"{path}:{where}"), err
    assert words in err, err


def test_an_alias_bomb_is_refused_within_a_few_megabytes() -> None:
    """A 1 kB file whose aliases would expand to 10^9 strings: refused before it expands (the memory it took
    shows it; a time bound would depend on the machine)."""
    assert len(BOMB) < 1024
    tracemalloc.start()
    try:
        with pytest.raises(ScenarioError, match="alias bomb"):
            parse_scenario(BOMB, "bomb.yaml")
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < 8 * 1024 * 1024


def test_aliases_and_merges_within_the_bound_work() -> None:
    scenario = parse_scenario(SOURCE + "tasks:\n  T1: &t {workflow: w, step: a}\n  T2: {<<: *t, step: b}\n")
    assert {k: v.step for k, v in scenario.tasks.items()} == {"T1": "a", "T2": "b"}


MISTAKES = {
    "a misspelt top-level key": ("workfow: office.wf\n", "1:1", "workfow: unknown key `workfow` (did you mean `workflow`?)"),
    "a misspelt fault": (SOURCE + "executors: {queue_run: {fial: 1}}\n", "3:25",
                         "executors.queue_run.fial: unknown key `fial` (did you mean `fail`?)"),
    "an executor word that is not `missing`": (SOURCE + "executors: {queue_run: mising}\n", "3:13",
                                               "`mising` is not an executor setting"),
    "a negative fault count": (SOURCE + "executors: {queue_run: {panic: -2}}\n", "3:25",
                               "executors.queue_run.panic: `-2` is out of range: must be at least 0"),
    "a misspelt event field": (SOURCE + TASK + "events:\n  - move: {task: T1, too: b}\n", "6:5",
                               "event 1 (`move`): too: unknown key `too` (did you mean `to`?)"),
    "a missing event field": (SOURCE + TASK + "events:\n  - move: {task: T1}\n", "6:5",
                              "event 1 (`move`): to: missing `to`"),
    "an unknown verdict": (SOURCE + TASK + "events:\n  - decide: {task: T1, user: u, verdict: aproved}\n", "6:33",
                           "verdict: expected 'approved', 'rejected' or 'changes_requested', got `aproved`"),
    "a decision with no one": (SOURCE + TASK + "events:\n  - decide: {task: T1, verdict: approved}\n", "6:5",
                               "give exactly one of `agent` (with its `role`) or `user`"),
    "a redelivery of a later event": (SOURCE + "events:\n  - redeliver: 1\n", "4:5",
                                      "`redeliver: N` names an earlier event"),
    "an unknown route": (SOURCE + TASK + "events:\n  - move: {task: T1, to: b, route: teleport}\n", "6:29",
                         "route: expected 'creation'"),
}


@pytest.mark.parametrize("case", sorted(MISTAKES))
def test_mistakes_are_errors_in_the_authors_words(case: str, tmp_path: Path,
                                                   capsys: pytest.CaptureFixture[str]) -> None:
    text, where, words = MISTAKES[case]
    code, err, path = simulate(tmp_path, capsys, text)
    assert code == 1, err
    assert err.startswith(f"{path}:{where}: "), err
    assert words in err, err
    for internal in ("literal[", "function-", "Input should", "ExecutorFault", "Value error"):
        assert internal not in err, err


def test_every_problem_is_listed_each_with_its_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    text = SOURCE + "tasks:\n  T1: {workflow: w, stp: a}\nexecutors: {queue_run: {fial: 1}}\nevents:\n  - teleport: {}\n"
    code, err, path = simulate(tmp_path, capsys, text)
    assert code == 1
    lines = err.strip().splitlines()
    assert [line.split(": ", 1)[0] for line in lines] == [f"{path}:4:3", f"{path}:4:21", f"{path}:5:25", f"{path}:7:5"]


def test_an_inline_source_error_is_at_the_yaml_files_own_line(tmp_path: Path,
                                                              capsys: pytest.CaptureFixture[str]) -> None:
    text = "# a scenario\ntasks: {}\nsource: |\n  workflow w {\n    step a { start bogus }\n  }\nevents: []\n"
    code, err, path = simulate(tmp_path, capsys, text)
    assert code == 1
    assert f"--> {path}:5:20" in err, err  # line 5 of the YAML file, column of `bogus` in it
    assert "5 |     step a { start bogus }" in err
