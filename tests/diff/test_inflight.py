"""A store seeded through the runtime under the OLD plan in, the work `interlock diff --store` says the change to
NEW strands out — on SQLite and PostgreSQL — and the store is only ever read."""

from __future__ import annotations

import hashlib
import json
import sqlite3
from pathlib import Path
from typing import Any

import pytest

from interlock.cli import main
from interlock.diffing import diff_plans
from interlock.runtime.plan import Plan
from interlock.stores.inflight import InflightError, open_readonly, stranded

EXPECTED = {
    ("dead_end", "t-a", ()),
    ("seat_role_removed", "t-check", ()),
    ("decision_role_removed", "t-check", ()),
    ("step_removed", "t-host", ()),
    ("step_removed", "t-legacy", ()),
    ("entry_kind_removed", "t-pending", ("ping",)),
    ("entry_kind_excluded", "t-pending", ("notify",)),
}


def _run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def test_the_change_strands_exactly_this_work(seeded: tuple[str, dict[str, Any]], plans: tuple[Plan, Plan]) -> None:
    url, ids = seeded
    old, new = plans
    found = stranded(url, old, new, diff_plans(old, new))
    assert {(s.reason, s.task_id, s.kinds) for s in found} == EXPECTED
    # untouched work is never reported: a task on a kept step, a task on a terminal step
    assert not any(s.task_id in ("t-todo", "t-b") for s in found)
    entries = {s.reason: s.entry_id for s in found if s.entry_id is not None}
    assert entries == {"entry_kind_removed": ids["pending_entry"], "entry_kind_excluded": ids["pending_entry"]}
    # sorted by task, every item names its task
    assert [s.task_id for s in found] == sorted(s.task_id or "" for s in found)


def test_no_change_strands_nothing(seeded: tuple[str, dict[str, Any]], plans: tuple[Plan, Plan]) -> None:
    url, _ = seeded
    old, _new = plans
    assert stranded(url, old, old, diff_plans(old, old)) == []


def test_cli_exit_1_and_each_stranded_task_named(seeded: tuple[str, dict[str, Any]], wf_files: Any,
                                                 capsys: pytest.CaptureFixture[str]) -> None:
    url, _ = seeded
    old, new = wf_files()
    code, out, err = _run(capsys, "diff", str(old), str(new), "--store", url)
    assert code == 1, err
    assert "STRANDED in" in out and "7 items" in out
    for task in ("t-a", "t-check", "t-host", "t-legacy", "t-pending"):
        assert f"`{task}`" in out
    assert "t-todo" not in out and "`t-b`" not in out
    # breaking changes come before the others, and before the stranded list
    assert out.index("BREAKING") < out.index("\nbehaviour") < out.index("STRANDED")

    code, out, _ = _run(capsys, "diff", str(old), str(new), "--store", url, "--format", "json")
    assert code == 1
    doc = json.loads(out)
    assert doc["diff_version"] == 1 and doc["summary"]["stranded"] == 7
    items = doc["comparisons"][0]["stranded"]
    assert {(i["reason"], i["task"], tuple(i["kinds"])) for i in items} == EXPECTED
    assert all(set(i) == {"reason", "task", "workflow", "step", "entry_id", "role", "kinds", "message"} for i in items)
    # deterministic
    again = _run(capsys, "diff", str(old), str(new), "--store", url, "--format", "json")[1]
    assert again == out


def test_cli_exit_0_when_nothing_is_stranded(seeded: tuple[str, dict[str, Any]], wf_files: Any,
                                             capsys: pytest.CaptureFixture[str]) -> None:
    url, _ = seeded
    old, _new = wf_files()
    code, out, _ = _run(capsys, "diff", str(old), str(old), "--store", url)
    assert code == 0
    assert "no changes" in out and "nothing stranded" in out


def _digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def test_sqlite_store_is_read_only(sqlite_url: str, plans: tuple[Plan, Plan], wf_files: Any, seeder: Any,
                                   capsys: pytest.CaptureFixture[str]) -> None:
    seeder(sqlite_url, plans[0])
    path = Path(sqlite_url.removeprefix("sqlite:///"))
    con = sqlite3.connect(path)
    con.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    con.close()
    before = _digest(path)
    old, new = wf_files()
    assert _run(capsys, "diff", str(old), str(new), "--store", sqlite_url)[0] == 1
    assert _digest(path) == before
    engine = open_readonly(sqlite_url)
    try:
        with engine.connect() as conn, pytest.raises(Exception, match="readonly"):
            conn.exec_driver_sql("DELETE FROM interlock_tasks")
    finally:
        engine.dispose()


def test_missing_sqlite_file_is_a_usage_error_and_is_not_created(tmp_path: Path, wf_files: Any,
                                                                 capsys: pytest.CaptureFixture[str]) -> None:
    old, new = wf_files()
    missing = tmp_path / "nope.db"
    code, out, err = _run(capsys, "diff", str(old), str(new), "--store", f"sqlite:///{missing}")
    assert code == 2 and out == ""
    assert err.count("\n") == 1 and "no SQLite database at" in err and str(missing) in err
    assert not missing.exists()


@pytest.mark.parametrize(("url", "says"), [
    ("sqlite://", "in-memory"),
    ("mysql://u@h/db", "unsupported database"),
    ("not a url", "cannot parse"),
])
def test_bad_store_urls_are_usage_errors(url: str, says: str, wf_files: Any,
                                         capsys: pytest.CaptureFixture[str]) -> None:
    old, new = wf_files()
    code, _out, err = _run(capsys, "diff", str(old), str(new), "--store", url)
    assert code == 2 and says in err and err.count("\n") == 1


def test_a_database_without_interlock_tables_is_refused(tmp_path: Path, wf_files: Any,
                                                        capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "other.db"
    con = sqlite3.connect(path)
    con.execute("CREATE TABLE things (id INTEGER)")
    con.commit()
    con.close()
    old, new = wf_files()
    code, _out, err = _run(capsys, "diff", str(old), str(new), "--store", f"sqlite:///{path}")
    assert code == 2 and "holds no interlock store" in err


@pytest.mark.postgres
def test_postgresql_sessions_are_read_only(pg_url: str) -> None:
    engine = open_readonly(pg_url)
    try:
        with engine.connect() as conn, pytest.raises(Exception, match="read-only"):
            conn.exec_driver_sql("INSERT INTO interlock_tasks (id, created_at, updated_at) VALUES ('x', now(), now())")
    finally:
        engine.dispose()


@pytest.mark.postgres
def test_postgresql_database_that_does_not_exist_is_a_usage_error(pg_url: str, wf_files: Any,
                                                                  capsys: pytest.CaptureFixture[str]) -> None:
    from sqlalchemy.engine import make_url

    missing = make_url(pg_url).set(database="interlock_no_such_db", query={}).render_as_string(hide_password=False)
    old, new = wf_files()
    code, _out, err = _run(capsys, "diff", str(old), str(new), "--store", missing)
    assert code == 2 and "interlock_no_such_db" in err and err.count("\n") == 1
    with pytest.raises(InflightError):
        stranded(missing, *_plans_pair(old, new), [])


def _plans_pair(old: Path, new: Path) -> tuple[Plan, Plan]:
    from interlock.compiler import compile_path

    a, b = compile_path(old).plan, compile_path(new).plan
    assert a is not None and b is not None
    return a, b
