"""Fixtures for the runtime behaviour tests: a store of each backend that can be reopened
("a restart"), a compiled plan, recording host executors and a runtime built over them.

Backends: `memory` (MemoryStore), `sqlite` (a SQLite file through `open_store`) and
`postgresql` (`open_store` on a private schema of the server at `INTERLOCK_TEST_PG_URL`,
default the local `test` database; its tables are emptied before each test).  As in
tests/stores/conftest.py, an unreachable server skips the PostgreSQL cases, except under
`CI=true`, where they fail.

Tests get helpers through fixtures (`harness`, `backend`), never through imports: the
suite runs in pytest's importlib mode without package `__init__` files.

A module marked `pytestmark = pytest.mark.async_runtime` runs each of its harness tests twice: with
a `Runtime`, and with an `AsyncRuntime` driven through an event loop on a thread of its own behind
a facade with `Runtime`'s synchronous methods (`SyncFacade`); the host kinds are then `async def`
executors and the loaders `async def` loaders, run on that loop.
"""

from __future__ import annotations

import asyncio
import functools
import inspect
import threading
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
import sqlalchemy as sa

from interlock.compiler import compile_source
from interlock.dsl import SourceFile
from interlock.runtime import ActionContext, ActionFailed, ExecutorRegistry, ListSink, Runtime, StaticDirectory
from interlock.runtime.aio import AsyncExecutorRegistry, AsyncRuntime
from interlock.runtime.builtins import register_builtins
from interlock.runtime.plan import Plan
from interlock.runtime.records import Record
from interlock.runtime.store import Participant, Store
from interlock.stores import MemoryStore, open_store, upgrade
from interlock.stores.engine import normalise_url
from interlock.stores.schema import metadata

ROOT = Path(__file__).resolve().parents[2]
BACKENDS = ["memory", "sqlite", pytest.param("postgresql", marks=pytest.mark.postgres)]
DURABLE = BACKENDS[1:]
"""The stores with a URL (a test marked `durable`: a file or a server to reopen, a host's own connection)."""


# ---- plans ------------------------------------------------------------------------------------

@functools.cache
def compile_text(text: str, name: str = "t.wf") -> Plan:
    """The plan of a `.wf` text (errors fail the test with the diagnostics)."""
    result = compile_source(SourceFile(name, text))
    if result.plan is None:
        raise AssertionError("test workflow does not compile:\n" + "\n".join(str(d) for d in result.diagnostics))
    return result.plan


OFFICE_TEXT = (ROOT / "examples" / "office_default.wf").read_text(encoding="utf-8")


# ---- PostgreSQL -------------------------------------------------------------------------------

@pytest.fixture(scope="session")
def runtime_pg_url(pg_server: Any) -> str:
    """A migrated private schema for the session's PostgreSQL runtime tests (the suite's `pg_server`)."""
    url = str(pg_server.url_for(pg_server.new_schema()))
    upgrade(url)
    return url


@pytest.fixture(scope="session")
def runtime_pg_engine(runtime_pg_url: str) -> Iterator[sa.Engine]:
    engine = sa.create_engine(normalise_url(runtime_pg_url))
    yield engine
    engine.dispose()



# ---- backends -------------------------------------------------------------------------------

@dataclass
class Backend:
    """One store backend.  `reopen()` is a process restart: a new connection to the same
    database (the memory store, which cannot survive a process, hands back itself)."""

    name: str
    url: str | None
    store: Store
    opened: list[Store] = field(default_factory=list)

    @property
    def durable(self) -> bool:
        return self.url is not None

    def reopen(self) -> Store:
        if self.url is not None:
            self.store = open_store(self.url, create=False)
            self.opened.append(self.store)
        return self.store

    def close(self) -> None:
        for store in self.opened:
            close = getattr(store, "close", None)
            if close is not None:
                close()


@pytest.fixture(params=BACKENDS)
def backend(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Backend]:
    """A fresh, empty store of each backend."""
    if request.param == "memory":
        yield Backend("memory", None, MemoryStore())
        return
    if request.param == "sqlite":
        template: Path = request.getfixturevalue("sqlite_template")
        path = tmp_path / "runtime.db"
        path.write_bytes(template.read_bytes())
        url = f"sqlite:///{path}"
    else:
        url = request.getfixturevalue("runtime_pg_url")
        engine: sa.Engine = request.getfixturevalue("runtime_pg_engine")
        with engine.begin() as conn:
            for table in reversed(metadata.sorted_tables):
                conn.execute(table.delete())
    store = open_store(url, create=False)
    b = Backend(request.param, url, store, [store])
    try:
        yield b
    finally:
        b.close()


# ---- host executors ---------------------------------------------------------------------------

@dataclass
class Call:
    kind: str
    task: str
    step: str
    trigger: str
    entry_id: int | None
    operation_id: str | None
    session_id: str | None
    key: str | None
    payload: dict[str, Any]
    args: dict[str, Any]
    description: str
    attempt: int = 1


class Recorder:
    """Records every executor call; `fail(kind, n)` makes the next n calls of a kind fail
    (`ActionFailed`), `panic(kind, n)` makes them raise an unexpected exception, and
    `hook(kind, fn)` runs `fn(ctx)` inside the executor (re-entrant calls)."""

    def __init__(self) -> None:
        self.calls: list[Call] = []
        self._fail: dict[str, list[str]] = {}
        self._hooks: dict[str, Callable[[ActionContext], Any]] = {}

    def fail(self, kind: str, n: int = 1, error: str = "simulated failure") -> None:
        self._fail.setdefault(kind, []).extend([f"fail:{error}"] * n)

    def panic(self, kind: str, n: int = 1, error: str = "simulated panic") -> None:
        self._fail.setdefault(kind, []).extend([f"panic:{error}"] * n)

    def hook(self, kind: str, fn: Callable[[ActionContext], Any]) -> None:
        self._hooks[kind] = fn

    def of(self, kind: str) -> list[Call]:
        return [c for c in self.calls if c.kind == kind]

    def kinds(self) -> list[str]:
        return [c.kind for c in self.calls]

    def executor(self, kind: str, inner: Callable[[Mapping[str, Any], ActionContext], Any] | None = None
                 ) -> Callable[[Mapping[str, Any], ActionContext], Any]:
        def run(args: Mapping[str, Any], ctx: ActionContext) -> Any:
            self.calls.append(Call(kind, ctx.task.id, ctx.step_id, ctx.trigger, ctx.entry_id, ctx.operation_id,
                                   ctx.session_id, ctx.idempotency_key, dict(ctx.payload), dict(args),
                                   ctx.task.description, ctx.attempt))
            queue = self._fail.get(kind)
            if queue:
                mode, _, error = queue.pop(0).partition(":")
                if mode == "fail":
                    raise ActionFailed(error)
                raise RuntimeError(error)
            hook = self._hooks.get(kind)
            if hook is not None:
                hook(ctx)
            if inner is not None:
                return inner(args, ctx)
            return [{"kind": kind}]

        return run

    def async_executor(self, kind: str) -> Callable[[Mapping[str, Any], ActionContext], Any]:
        """`executor(kind)` as an `async def` executor (run on the event loop); a kind with a hook runs off the loop,
        as a host's blocking code would (its hook may call back into the runtime)."""
        run = self.executor(kind)

        async def run_async(args: Mapping[str, Any], ctx: ActionContext) -> Any:
            if kind in self._hooks:
                return await asyncio.to_thread(run, args, ctx)
            return run(args, ctx)

        return run_async


HOST_KINDS = ("enable_plan_mode", "reset_agent_context", "set_session_mode", "disable_plan_mode", "auto_start_agent",
              "run_code_review", "set_workflow_data", "create_child_task", "switch_workflow")


def registry(recorder: Recorder, *, host: Sequence[str] = HOST_KINDS, missing: Sequence[str] = (),
             asynchronous: bool = False) -> ExecutorRegistry:
    """Builtins (wrapped, still transactional) and recording host executors for `host` kinds (`asynchronous`:
    `async def` ones, in an `AsyncExecutorRegistry`)."""
    reg = AsyncExecutorRegistry() if asynchronous else ExecutorRegistry()
    builtins = register_builtins(ExecutorRegistry())
    for kind in builtins.kinds():
        inner = builtins.get(kind)
        reg.register(kind, recorder.executor(kind, inner), transactional=True)
    for kind in host:
        reg.register(kind, recorder.async_executor(kind) if asynchronous else recorder.executor(kind))
    for kind in missing:
        reg.unregister(kind)
    return reg


# ---- AsyncRuntime behind the synchronous API ---------------------------------------------------------------

class LoopThread:
    """An event loop running on a thread of its own (the host's loop, for an `AsyncRuntime`)."""

    def __init__(self) -> None:
        self.loop = asyncio.new_event_loop()
        self.thread = threading.Thread(target=self.loop.run_forever, name="test-loop", daemon=True)
        self.thread.start()

    def run(self, coroutine: Any) -> Any:
        return asyncio.run_coroutine_threadsafe(coroutine, self.loop).result()

    def close(self) -> None:
        self.loop.call_soon_threadsafe(self.loop.stop)
        self.thread.join()
        self.loop.close()


class SyncFacade:
    """`Runtime`'s synchronous API over an `AsyncRuntime`: each coroutine method is awaited on the loop thread (the
    caller waits for it); everything else is the `AsyncRuntime`'s, or its core's."""

    def __init__(self, art: AsyncRuntime, loop: LoopThread) -> None:
        object.__setattr__(self, "_art", art)
        object.__setattr__(self, "_loop", loop)

    def __getattr__(self, name: str) -> Any:
        art = self._art
        attr = getattr(art, name) if hasattr(type(art), name) else getattr(art.runtime, name)
        if inspect.iscoroutinefunction(attr):
            return lambda *args, **kwargs: self._loop.run(attr(*args, **kwargs))
        return attr

    def __setattr__(self, name: str, value: Any) -> None:
        setattr(self._art if hasattr(type(self._art), name) else self._art.runtime, name, value)


def async_loader(fn: Callable[[Any, Mapping[str, Any]], Any]) -> Callable[[Any, Mapping[str, Any]], Any]:
    async def load(argument: Any, event: Mapping[str, Any]) -> Any:
        return fn(argument, event)

    return load


@pytest.fixture()
def flavour(request: pytest.FixtureRequest) -> str:
    """`sync` (a `Runtime`), or `async` (an `AsyncRuntime` behind `SyncFacade`) in modules marked `async_runtime`."""
    return str(getattr(request, "param", "sync"))


@pytest.hookimpl(tryfirst=True)  # before pytest reads the `parametrize` marks and the fixtures' params
def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    if "flavour" in metafunc.fixturenames and metafunc.definition.get_closest_marker("async_runtime"):
        metafunc.parametrize("flavour", ["sync", "async"], indirect=True)
    # a test of what only a store with a URL has runs on those stores, rather than skipping on the memory store:
    # the suite's skips stay for what is missing from the machine (ADR 0054)
    if "backend" in metafunc.fixturenames and metafunc.definition.get_closest_marker("durable"):
        # as a mark, so that the fixture's own params give way to it (as to a `parametrize` mark in the module)
        metafunc.definition.add_marker(pytest.mark.parametrize("backend", DURABLE, indirect=True))


# ---- the harness ------------------------------------------------------------------------------

class Harness:
    """A plan, a backend, a recorder and a record sink, and runtimes built over them."""

    def __init__(self, backend: Backend, flavour: str = "sync") -> None:
        self.backend = backend
        self.flavour = flavour
        self.loop: LoopThread | None = None
        self.recorder = Recorder()
        self.sink = ListSink()
        self.plan: Plan | None = None
        self.rt: Runtime | None = None
        self.runtimes: list[Runtime] = []
        self._kw: dict[str, Any] = {}

    @property
    def store(self) -> Store:
        return self.backend.store

    def start(self, text: str = OFFICE_TEXT, *, host: Sequence[str] = HOST_KINDS, missing: Sequence[str] = (),
              loaders: Mapping[str, Any] | None = None, directory: Any = None,
              host_flags: Mapping[str, Any] | None = None, session_live: Callable[[str], bool] | None = None
              ) -> Runtime:
        self.plan = compile_text(text)
        self._kw = {"host": host, "missing": missing, "loaders": loaders, "host_flags": host_flags,
                    "directory": directory or StaticDirectory(primary="primary", ceo="ceo-1"),
                    "session_live": session_live}
        return self._build()

    def _build(self) -> Runtime:
        assert self.plan is not None
        kw = self._kw
        asynchronous = self.flavour == "async"
        options = {"directory": kw["directory"], "sinks": [self.sink], "host": kw["host_flags"],
                   "executor_timeout": 10.0, "session_live": kw["session_live"]}
        executors = registry(self.recorder, host=kw["host"], missing=kw["missing"], asynchronous=asynchronous)
        built = len(self.sink.records)
        rt: Any
        if asynchronous:
            if self.loop is None:
                self.loop = LoopThread()
            loaders = {name: async_loader(fn) for name, fn in (kw["loaders"] or {}).items()}
            rt = SyncFacade(AsyncRuntime(self.plan, self.store, executors=executors, loaders=loaders, **options),
                            self.loop)
        else:
            rt = Runtime(self.plan, self.store, executors=executors, loaders=kw["loaders"], **options)
        # the construction's `runtime_misconfigured` warning (missing kinds, no loaders) is tests/runtime/
        # test_fail_fast.py's subject: the behaviour tests look at what deliveries record
        self.sink.records[built:] = [r for r in self.sink.records[built:]
                                     if r.fields.get("code") != "runtime_misconfigured"]
        self.rt = rt
        self.runtimes.append(rt)
        return rt  # type: ignore[no-any-return]

    def close(self) -> None:
        for rt in self.runtimes:
            if isinstance(rt, SyncFacade):
                rt.aclose()  # awaited on the loop by the facade
        if self.loop is not None:
            self.loop.close()

    def restart(self) -> Runtime:
        """A new runtime over the reopened store (a process restart); same recorder and sink."""
        self.backend.reopen()
        return self._build()

    # ---- reading what happened ------------------------------------------------------------------
    def records(self, kind: str | None = None) -> list[Record]:
        return [r for r in self.sink.records if kind is None or r.kind == kind]

    def entries_for(self, entry_id: int) -> list[Record]:
        return [r for r in self.records("entry") if r.fields.get("entry_id") == entry_id]

    def counter(self, name: str) -> int:
        return sum(int(rt.counters.snapshot().get(name, 0)) for rt in self.runtimes)

    def seat(self, step: str, role: str, agent: str, task: str = "") -> None:
        self.store.add_participant(Participant(task, step, role, agent))

    def runs(self, task: str | None = None) -> list[tuple[str, str, str]]:
        return [(r.task_id, r.agent, r.reason) for r in self.store.runs(task)]

    def mark(self) -> int:
        """The current length of the record stream (to look only at what comes after)."""
        return len(self.sink.records)

    def since(self, mark: int, kind: str | None = None) -> list[Record]:
        return [r for r in self.sink.records[mark:] if kind is None or r.kind == kind]


@pytest.fixture()
def harness(backend: Backend, flavour: str) -> Iterator[Harness]:
    h = Harness(backend, flavour)
    yield h
    h.close()


@pytest.fixture()
def build_runtime(flavour: str) -> Iterator[Callable[..., Any]]:
    """`build_runtime(plan, store, **options)`: a `Runtime`, or in modules marked `async_runtime` also an
    `AsyncRuntime` behind `SyncFacade` (the same options); every one built is closed at teardown."""
    loop = LoopThread() if flavour == "async" else None
    built: list[Any] = []

    def build(plan: Plan, store: Store, **options: Any) -> Any:
        rt: Any = Runtime(plan, store, **options) if loop is None else SyncFacade(
            AsyncRuntime(plan, store, **options), loop)
        built.append(rt)
        return rt

    yield build
    for rt in built:
        rt.close()  # the core's owner: no more heartbeats (an AsyncRuntime's `close` is a call on its workers)
        if isinstance(rt, SyncFacade):
            rt.aclose()  # then its workers end (awaited on the loop by the facade)
    if loop is not None:
        loop.close()


@pytest.fixture()
def memory_harness(flavour: str) -> Iterator[Harness]:
    """A harness on the memory store only (for behaviour that does not depend on the store)."""
    h = Harness(Backend("memory", None, MemoryStore()), flavour)
    yield h
    h.close()
