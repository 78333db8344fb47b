"""A committed ledger row in, its entry claimed and dispatched under the row's own revision out.

What `dispatch_entry`, `recover` and a redelivered creation take: the row's entry is claimed for this
runtime's owner (`Claims.entry`), and then run by the `EntryRun` of the revision the row names —
whatever plan this runtime runs (docs/runtime.md §6: an entry finishes under the revision it began
with; ADR 0037).  A row that no runtime has taken up yet (a host's `LedgerWriter` row) is given this
runtime's revision by the claim.  A row whose revision the store does not have is recorded as failed.
"""

from __future__ import annotations

from collections.abc import Callable

from .claims import Claims
from .entry import EntryRun
from .errors import RuntimeFault
from .invoker import Invoker
from .owner import Owner
from .plan import PlanError
from .results import EntryResult
from .revision import Revision, Revisions
from .store import LedgerRow, Store, StoreError

__all__ = ["Entries"]


class Entries:
    """Entry dispatch of committed rows.  Uses the revisions, the store, the claims, the invoker and the owner."""

    def __init__(self, revisions: Revisions, store: Store, claims: Claims, invoker: Invoker, owner: Owner) -> None:
        self.revisions = revisions
        self.store = store
        self.claims = claims
        self.invoker = invoker
        self.owner = owner
        self.own = EntryRun(revisions.own, store, invoker, owner)
        self._runs: dict[str, EntryRun] = {revisions.own.digest: self.own}

    def run_of(self, revision: Revision) -> EntryRun:
        """The entry dispatch of `revision` (made once per revision)."""
        run = self._runs.get(revision.digest)
        if run is None:
            run = self._runs[revision.digest] = EntryRun(revision, self.store, self.invoker, self.owner)
            if len(self._runs) > 2 * Revisions.KEEP:
                for digest in [d for d in self._runs if d != self.revisions.own.digest][:Revisions.KEEP]:
                    del self._runs[digest]
        return run

    def dispatch_entry(self, ledger_id: int, *, session_live: bool = False) -> EntryResult:
        """Dispatch the entry of a ledger row written by the host (through `LedgerWriter`), after its commit."""
        row = self.store.ledger_row(ledger_id)
        if row is None:
            raise RuntimeFault(f"no ledger row {ledger_id}")
        return self.take_up(row, session_live=session_live)

    def take_up(self, row: LedgerRow, *, session_live: bool = False,
                skip: Callable[[LedgerRow], bool] | None = None) -> EntryResult:
        """Claim a committed row's entry and dispatch it under the row's revision (a redelivery if recorded, discarded
        if a live owner has it)."""
        own = self.own
        if row.to_step_id is None or row.to_workflow_id is None:
            return EntryResult(row.id, "detach")
        if self.owner.runs_entry(row.id):  # a thread of this runtime is dispatching it now
            return own.in_progress(row, self.owner.id)
        try:
            claim = self.claims.entry(row.id, self.revisions.own.digest)
        except StoreError as exc:
            return own._incomplete(row, exc)
        if claim.status == "missing":
            raise RuntimeFault(f"no ledger row {row.id}")
        claimed = claim.row or row
        try:
            revision = self.revisions.of(claimed.plan)
        except PlanError as exc:
            return own.unknown_step(claimed, f"its plan revision cannot be loaded: {exc}")
        run = self.run_of(revision)
        if claim.status == "recorded":
            return run.redelivered(claimed)
        if claim.status == "busy":
            return run.in_progress(claimed, claim.owner)
        assert claimed.to_workflow_id is not None and claimed.to_step_id is not None
        step = revision.index.steps.get((claimed.to_workflow_id, claimed.to_step_id))
        if step is None:
            return run.unknown_step(claimed)
        return run.resume(claimed, step, session_live=session_live)
