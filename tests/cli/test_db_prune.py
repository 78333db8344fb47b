"""`interlock db prune` (issue 21, item 3): a dry run on a read-only connection writes nothing (the dump is the same
after it; on PostgreSQL its session is read-only, so a write would fail), the real run deletes what the dry run
counted and prints a summary per table, bad durations and batch sizes are usage errors (exit 2) with the reason, and
Ctrl-C after a batch keeps what was done (exit 130)."""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import pytest

from interlock.cli import main
from interlock.runtime.store import EntryRecord, QueuedRun, TaskState
from interlock.stores import open_store
from interlock.stores.engine import make_engine
from interlock.stores.schema import metadata


def _store_with_old_tasks(url: str, n: int = 3) -> None:
    """`n` finished tasks (two ledger rows, an applied operation, an acknowledged run each), their rows then dated 200
    days back."""
    store = open_store(url)
    try:
        for i in range(n):
            tid = f"T{i}"
            created = store.create_task(TaskState(tid, "w", "work"))
            assert created.ledger is not None
            store.record_entry(EntryRecord(created.ledger.id, tid, "w", "work", ()))
            store.enqueue_run(QueuedRun(f"run:{tid}", tid, "work", "a", "x"))
            moved = store.move_task(tid, "w", "done", route="manual_move", operation_id=f"op:{tid}")
            assert moved.ledger is not None
            store.record_entry(EntryRecord(moved.ledger.id, tid, "w", "done", ()))
        store.ack_runs("host", [p.id for p in store.claim_runs("host")])
    finally:
        store.close()  # type: ignore[attr-defined]
    engine = make_engine(url)
    year = time.time() - 200 * 86_400
    try:
        with engine.begin() as conn:
            for table, columns in (("interlock_tasks", ("created_at", "updated_at")),
                                   ("interlock_step_transitions", ("occurred_at", "entry_recorded_at")),
                                   ("interlock_operations", ("applied_at",)), ("interlock_runs", ("created_at",))):
                t = metadata.tables[table]
                conn.execute(t.update().values({c: _stamp(year) for c in columns}))
            conn.exec_driver_sql(f"UPDATE interlock_runs SET acked_at = {year}")
    finally:
        engine.dispose()


def _stamp(epoch: float) -> Any:
    from datetime import UTC, datetime

    return datetime.fromtimestamp(epoch, UTC)


def _dump(url: str) -> dict[str, list[tuple[Any, ...]]]:
    engine = make_engine(url)
    try:
        with engine.connect() as conn:
            return {t.name: sorted((tuple(r) for r in conn.execute(t.select())), key=repr)
                    for t in metadata.sorted_tables}
    finally:
        engine.dispose()


@pytest.fixture()
def url(empty_url: str) -> str:
    """An empty database of each backend (tests/conftest.py)."""
    return empty_url


def test_dry_run_writes_nothing_then_prune_deletes_what_it_counted(url: str, capsys: pytest.CaptureFixture[str]) -> None:
    _store_with_old_tasks(url)
    before = _dump(url)
    assert main(["db", "prune", "--store", url, "--older-than", "90d", "--dry-run"]) == 0
    dry = capsys.readouterr().out
    assert _dump(url) == before
    assert dry.startswith("would delete 9 rows (step_transitions 3, entry_markers 0, operations 3, runs 3, ")
    assert "would keep 3 operation fingerprints; 3 of 3 tasks quiet for 90d" in dry
    assert main(["db", "prune", "--store", url, "--older-than", "90d", "--format", "json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert (report["dry_run"], report["tasks_pruned"], report["fingerprints"]) == (False, 3, 3)
    assert {k: v for k, v in report["deleted"].items() if v} == {
        "interlock_step_transitions": 3, "interlock_operations": 3, "interlock_runs": 3}
    after = _dump(url)
    assert len(after["interlock_step_transitions"]) == 3 and after["interlock_operations"] == []
    assert len(after["interlock_pruned_operations"]) == 3


def test_a_window_inside_the_tasks_age_prunes_nothing(url: str, capsys: pytest.CaptureFixture[str]) -> None:
    _store_with_old_tasks(url)
    before = _dump(url)
    assert main(["db", "prune", "--store", url, "--older-than", "365d"]) == 0
    assert capsys.readouterr().out.startswith("deleted 0 rows")
    assert _dump(url) == before


@pytest.mark.parametrize(("args", "message"), [
    (["--older-than", "90x"], "argument --older-than: `90x` has an unknown unit `x`"),
    (["--older-than", "90"], "argument --older-than: `90` has no unit"),
    (["--older-than", "0d"], "argument --older-than: `0d` is no time at all"),
    (["--older-than=-5d"], "argument --older-than: `-5d` is not a duration"),
    (["--older-than", "90d", "--batch", "0"], "argument --batch: `0` is not a batch size"),
    (["--older-than", "90d", "--batch", "lots"], "argument --batch: `lots` is not a batch size"),
])
def test_bad_arguments_are_usage_errors(tmp_path: Path, capsys: pytest.CaptureFixture[str], args: list[str],
                                        message: str) -> None:
    assert main(["db", "prune", "--store", f"sqlite:///{tmp_path / 'x.db'}", *args]) == 2
    assert message in capsys.readouterr().err
    assert not (tmp_path / "x.db").exists()


def test_an_unknown_store_is_an_error_not_a_traceback(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["db", "prune", "--store", f"sqlite:///{tmp_path / 'none.db'}", "--older-than", "90d"]) == 2
    err = capsys.readouterr().err
    assert "interlock db upgrade" in err and "Traceback" not in err


def test_ctrl_c_after_a_batch_keeps_it_and_says_so(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    url = f"sqlite:///{tmp_path / 'orchestrator.db'}"
    _store_with_old_tasks(url, 4)
    from interlock.stores import pruning as prune_module

    real = prune_module.prune

    def interrupted(store: Any, **kwargs: Any) -> Any:
        step = kwargs["progress"]

        def progress(report: Any) -> None:
            step(report)
            if report.batches == 2:
                raise KeyboardInterrupt

        return real(store, **{**kwargs, "progress": progress})

    monkeypatch.setattr(prune_module, "prune", interrupted)
    assert main(["db", "prune", "--store", url, "--older-than", "90d", "--batch", "1"]) == 130
    out, err = capsys.readouterr()
    assert out.startswith("deleted 6 rows (step_transitions 2, ")
    assert "interrupted after 2 batch(es): what they deleted stays deleted" in err
    assert len(_dump(url)["interlock_pruned_operations"]) == 2
    assert "--after T1 skips the tasks it looked at" in err
    monkeypatch.setattr(prune_module, "prune", real)
    assert main(["db", "prune", "--store", url, "--older-than", "90d", "--batch", "1", "--after", "T1"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("deleted 6 rows (step_transitions 2, ") and out.endswith("2 of 2 tasks quiet for 90d\n")
