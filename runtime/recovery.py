"""Nothing in, what a crash left behind finished out: abandoned operation claims released, arrivals without an
entry record dispatched, stored decisions whose re-evaluation was cut short re-evaluated (docs/runtime.md §1).

Call `recover()` at start-up; it is safe to run at any time and from several processes at once.
"""

from __future__ import annotations

from .claims import OperationClaims
from .decisions import Decisions
from .entry import EntryDispatch
from .errors import RuntimeFault
from .recorder import Recorder
from .results import DecisionResult, EntryResult, RecoverResult
from .store import Store

__all__ = ["Recovery"]

BATCH = 500


class Recovery:
    """The `recover` sweep.  Uses the store, the operation claims, entry dispatch, decisions and the recorder."""

    def __init__(self, store: Store, claims: OperationClaims, entry: EntryDispatch, decisions: Decisions,
                 recorder: Recorder) -> None:
        self.store = store
        self.claims = claims
        self.entry = entry
        self.decisions = decisions
        self.recorder = recorder

    def recover(self) -> RecoverResult:
        self._release_claims()
        entries = self._entries()
        decisions = self._decisions()
        return RecoverResult(sum(1 for e in entries if e.status == "dispatched"), tuple(entries), tuple(decisions))

    def _release_claims(self) -> None:
        """Claims of processes of this host that are gone (ADR 0020): a redelivery then runs the operation."""
        for operation_id in self.claims.release_abandoned():
            self.recorder.counters.add("claims_released")
            self.recorder.warning("operation_claim_released", "operation claim released: the process that held it "
                                  "is gone", operation_id=operation_id)

    def _entries(self) -> list[EntryResult]:
        """Every arrival that has no entry record (the crash window between commit and dispatch)."""
        entries: list[EntryResult] = []
        while True:
            rows = self.store.unrecorded_arrivals(limit=BATCH)
            done = [self.entry.enter(row, session_live=False) for row in rows]
            entries.extend(done)
            # a batch in which no entry got its record (the store failing, or rows it cannot enter) ends the sweep
            if len(rows) < BATCH or not any(e.status in ("dispatched", "redelivery") for e in done):
                return entries

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
