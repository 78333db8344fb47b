"""benchmarks/deployment.py measures what issue 19 bounds; the bounds that are counts, not times, are checked here
too: an arrival whose entry runs one host action takes at most 3 commits (ADR 0036: 2), a creation whose entry is
store-backed 1, and every query `recover()` runs reads through an index (on a small bulk store; the 100k and 1M
figures and their EXPLAIN output are the script's, ADR 0051).  The verdict itself is checked against a query that
does scan.
"""

from __future__ import annotations

import importlib.util
import sys
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType

import pytest
import sqlalchemy as sa

ROOT = Path(__file__).resolve().parents[1]


def _module(name: str) -> ModuleType:
    if name in sys.modules:
        return sys.modules[name]
    spec = importlib.util.spec_from_file_location(name, ROOT / "benchmarks" / f"{name}.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


bulk = _module("bulk_store")
deployment = _module("deployment")


@pytest.fixture(params=["sqlite", pytest.param("postgresql", marks=pytest.mark.postgres)])
def backend(request: pytest.FixtureRequest) -> Iterator[str]:
    if request.param == "postgresql":
        from support import conc_pg as pg

        pg.admin_engine().dispose()  # skips (or fails under CI=true) when PostgreSQL is unreachable
    yield str(request.param)


def test_an_arrival_whose_entry_runs_one_host_action_takes_at_most_three_commits(backend: str) -> None:
    commits = {name.split(" (")[0]: c["commits"] for name, c in deployment.commits_figure(backend).items()}
    assert commits["create_task"] == 1
    assert commits["move review → done"] == 1
    assert 1 <= commits["move done → review"] <= 3
    assert 1 <= commits["fire on_turn_complete with an operation id → review"] <= 3


def test_recover_reads_only_through_indexes(tmp_path: Path) -> None:
    url = bulk.build(f"sqlite:///{tmp_path / 'bulk.db'}", 300, seed=20)
    figure = deployment.recover_figure(url, 3)
    assert figure["statements"] == 3 and figure["commits"] == 0
    assert [(q["sql"].split(" FROM ")[1].split()[0], q["verdict"]) for q in figure["queries"]] == [
        ("interlock_operations", "index"), ("interlock_step_transitions", "index"), ("interlock_decisions", "index")]
    engine = sa.create_engine(url)
    try:
        _lines, verdict = deployment.explain(engine, "SELECT id FROM interlock_tasks WHERE description = ?", ("x",))
        assert verdict == "FULL SCAN of interlock_tasks"
        _lines, verdict = deployment.explain(engine, "SELECT task_id FROM interlock_step_transitions ORDER BY task_id",
                                             ())
        assert verdict == "full index scan of interlock_step_transitions (ix_interlock_step_transitions_task)"
    finally:
        engine.dispose()
