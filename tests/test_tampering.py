"""Tampering: hand-edited plans, plans of another version, databases at an older or a newer migration.

Issue: "A hand-edited plan, a plan for another schema version, a database at an older migration:
clear errors, no partial effects."

- Plans: a plan edited after compilation is a `PlanError` from `load_plan` with a message that says
  what is wrong; no `Runtime` is ever built over it and the store it was meant for is untouched.  An
  edit that keeps the digest valid (the digest recomputed) must still leave a consistent plan:
  names that resolve, arguments of the kinds' declared types, the entry dispatch the handler and the
  entry policy imply.  A plan of another `plan_version` names both versions.  (No CLI command loads a
  plan: `compile` writes them, `simulate` and `test` compile `.wf` sources.)
- Databases: one at an older migration (empty, downgraded, or with the tables but no version row)
  is refused by `open_store(url, create=False)` with a `StoreError` naming `interlock db upgrade
  --url URL`, and nothing is written; `open_store(url)` and `interlock db upgrade --url URL` bring it
  to head (keeping its rows), a second upgrade is a no-op, `interlock db current` prints the
  revision.  One from a newer interlock (a revision this package does not know) is refused by every
  path with a `StoreError` that says so, and nothing is written.
"""

from __future__ import annotations

import copy
import functools
import json
import re
import uuid
from collections.abc import Callable, Iterator
from contextlib import ExitStack
from pathlib import Path
from typing import Any

import pytest
import sqlalchemy as sa
from alembic import command
from alembic.script import ScriptDirectory
from support import conc_pg as pg

from interlock.cli import main
from interlock.compiler import compile_path
from interlock.runtime import api as runtime_api
from interlock.runtime.api import Runtime
from interlock.runtime.plan import PLAN_VERSION, PlanError, dump_plan, load_plan, plan_digest, seal_digests
from interlock.runtime.records import ListSink
from interlock.runtime.store import Participant, StoreError, TaskState
from interlock.stores import current_revision, head_revision, open_store, upgrade
from interlock.stores.engine import display_url, make_engine, normalise_url
from interlock.stores.migrate import alembic_config
from interlock.stores.schema import VERSION_TABLE, metadata

ROOT = Path(__file__).resolve().parents[1]
OFFICE = ROOT / "examples" / "office_default.wf"
WF = "office_default"






# ---- plans ----------------------------------------------------------------------------------------------------


@functools.cache
def plan_text() -> str:
    result = compile_path(OFFICE)
    assert result.plan is not None
    return dump_plan(result.plan)


def edited(mutate: Callable[[dict[str, Any]], Any], *, redigest: bool) -> str:
    data = copy.deepcopy(json.loads(plan_text()))
    mutate(data)
    if redigest:
        data.update(seal_digests(data))
    return json.dumps(data, indent=2)


def step(data: dict[str, Any], step_id: str) -> dict[str, Any]:
    found: dict[str, Any] = next(s for s in data["workflows"][0]["steps"] if s["id"] == step_id)
    return found


def rename_step(data: dict[str, Any]) -> None:
    step(data, "review")["id"] = "reveiw"


def change_argument(data: dict[str, Any]) -> None:
    step(data, "review")["entry_dispatch"][2]["args"]["reason"] = "edited_by_hand"


def remove_field(data: dict[str, Any]) -> None:
    del step(data, "review")["title"]


HAND_EDITS: dict[str, Callable[[dict[str, Any]], Any]] = {
    "step-id": rename_step,
    "argument": change_argument,
    "field-removed": remove_field,
    "guard-threshold": lambda d: step(d, "review")["handlers"]["on_turn_complete"][0]["guard"].update(
        threshold="any_reject"),
    "manual-move-flag": lambda d: step(d, "done").update(manual_move=False),
    "entry-action-dropped": lambda d: step(d, "review")["entry_dispatch"].pop(0),
    "source-line": lambda d: step(d, "review")["source"].update(line=1),
}


def store_rows(url: str) -> dict[str, list[tuple[Any, ...]]]:
    """Every row of every interlock table (of a migrated database)."""
    engine = sa.create_engine(normalise_url(url), poolclass=sa.pool.NullPool)
    try:
        with engine.connect() as conn:
            return {t.name: sorted((tuple(r) for r in conn.execute(t.select())), key=repr)
                    for t in metadata.sorted_tables}
    finally:
        engine.dispose()


def _rows(url: str) -> dict[str, list[tuple[Any, ...]]]:
    """Every table of the database (interlock's, the version table, anything else) and its rows."""
    engine = sa.create_engine(normalise_url(url), poolclass=sa.pool.NullPool)
    try:
        with engine.connect() as conn:
            names = sorted(sa.inspect(conn).get_table_names())
            out: dict[str, list[tuple[Any, ...]]] = {}
            quote = conn.dialect.identifier_preparer.quote
            for name in names:  # every column, without reflecting each table (half a second a call)
                out[name] = sorted((tuple(r) for r in conn.exec_driver_sql(f"SELECT * FROM {quote(name)}")), key=repr)
            return out
    finally:
        engine.dispose()


@pytest.fixture()
def seeded_url(sqlite_url: str) -> Iterator[str]:
    """A migrated SQLite store (the suite's template, copied) with a task at work and the reviewer seats: what a
    plan would act on."""
    url = sqlite_url
    store = open_store(url)
    try:
        store.add_participant(Participant("", "review", "reviewer", "rev-a"))
        store.put_task(TaskState("T1", WF, "work"))
    finally:
        store.close()  # type: ignore[attr-defined]
    yield url


@pytest.fixture()
def built(monkeypatch: pytest.MonkeyPatch) -> list[Runtime]:
    """Every Runtime whose construction completed during the test."""
    runtimes: list[Runtime] = []
    original = Runtime.__init__

    def spy(self: Runtime, *args: Any, **kwargs: Any) -> None:
        original(self, *args, **kwargs)
        runtimes.append(self)

    monkeypatch.setattr(runtime_api.Runtime, "__init__", spy)
    return runtimes


def host_loads(text: str, url: str) -> Runtime:
    """What a host does with a plan file: load it, open its store, build the runtime."""
    plan = load_plan(text)
    store = open_store(url, create=False)
    try:
        return Runtime(plan, store, sinks=[ListSink()])
    except BaseException:
        store.close()  # type: ignore[attr-defined]
        raise


def exercise(rt: Runtime) -> list[Any]:
    """What a runtime over an accepted plan goes on to do (shown when a test expected a refusal)."""
    return [rt.fire("on_turn_complete", "T1", session_id="S1", operation_id="tc:T1"),
            rt.record_decision("T1", verdict="approved", agent="rev-a", role="reviewer")]


def refused(text: str, url: str, built: list[Runtime]) -> PlanError:
    """Assert that loading `text` is a PlanError, before any Runtime exists and before any write."""
    before = store_rows(url)
    try:
        rt = host_loads(text, url)
    except PlanError as exc:
        assert built == []
        assert store_rows(url) == before
        return exc
    try:
        outcome: Any = exercise(rt)
    except Exception as exc:
        outcome = f"{type(exc).__name__}: {exc}"
    finally:
        rt.store.close()  # type: ignore[attr-defined]
    changes = {t: rows for t, rows in store_rows(url).items() if rows != before.get(t)}
    pytest.fail(f"the edited plan was accepted and a Runtime built; it went on to do {outcome}\n"
                f"changing the store: {changes}")


@pytest.mark.parametrize("edit", sorted(HAND_EDITS))
def test_a_hand_edited_plan_is_refused_by_its_digest(edit: str, seeded_url: str, built: list[Runtime]) -> None:
    error = refused(edited(HAND_EDITS[edit], redigest=False), seeded_url, built)
    assert str(error) == ("plan digest does not match its content: the plan was modified or truncated after "
                          "compilation; recompile it with `interlock compile`")


def test_a_re_serialised_plan_is_the_same_plan() -> None:
    """The digest covers the content, not the bytes: re-indenting a plan (say, by a JSON tool) is no edit."""
    text = edited(lambda d: None, redigest=False)
    assert text != plan_text()
    assert load_plan(text) == load_plan(plan_text())


def test_a_hand_edit_of_the_digest_itself_is_refused(seeded_url: str, built: list[Runtime]) -> None:
    for digest in ("", "sha256:" + "0" * 64, plan_digest({"plan_version": 1}), None, 5):
        error = refused(edited(lambda d, x=digest: d.update(digest=x), redigest=False), seeded_url, built)
        assert "plan digest does not match" in str(error)


# Edits given a fresh digest: the plan must still be one the compiler could have written.
REDIGESTED: dict[str, tuple[Callable[[dict[str, Any]], Any], str]] = {
    # a step renamed where it is declared but not where it is named
    "step-id": (rename_step, r"transition to unknown step `review`"),
    # a required field removed
    "field-removed": (remove_field, r"plan does not match the plan schema: workflows\.0\.steps\.2\.title: Field required"),
    # an argument of the wrong type for its kind's parameter (`ensure_seats(role: role)`)
    "argument-type": (lambda d: step(d, "review")["entry_dispatch"][1]["args"].update(role=5),
                      r"ensure_seats.*role"),
    # a required argument removed
    "argument-missing": (lambda d: step(d, "review")["entry_dispatch"][1]["args"].pop("role"),
                         r"ensure_seats.*role"),
    # an argument the kind does not declare
    "argument-unknown": (lambda d: step(d, "review")["entry_dispatch"][1]["args"].update(rolle="reviewer"),
                         r"ensure_seats.*rolle"),
    # a role argument naming no role of the plan
    "argument-role-undeclared": (lambda d: step(d, "review")["entry_dispatch"][2]["args"].update(role="ghost"),
                                 r"ghost"),
    # a quorum guard over no role of the plan
    "guard-role-undeclared": (
        lambda d: step(d, "review")["handlers"]["on_turn_complete"][0]["guard"].update(role="ghost"), r"ghost"),
    # a transition whose `step` argument and resolved target disagree
    "transition-argument": (
        lambda d: step(d, "review")["handlers"]["on_turn_complete"][0]["args"].update(step="nowhere"), r"nowhere"),
    # the entry dispatch list no longer what the on_enter handler and the entry policy make of it
    "entry-dispatch-removed": (lambda d: step(d, "review").pop("entry_dispatch"), r"review.*entry"),
}


@pytest.mark.parametrize("edit", sorted(REDIGESTED))
def test_a_re_digested_hand_edit_that_breaks_the_plan_is_refused(edit: str, seeded_url: str,
                                                                   built: list[Runtime]) -> None:
    mutate, message = REDIGESTED[edit]
    error = refused(edited(mutate, redigest=True), seeded_url, built)
    assert re.search(message, str(error)), str(error)
    assert "\n" not in str(error) and len(str(error)) < 600  # one clear paragraph


def test_a_re_digested_consistent_edit_is_a_plan(seeded_url: str) -> None:
    """The digest is tamper evidence, not a signature: an edit that leaves a consistent plan (a new reason
    string, in the handler and in the entry dispatch list alike) and recomputes the digest is a plan like any
    other.  Editing only one of the two copies is an inconsistent plan (refused above)."""

    def change_both(data: dict[str, Any]) -> None:
        change_argument(data)
        step(data, "review")["handlers"]["on_enter"][2]["args"]["reason"] = "edited_by_hand"

    plan = load_plan(edited(change_both, redigest=True))
    review = next(s for s in plan.workflows[0].steps if s.id == "review")
    assert review.entry_dispatch[2].args["reason"] == "edited_by_hand"


# ---- plans of another version ------------------------------------------------------------------------------------


@pytest.mark.parametrize("version", [0, 1, 3, 99, "1", 1.5, None])
@pytest.mark.parametrize("redigest", [True, False])
def test_a_plan_of_another_version_names_both_versions(version: Any, redigest: bool, seeded_url: str,
                                                       built: list[Runtime]) -> None:
    def mutate(d: dict[str, Any]) -> None:
        if version is None:
            del d["plan_version"]
        else:
            d["plan_version"] = version

    error = refused(edited(mutate, redigest=redigest), seeded_url, built)
    assert str(error).startswith(f"plan version {version!r} is not supported: this runtime reads plan version "
                                 f"{PLAN_VERSION}; recompile the workflow with `interlock compile`"), str(error)


def test_a_future_plan_with_new_fields_is_refused_for_its_version_not_its_fields(seeded_url: str,
                                                                                  built: list[Runtime]) -> None:
    """A plan written by a newer compiler (new version, new fields) says "version", not "schema"."""
    def future(d: dict[str, Any]) -> None:
        d["plan_version"] = PLAN_VERSION + 1
        d["capabilities"] = ["timers"]
        step(d, "review")["timeout"] = "PT1H"

    error = refused(edited(future, redigest=True), seeded_url, built)
    assert f"plan version {PLAN_VERSION + 1} is not supported" in str(error)


# ---- databases at an older or a newer migration ------------------------------------------------------------------


@pytest.fixture(params=["sqlite", pytest.param("postgresql", marks=pytest.mark.postgres)])
def empty_url(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[str]:
    """An empty database: a new SQLite file (0 bytes, so no path is created by the code under test), or a new
    PostgreSQL schema (dropped at the end)."""
    if request.param == "sqlite":
        path = tmp_path / "tampered.db"
        path.touch()
        yield f"sqlite:///{path}"
        return
    with ExitStack() as stack:
        admin = pg.admin_engine()
        stack.callback(admin.dispose)
        name = f"il_tamper_{uuid.uuid4().hex[:12]}"
        with admin.begin() as conn:
            conn.exec_driver_sql(f'CREATE SCHEMA "{name}"')

        def drop() -> None:
            with admin.begin() as conn:
                conn.exec_driver_sql(f'DROP SCHEMA IF EXISTS "{name}" CASCADE')

        stack.callback(drop)
        yield pg.url_for(name)


def older_revision() -> str:
    """The revision before head ("base" while head is the first migration)."""
    script = ScriptDirectory.from_config(alembic_config())
    down = script.get_revision(head_revision()).down_revision
    return str(down) if isinstance(down, str) else "base"


def downgrade(url: str, revision: str) -> None:
    engine = make_engine(url)
    try:
        with engine.connect() as conn, conn.begin():
            config = alembic_config()
            config.attributes["connection"] = conn
            command.downgrade(config, revision)
    finally:
        engine.dispose()


def with_data(url: str) -> None:
    """Rows a host had written while the schema was current."""
    store = open_store(url, create=False)
    try:
        store.create_task(TaskState("T1", WF, "work"))
        store.add_participant(Participant("", "review", "reviewer", "rev-a"))
    finally:
        store.close()  # type: ignore[attr-defined]


def older_empty(url: str) -> None:
    """A database interlock never touched."""


def older_downgraded(url: str) -> None:
    upgrade(url)
    downgrade(url, older_revision())


def older_unversioned(url: str) -> None:
    """The interlock tables (made by `create_all`, say) with rows, but no version row."""
    engine = make_engine(url)
    try:
        metadata.create_all(engine)
        with engine.begin() as conn:
            conn.execute(metadata.tables["interlock_tasks"].insert().values(
                id="T1", workflow_id=WF, step_id="work", description="",
                created_at=sa.func.current_timestamp(), updated_at=sa.func.current_timestamp()))
    finally:
        engine.dispose()


OLDER = {"empty": older_empty, "downgraded": older_downgraded, "unversioned": older_unversioned}


def cli(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    try:
        code = main(list(args))
    except SystemExit as exc:
        code = int(exc.code or 0)
    out = capsys.readouterr()
    return code, out.out, out.err


@pytest.mark.parametrize("state", sorted(OLDER))
def test_an_older_database_is_refused_by_a_check_and_nothing_is_written(state: str, empty_url: str) -> None:
    OLDER[state](empty_url)
    before = _rows(empty_url)
    with pytest.raises(StoreError) as info:
        open_store(empty_url, create=False)
    message = str(info.value)
    assert f"this interlock needs {head_revision()}" in message
    assert f"run `interlock db upgrade --url {display_url(empty_url)}`" in message
    assert _rows(empty_url) == before  # no table created, no row written (the version table included)


@pytest.mark.parametrize("state", sorted(OLDER))
def test_open_store_upgrades_an_older_database_and_keeps_its_rows(state: str, empty_url: str) -> None:
    OLDER[state](empty_url)
    before = _rows(empty_url)
    store = open_store(empty_url)
    try:
        assert current_revision(empty_url) == head_revision()
        arrival = store.create_task(TaskState("T9", WF, "work"))
        assert arrival.status == "moved"
    finally:
        store.close()  # type: ignore[attr-defined]
    after = _rows(empty_url)
    assert set(after) == {t.name for t in metadata.sorted_tables} | {VERSION_TABLE}
    for table, rows in before.items():
        if table == VERSION_TABLE:
            continue
        if table not in after:  # folded into another table by a migration (0002: entry records into the ledger;
            assert table == "interlock_entries" and not rows, table  # test_migrations checks the move)
            continue
        width = len(rows[0]) if rows else 0  # a migration may have added columns (at the end)
        assert set(rows) <= {r[:width] for r in after[table]}, table  # nothing the host wrote was lost


@pytest.mark.parametrize("state", sorted(OLDER))
def test_db_upgrade_brings_an_older_database_to_head_and_a_second_run_is_a_no_op(
        state: str, empty_url: str, capsys: pytest.CaptureFixture[str]) -> None:
    OLDER[state](empty_url)
    code, out, err = cli(capsys, "db", "current", "--url", empty_url)
    assert (code, err) == (0, "")
    assert out.strip() == (older_revision() if state == "downgraded" else "(empty: no interlock schema)")
    code, out, err = cli(capsys, "db", "upgrade", "--url", empty_url)
    assert (code, err) == (0, "")
    assert out.strip() == f"database at revision {head_revision()} (head {head_revision()})"
    upgraded = _rows(empty_url)
    code, out, err = cli(capsys, "db", "upgrade", "--url", empty_url)
    assert (code, err) == (0, "")
    assert out.strip() == f"database at revision {head_revision()} (head {head_revision()})"
    assert _rows(empty_url) == upgraded  # the second run changed nothing
    code, out, err = cli(capsys, "db", "current", "--url", empty_url)
    assert (code, out.strip(), err) == (0, head_revision(), "")
    open_store(empty_url, create=False).close()  # type: ignore[attr-defined]


NEWER_REVISION = "ffff9999"


def newer(url: str) -> None:
    """A database a newer interlock upgraded: a revision this package does not know, and its new table."""
    upgrade(url)
    with_data(url)
    engine = make_engine(url)
    try:
        with engine.begin() as conn:
            conn.execute(sa.text(f"UPDATE {VERSION_TABLE} SET version_num = :rev"), {"rev": NEWER_REVISION})
            conn.exec_driver_sql("CREATE TABLE interlock_from_the_future (id INTEGER PRIMARY KEY, due TEXT)")
    finally:
        engine.dispose()


NEWER_PATHS: dict[str, Callable[[str], Any]] = {
    "open_store(create=False)": lambda url: open_store(url, create=False),
    "open_store(create=True)": lambda url: open_store(url),
    "upgrade(url)": upgrade,
}


@pytest.mark.parametrize("path", sorted(NEWER_PATHS))
def test_a_newer_database_is_refused_with_a_clear_error_and_nothing_is_written(path: str, empty_url: str) -> None:
    newer(empty_url)
    before = _rows(empty_url)
    with pytest.raises(StoreError) as info:
        NEWER_PATHS[path](empty_url)
    assert _rows(empty_url) == before
    message = str(info.value)
    assert NEWER_REVISION in message
    assert "newer interlock" in message, message  # says what happened, in words an operator can act on


def test_db_commands_on_a_newer_database(empty_url: str, capsys: pytest.CaptureFixture[str]) -> None:
    newer(empty_url)
    before = _rows(empty_url)
    code, out, err = cli(capsys, "db", "current", "--url", empty_url)
    assert (code, out.strip(), err) == (0, NEWER_REVISION, "")
    code, out, err = cli(capsys, "db", "upgrade", "--url", empty_url)
    assert _rows(empty_url) == before
    assert code == 2 and out == ""
    assert err.startswith("interlock: error: ") and err.count("\n") == 1 and "Traceback" not in err
    assert NEWER_REVISION in err and "newer interlock" in err, err


def test_checking_a_missing_sqlite_file_creates_nothing(tmp_path: Path) -> None:
    """`create=False` only checks: a mistyped path is an error, not a new empty database left behind."""
    path = tmp_path / "typo.db"
    with pytest.raises(StoreError, match="interlock db upgrade"):
        open_store(f"sqlite:///{path}", create=False)
    assert sorted(p.name for p in tmp_path.iterdir()) == []
