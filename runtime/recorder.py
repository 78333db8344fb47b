"""What happened in, records to every sink and counts out: the one place the runtime reports from.

Components never build a `Record`, touch a sink or name a counter themselves; they call a `Recorder`
method named after what happened, and that method is the one place its record is emitted and its
counters are added.  Every record names the plan revision it was decided under (`plan`): a runtime's
recorder names its own, and `naming(digest)` gives the view that names another (an entry finishing
under the revision it began with).  Records of work done inside a transaction are held in a
`Deferred` list and emitted once the transaction has committed (a rolled-back try reports nothing);
the records a delivery causes are held the same way until the record of its cause is out, so a
trace reads causes first (docs/scenarios.md, "Record order").
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

from .records import MESSAGES, Counters, Level, LoguruSink, Record, RecordSink

__all__ = ["Recorder", "Deferred"]


class Recorder:
    """Sinks (default: loguru) and counters.  `active` is False when there are no sinks: callers skip building
    records nobody reads.  `plan`: the revision the records name."""

    def __init__(self, sinks: Sequence[RecordSink] | None = None, counters: Counters | None = None,
                 plan: str | None = None) -> None:
        self.sinks: list[RecordSink] = list(sinks) if sinks is not None else [LoguruSink()]
        self.counters = counters if counters is not None else Counters()
        self.active = bool(self.sinks)
        self.plan = plan
        self._views: list[Recorder] = [self]
        self.count: Callable[..., None] = self.counters.count
        """Counters of a completed step (`arrivals`, `dispatches`, …), added in one call: `count("a", "b")` (the
        counters' own bound method, so a count costs no frame of the recorder's: ADR 0052)."""

    def naming(self, plan: str) -> Recorder:
        """A view of this recorder (the same sinks and counters) whose records name revision `plan`."""
        view = Recorder.__new__(Recorder)
        view.sinks, view.counters, view.active, view.plan = self.sinks, self.counters, self.active, plan
        view._views = self._views
        view.count = self.count
        self._views.append(view)
        return view

    def add_sink(self, sink: RecordSink) -> None:
        self.sinks.append(sink)
        for view in self._views:
            view.active = True

    def emit(self, kind: str, level: Level = "info", message: str | None = None, /, **fields: Any) -> None:
        """Send one record to every sink (a failing sink is ignored: it must not take the runtime down)."""
        if not self.sinks:
            return
        if self.plan is not None and "plan" not in fields:
            fields["plan"] = self.plan
        record = Record(kind, level, message or MESSAGES.get(kind, kind), fields)
        for sink in self.sinks:
            with contextlib.suppress(Exception):
                sink(record)

    # ---- executor calls ---------------------------------------------------------------------------------
    def effects(self, effects: Iterable[Mapping[str, Any]], kind: str, task_id: str, step_id: str,
                **ids: Any) -> None:
        for effect in effects:
            self.counters.add("effects")
            if self.active:
                self.emit("effect", "info", kind=kind, task=task_id, step=step_id, **ids,
                          **{k: v for k, v in effect.items() if k != "kind"})

    def failure(self, reason: str, fault: bool, task_id: str, session_id: str | None, kind: str, *,
                step: str | None = None, attempt: int = 1, continued: bool = False, **ids: Any) -> None:
        """An executor call failed: counted, and loud (a `warning` with code `action_failed`, docs/runtime.md
        §7); a fault (an unexpected exception) also gets an `error` record.  `continued`: the action was flagged
        `continue_on_failure` and the walk went on (ADR 0042): counted as such, and said on the warning."""
        self.counters.add_each(("executor_failures", "failures_continued") if continued else ("executor_failures",))
        if continued:
            ids["continued"] = True
        if fault:
            self.emit("error", "error", task=task_id, session=session_id, kind=kind, message=reason)
        if self.active:
            self.emit("warning", "warning", "action failed", code="action_failed", task=task_id, step=step,
                      kind=kind, error=reason, attempt=attempt, session=session_id, **ids)

    def late_completion(self, kind: str, task_id: str, step_id: str, key: str | None, outcome: str,
                        **ids: Any) -> None:
        """An executor the runtime gave up on (timed out) returned after all."""
        self.counters.add("late_completions")
        self.emit("late_completion", "warning", "an executor that timed out completed later", kind=kind,
                  task=task_id, step=step_id, key=key, outcome=outcome, **ids)

    def missing_executor(self, workflow_id: str, step_id: str, step_title: str | None, kind: str, task_id: str,
                         session_id: str | None) -> None:
        self.counters.add("missing_executors")
        self.emit("warning", "warning", "no executor registered for action kind", code="no_executor",
                  workflow=workflow_id, step=step_id, step_title=step_title, kind=kind, task=task_id,
                  session=session_id)

    # ---- deliveries discarded ---------------------------------------------------------------------------
    def redelivery(self, level: Level, **fields: Any) -> None:
        self.counters.add("redeliveries_discarded")
        self.emit("redelivery_discarded", level, **fields)

    def idempotent(self, **fields: Any) -> None:
        """An operation delivered again after it took effect: nothing ran (trace-only: no dispatch record)."""
        self.counters.add_each(("idempotent", "redeliveries_discarded"))
        self.emit("redelivery_discarded", "silent", **fields)

    def in_progress(self, **fields: Any) -> None:
        """An operation delivered while a live owner's delivery of it runs: discarded, the host may deliver it
        again later (its result is `in_progress`, never `idempotent`)."""
        self.counters.add_each(("in_progress", "redeliveries_discarded"))
        self.emit("redelivery_discarded", "info", in_progress=True, **fields)

    def redelivery_refused(self, **fields: Any) -> None:
        """An operation delivered again after `interlock db prune` deleted its marker (its fingerprint is kept):
        refused, never run again (ADR 0047)."""
        self.counters.add_each(("redeliveries_refused", "redeliveries_discarded"))
        self.emit("warning", "warning", "redelivery refused: the operation took effect before the store's "
                  "deduplication window (its marker was pruned)", code="redelivery_refused", **fields)

    def superseded(self, task_id: str, entry_id: int, current: int | None, **fields: Any) -> None:
        """A delivery produced under an activation the task has left (docs/runtime.md §6, "Stale deliveries")."""
        self.counters.add("superseded_discarded")
        self.emit("superseded_discarded", "info", "stale delivery discarded: the task left that activation",
                  task=task_id, entry_id=entry_id, current=current, **fields)

    def stranded(self, task_id: str, workflow_id: str | None, step_id: str | None, **fields: Any) -> None:
        """A delivery for a task on a step the deciding plan does not have: nothing changes."""
        self.counters.add("stranded")
        self.emit("warning", "warning", "task stands on a step the plan does not have", code="task_stranded",
                  task=task_id, workflow=workflow_id, step=step_id, revision=self.plan, **fields)

    def warning(self, code: str, text: str, /, **fields: Any) -> None:
        """A `warning` record with a `code` a host may act on, its stable message `text`."""
        self.emit("warning", "warning", text, code=code, **fields)

    # ---- time and failures (docs/runtime.md §7) ----------------------------------------------------------
    def timer(self, task_id: str, step_id: str, entry_id: int, timer: str, slot: int, result: str, missed: int = 0,
              **fields: Any) -> None:
        """A timer fired (or was cancelled: its task left the entry, or the plan has no such timer any more)."""
        if result == "fired":
            self.counters.add("timers_fired")
        else:
            self.counters.add("timers_cancelled")
        if self.active:
            self.emit("timer", "info", "timer fired" if result == "fired" else "timer cancelled", task=task_id,
                      step=step_id, entry_id=entry_id, timer=timer, slot=slot,
                      result=result, missed=missed, **fields)

    def retry_scheduled(self, task_id: str, kind: str, attempt: int, due_at: float, **fields: Any) -> None:
        """A failed call will be tried again by `tick` (its kind's `retry` policy)."""
        if self.active:
            self.emit("retry", "info", "failed call scheduled to be tried again", task=task_id, kind=kind,
                      attempt=attempt, due_at=due_at, result="scheduled", **fields)

    def retried(self, task_id: str, kind: str, attempt: int, result: str, **fields: Any) -> None:
        """`tick` tried a failed call again: `ok`, `failed` (another try is scheduled, or an incident opened),
        `superseded` (the task left the entry: nothing ran)."""
        self.counters.add("retries")
        if self.active:
            self.emit("retry", "warning" if result == "failed" else "info", task=task_id, kind=kind,
                      attempt=attempt, result=result, **fields)

    def incident_opened(self, incident: Any) -> None:
        """A failure nothing will retry: an incident (ERROR: a person or a host's alerting acts on it)."""
        self.counters.add("incidents_opened")
        self.emit("incident_opened", "error", "incident opened: a failure nothing will retry",
                  task=incident.task_id, incident=incident.id, kind=incident.kind, error=incident.error,
                  attempts=incident.attempts, entry_id=incident.entry_id, step=incident.step_id,
                  operation_id=incident.operation_id,
                  failures=[{"position": p, "kind": k, "error": e} for p, k, e in incident.failures])

    def incident_resolved(self, incident: Any, resolution: str, note: str | None = None, **fields: Any) -> None:
        """An incident closed: redriven successfully, resolved by hand, superseded, or applied by a redelivery."""
        self.counters.add("incidents_resolved")
        self.emit("incident_resolved", "info", task=incident.task_id, incident=incident.id, kind=incident.kind,
                  error=incident.error, attempts=incident.attempts, resolution=resolution, note=note, **fields)


class Deferred:
    """Records held until a transaction has committed (or a cause's own record is out), emitted by `flush`."""

    __slots__ = ("items",)

    def __init__(self) -> None:
        self.items: list[tuple[str, tuple[Any, ...], dict[str, Any]]] = []

    def __getattr__(self, name: str) -> Any:
        """Any `Recorder` method, held: `deferred.emit(...)`, `deferred.effects(...)`, …"""
        if name.startswith("_"):
            raise AttributeError(name)

        def hold(*args: Any, **kwargs: Any) -> None:
            self.items.append((name, args, kwargs))

        return hold

    def effects(self, effects: Sequence[Mapping[str, Any]], kind: str, task_id: str, step_id: str,
                **ids: Any) -> None:
        if effects:
            self.items.append(("effects", (effects, kind, task_id, step_id), ids))

    def flush(self, recorder: Recorder) -> None:
        if not self.items:
            return
        items, self.items = self.items, []
        for what, args, kwargs in items:
            getattr(recorder, what)(*args, **kwargs)
