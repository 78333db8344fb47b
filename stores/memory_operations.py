"""Operation ids and decision re-evaluation marks in process memory: the part of `MemoryStore` that claims,
releases and marks operation ids (`MemoryOperations`), with the marks other parts share (`mark`,
`mark_evaluated`).

`MemoryStore` (`stores/memory.py`) takes these methods in as a base class; they name the store through the
`MemoryHost` protocol (`stores/memory_host.py`) and write through its undo log.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from interlock.runtime.store import Claim

from .memory_prune import claim_pruned

if TYPE_CHECKING:
    from .memory_host import MemoryHost

__all__ = ["MemoryOperations", "mark", "mark_evaluated"]


def mark(store: MemoryHost, operation_id: str, task_id: str | None, trigger: str | None) -> bool:
    """Mark `operation_id` applied (the caller holds the lock); False if it already was."""
    found = store._operations.get(operation_id)
    if found is not None and found[0] == "applied":
        return False
    store._put(store._operations, operation_id, ("applied", None, None, task_id, trigger))
    store._stamps["o", operation_id] = (store.clock(), next(store._stamp_seq))
    return True


def mark_evaluated(store: MemoryHost, decision_id: int) -> bool:
    """Mark a decision's re-evaluation done (the caller holds the lock); False if it was, or is no decision."""
    if store._evaluated.get(decision_id, True):  # done already, or no such decision
        return False
    store._put(store._evaluated, decision_id, True)
    return True



class MemoryOperations:
    """Operation claims and marks, and decision re-evaluation marks, of `MemoryStore` (see the module's docstring)."""

    __slots__ = ()

    def operation_applied(self: MemoryHost, operation_id: str) -> bool:
        with self._lock:
            found = self._operations.get(operation_id)
            return found is not None and found[0] == "applied"

    def claim_operation(self: MemoryHost, operation_id: str, *, token: str, owner_id: str, task_id: str | None = None,
                        trigger: str | None = None) -> Claim:
        """Claim the operation for `token` (see the protocol)."""
        now = self.now()
        with self._lock:
            found = self._operations.get(operation_id)
            if found is None and (pruned := claim_pruned(self, operation_id)) is not None:
                return pruned  # `prune` deleted it, keeping its fingerprint (ADR 0047)
            if found is not None and found[0] == "applied":
                return "applied"
            if found is not None and self._owner_alive(found[2], now):
                return "busy"
            self._put(self._operations, operation_id, ("claimed", token, owner_id, task_id, trigger))
            return "claimed" if found is None else "taken_over"

    def release_operation(self: MemoryHost, operation_id: str, token: str) -> bool:
        """Give up `token`'s claim; False if it holds none."""
        with self._lock:
            found = self._operations.get(operation_id)
            if found is None or found[0] != "claimed" or found[1] != token:
                return False
            self._pop(self._operations, operation_id)
            return True

    def claimed_operations(self: MemoryHost, limit: int = 1000) -> list[tuple[str, str]]:
        """Every operation claimed and not applied: (operation id, claim token)."""
        with self._lock:
            claims = [(op, token) for op, (state, token, _, _, _) in self._operations.items()
                      if state == "claimed" and token is not None]
        return claims[:max(limit, 0)]

    def abandoned_claims(self: MemoryHost, limit: int = 1000, *, owner_id: str | None = None) -> list[tuple[str, str]]:
        """Operations claimed and not applied whose owner is dead (or is `owner_id`): (operation id, claim token)."""
        now = self.now()
        with self._lock:
            claims = [(op, token) for op, (state, token, owner, _, _) in self._operations.items()
                      if state == "claimed" and token is not None
                      and (owner == owner_id or not self._owner_alive(owner, now))]
        return claims[:max(limit, 0)]

    def mark_operation(self: MemoryHost, operation_id: str, *, task_id: str | None = None, trigger: str | None = None) -> bool:
        """Mark applied; False if it already was."""
        with self._lock:
            return mark(self, operation_id, task_id, trigger)

    def decision_evaluated(self: MemoryHost, decision_id: int) -> bool:
        with self._lock:
            return self._evaluated.get(decision_id, False)

    def mark_decision_evaluated(self: MemoryHost, decision_id: int) -> bool:
        with self._lock:
            return mark_evaluated(self, decision_id)

