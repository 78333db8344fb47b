"""Runtime events in, records out: structured records for hosts, loguru and the simulator's trace, plus counters.

Every record has a `kind` (the trace contract's record names), a level and a stable
message; fields name the task, session, step and ids involved.  Sinks receive each
record; `LoguruSink` forwards to loguru with the fields bound, `ListSink` keeps them.
"""

from __future__ import annotations

import threading
from collections import Counter
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

__all__ = ["Record", "RecordSink", "ListSink", "LoguruSink", "Counters", "Level", "MESSAGES"]

Level = Literal["silent", "debug", "info", "warning", "error"]

# Stable messages, one per record kind (dispatch-sequence guards carry their own from the plan).
MESSAGES: dict[str, str] = {
    "arrival": "task arrived at step",
    "entry": "step entry dispatched",
    "redelivery_discarded": "redelivery discarded",
    "effect": "action took effect",
    "inline": "entry kinds left to the host",
    "warning": "runtime warning",
    "error": "executor raised an unexpected exception",
    "outcome": "dispatch outcome",
    "dispatch_info": "trigger dispatched",
    "dispatch_debug": "trigger dispatched: step has no actions",
    "dispatch_error": "trigger dispatch aborted",
}


@dataclass(frozen=True)
class Record:
    kind: str
    level: Level
    message: str
    fields: Mapping[str, Any] = field(default_factory=dict)

    def as_dict(self) -> dict[str, Any]:
        return {"record": self.kind, **self.fields}


RecordSink = Callable[[Record], None]


class ListSink:
    """Keeps every record (tests, the simulator)."""

    def __init__(self) -> None:
        self.records: list[Record] = []
        self._lock = threading.Lock()

    def __call__(self, record: Record) -> None:
        with self._lock:
            self.records.append(record)

    def of(self, kind: str) -> list[Record]:
        return [r for r in self.records if r.kind == kind]


class LoguruSink:
    """Forwards records to loguru: the message is stable, the fields are bound (`extra`)."""

    _LEVELS = {"debug": "DEBUG", "info": "INFO", "warning": "WARNING", "error": "ERROR"}

    def __call__(self, record: Record) -> None:
        if record.level == "silent":
            return
        from loguru import logger

        fields = dict(record.fields)
        # loguru consumers search by the names the seeds use: task_id, session_id (always bound,
        # None when the record concerns no task or no session)
        fields["task_id"] = fields.pop("task", None)
        fields["session_id"] = fields.pop("session", None)
        logger.bind(record=record.kind, **fields).log(self._LEVELS[record.level], record.message)


class Counters:
    """Monotonic counters, readable at any time through `snapshot()`."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.values: Counter[str] = Counter()
        self.guard_skips: Counter[str] = Counter()

    def add(self, name: str, n: int = 1) -> None:
        with self._lock:
            self.values[name] += n

    def skip(self, guard: str) -> None:
        with self._lock:
            self.guard_skips[guard] += 1

    def snapshot(self) -> dict[str, Any]:
        with self._lock:
            names = ("arrivals", "entries_dispatched", "redeliveries_discarded", "effects", "executor_failures",
                     "missing_executors", "dispatches", "idempotent", "transitions")
            snap: dict[str, Any] = {n: self.values.get(n, 0) for n in names}
            snap.update({k: v for k, v in self.values.items() if k not in snap})
            snap["guard_skips"] = dict(sorted(self.guard_skips.items()))
            return snap
