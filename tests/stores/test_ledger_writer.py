"""`LedgerWriter`: a host with its own tasks table writes the ledger row inside its own transaction."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime

import pytest
import sqlalchemy as sa

from interlock.stores import LedgerWriter, SqlStore
from interlock.stores.engine import normalise_url

host_metadata = sa.MetaData()
host_tasks = sa.Table("host_tasks", host_metadata,
                      sa.Column("id", sa.Text, primary_key=True), sa.Column("step", sa.Text, nullable=True))


@pytest.fixture(params=["sqlite", pytest.param("postgresql", marks=pytest.mark.postgres)])
def host(request: pytest.FixtureRequest) -> Iterator[tuple[sa.Engine, SqlStore]]:
    """The host's own engine (plain `create_engine`, not interlock's) and an interlock store on the same database."""
    if request.param == "sqlite":
        url = request.getfixturevalue("sqlite_url")
    else:
        server = request.getfixturevalue("pg_server")
        url = server.url_for(server.new_schema())
        from interlock.stores import upgrade
        upgrade(url)
    engine = sa.create_engine(normalise_url(url))
    host_metadata.create_all(engine)
    with engine.begin() as conn:
        conn.execute(host_tasks.insert().values(id="H1", step="todo"))
    store = SqlStore(url)
    yield engine, store
    store.close()
    engine.dispose()


def _move(conn: sa.Connection, writer: LedgerWriter, to: str) -> int | None:
    current = conn.execute(sa.select(host_tasks.c.step).where(host_tasks.c.id == "H1")).scalar_one()
    conn.execute(host_tasks.update().where(host_tasks.c.id == "H1").values(step=to))
    return writer.write_arrival(conn, task_id="H1", from_workflow_id="wf", from_step_id=current, to_workflow_id="wf",
                                to_step_id=to, route="manual_move", actor_kind="human", actor_id="u1",
                                session_id=None)


def test_rolled_back_host_transaction_leaves_no_row(host: tuple[sa.Engine, SqlStore]) -> None:
    engine, store = host
    writer = LedgerWriter()
    with engine.connect() as conn, conn.begin() as tx:
        ledger_id = _move(conn, writer, "work")
        assert isinstance(ledger_id, int) and ledger_id > 0
        tx.rollback()
    assert store.ledger() == [] and store.unrecorded_arrivals() == []
    with engine.connect() as conn:
        assert conn.execute(sa.select(host_tasks.c.step)).scalar_one() == "todo"


def test_committed_host_transaction_returns_the_row_id(host: tuple[sa.Engine, SqlStore]) -> None:
    engine, store = host
    writer = LedgerWriter()
    with engine.begin() as conn:
        first = _move(conn, writer, "work")
    with engine.begin() as conn:
        second = _move(conn, writer, "review")
    assert first is not None and second is not None and second > first
    row = store.ledger_row(first)
    assert row is not None
    assert (row.task_id, row.from_step_id, row.to_step_id, row.route, row.actor_kind, row.actor_id) == (
        "H1", "todo", "work", "manual_move", "human", "u1")
    assert [r.id for r in store.unrecorded_arrivals()] == [first, second]


def test_no_row_when_the_step_does_not_change(host: tuple[sa.Engine, SqlStore]) -> None:
    engine, store = host
    writer = LedgerWriter()
    with engine.begin() as conn:
        assert _move(conn, writer, "todo") is None
        assert writer.write_arrival(conn, task_id="H1", from_workflow_id="", from_step_id="", to_workflow_id=None,
                                    to_step_id=None, route="manual_move") is None
    assert store.ledger() == []


def test_the_writer_uses_its_clock(host: tuple[sa.Engine, SqlStore]) -> None:
    engine, _store = host
    when = datetime(2026, 1, 2, 3, 4, 5, tzinfo=UTC)
    writer = LedgerWriter(clock=lambda: when)
    with engine.begin() as conn:
        ledger_id = _move(conn, writer, "work")
        occurred = conn.execute(sa.text("SELECT occurred_at FROM interlock_step_transitions WHERE id = :i"),
                                {"i": ledger_id}).scalar_one()
    if isinstance(occurred, str):  # SQLite hands back text
        occurred = datetime.fromisoformat(occurred)
    if occurred.tzinfo is None:  # SQLite keeps no zone: the writer stores UTC
        occurred = occurred.replace(tzinfo=UTC)
    assert occurred == when
