"""A runtime in, its owner out: a random id with a heartbeat in the store, and what it is running right now.

Claims on operations and entries name their owner (docs/runtime.md, "Deployments"; ADR 0036).  An
owner is live while its heartbeat, written on the store's clock, is younger than its lease, and
until it stops: liveness is judged by the database, never by a hostname, a PID or a host's clock,
so two containers that share a hostname, or a host whose clock is hours off, can neither steal a
live owner's work nor keep a dead one's.  One heartbeat renews every claim the owner holds.

`running` names the entries and operation claims this runtime's own threads are working on now: a
claim of this owner that is in neither was left by a delivery of this process that died (the
store failed under it, or a host simulated a crash), and this owner's own `recover` takes it up.
"""

from __future__ import annotations

import contextlib
import itertools
import os
import socket
import threading
import uuid
import weakref
from collections.abc import Iterator

from .store import Store

__all__ = ["Owner", "HEARTBEATS"]


class Owner:
    """One runtime's identity in the store.  `lease`: seconds the owner counts as live after its last heartbeat;
    `interval`: seconds between heartbeats (None: no heartbeat thread — the owner is live for one lease after it
    started, then only through `beat`)."""

    def __init__(self, store: Store, *, lease: float, plan: str | None, interval: float | None) -> None:
        self.id = uuid.uuid4().hex
        self.store = store
        self.lease = lease
        self.interval = interval
        self.entries: set[int] = set()
        self.tokens: set[str] = set()
        self._tokens = itertools.count(1)
        self._guard = threading.Lock()
        self.stopped = False
        store.register_owner(self.id, host=socket.gethostname(), pid=os.getpid(), plan=plan, lease=lease)
        if interval is not None:
            HEARTBEATS.add(self)

    def token(self) -> str:
        """A fresh claim token of this owner: `<owner id>:<n>`."""
        return f"{self.id}:{next(self._tokens)}"

    def beat(self) -> bool:
        """Write the heartbeat now (the heartbeat thread calls it); False once the owner stopped."""
        return not self.stopped and self.store.heartbeat(self.id)

    def stop(self) -> None:
        """Stop: no more heartbeats, and whatever the owner holds is taken up by others at once."""
        if self.stopped:
            return
        self.stopped = True
        HEARTBEATS.discard(self)
        with contextlib.suppress(Exception):  # a store that is gone: the lease ends it instead
            self.store.stop_owner(self.id)

    @contextlib.contextmanager
    def running_entry(self, entry_id: int) -> Iterator[None]:
        """The entry is being dispatched by a thread of this runtime while the block runs."""
        with self._guard:
            self.entries.add(entry_id)
        try:
            yield
        finally:
            with self._guard:
                self.entries.discard(entry_id)

    def runs_entry(self, entry_id: int) -> bool:
        with self._guard:
            return entry_id in self.entries

    def hold(self, token: str) -> None:
        with self._guard:
            self.tokens.add(token)

    def let_go(self, token: str) -> None:
        with self._guard:
            self.tokens.discard(token)

    def holds(self, token: str) -> bool:
        with self._guard:
            return token in self.tokens


class _Heartbeats:
    """One daemon thread per process beats for every live owner, each at its own interval."""

    def __init__(self) -> None:
        self._owners: weakref.WeakSet[Owner] = weakref.WeakSet()
        self._due: weakref.WeakKeyDictionary[Owner, float] = weakref.WeakKeyDictionary()
        self._wake = threading.Condition()
        self._thread: threading.Thread | None = None

    def add(self, owner: Owner) -> None:
        import time

        with self._wake:
            self._owners.add(owner)
            self._due[owner] = time.monotonic() + float(owner.interval or 0.0)
            if self._thread is None or not self._thread.is_alive():
                self._thread = threading.Thread(target=self._run, name="interlock-heartbeat", daemon=True)
                self._thread.start()
            self._wake.notify()

    def discard(self, owner: Owner) -> None:
        with self._wake:
            self._owners.discard(owner)
            self._due.pop(owner, None)

    def _run(self) -> None:
        import time

        while True:
            with self._wake:
                if not self._owners:
                    self._thread = None
                    return
                now = time.monotonic()
                due = [o for o in list(self._owners) if self._due.get(o, now) <= now]
                for owner in due:
                    self._due[owner] = now + float(owner.interval or 1.0)
                wait = min((self._due.get(o, now + 1.0) for o in list(self._owners)), default=now + 1.0) - now
            for owner in due:
                with contextlib.suppress(Exception):  # a store that fails now may answer at the next beat
                    owner.beat()
            with self._wake:
                self._wake.wait(max(wait, 0.01))

    def _after_fork(self) -> None:
        """In a forked child the thread is gone and the owners are the parent's: forget them."""
        self._owners = weakref.WeakSet()
        self._due = weakref.WeakKeyDictionary()
        self._wake = threading.Condition()
        self._thread = None


HEARTBEATS = _Heartbeats()
"""The process's heartbeat thread (started with the first owner that beats, ended with the last)."""

if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=HEARTBEATS._after_fork)
