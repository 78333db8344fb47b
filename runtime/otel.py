"""Records in, OpenTelemetry spans and metrics out: the `interlock[otel]` adapter (ADR 0048).

`OtelSink` is a record sink like any other: a runtime built without it pays nothing for it, and
`interlock check` never imports it.  It turns the records of each delivery into one span — an arrival,
a step entry, a fire, a dispatch sequence, a decision — with the plan revision (the record's `plan`,
else the digest of the plan the sink was given), the task, the step, the trigger and the outcome as
attributes, and keeps counters and a histogram:

- `interlock.arrivals` (workflow, step, route), `interlock.actions` (kind, trigger, outcome: ok,
  failed or no_executor), `interlock.failures` (kind, trigger), `interlock.redeliveries` (what: entry,
  operation or decision), `interlock.superseded_discarded`;
- `interlock.time_in_step` (seconds; workflow, step): on an arrival out of a step, the time since the
  task's previous arrival, when this sink saw it (it remembers the last arrival of up to
  `remember_tasks` tasks; an arrival made by another process is not seen, so its step's time is not
  measured).

A span is built when its record is emitted, so it marks when the delivery's outcome was known and has
no duration of its own: to time a call, wrap it in a span of the host's, which the runtime's spans
become children of (sinks run in the caller's thread).

    from interlock.runtime.otel import instrument
    instrument(rt)  # the global tracer and meter providers; or tracer_provider=…, meter_provider=…
"""

from __future__ import annotations

import collections
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from typing import Any, Protocol

try:
    from opentelemetry import metrics, trace
    from opentelemetry.trace import Status, StatusCode
except ImportError as exc:  # pragma: no cover - the extra is not installed
    raise ImportError("the OpenTelemetry adapter needs the `otel` extra: pip install -e '.[otel]' (from the interlock checkout)") from exc

from .plan import Plan
from .records import Record, RecordSink

__all__ = ["OtelSink", "instrument", "TRANSITION_KINDS"]

TRANSITION_KINDS = frozenset({"move_to_next", "move_to_previous", "move_to_step"})
"""The prelude's transition kinds: not actions an executor runs (a sink given a plan reads the plan's own)."""

_ATTR = "interlock."
_NO_EXECUTOR = "no executor"


class _Instrumentable(Protocol):
    plan: Plan

    def add_sink(self, sink: RecordSink) -> None: ...


class _Local(threading.local):
    def __init__(self) -> None:
        self.dispatch: dict[tuple[Any, Any], Mapping[str, Any]] = {}  # (task, trigger) -> its last dispatch record
        self.missing: dict[Any, set[Any]] = {}  # task -> kinds warned `no_executor` since its last delivery


class OtelSink:
    """Spans and metrics from records.  `plan`: the runtime's plan (or its digest) — the revision records that do
    not name one are attributed to, and the kinds that are transitions."""

    def __init__(self, plan: Plan | str | None = None, *, tracer_provider: trace.TracerProvider | None = None,
                 meter_provider: metrics.MeterProvider | None = None, remember_tasks: int = 65_536,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self.digest = plan.digest if isinstance(plan, Plan) else (plan or "")
        self.entry_trigger = plan.entry_policy.trigger if isinstance(plan, Plan) else "on_enter"
        self.transitions = (frozenset(k.name for k in plan.kinds if k.action_class == "transition")
                            if isinstance(plan, Plan) else TRANSITION_KINDS)
        self.sequence_triggers = {s.name: s.trigger for s in plan.sequences} if isinstance(plan, Plan) else {}
        self.tracer = trace.get_tracer("interlock.runtime", tracer_provider=tracer_provider)
        meter = metrics.get_meter("interlock.runtime", meter_provider=meter_provider)
        self.arrivals = meter.create_counter("interlock.arrivals", unit="{arrival}",
                                             description="arrivals: committed changes of a task's step")
        self.actions = meter.create_counter("interlock.actions", unit="{action}",
                                            description="actions run through executors, by outcome")
        self.failures = meter.create_counter("interlock.failures", unit="{action}",
                                             description="actions that failed (their executor failed or raised)")
        self.redeliveries = meter.create_counter("interlock.redeliveries", unit="{delivery}",
                                                 description="redeliveries discarded whole")
        self.superseded = meter.create_counter("interlock.superseded_discarded", unit="{delivery}",
                                               description="deliveries for an entry that is no longer current")
        self.time_in_step = meter.create_histogram("interlock.time_in_step", unit="s",
                                                   description="time a task spent on a step, measured on leaving it")
        self.remember_tasks = remember_tasks
        self.clock = clock
        self._entered: collections.OrderedDict[str, tuple[Any, Any, float]] = collections.OrderedDict()
        self._lock = threading.Lock()
        self._local = _Local()
        self._handlers: dict[str, Callable[[Record, dict[str, Any]], None]] = {
            "arrival": self._arrival, "entry": self._entry, "dispatch": self._dispatch, "outcome": self._outcome,
            "decision": self._decision, "redelivery_discarded": self._redelivery, "warning": self._warning,
            "superseded_discarded": self._superseded,
        }

    def __call__(self, record: Record) -> None:
        handler = self._handlers.get(record.kind)
        if handler is not None:
            handler(record, self._base(record.fields))

    # ---- helpers ----------------------------------------------------------------------------------------------------
    def _base(self, fields: Mapping[str, Any]) -> dict[str, Any]:
        plan = fields.get("plan") or self.digest
        return {_ATTR + "plan": plan} if plan else {}

    def _span(self, name: str, attributes: Mapping[str, Any], error: str | None = None) -> None:
        now = time.time_ns()
        span = self.tracer.start_span(name, attributes=_clean(attributes), start_time=now)
        if error is not None:
            span.set_status(Status(StatusCode.ERROR, error))
        span.end(end_time=now)

    def _ran(self, base: Mapping[str, Any], kind: str, trigger: Any, outcome: str) -> None:
        where = _clean({**base, _ATTR + "kind": kind, _ATTR + "trigger": trigger})
        self.actions.add(1, {**where, _ATTR + "outcome": outcome})
        if outcome == "failed":
            self.failures.add(1, where)

    # ---- records ----------------------------------------------------------------------------------------------------
    def _arrival(self, record: Record, base: dict[str, Any]) -> None:
        f = record.fields
        task, to_step, workflow = f.get("task"), f.get("to"), f.get("workflow")
        self.arrivals.add(1, _clean({**base, _ATTR + "workflow": workflow, _ATTR + "step": to_step,
                                     _ATTR + "route": f.get("route")}))
        self._span("interlock.arrival", {**base, _ATTR + "task": task, _ATTR + "step": to_step,
                                         _ATTR + "from_step": f.get("from"), _ATTR + "workflow": workflow,
                                         _ATTR + "route": f.get("route"), _ATTR + "entry_id": f.get("ledger_id"),
                                         _ATTR + "session": f.get("session"), _ATTR + "outcome": "arrived"})
        if isinstance(task, str):
            self._time_in_step(base, task, f.get("from"), workflow, to_step)

    def _time_in_step(self, base: Mapping[str, Any], task: str, from_step: Any, workflow: Any, to_step: Any) -> None:
        now = self.clock()
        with self._lock:
            entered = self._entered.pop(task, None)
            if to_step is not None:
                self._entered[task] = (workflow, to_step, now)
                if len(self._entered) > self.remember_tasks:
                    self._entered.popitem(last=False)
        if entered is not None and from_step is not None and entered[1] == from_step:
            self.time_in_step.record(max(0.0, now - entered[2]),
                                     _clean({**base, _ATTR + "workflow": entered[0], _ATTR + "step": from_step}))

    def _entry(self, record: Record, base: dict[str, Any]) -> None:
        f = record.fields
        self._local.missing.pop(f.get("task"), None)  # an entry's missing kinds are in its `failed` list
        failed: dict[str, list[str]] = {}
        for item in f.get("failed") or ():
            if isinstance(item, Mapping):
                failed.setdefault(str(item.get("kind")), []).append(str(item.get("error")))
        for kind in f.get("attempted") or ():
            errors = failed.get(kind)
            error = errors.pop(0) if errors else None
            self._ran(base, kind, self.entry_trigger,
                      "ok" if error is None else "no_executor" if error == _NO_EXECUTOR else "failed")
        failed_kinds = [str(i.get("kind")) for i in f.get("failed") or () if isinstance(i, Mapping)]
        self._span("interlock.entry", {**base, _ATTR + "task": f.get("task"), _ATTR + "step": f.get("step"),
                                       _ATTR + "workflow": f.get("workflow"), _ATTR + "trigger": self.entry_trigger,
                                       _ATTR + "entry_id": f.get("entry_id"), _ATTR + "session": f.get("session"),
                                       _ATTR + "attempted": list(f.get("attempted") or ()),
                                       _ATTR + "failed": failed_kinds,
                                       _ATTR + "outcome": "failed" if failed_kinds else "ok"},
                   error=f"failed: {', '.join(failed_kinds)}" if failed_kinds else None)

    def _warning(self, record: Record, base: dict[str, Any]) -> None:
        f = record.fields
        if f.get("code") == "no_executor":
            self._local.missing.setdefault(f.get("task"), set()).add(f.get("kind"))

    def _dispatch(self, record: Record, base: dict[str, Any]) -> None:
        """A trigger's handler ran (or aborted): its actions counted; kept for the span of its outcome."""
        f = record.fields
        task, trigger = f.get("task"), f.get("trigger")
        local = self._local
        if record.level == "error":
            for kind in f.get("actions") or ():
                self._ran(base, kind, trigger, "ok")
            if f.get("failed_kind"):
                self._ran(base, str(f["failed_kind"]), trigger, "failed")
        else:
            missing = local.missing.pop(task, set())
            for kind in f.get("actions") or ():
                if kind not in self.transitions:
                    self._ran(base, kind, trigger, "no_executor" if kind in missing else "ok")
        if trigger != "on_exit":  # an exit has no outcome record: nothing would take it back
            if len(local.dispatch) > 64:  # an outcome that never came (a host's own sink raised…): no leak
                local.dispatch.clear()
            local.dispatch[(task, trigger)] = f

    def _outcome(self, record: Record, base: dict[str, Any]) -> None:
        f = record.fields
        task = f.get("task")
        sequence = f.get("sequence")
        trigger = self.sequence_triggers.get(sequence, None) if sequence is not None else f.get("trigger")
        local = self._local
        dispatched = local.dispatch.pop((task, trigger), None) or {}
        local.missing.pop(task, None)
        result = f.get("result")
        attrs = {**base, _ATTR + "task": task, _ATTR + "trigger": trigger, _ATTR + "step": dispatched.get("step"),
                 _ATTR + "operation_id": f.get("operation_id") or dispatched.get("operation_id"),
                 _ATTR + "session": dispatched.get("session"), _ATTR + "outcome": result}
        error = dispatched.get("error") or (str(result) if result == "error" else None)
        if sequence is not None:
            attrs.update({_ATTR + "sequence": sequence, _ATTR + "guard": f.get("guard")})
            self._span("interlock.dispatch", attrs, error=error if result == "error" else None)
        else:
            attrs[_ATTR + "actions"] = list(dispatched.get("actions") or ())
            self._span("interlock.fire", attrs, error=error if result == "error" else None)

    def _decision(self, record: Record, base: dict[str, Any]) -> None:
        f = record.fields
        self._span("interlock.decision", {**base, _ATTR + "task": f.get("task"), _ATTR + "step": f.get("step"),
                                          _ATTR + "trigger": "decision", _ATTR + "verdict": f.get("verdict"),
                                          _ATTR + "agent": f.get("agent"), _ATTR + "user": f.get("user"),
                                          _ATTR + "role": f.get("role"), _ATTR + "seated": f.get("seated"),
                                          _ATTR + "decision_id": f.get("decision_id"),
                                          _ATTR + "outcome": f.get("result")})

    def _redelivery(self, record: Record, base: dict[str, Any]) -> None:
        f = record.fields
        what = "entry" if "entry_id" in f else "decision" if "decision_id" in f else "operation"
        self.redeliveries.add(1, {**base, _ATTR + "what": what})
        if what == "entry":
            self._span("interlock.entry", {**base, _ATTR + "task": f.get("task"), _ATTR + "step": f.get("step"),
                                           _ATTR + "trigger": self.entry_trigger, _ATTR + "entry_id": f.get("entry_id"),
                                           _ATTR + "outcome": "redelivery_discarded"})

    def _superseded(self, record: Record, base: dict[str, Any]) -> None:
        self.superseded.add(1, base)


def _clean(attributes: Mapping[str, Any]) -> dict[str, Any]:
    """Attributes OpenTelemetry accepts: None left out, sequences as lists of strings, other values as they are
    when they are str, bool, int or float, else as text."""
    out: dict[str, Any] = {}
    for key, value in attributes.items():
        if value is None:
            continue
        if isinstance(value, (str, bool, int, float)):
            out[key] = value
        elif isinstance(value, Sequence):
            out[key] = [str(v) for v in value]
        else:
            out[key] = str(value)
    return out


def instrument(runtime: _Instrumentable, *, tracer_provider: trace.TracerProvider | None = None,
               meter_provider: metrics.MeterProvider | None = None, remember_tasks: int = 65_536) -> OtelSink:
    """Add an `OtelSink` for `runtime`'s plan to `runtime` (a `Runtime` or an `AsyncRuntime`) and return it."""
    sink = OtelSink(runtime.plan, tracer_provider=tracer_provider, meter_provider=meter_provider,
                    remember_tasks=remember_tasks)
    runtime.add_sink(sink)
    return sink
