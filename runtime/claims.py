"""A delivery in, its claim out: the one component that claims, renews, marks and releases what a delivery runs.

An operation's delivery claims the operation id before any of its actions runs, as `with
claims.operation(delivery) as hold:` — the store answers `claimed`, `taken_over` (the claim's owner
is dead), `applied` (it took effect: an idempotent replay), `busy` (a live owner's delivery runs
it: this one is discarded, and the caller is told so — never `idempotent`) or `pruned` (it took effect
and `interlock db prune` deleted its marker since: refused loudly, never run again).  Inside the block the
delivery either marks the operation applied (`hold.mark()`, or in the transaction of its move:
`hold.marked()`) or gives it up (`hold.release()`, what an aborted delivery does, so that a
redelivery runs the whole list again); a block that ends either way without doing one releases the
claim.  An entry's claim is the ledger row's `entry_owner` (`claims.entry`), written with the row
when this runtime dispatches it at once.

Claims name the runtime's owner, and the owner's heartbeat renews them all (ADR 0036, superseding ADR
0020's leases stamped with a host's clock).  `abandoned` lists what `recover` may take up: claims of
owners that are dead, and this owner's own claims that none of its threads is running.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from contextlib import AbstractContextManager

from .delivery import Delivery
from .owner import Owner
from .store import Claim, EntryClaim, Store

__all__ = ["Claims", "OperationHold", "UNCLAIMED"]


class OperationHold:
    """A delivery's claim on its operation id, while the delivery runs."""

    __slots__ = ("claim", "operation_id", "settled", "store", "task_id", "token", "trigger")

    def __init__(self, claim: Claim | None, store: Store, operation_id: str | None, token: str | None,
                 task_id: str | None, trigger: str | None) -> None:
        self.claim = claim
        self.store = store
        self.operation_id = operation_id
        self.token = token
        self.task_id = task_id
        self.trigger = trigger
        self.settled = claim is None or claim in ("applied", "busy", "pruned")

    @property
    def runs(self) -> bool:
        """Whether this delivery may run the operation's actions (it holds the claim, or has no operation id)."""
        return self.claim is None or self.claim in ("claimed", "taken_over")

    def mark(self) -> None:
        """The operation took effect: mark it applied (a delivery without an operation id marks nothing)."""
        if not self.settled and self.operation_id is not None:
            self.store.mark_operation(self.operation_id, task_id=self.task_id, trigger=self.trigger)
        self.settled = True

    def marked(self) -> None:
        """The operation was marked applied by the transaction of the delivery's move."""
        self.settled = True

    def release(self) -> None:
        """Give the claim up: a redelivery runs the whole list again."""
        if not self.settled and self.operation_id is not None and self.token is not None:
            self.store.release_operation(self.operation_id, self.token)
        self.settled = True


UNCLAIMED = OperationHold(None, None, None, None, None, None)  # type: ignore[arg-type]
"""The hold of a delivery with no operation id: never deduplicated, nothing to mark or release."""


class _Unclaimed:
    """What `Claims.operation` returns for a delivery with no operation id: a context manager that yields `UNCLAIMED`
    and does nothing else (made once; a generator-based one cost about 6% of a `fire`: ADR 0052)."""

    __slots__ = ()

    def __enter__(self) -> OperationHold:
        return UNCLAIMED

    def __exit__(self, *exc: object) -> None:
        return None


_UNCLAIMED_BLOCK = _Unclaimed()


class Claims:
    """Claims of one runtime: its owner, its store."""

    def __init__(self, store: Store, owner: Owner) -> None:
        self.store = store
        self.owner = owner

    def operation(self, delivery: Delivery) -> AbstractContextManager[OperationHold]:
        """Claim `delivery`'s operation for the block (see the module's docstring); a delivery with no operation id
        holds `UNCLAIMED`."""
        return self._claimed(delivery) if delivery.operation_id else _UNCLAIMED_BLOCK

    @contextlib.contextmanager
    def _claimed(self, delivery: Delivery) -> Iterator[OperationHold]:
        operation_id = delivery.operation_id
        assert operation_id is not None
        owner = self.owner
        token = owner.token()
        claim = self.store.claim_operation(operation_id, token=token, owner_id=owner.id, task_id=delivery.task.id,
                                           trigger=delivery.trigger)
        hold = OperationHold(claim, self.store, operation_id, token, delivery.task.id, delivery.trigger)
        if not hold.runs:
            yield hold
            return
        owner.hold(token)
        try:
            yield hold
        except BaseException:
            if not hold.settled:
                with contextlib.suppress(Exception):
                    hold.release()
            raise
        else:
            if not hold.settled:
                hold.release()
        finally:
            owner.let_go(token)

    def entry(self, entry_id: int, plan: str | None) -> EntryClaim:
        """Claim the dispatch of a committed row's entry for this owner (`plan`: the revision a row that has none is
        given — this runtime's)."""
        return self.store.claim_entry(entry_id, self.owner.id, plan)

    def abandoned_operations(self, limit: int = 10_000) -> list[str]:
        """Release the operation claims whose owner is dead, and this owner's own that none of its threads runs
        (a redelivery then runs them); the operation ids released."""
        released = []
        for operation_id, token in self.store.abandoned_claims(limit, owner_id=self.owner.id):
            if self.owner.holds(token):
                continue
            if self.store.release_operation(operation_id, token):
                released.append(operation_id)
        return released
