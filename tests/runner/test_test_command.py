"""`interlock test`: failures located at the expectation's `file:line:col` with the nearest actual record as YAML,
`-k` selection, `--format json|junit` (JUnit XML valid against the format CI systems read, tests/runner/junit.xsd),
and the exit statuses."""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET
from collections.abc import Callable
from pathlib import Path

import pytest
import xmlschema
import yaml

from interlock.runner.select import SelectError, compile_expression

Run = Callable[..., tuple[int, str, str]]
XSD = Path(__file__).with_name("junit.xsd")


def test_a_failure_names_the_expectations_line_and_shows_the_nearest_record_as_yaml(suite: Path, run: Run) -> None:
    code, out, _ = run(str(suite / "failing.yaml"))
    assert code == 1
    name = suite / "failing.yaml"
    lines = out.splitlines()
    assert lines[0] == f"FAIL {name}"
    # each expectation at its own line and column of the scenario file (FAILING in conftest.py)
    assert f"  {name}:11:11: task T1: at step `review`, expected `done`" in lines
    assert f"  {name}:12:27: counters: `transitions` is 1, expected 7" in lines
    assert (f"  {name}:15:7: records: no record matching {{record: decision, task: T1, result: moved}} after seq 2 "
            "(in order)") in lines
    # the nearest actual record follows, as YAML (not a Python dict), indented under its failure
    at = lines.index(f"  {name}:11:11: task T1: at step `review`, expected `done`")
    assert lines[at + 1] == "    nearest actual record:"
    block = []
    for line in lines[at + 2:]:
        if not line.startswith("      "):
            break
        block.append(line[6:])
    record = yaml.safe_load("\n".join(block))
    assert record["record"] == "arrival" and record["to"] == "review" and record["task"] == "T1"
    assert "{'" not in out and "'}" not in out  # no dict repr anywhere
    assert lines[-1] == "0 passed, 1 failed, 0 errors"


def test_a_record_expectation_shows_the_record_of_its_kind_that_agrees_most(suite: Path, run: Run) -> None:
    text = (suite / "office_review_round_trip.yaml").read_text(encoding="utf-8")
    wrong = text.replace("{record: arrival, task: T1, from: approval, to: done, route: decision}",
                         "{record: arrival, task: T1, from: approval, to: done, route: manual_move}")
    assert wrong != text
    (suite / "wrong.yaml").write_text(wrong, encoding="utf-8")
    code, out, _ = run(str(suite / "wrong.yaml"))
    assert code == 1
    at = out.index("records: no record matching {record: arrival, task: T1, from: approval, to: done, "
                   "route: manual_move}")
    record = yaml.safe_load("\n".join(line[6:] for line in out[at:].splitlines()[2:12] if line.startswith("      ")))
    assert (record["record"], record["from"], record["to"], record["route"]) == ("arrival", "approval", "done",
                                                                                 "decision")


def test_every_outcome_and_the_closing_line(suite: Path, run: Run) -> None:
    code, out, _ = run(str(suite))
    assert code == 1
    assert f"ERROR {suite / 'broken.yaml'}" in out and f"FAIL {suite / 'failing.yaml'}" in out
    assert f"SKIP {suite / 'plain.yaml'}: no `expect:` block" in out
    assert out.splitlines()[-1] == "7 passed, 1 failed, 1 error, 1 skipped"


@pytest.mark.parametrize(("expression", "chosen"), [
    ("office", {"office_rejection_reentry", "office_review_round_trip"}),
    ("OFFICE and not rejection", {"office_review_round_trip"}),
    ("manual_move or crash", {"manual_move_no_session", "manual_move_refused", "crash_and_recover"}),
    ("(guards or restart) and not office", {"agent_error_guards", "redelivery_and_restart"}),
    ("not (a or e or i or o or u)", set()),
])
def test_k_selects_by_name(expression: str, chosen: set[str], suite: Path, run: Run) -> None:
    code, out, err = run(str(suite), "-k", expression, "--format", "json")
    if not chosen:
        assert code == 2 and "selects none of the 10 scenario file(s)" in err
        return
    assert code == 0, out
    doc = json.loads(out)
    assert {Path(s["name"]).stem for s in doc["scenarios"]} == chosen
    assert doc["summary"]["deselected"] == 10 - len(chosen)


@pytest.mark.parametrize("bad", ["and", "a and", "(a", "a )", "not", "a or or b", "()"])
def test_a_malformed_k_is_a_usage_error(bad: str, suite: Path, run: Run) -> None:
    with pytest.raises(SelectError):
        compile_expression(bad)
    code, _, err = run(str(suite), "-k", bad)
    assert code == 2 and err.startswith("interlock: error: -k ")


def test_k_in_the_text_closing_line(suite: Path, run: Run) -> None:
    code, out, _ = run(str(suite), "-k", "round_trip")
    assert code == 0 and out.splitlines()[-1] == "1 passed, 0 failed, 0 errors, 9 deselected"


def test_json_is_versioned_and_complete(suite: Path, run: Run) -> None:
    code, out, _ = run(str(suite), "--format", "json")
    assert code == 1
    doc = json.loads(out)
    assert doc["test_version"] == 1
    assert doc["summary"] == {"passed": 7, "failed": 1, "error": 1, "skipped": 1, "deselected": 0}
    assert doc["coverage"] is None
    by_name = {Path(s["name"]).name: s for s in doc["scenarios"]}
    failing = by_name["failing.yaml"]
    assert failing["status"] == "failed" and failing["error"] is None
    first = failing["failures"][0]
    assert set(first) == {"part", "where", "message", "expected", "nearest"}
    assert first["where"].endswith("failing.yaml:11:11") and first["nearest"]["record"] == "arrival"
    assert by_name["broken.yaml"]["status"] == "error" and "unknown event `teleport`" in by_name["broken.yaml"]["error"]
    assert by_name["plain.yaml"]["status"] == "skipped"


def test_junit_is_valid_against_the_format_ci_systems_read(suite: Path, run: Run, tmp_path: Path) -> None:
    report = tmp_path / "report.xml"
    code, out, _ = run(str(suite), "--format", "junit", "-o", str(report), "--coverage")
    assert code == 1 and out == ""
    schema = xmlschema.XMLSchema(str(XSD))
    schema.validate(str(report))  # raises with the place of the first violation
    root = ET.parse(report).getroot()
    suite_el = root.find("testsuite")
    assert suite_el is not None
    assert (suite_el.get("tests"), suite_el.get("failures"), suite_el.get("errors"), suite_el.get("skipped")) == (
        "10", "1", "1", "1")
    cases = {Path(c.get("name", "")).name: c for c in suite_el.findall("testcase")}
    failure = cases["failing.yaml"].find("failure")
    assert failure is not None and failure.get("message") == "task T1: at step `review`, expected `done`"
    assert "failing.yaml:11:11" in (failure.text or "") and "nearest actual record:" in (failure.text or "")
    error = cases["broken.yaml"].find("error")
    assert error is not None and "teleport" in (error.get("message") or "")
    assert cases["plain.yaml"].find("skipped") is not None
    assert cases["office_review_round_trip.yaml"].find("failure") is None
    out_el = suite_el.find("system-out")
    assert out_el is not None and (out_el.text or "").startswith("coverage: ")


def test_the_schema_check_is_real(tmp_path: Path) -> None:
    """The schema refuses what CI systems refuse: a testcase without a name, a file attribute, a bad time."""
    schema = xmlschema.XMLSchema(str(XSD))
    for bad in ('<testsuites><testsuite name="s" tests="1" failures="0" errors="0"><testcase/></testsuite>'
                "</testsuites>",
                '<testsuites><testsuite name="s" tests="1" failures="0" errors="0"><testcase name="a" file="x"/>'
                "</testsuite></testsuites>",
                '<testsuites><testsuite name="s" tests="1" failures="0" errors="0" time="1s"/></testsuites>',
                '<testsuites><testsuite name="s" failures="0" errors="0"/></testsuites>'):
        assert not schema.is_valid(bad), bad


def test_junit_carries_no_character_xml_cannot(suite: Path, run: Run, tmp_path: Path) -> None:
    (suite / "control.yaml").write_text(
        'workflow: office_default.wf\nevents: []\nexpect: {counters: {"odd\\u0001name": 1}}\n', encoding="utf-8")
    report = tmp_path / "r.xml"
    code, _, _ = run(str(suite / "control.yaml"), "--format", "junit", "-o", str(report))
    assert code == 1
    xmlschema.XMLSchema(str(XSD)).validate(str(report))
    assert "\ufffd" in report.read_text(encoding="utf-8")


def test_output_into_a_missing_folder_is_a_usage_error(suite: Path, run: Run, tmp_path: Path) -> None:
    code, _, err = run(str(suite / "failing.yaml"), "--format", "json", "-o", str(tmp_path / "no" / "r.json"))
    assert code == 2 and "does not exist" in err
