"""A scenario named on the command line in, its plan, its empty store and its trace out: what `interlock simulate`
and `interlock test` share (`interlock.tools.simulate`, `interlock.runner`).

Kept apart from the commands' modules so that building their parsers never imports the runtime's store
stack (SQLAlchemy, alembic): this module's imports load only when a scenario runs.
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path
from typing import Any

from interlock.errors import InterlockError

from .cmdline import short as _short

__all__ = ["run", "run_scenario", "read_scenario", "plan_for", "scenario_files",
           "open_empty_store", "CommandError"]


class CommandError(InterlockError):
    """A problem with the command's input (exit 2)."""


def plan_for(scenario: Any) -> Any:
    """The plan of a loaded scenario's workflow (`workflow:` file or inline `source:`); ScenarioError if it does
    not compile."""
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


def open_empty_store(url: str, clock: Any = None) -> Any:
    """The store at `url`, refused (exit 2) when it holds any interlock rows: a simulation writes tasks, runs and
    ledger rows, and must never mix them with a real host's.  `clock`: the simulator's (`SimClock`)."""
    from interlock.stores import open_store
    from interlock.stores.engine import check_url, display_url, is_memory_url

    check_url(url)
    if not is_memory_url(url):
        full = _interlock_rows(url)
        if full:
            raise CommandError(f"--store {display_url(url)} holds interlock data (rows in {', '.join(full)}): a "
                               "simulation would write into it. `--store` is for an empty database: give a new one "
                               "(e.g. sqlite:///sim.db) or leave the option out (sqlite://, in memory)")
    return open_store(url, clock=clock)


def run(scenario: Any, store_url: str = "sqlite://", on_record: Any = None) -> Any:
    """Compile a loaded scenario's workflow and simulate it on an empty store; returns the trace (`on_record`:
    called with each record as it is made)."""
    from interlock.runtime.simulator import SimClock
    from interlock.runtime.simulator import simulate as run_on

    plan = plan_for(scenario)
    clock = SimClock()
    store = open_empty_store(store_url, clock)
    try:
        return run_on(scenario, plan, store, on_record=on_record, clock=clock)
    finally:
        close = getattr(store, "close", None)
        if close is not None:
            close()


def run_scenario(path: Path, store_url: str = "sqlite://") -> tuple[Any, Any]:
    """Load, compile and simulate one scenario file; returns (scenario, trace)."""
    from interlock.runtime.scenario import load_scenario

    scenario = load_scenario(path)
    return scenario, run(scenario, store_url)


def scenario_files(paths: list[str], args: argparse.Namespace | None = None) -> list[tuple[Path, str]]:
    """The scenario files of the paths given (folders: *.yaml and *.yml, recursively, sorted, skipping what the
    project's configuration and the default excludes leave out: `--exclude`, `--no-default-excludes`), each once,
    with the name `-k` matches: its path under the folder given (`sub/x.yaml`), or its file name when given itself."""
    from .config import ConfigError, load_config
    from .walk import Excludes, walk_files

    excludes = Excludes(tuple(getattr(args, "exclude", None) or ()), not getattr(args, "no_default_excludes", False))
    found: list[tuple[Path, str]] = []
    seen: set[Path] = set()
    for raw in paths:
        p = Path(raw)
        if p.is_dir():
            try:
                config = load_config(p)
            except ConfigError as exc:
                raise CommandError(f"configuration: {exc}") from None
            base = Path(os.path.abspath(p))
            files = [(p / f.relative_to(base), f.relative_to(base).as_posix())
                     for f in walk_files(p, (".yaml", ".yml"), excludes, config)]
            if not files:
                raise CommandError(f"no .yaml or .yml files under {_short(raw)}")
        elif p.is_file():
            files = [(p, p.name)]
        else:
            raise CommandError(f"no such file or folder: {_short(raw)}")
        for f, name in files:
            key = f.resolve()
            if key not in seen:  # a file named twice (or inside a folder also named) runs once
                seen.add(key)
                found.append((f, name))
    return found
