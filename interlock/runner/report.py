"""The results of `interlock test` in, its report out: text for people, JSON (versioned) and JUnit XML for CI.

A failure is shown as the expectation's `file:line:col` and message, then the nearest actual record as
YAML; a scenario that could not run as its error.  JUnit XML follows the format CI systems read (the
element and attribute set of the common `junit-10` schema: `testsuites` > `testsuite` > `testcase` with
`failure`, `error` or `skipped`); JSON carries `test_version`, which changes only when a key changes
meaning or disappears.
"""

from __future__ import annotations

import json
import re
import xml.etree.ElementTree as ET
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import yaml

from interlock.runtime.expectations import Failure

__all__ = ["Result", "TEST_VERSION", "text_report", "json_report", "junit_report", "failure_text", "summary_line"]

TEST_VERSION = 1
"""The version of the JSON report (`test_version`)."""

_NOT_XML = re.compile("[^\u0009\u000a\u000d\u0020-\ud7ff\ue000-\ufffd\U00010000-\U0010ffff]")


@dataclass
class Result:
    """One scenario's outcome: `passed`, `failed`, `error` (it could not run) or `skipped` (no `expect:` block)."""

    name: str
    status: str
    failures: list[Failure] = field(default_factory=list)
    error: str | None = None
    seconds: float = 0.0
    records: list[dict[str, Any]] = field(default_factory=list)


def _yaml(value: Any) -> str:
    return yaml.safe_dump(json.loads(json.dumps(value, default=str)), sort_keys=False, allow_unicode=True,
                          default_flow_style=False, width=100).rstrip("\n")


def failure_text(failure: Failure) -> str:
    """`file:line:col: message`, then the nearest actual record as YAML, indented."""
    lines = [f"{failure.where}: {failure.message}"]
    if failure.nearest is not None:
        lines.append("  nearest actual record:")
        lines += [f"    {line}" for line in _yaml(failure.nearest).splitlines()]
    else:
        lines.append("  no actual record comes near it")
    return "\n".join(lines)


def _counts(results: Sequence[Result]) -> dict[str, int]:
    return {status: sum(r.status == status for r in results) for status in ("passed", "failed", "error", "skipped")}


def summary_line(results: Sequence[Result], deselected: int) -> str:
    """`N passed, M failed, K errors` (then the skipped and deselected ones, when there are)."""
    n = _counts(results)
    line = f"{n['passed']} passed, {n['failed']} failed, {n['error']} error{'s' if n['error'] != 1 else ''}"
    if n["skipped"]:
        line += f", {n['skipped']} skipped"
    if deselected:
        line += f", {deselected} deselected"
    return line


def _coverage_lines(coverage: dict[str, Any]) -> list[str]:
    out = [f"coverage: {coverage['percent']}% ({coverage['covered_units']} of {coverage['total_units']})"]
    for plan in coverage["plans"]:
        out.append(f"  {plan['source']}: {plan['percent']}% ({plan['covered_units']} of {plan['total_units']}, "
                   f"{plan['scenarios']} scenario{'s' * (plan['scenarios'] != 1)})")
        for wf in plan["workflows"]:
            out.append(f"    workflow {wf['id']}: {wf['percent']}% ({wf['covered_units']} of {wf['total_units']})")
            for category in ("steps", "transitions", "guards", "entry_kinds"):
                out += _part_lines(category.replace("_", " "), wf[category], "      ")
        out += _part_lines("dispatch sequence guards", plan["sequences"], "    ")
    if coverage["threshold"] is not None:
        verdict = "under" if coverage["below_threshold"] else "at or above"
        out.append(f"coverage {coverage['percent']}% is {verdict} the threshold {coverage['threshold']}%")
    return out


def _part_lines(title: str, part: dict[str, Any], indent: str) -> list[str]:
    covered, missed = len(part["covered"]), len(part["missed"])
    if covered + missed == 0:
        return []
    note = "" if part["counted"] else "  (not recorded by this runtime: left out of the percentage)"
    out = [f"{indent}{title}: {covered} of {covered + missed}{note}"]
    if missed:
        out.append(f"{indent}  never: {', '.join(part['missed'])}")
    return out


def text_report(results: Sequence[Result], deselected: int, coverage: dict[str, Any] | None,
                verbose: bool) -> str:
    out: list[str] = []
    for r in results:
        if r.status == "skipped":
            out.append(f"SKIP {r.name}: no `expect:` block")
        elif r.status == "error":
            out.append(f"ERROR {r.name}")
            out += [f"  {line}" for line in (r.error or "").splitlines()]
        elif r.status == "failed":
            out.append(f"FAIL {r.name}")
            for failure in r.failures:
                out += [f"  {line}" for line in failure_text(failure).splitlines()]
            if verbose:
                out += [f"    {json.dumps(record, default=str)}" for record in r.records]
        else:
            out.append(f"PASS {r.name}")
    if coverage is not None:
        out += _coverage_lines(coverage)
    out.append(summary_line(results, deselected))
    return "\n".join(out) + "\n"


def json_report(results: Sequence[Result], deselected: int, coverage: dict[str, Any] | None) -> str:
    doc = {"test_version": TEST_VERSION,
           "summary": {**_counts(results), "deselected": deselected},
           "scenarios": [{"name": r.name, "status": r.status, "error": r.error,
                          "failures": [{"part": f.part, "where": f.where, "message": f.message,
                                        "expected": f.expected, "nearest": f.nearest} for f in r.failures]}
                         for r in results],
           "coverage": coverage}
    return json.dumps(doc, indent=2, ensure_ascii=False, default=str) + "\n"


def _xml_text(text: str) -> str:
    """Text XML 1.0 can carry: other characters (NUL, most control characters, lone surrogates) as U+FFFD."""
    return _NOT_XML.sub("\ufffd", text)


def junit_report(results: Sequence[Result], deselected: int, coverage: dict[str, Any] | None) -> str:
    """JUnit XML: one `testsuite` of one `testcase` per scenario (classname: its folder, dotted); a failure's
    message is its first expectation's, its text every expectation with the nearest record; coverage, when
    measured, is the suite's `system-out`."""
    n = _counts(results)
    total = sum(r.seconds for r in results)
    suites = ET.Element("testsuites", {"name": "interlock test", "tests": str(len(results)),
                                       "failures": str(n["failed"]), "errors": str(n["error"]),
                                       "time": f"{total:.3f}"})
    suite = ET.SubElement(suites, "testsuite", {
        "name": "interlock scenarios", "tests": str(len(results)), "failures": str(n["failed"]),
        "errors": str(n["error"]), "skipped": str(n["skipped"]), "time": f"{total:.3f}"})
    for r in results:
        folder, _, _ = r.name.replace("\\", "/").rpartition("/")
        case = ET.SubElement(suite, "testcase", {"name": _xml_text(r.name),
                                                 "classname": _xml_text(folder.replace("/", ".") or "scenarios"),
                                                 "time": f"{r.seconds:.3f}"})
        if r.status == "failed":
            element = ET.SubElement(case, "failure", {"type": "ExpectationFailed",
                                                      "message": _xml_text(r.failures[0].message)})
            element.text = _xml_text("\n".join(failure_text(f) for f in r.failures))
        elif r.status == "error":
            first = (r.error or "").splitlines()[0] if r.error else "the scenario could not run"
            element = ET.SubElement(case, "error", {"type": "ScenarioError", "message": _xml_text(first)})
            element.text = _xml_text(r.error or "")
        elif r.status == "skipped":
            ET.SubElement(case, "skipped", {"message": "no `expect:` block"})
    if coverage is not None:
        ET.SubElement(suite, "system-out").text = _xml_text("\n".join(_coverage_lines(coverage)))
    ET.indent(suites)
    return '<?xml version="1.0" encoding="UTF-8"?>\n' + ET.tostring(suites, encoding="unicode") + "\n"
