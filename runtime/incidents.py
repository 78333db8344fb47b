"""An incident in, it redriven or resolved out: `Runtime.incidents`, `redrive` and `resolve` (docs/runtime.md §7; ADR
0050).

`redrive` runs again only what failed: for an entry, its failed positions in order, each once, under
the entry's revision and with the entry's keys (each position's next attempt); for an operation, its
delivery as stored (the same operation id, so the same keys).  The incident is claimed first
(`claim_incident`): of two processes redriving it at once one runs it and the other is told `busy`;
a redriver that dies leaves it to the next one (its claim goes with its owner's heartbeat).  An
incident whose task has left the entry it belongs to is resolved as `superseded` and nothing runs
(nothing ever runs for an activation the task has left).  `resolve` closes one without running
anything.  Each is recorded (`incident_resolved`; a redrive that fails again keeps it open, with its
new error and attempts, and its failures are loud like every failure).

`incidents()` lists what is open.  An operation's incident whose operation took effect meanwhile (the
host delivered it again, and it went through) is resolved as `applied` as it is listed.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from .errors import RuntimeFault
from .owner import Owner
from .plan import PlanError
from .recorder import Recorder
from .results import FireResult
from .revision import Revisions
from .store import Store, TaskState
from .store_due import Incident
from .ticks import Ticker

__all__ = ["Incidents", "RedriveResult"]


@dataclass(frozen=True)
class RedriveResult:
    """What a `redrive` did: `redriven` (everything ran and took effect: the incident is resolved), `failed` (it
    failed again: still open, `error` says why), `busy` (another process redrives it now), `resolved` (it was
    closed already), `superseded` (the task left the entry: resolved, nothing ran)."""

    incident: int
    status: Literal["redriven", "failed", "busy", "resolved", "superseded"]
    ran: tuple[str, ...] = ()  # the kinds (positions of an entry) or the operation's actions that ran
    error: str | None = None
    fire: FireResult | None = None


class Incidents:
    """Incidents of a store.  Uses the store, the owner, the revisions, the ticker (its redelivery) and the
    recorder."""

    def __init__(self, store: Store, owner: Owner, revisions: Revisions, ticker: Ticker, recorder: Recorder) -> None:
        self.store = store
        self.owner = owner
        self.revisions = revisions
        self.ticker = ticker
        self.recorder = recorder

    def list(self, task_id: str | None = None) -> list[Incident]:
        """The open incidents (and those being redriven), oldest first."""
        out = []
        for incident in sorted(self.store.incidents(task_id, state="open")
                               + self.store.incidents(task_id, state="redriving"), key=lambda i: i.id):
            if incident.kind == "operation" and incident.operation_id is not None \
                    and self.store.operation_applied(incident.operation_id) \
                    and self.store.settle_incident(incident.id, owner_id=None, state="resolved",
                                                   resolution="applied"):
                self.recorder.incident_resolved(incident, "applied", "the operation took effect meanwhile")
                continue
            out.append(incident)
        return out

    def resolve(self, incident: Incident | int, note: str) -> bool:
        """Close an open incident without running anything; False when it is not open (resolved, or being
        redriven)."""
        found = self._get(incident)
        if not self.store.settle_incident(found.id, owner_id=None, state="resolved", resolution="resolved",
                                          note=note):
            return False
        self.recorder.incident_resolved(found, "resolved", note)
        return True

    def redrive(self, incident: Incident | int) -> RedriveResult:
        """Run again only what failed (see the module's docstring)."""
        found = self._get(incident)
        claimed = self.store.claim_incident(found.id, self.owner.id)
        if claimed is None:
            now = self.store.incident(found.id)
            return RedriveResult(found.id, "resolved" if now is None or now.state == "resolved" else "busy")
        task = self.store.get_task(claimed.task_id)
        if task is None or (claimed.entry_id is not None and task.entry_id != claimed.entry_id):
            return self._close(claimed, "superseded", "superseded", "the task left the entry")
        if claimed.kind == "entry":
            return self._entry(claimed)
        return self._operation(claimed, task)

    def _entry(self, incident: Incident) -> RedriveResult:
        row = self.store.ledger_row(incident.entry_id or 0)
        try:
            revision = self.revisions.of(row.plan if row is not None else incident.plan)
        except PlanError as exc:
            return self._again(incident, f"its plan revision cannot be loaded: {exc}", incident.failures)
        step = revision.index.steps.get((incident.workflow_id or "", incident.step_id or ""))
        if row is None or step is None:
            return self._again(incident, "its entry is not in the store or the plan", incident.failures)
        reruns = self.ticker.entries.run_of(revision).rerun(row, step, tuple(p for p, _, _ in incident.failures))
        failed = tuple((r.position, r.kind, r.error) for r in reruns if r.error is not None)
        ran = tuple(r.kind for r in reruns)
        if failed:
            attempts = max([incident.attempts, *(r.attempt for r in reruns)])
            return self._again(incident, failed[-1][2], failed, attempts, ran)
        return self._close(incident, "redriven", "redriven", None, ran)

    def _operation(self, incident: Incident, task: TaskState) -> RedriveResult:
        operation_id = incident.operation_id if incident.operation_id is not None else f"incident:{incident.id}"
        result = self.ticker.redeliver(
            task, trigger=incident.trigger or "", session_id=incident.session_id,
            payload=incident.payload, operation_id=operation_id, entry_id=incident.entry_id,
            workflow_id=incident.workflow_id, step_id=incident.step_id, attempt=incident.attempts + 1)
        if result.result == "error":
            kind = result.failed_kind or (incident.failures[0][1] if incident.failures else "?")
            return self._again(incident, result.error or "failed", ((-1, kind, result.error or "failed"),),
                               incident.attempts + 1, result.actions, result)
        if result.result == "in_progress":
            self.store.settle_incident(incident.id, owner_id=self.owner.id, state="open")
            return RedriveResult(incident.id, "busy", fire=result)
        if result.result in ("superseded", "stranded"):
            return self._close(incident, "superseded", "superseded", f"the delivery was {result.result}", fire=result)
        return self._close(incident, "redriven", "redriven" if result.result == "dispatched" else "applied", None,
                           result.actions, result)

    # ---- settling ----------------------------------------------------------------------------------------
    def _close(self, incident: Incident, status: Literal["redriven", "superseded"], resolution: str,
               note: str | None, ran: tuple[str, ...] = (), fire: FireResult | None = None) -> RedriveResult:
        self.store.settle_incident(incident.id, owner_id=self.owner.id, state="resolved", resolution=resolution,
                                   note=note)
        self.recorder.incident_resolved(incident, resolution, note, redriven=True)
        return RedriveResult(incident.id, status, ran, fire=fire)

    def _again(self, incident: Incident, error: str, failures: tuple[tuple[int, str, str], ...],
               attempts: int | None = None, ran: tuple[str, ...] = (),
               fire: FireResult | None = None) -> RedriveResult:
        """A redrive that failed: the incident open again with what failed this time."""
        self.store.settle_incident(incident.id, owner_id=self.owner.id, state="open", error=error,
                                   attempts=attempts if attempts is not None else incident.attempts + 1,
                                   failures=failures)
        self.recorder.emit("incident_opened", "error", "incident still open: its redrive failed", task=incident.task_id,
                           incident=incident.id, kind=incident.kind, error=error,
                           attempts=attempts if attempts is not None else incident.attempts + 1, redriven=True)
        return RedriveResult(incident.id, "failed", ran, error, fire)

    def _get(self, incident: Incident | int) -> Incident:
        incident_id = incident.id if isinstance(incident, Incident) else incident
        if isinstance(incident_id, bool) or not isinstance(incident_id, int):
            raise RuntimeFault(f"`incident` must be an Incident or its id, not {type(incident).__name__}")
        found = self.store.incident(incident_id)
        if found is None:
            raise RuntimeFault(f"no incident {incident_id}")
        return found
