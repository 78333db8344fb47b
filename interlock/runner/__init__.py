"""`interlock test`'s arguments in, the scenarios run and reported out: selection (`-k`), formats, coverage.

Each scenario with an `expect:` block is compiled, simulated on an empty in-memory store and checked
(runtime/expectations.py); the report is text, JSON or JUnit XML (report.py), with the coverage of
the plans the scenarios ran on when asked (coverage.py).  Exit status: 0 all passed (and coverage at
or above `--threshold`), 1 a scenario failed or could not run, or coverage is under the threshold,
2 usage (no scenario found, a bad `-k` expression).
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path
from typing import Any

from .report import Result, json_report, junit_report, text_report

__all__ = ["run_tests", "FORMATS"]

FORMATS = ("text", "json", "junit")


def _one(path: Path, name: str, coverage: Any) -> Result:
    """Run one scenario file; count its trace into `coverage` (a CoverageMap, or None)."""
    from interlock.commands import open_empty_store, plan_for
    from interlock.runtime.expectations import expectation_failures
    from interlock.runtime.scenario import ScenarioError, load_scenario
    from interlock.runtime.simulator import SimClock, simulate

    started = time.perf_counter()
    try:
        scenario = load_scenario(path, name)
        if scenario.expect is None:
            return Result(name, "skipped")
        plan = plan_for(scenario)
        clock = SimClock()
        store = open_empty_store("sqlite://", clock)
        try:
            trace = simulate(scenario, plan, store, clock=clock)
        finally:
            close = getattr(store, "close", None)
            if close is not None:
                close()
    except ScenarioError as exc:
        return Result(name, "error", error=str(exc), seconds=time.perf_counter() - started)
    if coverage is not None:
        origin = scenario.workflow if scenario.workflow is not None else f"{name} (inline source)"
        label = os.path.normpath(Path(name).parent / origin) if scenario.workflow is not None else origin
        coverage.add(label, plan, {t: spec.workflow for t, spec in scenario.tasks.items()}, trace.records)
    failures = expectation_failures(scenario, trace.records)
    return Result(name, "failed" if failures else "passed", failures, seconds=time.perf_counter() - started,
                  records=list(trace.records))


def run_tests(args: argparse.Namespace) -> int:
    from interlock.commands import CommandError, scenario_files

    from .coverage import CoverageMap
    from .select import SelectError, compile_expression

    try:
        selected = compile_expression(args.keyword or "")
    except SelectError as exc:
        raise CommandError(str(exc)) from None
    files = scenario_files(args.paths, args)
    chosen = [f for f, name in files if selected(name)]
    deselected = len(files) - len(chosen)
    if not chosen:
        raise CommandError(f"-k {args.keyword!r} selects none of the {len(files)} scenario file(s)")
    threshold: float | None = args.threshold
    coverage = CoverageMap() if args.coverage or threshold is not None else None
    results = [_one(path, str(path), coverage) for path in chosen]
    if all(r.status == "skipped" for r in results):
        raise CommandError("no scenario with an `expect:` block found")
    report = coverage.report(threshold) if coverage is not None else None
    if args.format == "json":
        text = json_report(results, deselected, report)
    elif args.format == "junit":
        text = junit_report(results, deselected, report)
    else:
        text = text_report(results, deselected, report, args.verbose)
    _write(text, args.output)
    bad = any(r.status in ("failed", "error") for r in results)
    return 1 if bad or (report is not None and report["below_threshold"]) else 0


def _write(text: str, output: str | None) -> None:
    if output is None or output == "-":
        sys.stdout.write(text)
        sys.stdout.flush()
        return
    from interlock.atomic import write_atomic
    from interlock.cmdline import output_target

    write_atomic(output_target(output, "report"), text)  # never through a planted symlink, never half a report
