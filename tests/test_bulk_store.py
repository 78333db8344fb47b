"""benchmarks/bulk_store.py builds the scale figures' stores: its bulk rows have the shape the runtime writes, the
store works for a runtime afterwards (ids continue, nothing is left to recover), a second build reuses it, and the
shape check catches a bulk row that differs from the runtime's.  Small stores here; the figures use 100k and 1M.
"""

from __future__ import annotations

import importlib.util
import sqlite3
import sys
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType

import pytest
from support import conc_pg as pg

from interlock.runtime import ExecutorRegistry, Runtime
from interlock.stores import open_store

ROOT = Path(__file__).resolve().parents[1]


def _module() -> ModuleType:
    spec = importlib.util.spec_from_file_location("bulk_store", ROOT / "benchmarks" / "bulk_store.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules.setdefault("bulk_store", module)
    spec.loader.exec_module(module)
    return module


bulk = _module()


@pytest.fixture(params=["sqlite", pytest.param("postgresql", marks=pytest.mark.postgres)])
def where(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[str]:
    if request.param == "sqlite":
        yield f"sqlite:///{tmp_path / 'bulk.db'}"
        return
    with pg.private_schema() as schema:
        yield pg.url_for(schema)


def test_bulk_rows_have_the_runtimes_shape_and_the_store_keeps_working(where: str) -> None:
    url = bulk.build(where, 130, seed=40)  # 40 through the runtime, 90 by bulk SQL; the build compares them
    store = open_store(url, create=False)
    registry = ExecutorRegistry()
    registry.register("notify", lambda args, ctx: None)
    rt = Runtime(bulk._plan(), store, executors=registry, sinks=[], executor_timeout=None)
    try:
        assert [store.get_task(bulk.task_id(i)).step_id for i in (0, 39, 40, 129)] == ["done"] * 4  # type: ignore[union-attr]
        assert len(store.ledger(bulk.task_id(129))) == 3 and len(store.runs(bulk.task_id(129))) == 1
        assert store.operation_applied("turn:" + bulk.task_id(129))
        recovered = rt.recover()
        assert recovered.dispatched == 0 and recovered.entries == ()
        before = max(r.id for r in store.ledger(bulk.task_id(129)))
        bulk.complete_task(rt, "after")  # the database's ids continue past the bulk rows (PostgreSQL: sequences)
        assert min(r.id for r in store.ledger("after")) == before + 1
    finally:
        rt.close()
        store.close()  # type: ignore[attr-defined]
    assert bulk.build(url, 130, seed=40) == url  # reused: nothing added
    assert bulk._count_tasks(url) == 131


def test_the_shape_check_catches_a_bulk_row_unlike_the_runtimes(tmp_path: Path) -> None:
    url = bulk.build(f"sqlite:///{tmp_path / 'bulk.db'}", 60, seed=20)
    bulk.check_shapes(url, 20, 60)
    with sqlite3.connect(tmp_path / "bulk.db") as conn:
        conn.execute("UPDATE interlock_step_transitions SET entry_owner = NULL WHERE task_id = ?", (bulk.task_id(30),))
    with pytest.raises(RuntimeError, match="interlock_step_transitions differ"):
        bulk.check_shapes(url, 20, 60)
