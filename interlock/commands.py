"""Parsed arguments in, exit status out: the runtime-side commands (`simulate`, `test`, `db`).

Kept apart from `cli.py` so that `interlock check` never imports the runtime's store
stack (SQLAlchemy, alembic): these modules load only when their command runs.
Exit status: 0 ran (or all passed), 1 a scenario has errors or an expectation failed,
2 usage (no such file, a bad or non-empty `--store`) or internal error.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path
from typing import Any

__all__ = ["simulate", "test", "db", "run_scenario", "read_scenario", "CommandError"]


class CommandError(Exception):
    """A problem with the command's input (exit 2)."""


def _plan_for(scenario: Any) -> Any:
    from interlock.compiler import compile_path, compile_source
    from interlock.dsl import SourceFile
    from interlock.dsl.render import render_full
    from interlock.runtime.scenario import ScenarioError

    origin = scenario.origin
    if scenario.source is not None:
        # the block keeps its own lines of the YAML file, so diagnostics point into the scenario itself
        text = origin.source_text if origin.source_text is not None else scenario.source
        result = compile_source(SourceFile(origin.name, text), search_dir=origin.base)
        where = scenario.at("source")
    else:
        where = scenario.at("workflow")
        wf = origin.base / scenario.workflow
        try:
            found = wf.is_file()
        except OSError as exc:  # e.g. a name too long for the file system
            raise ScenarioError(f"{where}: workflow: cannot open `{_short(scenario.workflow)}`: {exc.strerror}") from None
        if not found:
            raise ScenarioError(f"{where}: workflow: no file `{_short(scenario.workflow)}` (looked for {_short(str(wf))})")
        result = compile_path(wf, display=os.path.normpath(wf))
    if result.plan is None:
        diagnostics = render_full(result.diagnostics, result.sources)
        raise ScenarioError(f"{where}: the workflow does not compile:\n{diagnostics}")
    return result.plan


def _short(text: str, limit: int = 80) -> str:
    return text if len(text) <= limit else f"{text[:limit]}… ({len(text)} characters)"


def read_scenario(name: str) -> Any:
    """A scenario from a file, or from standard input for `-` (relative `workflow:` paths from the cwd)."""
    from interlock.runtime.scenario import MAX_BYTES, decode, load_scenario, parse_scenario

    if name == "-":
        data = sys.stdin.buffer.read(MAX_BYTES + 1)
        return parse_scenario(decode(data, "<stdin>"), "<stdin>", Path.cwd())
    path = Path(name)
    if not path.is_file():
        raise CommandError(f"no such scenario file: {_short(name)}" if not path.exists()
                           else f"not a file: {_short(name)}")
    return load_scenario(path)


def _interlock_rows(url: str) -> list[str]:
    """The interlock tables of the database at `url` that hold rows (the schema version aside)."""
    import sqlalchemy as sa
    from sqlalchemy.exc import DBAPIError

    from interlock.stores.engine import make_engine, store_error
    from interlock.stores.schema import VERSION_TABLE

    engine = make_engine(url)
    try:
        with engine.connect() as conn:
            names = [n for n in sa.inspect(conn).get_table_names() if n.startswith("interlock_") and n != VERSION_TABLE]
            quote = conn.dialect.identifier_preparer.quote
            return [n for n in sorted(names) if conn.execute(sa.text(f"SELECT 1 FROM {quote(n)} LIMIT 1")).first()]
    except DBAPIError as exc:
        raise store_error(exc, url, "checking that the --store database is empty") from None
    finally:
        engine.dispose()


def open_empty_store(url: str) -> Any:
    """The store at `url`, refused (exit 2) when it holds any interlock rows: a simulation writes tasks, runs and
    ledger rows, and must never mix them with a real host's."""
    from interlock.stores import open_store
    from interlock.stores.engine import check_url, display_url, is_memory_url

    check_url(url)
    if not is_memory_url(url):
        full = _interlock_rows(url)
        if full:
            raise CommandError(f"--store {display_url(url)} holds interlock data (rows in {', '.join(full)}): a "
                               "simulation would write into it. `--store` is for an empty database: give a new one "
                               "(e.g. sqlite:///sim.db) or leave the option out (sqlite://, in memory)")
    return open_store(url)


def run(scenario: Any, store_url: str = "sqlite://") -> Any:
    """Compile a loaded scenario's workflow and simulate it on an empty store; returns the trace."""
    from interlock.runtime.simulator import simulate as run_on

    plan = _plan_for(scenario)
    store = open_empty_store(store_url)
    try:
        return run_on(scenario, plan, store)
    finally:
        close = getattr(store, "close", None)
        if close is not None:
            close()


def run_scenario(path: Path, store_url: str = "sqlite://") -> tuple[Any, Any]:
    """Load, compile and simulate one scenario file; returns (scenario, trace)."""
    from interlock.runtime.scenario import load_scenario

    scenario = load_scenario(path)
    return scenario, run(scenario, store_url)


def _summarise(record: dict[str, Any]) -> str:
    skip = {"seq", "event", "record"}
    parts = []
    for key, value in record.items():
        if key in skip or value is None or value == [] or value == {}:
            continue
        if isinstance(value, (dict, list)):
            value = json.dumps(value, separators=(",", ":"), sort_keys=True, default=str)
        parts.append(f"{key}={value}")
    return " ".join(parts)


def _print_table(records: list[dict[str, Any]]) -> None:
    """The trace as a table: on a terminal wrapped to its width (long words folded, never cut); piped, one line
    per record at whatever width it needs."""
    from rich.console import Console
    from rich.table import Table

    rows = [(str(r["seq"]), str(r["event"]), str(r["record"]), _summarise(r)) for r in records]
    table = Table(show_header=True, header_style="bold", box=None, pad_edge=False)
    for name, justify in (("seq", "right"), ("event", "right"), ("record", "left"), ("details", "left")):
        table.add_column(name, justify=justify, overflow="fold")  # type: ignore[arg-type]
    styles = {"error": "red", "warning": "yellow", "redelivery_discarded": "magenta", "arrival": "cyan",
              "entry": "green", "summary": "bold"}
    for r, row in zip(records, rows, strict=True):
        table.add_row(*row, style=styles.get(r["record"]))
    out = sys.stdout
    width = None
    if not out.isatty():
        widths = [max([len(h), *(len(row[i]) for row in rows)]) for i, h in enumerate(("seq", "event", "record", "details"))]
        width = sum(widths) + 3 * len(widths) + 1
    Console(file=out, width=width, soft_wrap=False).print(table)


def _write_trace(records: list[dict[str, Any]], fmt: str) -> None:
    if fmt == "jsonl":
        out = sys.stdout
        for record in records:
            out.write(json.dumps(record, sort_keys=False, default=str) + "\n")
        out.flush()
    else:
        _print_table(records)


def _scenario_error(exc: Exception) -> None:
    sys.stderr.write(f"{exc}\n")


def simulate(args: argparse.Namespace) -> int:
    from interlock.runtime.scenario import ScenarioError
    from interlock.stores.engine import check_url

    check_url(args.store)  # a bad URL is a usage error, whatever the scenario
    fmt = args.format or ("table" if sys.stdout.isatty() else "jsonl")
    try:
        scenario = read_scenario(args.scenario)
        trace = run(scenario, args.store)
    except ScenarioError as exc:
        if exc.trace is not None:  # the runtime refused an event: show what happened up to it
            _write_trace(exc.trace.records, fmt)
        _scenario_error(exc)
        return 1
    _write_trace(trace.records, fmt)
    return 0


def _scenarios(paths: list[str]) -> list[Path]:
    found: list[Path] = []
    seen: set[Path] = set()
    for raw in paths:
        p = Path(raw)
        if p.is_dir():
            files = sorted(q for q in p.rglob("*") if q.suffix in (".yaml", ".yml") and q.is_file())
            if not files:
                raise CommandError(f"no .yaml or .yml files under {_short(raw)}")
        elif p.is_file():
            files = [p]
        else:
            raise CommandError(f"no such file or folder: {_short(raw)}")
        for f in files:
            key = f.resolve()
            if key not in seen:  # a file named twice (or inside a folder also named) runs once
                seen.add(key)
                found.append(f)
    return found


def test(args: argparse.Namespace) -> int:
    from interlock.runtime.scenario import ScenarioError, load_scenario
    from interlock.runtime.simulator import check_expectations

    files = _scenarios(args.paths)
    passed = failed = errors = 0
    for path in files:
        trace = None
        try:
            scenario = load_scenario(path)
            if scenario.expect is None:
                print(f"SKIP {path}: no `expect:` block")
                continue
            trace = run(scenario)
        except ScenarioError as exc:
            errors += 1
            print(f"ERROR {path}")
            for line in str(exc).splitlines():
                print(f"  {line}")
            continue
        problems = check_expectations(scenario, trace)
        if problems:
            failed += 1
            print(f"FAIL {path}")
            for problem in problems:
                print(f"  {problem}")
            if args.verbose:
                for record in trace.records:
                    print("   ", json.dumps(record, default=str))
        else:
            passed += 1
            print(f"PASS {path}")
    if passed + failed + errors == 0:
        raise CommandError("no scenario with an `expect:` block found")
    print(f"{passed} passed, {failed} failed, {errors} error{'s' if errors != 1 else ''}")
    return 1 if failed + errors else 0


def db(args: argparse.Namespace) -> int:
    from interlock.stores.engine import check_url
    from interlock.stores.migrate import current_revision, head_revision, upgrade

    check_url(args.url)
    if args.db_command == "upgrade":
        revision = upgrade(args.url)
        print(f"database at revision {revision} (head {head_revision()})")
    else:
        print(current_revision(args.url) or "(empty: no interlock schema)")
    return 0
