"""Nothing in, what a crash left behind finished out: claims of dead owners released, arrivals whose entry nobody
live is dispatching taken up, stored decisions whose re-evaluation was cut short re-evaluated (docs/runtime.md §1,
§6).

Call `recover()` at start-up, or at any time, from any number of processes beside live workers: it only
takes up what belongs to owners that are dead (their heartbeat ran out on the store's clock, or they
stopped) or to nobody, and what this runtime's own threads are not running.  An entry is claimed before
it is touched, so a live owner's entry is never run beside it, and positions run in order.  Each query
reads through a partial index of the few unfinished rows, so a store of millions of finished tasks
costs nothing.
"""

from __future__ import annotations

from .claims import Claims
from .decisions import Decisions
from .entries import Entries
from .errors import RuntimeFault
from .owner import Owner
from .recorder import Recorder
from .results import DecisionResult, EntryResult, RecoverResult
from .store import Store

__all__ = ["Recovery"]

BATCH = 500


class Recovery:
    """The `recover` sweep.  Uses the store, the claims, the entries, the decisions, the recorder and the owner."""

    def __init__(self, store: Store, claims: Claims, entries: Entries, decisions: Decisions, recorder: Recorder,
                 owner: Owner) -> None:
        self.store = store
        self.claims = claims
        self.entries = entries
        self.decisions = decisions
        self.recorder = recorder
        self.owner = owner

    def recover(self) -> RecoverResult:
        released = self._release_claims()
        entries = self._entries()
        decisions = self._decisions()
        return RecoverResult(sum(1 for e in entries if e.status == "dispatched"), tuple(entries), tuple(decisions),
                             tuple(released))

    def _release_claims(self) -> list[str]:
        """Operation claims whose owner is dead (ADR 0036): released, so that a redelivery runs the operation."""
        released = self.claims.abandoned_operations()
        for operation_id in released:
            self.recorder.count("claims_released")
            self.recorder.warning("operation_claim_released", "operation claim released: the runtime that held it "
                                  "is gone", operation_id=operation_id)
        return released

    def _entries(self) -> list[EntryResult]:
        """Every arrival whose entry has no record and no live owner (the crash window between commit and entry, or
        an owner that died inside one): claimed and run from its first unfinished position."""
        entries: list[EntryResult] = []
        after = 0
        while True:
            rows = self.store.unrecorded_arrivals(limit=BATCH, after_id=after, owner_id=self.owner.id)
            for row in rows:
                if not self.owner.runs_entry(row.id):
                    entries.append(self.entries.take_up(row, session_live=False))
            if len(rows) < BATCH:
                return entries
            after = rows[-1].id

    def _decisions(self) -> list[DecisionResult]:
        """Every stored decision whose re-evaluation is not marked done: the quorum it completes would otherwise
        wait for the next decision."""
        results: list[DecisionResult] = []
        seen: set[int] = set()
        while True:
            batch = [d for d in self.store.unevaluated_decisions(limit=BATCH) if d.id not in seen]
            if not batch:
                return results
            for d in batch:
                seen.add(d.id)
                try:
                    results.append(self.decisions.reevaluate_decision(d.task_id, d.step_id, d))
                except RuntimeFault as exc:  # its task or step is gone (from the store or the plan): left alone
                    self.recorder.warning("decision_not_reevaluated", "a stored decision could not be re-evaluated",
                                          task=d.task_id, step=d.step_id, decision_id=d.id, message=str(exc))
