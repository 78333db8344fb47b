"""A callable in, whether calling it gives a coroutine out: how the synchronous runtime refuses `async def` executors
and loaders, naming `AsyncRuntime` (ADR 0049).

A coroutine function, an object whose `__call__` is one, and a `functools.partial` of either are refused where
they are registered; a plain callable that returns a coroutine anyway (a lambda around an `async def`) is found
when it is called, its coroutine closed unawaited (no "never awaited" warning), and the call is a failure that
says the same.
"""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from .errors import RuntimeFault

__all__ = ["is_async_callable", "refuse_async", "returned_coroutine", "SyncLoaders", "ASYNC_HINT"]

ASYNC_HINT = ("the synchronous Runtime cannot await it: use interlock.runtime.AsyncRuntime, which runs `async def` "
              "executors and loaders on the event loop, or register a plain function")


def is_async_callable(fn: object) -> bool:
    """Whether calling `fn` gives a coroutine: a coroutine function, a `functools.partial` of one, or an object
    whose `__call__` is one."""
    while isinstance(fn, functools.partial):
        fn = fn.func
    if inspect.iscoroutinefunction(fn):
        return True
    if inspect.isfunction(fn) or inspect.ismethod(fn) or inspect.isbuiltin(fn) or isinstance(fn, type):
        return False
    return inspect.iscoroutinefunction(getattr(fn, "__call__", None))  # noqa: B004 - the instance's own method


def refuse_async(fn: object, what: str) -> None:
    """Raise a `RuntimeFault` if `fn` is async (`what` names it: "executor `notify`", "loader `session`")."""
    if is_async_callable(fn):
        raise RuntimeFault(f"{what} is an `async def` callable: {ASYNC_HINT}")


def returned_coroutine(value: object, what: str) -> str | None:
    """If a call returned a coroutine, close it (it is never run) and say why that is refused; else None."""
    if not inspect.iscoroutine(value):
        return None
    value.close()
    return f"{what} returned a coroutine: {ASYNC_HINT}"


class SyncLoaders(dict[str, Any]):
    """The live loaders of a synchronous runtime (`rt.loaders`): adding an `async def` loader is refused."""

    def __init__(self, loaders: Mapping[str, Callable[..., Any]] | Iterable[tuple[str, Callable[..., Any]]] = ()) -> None:
        super().__init__()
        self.update(loaders)

    def __setitem__(self, name: str, loader: Callable[..., Any]) -> None:
        refuse_async(loader, f"loader `{name}`")
        super().__setitem__(name, loader)

    def update(self, *args: Any, **kwargs: Any) -> None:
        for name, loader in dict(*args, **kwargs).items():
            self[name] = loader

    def setdefault(self, name: str, loader: Any = None) -> Any:
        if name not in self:
            self[name] = loader
        return self[name]
