"""Database failures reach the runtime as `StoreError`s that say what to do."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from interlock.runtime.store import StoreError
from interlock.stores import SqlStore, open_store
from interlock.stores.engine import make_engine


def test_a_writer_locked_out_past_the_busy_timeout(sqlite_url: str) -> None:
    path = sqlite_url.removeprefix("sqlite:///")
    blocker = sqlite3.connect(path, isolation_level=None)
    blocker.execute("BEGIN IMMEDIATE")
    store = SqlStore(make_engine(sqlite_url, busy_timeout=0.2), owns_engine=True)
    try:
        with pytest.raises(StoreError, match="locked by another writer past the busy timeout"):
            store.mark_operation("op")
        assert store.operation_applied("op") is False  # readers are not blocked (WAL)
    finally:
        blocker.execute("ROLLBACK")
        blocker.close()
    assert store.mark_operation("op") is True
    store.close()


def test_an_unreachable_server() -> None:
    with pytest.raises(StoreError, match="could not open the connection to postgresql\\+psycopg://x:\\*\\*\\*@"):
        open_store("postgresql://x:pw@127.0.0.1:1/none")


def test_an_unopenable_sqlite_file(tmp_path: Path) -> None:
    with pytest.raises(StoreError):
        open_store(f"sqlite:///{tmp_path / 'no-such-dir' / 'x.db'}")
