"""Consumer calls in, the SQL store's answers out, in process memory: the run queue of `MemoryStore` (`MemoryRuns`).

`MemoryStore` composes one `MemoryRuns` and delegates the queue's calls to it (docs/runtime.md, "Consuming queued
runs"; ADR 0047).  The runs themselves stay the store's (`_runs`, in the order they were queued); this part keeps
each run's queue id and claim.  A run is given its id when the queue first sees it, in queue order, so ids only
grow as the SQL store's do.  It shares the store's lock, clock and undo log: claims and acknowledgements made in a
`unit()` that raises are undone with it.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Iterable
from contextlib import AbstractContextManager
from typing import Any, Protocol, TypeVar

from interlock.runtime.store import PendingRun, QueuedRun

from ._run_rules import MAX_BATCH, check_claim, run_ids

__all__ = ["MemoryRuns", "MemoryRunQueue", "RunState"]

K = TypeVar("K")
V = TypeVar("V")

RunState = tuple[str | None, float | None, int, float | None]
"""A run's claim: (consumer, lease_until, claims, acked_at)."""


class RunsHost(Protocol):
    """What `MemoryRuns` uses of the `MemoryStore` that composes it."""

    @property
    def _lock(self) -> AbstractContextManager[Any]: ...
    @property
    def _runs(self) -> dict[str, QueuedRun]: ...

    def now(self) -> float: ...

    def _put(self, table: dict[K, V], key: K, value: V) -> None: ...

    def _push(self, inverse: Callable[[], object]) -> None: ...


class MemoryRuns:
    """The run queue in process memory, inside a `MemoryStore` (see the module's docstring)."""

    def __init__(self, host: RunsHost) -> None:
        self._host = host
        self._next = itertools.count(1)
        self.ids: dict[str, int] = {}  # run key -> queue id
        self.keys: dict[int, str] = {}  # queue id -> run key, in id order
        self.state: dict[int, RunState] = {}
        self._seen = 0  # how many of the store's runs have an id

    def _sync(self) -> None:
        """Give the runs queued since the last call their ids (in queue order)."""
        runs = self._host._runs
        if len(runs) == self._seen and (not runs or next(reversed(runs)) in self.ids):
            return
        for key in runs:
            if key not in self.ids:
                i = next(self._next)
                self.ids[key], self.keys[i] = i, key
                self.state[i] = (None, None, 0, None)
        self._seen = len(runs)

    def _live(self) -> Iterable[tuple[int, QueuedRun, RunState]]:
        runs = self._host._runs
        for i, key in self.keys.items():
            run = runs.get(key)
            if run is not None and self.ids.get(key) == i:
                yield i, run, self.state[i]

    def claim_runs(self, consumer: str, *, limit: int = 100, lease: float = 300.0,
                   after: int = 0) -> list[PendingRun]:
        check_claim(consumer, limit, lease)
        host = self._host
        now = host.now()
        out: list[PendingRun] = []
        with host._lock:
            self._sync()
            for i, run, (_holder, until, claims, acked) in self._live():
                if len(out) >= limit:
                    break
                if i <= after or acked is not None or (until is not None and until >= now):
                    continue
                new: RunState = (consumer, now + lease, claims + 1, None)
                host._put(self.state, i, new)
                out.append(PendingRun(i, run, consumer, new[1], new[2]))
        return out

    def _settle(self, consumer: str, ids: Iterable[int], settle: Callable[[RunState], RunState]) -> list[int]:
        host = self._host
        done = []
        with host._lock:
            self._sync()
            for i in run_ids(ids):
                state = self.state.get(i)
                if state is None or state[0] != consumer or state[3] is not None or self.keys[i] not in host._runs:
                    continue
                host._put(self.state, i, settle(state))
                done.append(i)
        return sorted(done)

    def ack_runs(self, consumer: str, run_ids: Iterable[int]) -> list[int]:
        now = self._host.now()
        return self._settle(consumer, run_ids, lambda s: (s[0], None, s[2], now))

    def release_runs(self, consumer: str, run_ids: Iterable[int]) -> list[int]:
        return self._settle(consumer, run_ids, lambda s: (None, None, s[2], None))

    def queued_runs(self, *, after: int = 0, limit: int = 1000) -> list[PendingRun]:
        limit = max(0, min(int(limit), MAX_BATCH))
        out: list[PendingRun] = []
        with self._host._lock:
            self._sync()
            for i, run, (holder, until, claims, acked) in self._live():
                if len(out) >= limit:
                    break
                if i > after and acked is None:
                    out.append(PendingRun(i, run, holder, until, claims))
        return out

    def acked(self, key: str) -> bool | None:
        """Whether the run of `key` is acknowledged (None: the queue never saw it — not acknowledged)."""
        self._sync()
        i = self.ids.get(key)
        return None if i is None else self.state[i][3] is not None

    def forget(self, key: str) -> None:
        """`prune` deleted the run of `key`: its queue entry goes too."""
        i = self.ids.pop(key, None)
        if i is not None:
            self.keys.pop(i, None)
            self.state.pop(i, None)


def run_queue(store: RunsHost) -> MemoryRuns:
    """The store's `MemoryRuns`, made on first use."""
    with store._lock:
        queue: MemoryRuns | None = store.__dict__.get("_queue")
        if queue is None:
            queue = store.__dict__["_queue"] = MemoryRuns(store)
        return queue


class MemoryRunQueue:
    """The queue's calls of `MemoryStore` (a base class of it): each delegates to the store's `MemoryRuns`, made on
    first use."""

    def _run_queue(self: RunsHost) -> MemoryRuns:
        return run_queue(self)

    def claim_runs(self: RunsHost, consumer: str, *, limit: int = 100, lease: float = 300.0,
                   after: int = 0) -> list[PendingRun]:
        return run_queue(self).claim_runs(consumer, limit=limit, lease=lease, after=after)

    def ack_runs(self: RunsHost, consumer: str, run_ids: Iterable[int]) -> list[int]:
        return run_queue(self).ack_runs(consumer, run_ids)

    def release_runs(self: RunsHost, consumer: str, run_ids: Iterable[int]) -> list[int]:
        return run_queue(self).release_runs(consumer, run_ids)

    def queued_runs(self: RunsHost, *, after: int = 0, limit: int = 1000) -> list[PendingRun]:
        return run_queue(self).queued_runs(after=after, limit=limit)
