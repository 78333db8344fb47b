"""A store wrapper that fails on demand, for the fault tests (imported by name).

`FlakyStore(inner)` forwards every call to `inner`; `fail_on(name, times, skip=k)` lets the
next `k` calls of method `name` through and makes the `times` calls after them raise
`StoreError`, as a store whose database went away would.  This holds for calls made on
the stores its `unit()` yields too (the runtime's transactional executors write through
them), and for `unit()` itself (the transaction cannot begin).
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from interlock.runtime.store import Store, StoreError


class _Plan:
    def __init__(self) -> None:
        self.failures: dict[str, int] = {}
        self.skips: dict[str, int] = {}
        self.calls: list[str] = []
        self.raised: list[str] = []


class FlakyStore:
    def __init__(self, inner: Store, plan: _Plan | None = None) -> None:
        self._inner = inner
        self._plan = plan or _Plan()
        self.durable = inner.durable

    @property
    def inner(self) -> Store:
        return self._inner

    @property
    def raised(self) -> list[str]:
        return self._plan.raised

    def fail_on(self, name: str, times: int = 1, *, skip: int = 0) -> None:
        self._plan.failures[name] = times
        self._plan.skips[name] = skip

    def heal(self) -> None:
        self._plan.failures.clear()
        self._plan.skips.clear()

    def _should_fail(self, name: str) -> bool:
        plan = self._plan
        if not plan.failures.get(name, 0):
            return False
        if plan.skips.get(name, 0):
            plan.skips[name] -= 1
            return False
        plan.failures[name] -= 1
        plan.raised.append(name)
        return True

    def __getattr__(self, name: str) -> Any:
        attr = getattr(self._inner, name)
        if not callable(attr):
            return attr

        def call(*args: Any, **kwargs: Any) -> Any:
            self._plan.calls.append(name)
            if self._should_fail(name):
                raise StoreError(f"{name}: lost the connection to the database (injected)")
            return attr(*args, **kwargs)

        return call

    @contextmanager
    def unit(self) -> Iterator[FlakyStore]:
        self._plan.calls.append("unit")
        if self._should_fail("unit"):
            raise StoreError("unit: could not begin a transaction (injected)")
        with self._inner.unit() as tx:
            yield FlakyStore(tx, self._plan)
