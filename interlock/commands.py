"""Parsed arguments in, exit status out: the runtime-side commands (`simulate`, `test`, `db`).

Kept apart from `cli.py` so that `interlock check` never imports the runtime's store
stack (SQLAlchemy, alembic): these modules load only when their command runs.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

__all__ = ["simulate", "test", "db", "run_scenario"]


class CommandError(Exception):
    """A problem with the command's input (exit 2)."""


def _plan_for(scenario: Any, scenario_path: Path) -> Any:
    from interlock.compiler import compile_path, compile_source
    from interlock.dsl import SourceFile
    from interlock.dsl.render import render_full
    from interlock.runtime.scenario import ScenarioError

    if scenario.source is not None:
        result = compile_source(SourceFile(f"{scenario_path}#source", scenario.source), search_dir=scenario_path.parent)
    else:
        wf = (scenario_path.parent / scenario.workflow).resolve()
        if not wf.is_file():
            raise ScenarioError(f"{scenario_path}: workflow file not found: {scenario.workflow}")
        result = compile_path(wf, display=str(wf))
    if result.plan is None:
        diagnostics = render_full(result.diagnostics, result.sources)
        raise ScenarioError(f"{scenario_path}: the workflow does not compile:\n{diagnostics}")
    return result.plan


def run_scenario(path: Path, store_url: str = "sqlite://") -> tuple[Any, Any]:
    """Load, compile and simulate one scenario file; returns (scenario, trace)."""
    from interlock.runtime.scenario import load_scenario
    from interlock.runtime.simulator import simulate as run
    from interlock.stores import open_store

    scenario = load_scenario(path)
    plan = _plan_for(scenario, path)
    store = open_store(store_url)
    try:
        return scenario, run(scenario, plan, store)
    finally:
        close = getattr(store, "close", None)
        if close is not None:
            close()


def _summarise(record: dict[str, Any]) -> str:
    skip = {"seq", "event", "record"}
    parts = []
    for key, value in record.items():
        if key in skip or value is None or value == [] or value == {}:
            continue
        if isinstance(value, (dict, list)):
            value = json.dumps(value, separators=(",", ":"), sort_keys=True)
        parts.append(f"{key}={value}")
    return " ".join(parts)


def _print_table(records: list[dict[str, Any]]) -> None:
    from rich.console import Console
    from rich.table import Table

    table = Table(show_header=True, header_style="bold", box=None, pad_edge=False)
    for name, justify in (("seq", "right"), ("event", "right"), ("record", "left"), ("details", "left")):
        table.add_column(name, justify=justify)  # type: ignore[arg-type]
    styles = {"error": "red", "warning": "yellow", "redelivery_discarded": "magenta", "arrival": "cyan",
              "entry": "green", "summary": "bold"}
    for r in records:
        table.add_row(str(r["seq"]), str(r["event"]), r["record"], _summarise(r), style=styles.get(r["record"]))
    Console().print(table)


def simulate(args: argparse.Namespace) -> int:
    path = Path(args.scenario)
    if not path.is_file():
        raise CommandError(f"no such scenario file: {args.scenario}")
    _, trace = run_scenario(path, args.store)
    fmt = args.format or ("table" if sys.stdout.isatty() else "jsonl")
    if fmt == "jsonl":
        out = sys.stdout
        for record in trace.records:
            out.write(json.dumps(record, sort_keys=False, default=str) + "\n")
    else:
        _print_table(trace.records)
    return 0


def _scenarios(paths: list[str]) -> list[Path]:
    found: list[Path] = []
    for raw in paths:
        p = Path(raw)
        if p.is_dir():
            found.extend(sorted(q for q in p.rglob("*") if q.suffix in (".yaml", ".yml") and q.is_file()))
        elif p.is_file():
            found.append(p)
        else:
            raise CommandError(f"no such file or folder: {raw}")
    return found


def test(args: argparse.Namespace) -> int:
    from interlock.runtime.scenario import ScenarioError, load_scenario
    from interlock.runtime.simulator import check_expectations

    files = _scenarios(args.paths)
    passed = failed = 0
    for path in files:
        try:
            scenario = load_scenario(path)
        except ScenarioError as exc:
            failed += 1
            print(f"ERROR {path}\n  {exc}")
            continue
        if scenario.expect is None:
            continue
        try:
            scenario, trace = run_scenario(path)
            problems = check_expectations(scenario, trace)
        except ScenarioError as exc:
            problems = [str(exc)]
            trace = None
        if problems:
            failed += 1
            print(f"FAIL {path}")
            for problem in problems:
                print(f"  {problem}")
            if args.verbose and trace is not None:
                for record in trace.records:
                    print("   ", json.dumps(record, default=str))
        else:
            passed += 1
            print(f"PASS {path}")
    if passed + failed == 0:
        raise CommandError("no scenario with an `expect:` block found")
    print(f"{passed} passed, {failed} failed")
    return 1 if failed else 0


def db(args: argparse.Namespace) -> int:
    from interlock.stores.migrate import current_revision, head_revision, upgrade

    if args.db_command == "upgrade":
        revision = upgrade(args.url)
        print(f"database at revision {revision} (head {head_revision()})")
    else:
        print(current_revision(args.url) or "(empty: no interlock schema)")
    return 0
