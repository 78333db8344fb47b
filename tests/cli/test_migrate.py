"""`interlock migrate` (docs/runtime.md, "Deployments"): the tasks a new plan strands, listed without writing anything,
moved with `--apply` (one ledger row each, route `migration`, the entry only with `--enter`), and nothing moved the
second time; `interlock diff --store` reports the same tasks as stranded."""

from __future__ import annotations

import json
import sqlite3
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from interlock.compiler import compile_source
from interlock.dsl import SourceFile
from interlock.runtime import ExecutorRegistry, Runtime
from interlock.stores import open_store, upgrade

V1 = """
workflow flow "Flow" {
  step work "Work" { start  manual_move }
  step qa "QA" { manual_move }
  step review "Review" {
    manual_move
    on on_enter { clear_decisions }
  }
  step done "Done" { manual_move  terminal }
}
"""
V2 = V1.replace('  step qa "QA" { manual_move }\n', "")


def _cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "interlock.cli", *args], capture_output=True, text=True, timeout=120)


def _dump(path: Path) -> list[Any]:
    with sqlite3.connect(path) as conn:
        return [conn.execute(f"SELECT * FROM {t} ORDER BY 1").fetchall()
                for t in ("interlock_tasks", "interlock_step_transitions", "interlock_entry_markers",
                          "interlock_operations", "interlock_owners", "interlock_plans")]


@pytest.fixture()
def store(tmp_path: Path) -> tuple[str, Path, Path]:
    """A SQLite store where T1 and T2 stand on `qa` (which V2 removes) and T3 on `work`; and V2 as a file."""
    db = tmp_path / "store.db"
    url = f"sqlite:///{db}"
    upgrade(url)
    s = open_store(url, create=False)
    plan = compile_source(SourceFile("v1.wf", V1)).plan
    rt = Runtime(plan, s, executors=ExecutorRegistry(), sinks=[])
    for task in ("T1", "T2", "T3"):
        rt.create_task(task, "flow")
    rt.move("T1", "qa")
    rt.move("T2", "qa")
    rt.close()
    s.close()  # type: ignore[attr-defined]
    new = tmp_path / "v2.wf"
    new.write_text(V2)
    return url, db, new


def test_a_dry_run_lists_the_stranded_tasks_and_writes_nothing(store: tuple[str, Path, Path]) -> None:
    url, db, new = store
    before = _dump(db)
    unmapped = _cli("migrate", str(new), "--store", url)
    assert unmapped.returncode == 1, unmapped.stderr
    assert "2 stranded task(s)" in unmapped.stdout and "T1: on flow.qa, no --map" in unmapped.stdout
    mapped = _cli("migrate", str(new), "--store", url, "--map", "flow.qa=review", "--format", "json")
    assert mapped.returncode == 0, mapped.stderr
    report = json.loads(mapped.stdout)
    assert [(t["task"], t["to_step"], t["action"]) for t in report["tasks"]] == [("T1", "review", "move"),
                                                                                ("T2", "review", "move")]
    assert report["applied"] is False and _dump(db) == before


def test_apply_moves_each_task_by_one_migration_row_and_a_second_run_moves_nothing(
        store: tuple[str, Path, Path]) -> None:
    url, _db, new = store
    applied = _cli("migrate", str(new), "--store", url, "--map", "flow.qa=review", "--apply")
    assert applied.returncode == 0, applied.stderr
    assert "2 moved" in applied.stdout
    s = open_store(url, create=False)
    try:
        for task in ("T1", "T2"):
            last = s.ledger(task)[-1]
            assert (last.from_step_id, last.to_step_id, last.route) == ("qa", "review", "migration")
            record = s.entry_record(last.id)
            assert record is not None and record.attempted == ()  # without --enter: not entered, never dispatched
            assert s.get_task(task).entry_id == last.id  # type: ignore[union-attr]
        assert s.unrecorded_arrivals() == []
        rows = len(s.ledger())
    finally:
        s.close()  # type: ignore[attr-defined]
    again = _cli("migrate", str(new), "--store", url, "--map", "flow.qa=review", "--apply")
    assert again.returncode == 0 and "nothing stranded" in again.stdout
    s = open_store(url, create=False)
    try:
        assert len(s.ledger()) == rows
    finally:
        s.close()  # type: ignore[attr-defined]


def test_apply_with_enter_dispatches_the_destinations_entry(store: tuple[str, Path, Path]) -> None:
    url, _db, new = store
    assert _cli("migrate", str(new), "--store", url, "--map", "flow.*=review", "--enter", "--apply").returncode == 0
    s = open_store(url, create=False)
    try:
        record = s.entry_record(s.ledger("T1")[-1].id)
        assert record is not None and record.attempted == ("clear_decisions",) and record.failed == ()
    finally:
        s.close()  # type: ignore[attr-defined]


def test_diff_with_the_store_reports_the_tasks_a_removed_step_strands(store: tuple[str, Path, Path],
                                                                      tmp_path: Path) -> None:
    url, _db, new = store
    old = tmp_path / "v1.wf"
    old.write_text(V1)
    result = _cli("diff", str(old), str(new), "--store", url, "--format", "json")
    assert result.returncode == 1, result.stderr
    stranded = json.loads(result.stdout)["comparisons"][0]["stranded"]
    assert sorted((s["task"], s["reason"], s["step"]) for s in stranded) == [("T1", "step_removed", "qa"),
                                                                             ("T2", "step_removed", "qa")]


def test_a_bad_map_is_a_usage_error(store: tuple[str, Path, Path]) -> None:
    url, _db, new = store
    for bad in ("qa=review", "flow.qa=", "flow.qa=nowhere"):
        result = _cli("migrate", str(new), "--store", url, "--map", bad)
        assert result.returncode == 2, (bad, result.stdout)
        assert "interlock migrate: error: --map" in result.stderr and "Traceback" not in result.stderr
