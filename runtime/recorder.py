"""What happened in, records to every sink and counts out: the one place the runtime reports from.

Components never build a `Record` or touch a sink themselves; they call a `Recorder` method named
after what happened.  Records of work done inside a transaction are held in a `Deferred` list and
emitted once the transaction has committed (a rolled-back try reports nothing).
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from .records import MESSAGES, Counters, Level, LoguruSink, Record, RecordSink

__all__ = ["Recorder", "Deferred"]


class Recorder:
    """Sinks (default: loguru) and counters.  `active` is False when there are no sinks: callers skip building
    records nobody reads."""

    def __init__(self, sinks: Sequence[RecordSink] | None = None, counters: Counters | None = None) -> None:
        self.sinks: list[RecordSink] = list(sinks) if sinks is not None else [LoguruSink()]
        self.counters = counters if counters is not None else Counters()
        self.active = bool(self.sinks)

    def add_sink(self, sink: RecordSink) -> None:
        self.sinks.append(sink)
        self.active = True

    def emit(self, kind: str, level: Level = "info", message: str | None = None, /, **fields: Any) -> None:
        """Send one record to every sink (a failing sink is ignored: it must not take the runtime down)."""
        if not self.sinks:
            return
        record = Record(kind, level, message or MESSAGES.get(kind, kind), fields)
        for sink in self.sinks:
            with contextlib.suppress(Exception):
                sink(record)

    # ---- what happened ------------------------------------------------------------------------------------
    def effects(self, effects: Iterable[Mapping[str, Any]], kind: str, task_id: str, step_id: str,
                **ids: Any) -> None:
        for effect in effects:
            self.counters.add("effects")
            if self.active:
                self.emit("effect", "info", kind=kind, task=task_id, step=step_id, **ids,
                          **{k: v for k, v in effect.items() if k != "kind"})

    def failure(self, reason: str, fault: bool, task_id: str, session_id: str | None, kind: str) -> None:
        """An executor call failed: counted; a fault (an unexpected exception) also gets an `error` record."""
        self.counters.add("executor_failures")
        if fault:
            self.emit("error", "error", task=task_id, session=session_id, kind=kind, message=reason)

    def missing_executor(self, workflow_id: str, step_id: str, step_title: str | None, kind: str, task_id: str,
                         session_id: str | None) -> None:
        self.counters.add("missing_executors")
        self.emit("warning", "warning", "no executor registered for action kind", code="no_executor",
                  workflow=workflow_id, step=step_id, step_title=step_title, kind=kind, task=task_id,
                  session=session_id)

    def redelivery(self, level: Level, **fields: Any) -> None:
        self.counters.add("redeliveries_discarded")
        self.emit("redelivery_discarded", level, **fields)

    def warning(self, code: str, text: str, /, **fields: Any) -> None:
        """A `warning` record with a `code` a host may act on, its stable message `text`."""
        self.emit("warning", "warning", text, code=code, **fields)


class Deferred:
    """Records of work inside a transaction, emitted by `flush` once it has committed."""

    __slots__ = ("items",)

    def __init__(self) -> None:
        self.items: list[tuple[str, tuple[Any, ...], dict[str, Any]]] = []

    def effects(self, effects: Sequence[Mapping[str, Any]], kind: str, task_id: str, step_id: str,
                **ids: Any) -> None:
        if effects:
            self.items.append(("effects", (effects, kind, task_id, step_id), ids))

    def failure(self, reason: str, fault: bool, task_id: str, session_id: str | None, kind: str) -> None:
        self.items.append(("failure", (reason, fault, task_id, session_id, kind), {}))

    def flush(self, recorder: Recorder) -> None:
        if not self.items:
            return
        for what, args, kwargs in self.items:
            getattr(recorder, what)(*args, **kwargs)
        self.items = []
