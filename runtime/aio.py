"""Coroutines in, the runtime run off the event loop out: `AsyncRuntime`, for hosts built on asyncio (ADR 0049).

`AsyncRuntime` has the methods of `Runtime` as coroutines.  Each call runs the synchronous core — its store work, its
executors and loaders that are plain functions — on a worker thread of a pool of its own, so the event loop is never
blocked.  `async def` executors and loaders run on the loop the call came from: the core, on its worker thread,
submits each to the loop and waits for it (an executor at most `executor_timeout` seconds; then its coroutine is
cancelled and the call recorded as timed out).  So an executor may await anything that lives on the loop, the
`AsyncRuntime` included (`await art.fire(…)`; a call made from inside an async executor gets a thread of its own,
so a chain of callbacks never waits for a pool worker it holds).  `ctx.runtime` is the synchronous core: an async
executor calls back through the `AsyncRuntime`, never through `ctx.runtime`, which would block the loop.

Cancelling an awaited call does not stop it: the core finishes it on its thread (its effects and records stand).

A method added to `Runtime` is one line here: `name = _off_loop(Runtime.name)` (tests/runtime/test_aio.py fails
until it is there).
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextvars
import functools
import threading
from collections.abc import Callable, Coroutine, Iterator, Mapping, MutableMapping
from typing import Any, Concatenate, ParamSpec, TypeVar

from .api import Loader, Runtime
from .coroutines import is_async_callable
from .errors import ActionFailed, RuntimeFault
from .executors import Directory, ExecutorRegistry
from .plan import Plan
from .records import Counters, RecordSink
from .store import Store

__all__ = ["AsyncRuntime", "AsyncExecutorRegistry", "on_loop"]

P = ParamSpec("P")
R = TypeVar("R")

_LOOP: contextvars.ContextVar[asyncio.AbstractEventLoop | None] = contextvars.ContextVar("interlock_loop",
                                                                                        default=None)
"""The loop of the `AsyncRuntime` call the current thread works for (set in the worker's context)."""
_NESTED: contextvars.ContextVar[bool] = contextvars.ContextVar("interlock_nested", default=False)
"""True inside an async executor or loader: a call it makes runs on a thread of its own, not on a pool worker."""


class _OnLoop:
    """A plain callable that runs an `async def` executor or loader on the calling `AsyncRuntime`'s loop and waits for
    it.  `executor`: its second argument is an `ActionContext` (the timeout is the runtime's `executor_timeout`)."""

    def __init__(self, what: str, fn: Callable[..., Coroutine[Any, Any, Any]], executor: bool) -> None:
        self.what = what
        self.fn = fn
        self.executor = executor
        functools.update_wrapper(self, fn)

    def __call__(self, first: Any, second: Any) -> Any:
        loop = _LOOP.get()
        if loop is None or loop.is_closed():
            raise RuntimeFault(f"{self.what} is `async def`: it runs only in a call of an AsyncRuntime")
        try:
            running: asyncio.AbstractEventLoop | None = asyncio.get_running_loop()
        except RuntimeError:
            running = None
        if running is loop:  # the loop's own thread would wait for itself
            raise RuntimeFault(f"{self.what} is `async def` and the runtime was called on the event loop's thread: "
                               "call it through the AsyncRuntime (await art.fire(…))")
        timeout = getattr(getattr(second, "runtime", None), "executor_timeout", None) if self.executor else None
        token = _NESTED.set(True)  # the coroutine's task copies this context: its calls into the runtime are nested
        try:
            future = asyncio.run_coroutine_threadsafe(self.fn(first, second), loop)
        finally:
            _NESTED.reset(token)
        try:
            return future.result(timeout)
        except concurrent.futures.TimeoutError:
            future.cancel()
            raise ActionFailed(f"executor timed out after {timeout:g}s") from None


def on_loop(what: str, fn: Callable[..., Any], *, executor: bool = True) -> Callable[..., Any]:
    """`fn` as the synchronous core calls it: an `async def` one wrapped to run on the caller's loop, a plain one as
    it is.  `what` names it in errors ("executor `notify`")."""
    return _OnLoop(what, fn, executor) if is_async_callable(fn) else fn


class AsyncExecutorRegistry(ExecutorRegistry):
    """An `ExecutorRegistry` that also takes `async def` executors, for an `AsyncRuntime` (a synchronous `Runtime`
    given one fails each async call with a message saying so).  An async executor cannot be transactional: a
    transactional executor writes through `ctx.store` inside the runtime's transaction, on the runtime's thread."""

    def register(self, kind: str, fn: Callable[..., Any], *, transactional: bool = False,
                 replayable: bool = False) -> None:
        register(self, kind, fn, transactional=transactional, replayable=replayable)


def register(registry: ExecutorRegistry, kind: str, fn: Callable[..., Any], *, transactional: bool = False,
             replayable: bool = False) -> None:
    """Register `fn` on any registry, an `async def` one wrapped to run on the loop (`on_loop`)."""
    if transactional and is_async_callable(fn):
        raise RuntimeFault(f"executor `{kind}` is `async def`: it cannot be transactional (a transactional "
                           "executor writes through ctx.store in the runtime's transaction, on its thread)")
    ExecutorRegistry.register(registry, kind, on_loop(f"executor `{kind}`", fn), transactional=transactional,
                              replayable=replayable)


class _Loaders(MutableMapping[str, Loader]):
    """The live loaders of an `AsyncRuntime` (the core's, seen through a view that wraps `async def` ones)."""

    def __init__(self, loaders: dict[str, Loader]) -> None:
        self._loaders = loaders

    def __getitem__(self, name: str) -> Loader:
        return self._loaders[name]

    def __setitem__(self, name: str, loader: Loader) -> None:
        self._loaders[name] = on_loop(f"loader `{name}`", loader, executor=False)

    def __delitem__(self, name: str) -> None:
        del self._loaders[name]

    def __iter__(self) -> Iterator[str]:
        return iter(self._loaders)

    def __len__(self) -> int:
        return len(self._loaders)


def _off_loop(method: Callable[Concatenate[Runtime, P], R]) -> Callable[Concatenate[AsyncRuntime, P], Coroutine[Any, Any, R]]:
    """`Runtime.<method>` as a coroutine method of `AsyncRuntime`: the core's method, run on a worker thread."""
    name = method.__name__

    async def call(self: AsyncRuntime, /, *args: P.args, **kwargs: P.kwargs) -> R:
        result: R = await self._run(getattr(self.runtime, name), *args, **kwargs)
        return result

    call.__name__ = name
    call.__qualname__ = f"AsyncRuntime.{name}"
    call.__doc__ = method.__doc__
    return call


class AsyncRuntime:
    """A `Runtime` for asyncio hosts: the same calls as coroutines, run off the event loop; `async def` executors
    (through `executors=AsyncExecutorRegistry()` or `register`) and loaders run on the loop.

    `AsyncRuntime(plan, store, *, executors=None, loaders=None, max_workers=32, **options)`: `options` are
    `Runtime`'s (`directory=`, `sinks=`, `executor_timeout=`, …); `max_workers` bounds the calls that run at once
    (more wait their turn).  `runtime` is the synchronous core.  `aclose()` (or `async with`) ends its threads.
    """

    def __init__(self, plan: Plan, store: Store, *, executors: ExecutorRegistry | None = None,
                 loaders: Mapping[str, Loader] | None = None, max_workers: int = 32, **options: Any) -> None:
        wrapped = {name: on_loop(f"loader `{name}`", fn, executor=False) for name, fn in (loaders or {}).items()}
        self.runtime = Runtime(plan, store, executors=executors if executors is not None else AsyncExecutorRegistry(),
                               loaders=wrapped, **options)
        self._pool = concurrent.futures.ThreadPoolExecutor(max_workers, thread_name_prefix="interlock-aio")

    # ---- the calls, each a line: the core's, off the loop ------------------------------------------------------
    create_task = _off_loop(Runtime.create_task)
    move = _off_loop(Runtime.move)
    switch_workflow = _off_loop(Runtime.switch_workflow)
    dispatch_entry = _off_loop(Runtime.dispatch_entry)
    fire = _off_loop(Runtime.fire)
    dispatch = _off_loop(Runtime.dispatch)
    record_decision = _off_loop(Runtime.record_decision)
    reevaluate = _off_loop(Runtime.reevaluate)
    recover = _off_loop(Runtime.recover)
    check = _off_loop(Runtime.check)
    current_entry = _off_loop(Runtime.current_entry)
    migrate_task = _off_loop(Runtime.migrate_task)
    close = _off_loop(Runtime.close)
    tick = _off_loop(Runtime.tick)
    incidents = _off_loop(Runtime.incidents)
    redrive = _off_loop(Runtime.redrive)
    resolve = _off_loop(Runtime.resolve)

    async def _run(self, fn: Callable[..., Any], /, *args: Any, **kwargs: Any) -> Any:
        loop = asyncio.get_running_loop()
        context = contextvars.copy_context()
        context.run(_LOOP.set, loop)
        call = functools.partial(context.run, fn, *args, **kwargs)
        if _NESTED.get():  # from inside an async executor whose own call holds a worker: a thread of its own
            return await _in_thread(loop, call)
        return await loop.run_in_executor(self._pool, call)

    # ---- configuration: no store work, so no coroutine -------------------------------------------------------------
    def register(self, kind: str, fn: Callable[..., Any], *, transactional: bool = False,
                 replayable: bool = False) -> None:
        """Register an executor, `async def` or plain, on the runtime's registry (`AsyncExecutorRegistry.register`)."""
        register(self.runtime.executors, kind, fn, transactional=transactional, replayable=replayable)

    def add_sink(self, sink: RecordSink) -> None:
        self.runtime.add_sink(sink)

    async def aclose(self) -> None:
        """End the worker threads (calls still running finish first)."""
        await asyncio.get_running_loop().run_in_executor(None, self._pool.shutdown)

    async def __aenter__(self) -> AsyncRuntime:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()

    # ---- what hosts read and set: the core's ------------------------------------------------------------------
    @property
    def plan(self) -> Plan:
        return self.runtime.plan

    @property
    def store(self) -> Store:
        """The store (its methods block: call them off the loop)."""
        return self.runtime.store

    @property
    def executors(self) -> ExecutorRegistry:
        return self.runtime.executors

    @property
    def counters(self) -> Counters:
        return self.runtime.counters

    @property
    def digest(self) -> str:
        """The plan's revision (docs/runtime.md, "Deployments")."""
        return self.runtime.digest

    @property
    def owner_id(self) -> str:
        """The runtime's owner id in the store."""
        return self.runtime.owner_id

    @property
    def sinks(self) -> list[RecordSink]:
        return self.runtime.sinks

    @property
    def loaders(self) -> MutableMapping[str, Loader]:
        """The loaders of dispatch sequences (live; an `async def` one added here runs on the loop)."""
        return _Loaders(self.runtime.loaders)

    @property
    def host(self) -> dict[str, Any]:
        return self.runtime.host

    @property
    def directory(self) -> Directory:
        return self.runtime.directory

    @directory.setter
    def directory(self, directory: Directory) -> None:
        self.runtime.directory = directory

    @property
    def executor_timeout(self) -> float | None:
        return self.runtime.executor_timeout

    @executor_timeout.setter
    def executor_timeout(self, seconds: float | None) -> None:
        self.runtime.executor_timeout = seconds


async def _in_thread(loop: asyncio.AbstractEventLoop, call: Callable[[], Any]) -> Any:
    """`call()` on a new thread, awaited."""
    future: asyncio.Future[Any] = loop.create_future()

    def settle(outcome: Callable[[], None]) -> None:
        if not future.done():
            outcome()

    def target() -> None:
        try:
            result = call()
        except BaseException as exc:  # the caller's to see, whatever it is
            loop.call_soon_threadsafe(settle, functools.partial(future.set_exception, exc))
        else:
            loop.call_soon_threadsafe(settle, functools.partial(future.set_result, result))

    threading.Thread(target=target, name="interlock-aio-nested", daemon=True).start()
    return await future
