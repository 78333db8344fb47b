"""An operation id in, a delivery's durable claim on it out: claim before anything runs, release on abort, marked
applied with the operation's effect (ADR 0020).

Entry positions take the same shape through their markers (`EntryDispatch`): claim the position,
run its action, mark it done or failed.  Here the claim is the operation's: a delivery that finds it
applied is an idempotent replay; one that finds another delivery's live claim is discarded as a
redelivery; one that finds a claim whose lease ran out takes it over.
"""

from __future__ import annotations

import itertools
import os
import socket
import uuid

from .store import Claim, Store

__all__ = ["OperationClaims", "claim_owner", "claim_abandoned"]


def claim_owner() -> str:
    """The prefix of this process's claim tokens: `<host>/<pid>/<random>` (`recover` tells a dead process's claims
    by it)."""
    return f"{socket.gethostname()}/{os.getpid()}/{uuid.uuid4().hex[:12]}"


def claim_abandoned(token: str) -> bool:
    """Whether a claim token names a process of this host that is no longer running (its claim was left by a
    crash).  Claims of other hosts are never judged here: their lease covers them."""
    host, _, rest = token.partition("/")
    pid_text = rest.partition("/")[0]
    if host != socket.gethostname() or not pid_text.isdigit():
        return False
    pid = int(pid_text)
    if pid == os.getpid():
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    except OSError:  # it exists (another user's): alive
        return False
    return False


class OperationClaims:
    """Claims on operation ids, for one runtime: its tokens, its lease."""

    def __init__(self, store: Store, lease: float) -> None:
        self.store = store
        self.lease = lease
        self._prefix = claim_owner()
        self._next = itertools.count(1)

    def claim(self, operation_id: str, task_id: str, trigger: str) -> tuple[Claim, str]:
        """Claim the operation for a new delivery: what the store found, and the delivery's token."""
        token = f"{self._prefix}:{next(self._next)}"
        return self.store.claim_operation(operation_id, token=token, lease=self.lease, task_id=task_id,
                                          trigger=trigger), token

    def release(self, operation_id: str, token: str) -> None:
        """An aborted delivery gives its claim up: a redelivery runs the whole list again."""
        self.store.release_operation(operation_id, token)

    def release_abandoned(self, limit: int = 10_000) -> list[str]:
        """Release the claims of processes of this host that are gone; the operation ids released."""
        released = []
        for operation_id, token in self.store.claimed_operations(limit=limit):
            if claim_abandoned(token) and self.store.release_operation(operation_id, token):
                released.append(operation_id)
        return released
