"""Database URLs in, configured SQLAlchemy engines and `StoreError`s out.

SQLite is set up for correctness under concurrency: the sqlite3 module's legacy transaction
control is switched off, so BEGIN is always explicit — SQLAlchemy emits it for its own
connections (migrations, hosts; `BEGIN_OPTION` picks the mode) and `SqlStore` issues it on
the DBAPI connection itself; write transactions begin with `BEGIN IMMEDIATE` so writers
queue on the busy timeout instead of failing on an upgrade from a read lock; file databases
use WAL with `synchronous = NORMAL` (no fsync per commit; a power loss can lose the last
commits but never corrupts) checkpointed every `SQLITE_WAL_AUTOCHECKPOINT` pages, a new file gets `SQLITE_PAGE_SIZE`
pages, and foreign keys are enforced.  An in-memory
database is one shared connection (`StaticPool`), so every thread sees the same data;
callers serialise its transactions with the engine's `memory_lock`.
"""

from __future__ import annotations

import threading
import weakref
from typing import Any

from sqlalchemy import Connection, Engine, create_engine, event
from sqlalchemy.engine import URL, make_url
from sqlalchemy.exc import ArgumentError, DataError, DBAPIError, IntegrityError, OperationalError, ProgrammingError
from sqlalchemy.pool import StaticPool

from interlock.runtime.store import StoreError

from .masking import mask_credentials, scrub

__all__ = [
    "BUSY_TIMEOUT_S", "SQLITE_PAGE_SIZE", "SQLITE_WAL_AUTOCHECKPOINT", "BEGIN_OPTION", "ADVISORY_NAMESPACE", "MIGRATION_LOCK_KEY", "normalise_url", "is_memory_url",
    "check_url", "make_engine", "memory_lock", "display_url", "upgrade_hint", "store_error",
]

BUSY_TIMEOUT_S = 30.0
"""How long a SQLite writer waits for the write lock before the store gives up."""

ADVISORY_NAMESPACE = 0x494C434B
"""First key of every PostgreSQL advisory lock interlock takes ("ILCK"), so a host's own locks never collide."""

MIGRATION_LOCK_KEY = 1
"""Second advisory-lock key held by a migration run: concurrent upgrades queue instead of racing DDL."""

SQLITE_PAGE_SIZE = 2048
"""Page size of a SQLite file database the store creates (an existing file keeps its own): interlock's rows are
small and an arrival dirties one page in each of eight b-trees, so a commit's WAL bytes scale with the page size
(ADR 0012)."""

SQLITE_WAL_AUTOCHECKPOINT = 4000
"""WAL pages between automatic checkpoints (SQLite's default is 1000): an arrival writes about ten pages, and each
checkpoint costs two fsyncs under `synchronous = NORMAL`, so checkpointing a quarter as often is about a tenth more
arrivals per second (ADR 0052); the WAL stays under 8 MB with `SQLITE_PAGE_SIZE` pages."""

BEGIN_OPTION = "interlock_begin"
"""Execution option naming the SQLite BEGIN mode of a connection's next transaction."""

_MEMORY_LOCKS: weakref.WeakKeyDictionary[Engine, threading.RLock] = weakref.WeakKeyDictionary()
_MEMORY_LOCKS_GUARD = threading.Lock()


def normalise_url(url: str | URL) -> URL:
    """`postgresql://` and `postgres://` become `postgresql+psycopg://` (psycopg 3); the rest is kept."""
    if isinstance(url, str):
        if url.startswith("postgres://"):
            url = "postgresql://" + url[len("postgres://"):]
        url = make_url(url)
    if url.drivername == "postgresql":
        url = url.set(drivername="postgresql+psycopg")
    return url


_DRIVERS = {"sqlite": ("pysqlite",), "postgresql": ("psycopg",)}
_URL_FORMS = "sqlite:///FILE.db, sqlite:// (in memory) or postgresql://USER@HOST/DATABASE"
# query arguments the pysqlite dialect reads itself (with `uri=true` the others go to SQLite as URI options)
_SQLITE_ARGS = {"timeout": float, "cached_statements": int, "detect_types": int, "check_same_thread": bool,
                "isolation_level": str, "uri": bool}


def check_url(url: str | URL) -> URL:
    """The normalised URL, or a `StoreError` saying in words what is wrong with it: empty, unparseable, a
    database other than SQLite or PostgreSQL, a driver other than pysqlite or psycopg 3 (or not installed), a
    query argument the driver does not read or cannot parse."""
    raw = url if isinstance(url, str) else url.render_as_string(hide_password=False)
    shown = _clip(mask_credentials(raw))
    if isinstance(url, str) and not url.strip():
        raise StoreError(f"empty database URL: give {_URL_FORMS}")
    try:
        u = normalise_url(url.strip() if isinstance(url, str) else url)
    except (ArgumentError, ValueError) as exc:
        raise StoreError(f"cannot parse the database URL `{shown}` ({scrub(str(exc), raw)}): give {_URL_FORMS}") from None
    backend = u.get_backend_name()
    drivers = _DRIVERS.get(backend)
    driver = u.drivername.partition("+")[2] or (drivers[0] if drivers else "")  # no dialect loaded to find it
    if drivers is None:
        raise StoreError(f"unsupported database `{backend}` in `{shown}`: interlock stores run on SQLite and "
                         f"PostgreSQL ({_URL_FORMS})")
    if driver not in drivers:
        raise StoreError(f"unsupported driver `{backend}+{driver}` in `{shown}`: use "
                         f"{' or '.join(f'{backend}+{d}' for d in drivers)} (or plain `{backend}://`)")
    if backend == "postgresql":
        try:
            import psycopg  # noqa: F401
        except ImportError:
            raise StoreError(f"`{shown}` needs the psycopg 3 driver, which is not installed: "
                             "pip install 'psycopg[binary]'") from None
        return u
    if u.host or u.port or u.username or u.password:
        raise StoreError(f"`{shown}`: a SQLite URL names no host or user: sqlite:///FILE.db (relative), "
                         "sqlite:////abs/FILE.db or sqlite:// (in memory)")
    uri = str(u.query.get("uri", "")).lower() in ("true", "1")
    for key, value in u.query.items():
        expected = _SQLITE_ARGS.get(key)
        if expected is None:
            if uri:
                continue
            raise StoreError(f"`{shown}`: SQLite reads no query argument `{key}` (known: "
                             f"{', '.join(_SQLITE_ARGS)}; SQLite URI options need `uri=true`)")
        text = value if isinstance(value, str) else ",".join(value)
        if expected is bool:
            ok = text.lower() in ("true", "false", "1", "0")
        elif expected is str:
            ok = True
        else:
            try:
                number = expected(text)
                ok = number >= 0
            except ValueError:
                ok = False
        if not ok:
            kind = {float: "a number of seconds", int: "a whole number", bool: "true or false"}.get(expected, "")
            raise StoreError(f"`{shown}`: `{key}={_clip(scrub(text, raw), 40)}` is not {kind}")
    return u


def _clip(text: str, limit: int = 120) -> str:
    return text if len(text) <= limit else f"{text[:limit]}… ({len(text)} characters)"


def is_memory_url(url: str | URL) -> bool:
    """True for an in-memory SQLite database (`sqlite://`, `sqlite:///:memory:`, `mode=memory` URIs)."""
    u = normalise_url(url)
    if u.get_backend_name() != "sqlite":
        return False
    return u.database in (None, "", ":memory:") or u.query.get("mode") == "memory"


def display_url(url: str | URL) -> str:
    """The URL as every message, report and repr shows it: normalised, every credential masked
    (`masking.mask_credentials`: the user part's password, `?password=`, `sslpassword`, …).  A URL that does not
    parse is shown masked as given."""
    try:
        text = normalise_url(url).render_as_string(hide_password=False)
    except (ArgumentError, ValueError):
        text = url if isinstance(url, str) else repr(url)
    return mask_credentials(text)


def upgrade_hint(url: str | URL) -> str:
    """What an operator runs to bring the database at `url` up to date."""
    return f"run `interlock db upgrade --url {display_url(url)}`"


def make_engine(url: str | URL, *, busy_timeout: float = BUSY_TIMEOUT_S, **kwargs: Any) -> Engine:
    """An engine for `url`, with the SQLite settings described in the module docstring.

    `busy_timeout` (seconds, SQLite only) is how long a writer waits for the write lock;
    other keyword arguments go to `sqlalchemy.create_engine`.  A URL `check_url` refuses raises `StoreError`."""
    u = check_url(url)
    if u.get_backend_name() != "sqlite":
        # Hosts keep stores open for days: a connection the server dropped is replaced, not reported.
        kwargs.setdefault("pool_pre_ping", True)
        return create_engine(u, **kwargs)
    memory = is_memory_url(u)
    connect_args: dict[str, Any] = {"timeout": busy_timeout, **kwargs.pop("connect_args", {})}
    if memory:
        connect_args["check_same_thread"] = False
        kwargs.setdefault("poolclass", StaticPool)
    engine = create_engine(u, connect_args=connect_args, **kwargs)

    @event.listens_for(engine, "connect")
    def _on_connect(dbapi_connection: Any, _record: Any) -> None:
        # SQLAlchemy emits BEGIN (see `_on_begin`): the driver must not.
        dbapi_connection.isolation_level = None
        cursor = dbapi_connection.cursor()
        try:
            cursor.execute(f"PRAGMA busy_timeout = {int(busy_timeout * 1000)}")
            cursor.execute("PRAGMA foreign_keys = ON")
            if not memory:
                # Before WAL: takes effect only on a database with no content yet (ADR 0012).
                cursor.execute(f"PRAGMA page_size = {SQLITE_PAGE_SIZE}")
                cursor.execute("PRAGMA journal_mode = WAL").fetchall()
                cursor.execute("PRAGMA synchronous = NORMAL")
                cursor.execute(f"PRAGMA wal_autocheckpoint = {SQLITE_WAL_AUTOCHECKPOINT}").fetchall()
        finally:
            cursor.close()

    @event.listens_for(engine, "begin")
    def _on_begin(conn: Connection) -> None:
        mode = conn.get_execution_options().get(BEGIN_OPTION, "DEFERRED")
        conn.exec_driver_sql(f"BEGIN {mode}")

    return engine


def memory_lock(engine: Engine) -> threading.RLock | None:
    """The lock serialising transactions on an in-memory SQLite engine (one shared connection); None otherwise."""
    if engine.dialect.name != "sqlite" or not is_memory_url(engine.url):
        return None
    with _MEMORY_LOCKS_GUARD:
        lock = _MEMORY_LOCKS.get(engine)
        if lock is None:
            lock = _MEMORY_LOCKS[engine] = threading.RLock()
        return lock


def store_error(exc: DBAPIError, url: str | URL, doing: str) -> StoreError:
    """A `StoreError` that says what went wrong in words a host operator can act on."""
    where = display_url(url)
    orig = exc.orig
    # a driver's message may quote the connection string: its secrets are masked there too
    text = scrub(str(orig) if orig is not None else str(exc), url if isinstance(url, str)
                 else url.render_as_string(hide_password=False))
    pgcode = getattr(orig, "sqlstate", None) or getattr(orig, "pgcode", None)
    lowered = text.lower()
    if pgcode == "42P01" or "no such table" in lowered or ("relation" in lowered and "does not exist" in lowered):
        return StoreError(f"{doing}: the interlock tables are missing in {where}: {upgrade_hint(url)} ({text})")
    if "database is locked" in lowered or "database table is locked" in lowered:
        return StoreError(f"{doing}: {where} stayed locked by another writer past the busy timeout ({text})")
    if exc.connection_invalidated or (isinstance(exc, OperationalError) and _is_connection_problem(lowered)):
        return StoreError(f"{doing}: lost or could not open the connection to {where} ({text})")
    if isinstance(exc, IntegrityError):
        return StoreError(f"{doing}: constraint violated in {where} ({text})", permanent=True)
    if isinstance(exc, DataError):  # a value the database cannot keep (NUL in text, out of range): never passes
        return StoreError(f"{doing}: {where} refused the data ({text})", permanent=True)
    if isinstance(exc, ProgrammingError | OperationalError):
        return StoreError(f"{doing}: database error in {where} ({text})")
    return StoreError(f"{doing}: {where} failed ({text})")


def _is_connection_problem(lowered: str) -> bool:
    return any(s in lowered for s in (
        "connection", "server closed", "could not connect", "terminating", "unable to open database",
        "timeout expired", "no route", "refused"))
