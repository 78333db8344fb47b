"""A failed call in, what becomes of it out: a retry written for `tick` when the kind's policy allows another try,
an incident otherwise (docs/runtime.md §7; ADR 0050).

One policy for every trigger.  An entry's failed positions are handed over in the transaction of the
entry's record, so a failure is never recorded without its retry or its incident, nor the other way
round.  An operation's delivery that aborted hands over its first failure after its claim is released:
a retry of it redelivers the operation as stored (the same operation id, so the same keys, and the
next attempt); an operation without an id is retried under a derived one.  A delivery run *by* a
retry or a redrive is not handed over here: the one running it decides (`Retries`, `Incidents`).

The delay before try n+1 is the policy's backoff doubled n-1 times, at most its maximum (the backoff
every time when it has none).  Records are held until the transaction commits (`Deferred`).
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

from .index import PlanIndex
from .plan import PlanRetry
from .recorder import Deferred, Recorder
from .revision import Revision
from .store import LedgerRow, Store
from .store_due import NO_POSITION, DueRow, Incident

__all__ = ["Failures", "delay", "next_attempt", "entry_incident_key", "operation_incident_key", "failures_text"]


def delay(policy: PlanRetry, failed_attempt: int) -> float:
    """Seconds to wait after try `failed_attempt` (1-based) failed."""
    seconds = policy.backoff * (2 ** min(failed_attempt - 1, 40))
    return float(min(seconds, policy.max_backoff) if policy.max_backoff is not None else policy.backoff)


def next_attempt(policy: PlanRetry | None, failed_attempt: int) -> int | None:
    """The try that follows `failed_attempt` under `policy`, or None when none is left (or there is no policy)."""
    if policy is None or failed_attempt >= 1 + policy.attempts:
        return None
    return failed_attempt + 1


def entry_incident_key(entry_id: int) -> str:
    return f"entry:{entry_id}"


def operation_incident_key(operation_id: str) -> str:
    return f"op:{operation_id}"


def failures_text(failures: Sequence[tuple[int, str, str]]) -> list[dict[str, Any]]:
    """An incident's failures as record fields."""
    return [{"position": p, "kind": k, "error": e} for p, k, e in failures]


class Failures:
    """The failure policy of one revision: its kinds' retry policies, its recorder."""

    def __init__(self, revision: Revision) -> None:
        self.index: PlanIndex = revision.index
        self.recorder: Recorder = revision.recorder
        self.digest = revision.digest

    def policy(self, kind: str) -> PlanRetry | None:
        return self.index.retries.get(kind)

    # ---- an entry's failed positions ---------------------------------------------------------------------
    def entry_failed(self, tx: Store, row: LedgerRow, step_id: str, failed: Sequence[tuple[int, str, str, int]],
                     held: Deferred | Recorder) -> None:
        """In the transaction of the entry's record: each failed position is retried (its kind's policy allows
        another try) or joins the entry's incident."""
        lasting: list[tuple[int, str, str]] = []
        attempts = 0
        now: float | None = None
        for position, kind, error, attempt in failed:
            policy = self.policy(kind)
            again = next_attempt(policy, attempt)
            if again is None or policy is None:
                lasting.append((position, kind, error))
                attempts = max(attempts, attempt)
                continue
            now = tx.now() if now is None else now
            tx.schedule_retry(DueRow(0, row.task_id, row.id, row.to_workflow_id or "", step_id, "retry", kind,
                                     position, 0, now, again, now + delay(policy, attempt), row.plan))
            held.retry_scheduled(row.task_id, kind, again, now + delay(policy, attempt), step=step_id,
                                 entry_id=row.id, position=position, error=error)
        if lasting:
            self.open_entry_incident(tx, row, step_id, lasting, attempts, held)

    def open_entry_incident(self, tx: Store, row: LedgerRow, step_id: str, failures: Sequence[tuple[int, str, str]],
                            attempts: int, held: Deferred | Recorder) -> Incident:
        """The entry's incident with these failures added to those it has open (one incident per entry)."""
        key = entry_incident_key(row.id)
        merged = {p: (p, k, e) for p, k, e in _open_failures(tx, row.task_id, key)}
        merged.update({p: (p, k, e) for p, k, e in failures})
        ordered = tuple(merged[p] for p in sorted(merged))
        now = tx.now()
        incident = tx.open_incident(Incident(0, key, row.task_id, "entry", ordered, failures[-1][2], attempts, "open",
                                             now, now, row.id, row.to_workflow_id, step_id, row.plan))
        held.incident_opened(incident)
        return incident

    # ---- an operation's delivery that aborted ----------------------------------------------------------------
    def operation_aborted(self, store: Store, *, task_id: str, entry_id: int | None, workflow_id: str, step_id: str,
                          trigger: str, operation_id: str | None, payload: Mapping[str, Any],
                          session_id: str | None, kind: str, error: str, attempt: int) -> None:
        """After the claim is released: a retry of the delivery, or an incident holding it as stored."""
        policy = self.policy(kind)
        again = next_attempt(policy, attempt)
        text = json.dumps(dict(payload), sort_keys=True, separators=(",", ":")) if payload else None
        if again is not None and policy is not None and entry_id is not None:
            now = store.now()
            due = now + delay(policy, attempt)
            store.schedule_retry(DueRow(0, task_id, entry_id, workflow_id, step_id, "retry", kind, NO_POSITION, 0,
                                        now, again, due, self.digest, operation_id, trigger, text,
                                        session_id))
            self.recorder.retry_scheduled(task_id, kind, again, due, step=step_id, entry_id=entry_id,
                                          operation_id=operation_id, trigger=trigger, error=error)
            return
        self.open_operation_incident(store, task_id=task_id, entry_id=entry_id, workflow_id=workflow_id,
                                     step_id=step_id, trigger=trigger, operation_id=operation_id, payload=text,
                                     session_id=session_id, kind=kind, error=error, attempts=attempt)

    def open_operation_incident(self, store: Store, *, task_id: str, entry_id: int | None, workflow_id: str,
                                step_id: str, trigger: str, operation_id: str | None, payload: str | None,
                                session_id: str | None, kind: str, error: str, attempts: int) -> Incident:
        now = store.now()
        key = operation_incident_key(operation_id) if operation_id is not None else \
            f"op-anon:{task_id}:{entry_id}:{trigger}:{now!r}"
        incident = store.open_incident(Incident(0, key, task_id, "operation", ((NO_POSITION, kind, error),), error,
                                                attempts, "open", now, now, entry_id, workflow_id, step_id,
                                                self.digest, operation_id, trigger, payload,
                                                session_id))
        self.recorder.incident_opened(incident)
        return incident


def _open_failures(tx: Store, task_id: str, key: str) -> tuple[tuple[int, str, str], ...]:
    for incident in tx.incidents(task_id, state=None):
        if incident.key == key and incident.state != "resolved":
            return incident.failures
    return ()
