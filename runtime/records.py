"""Runtime events in, records out: structured records for hosts, loguru and the simulator's trace, plus counters.

Every record has a `kind` (the trace contract's record names), a level and a stable
message; fields name the task, session, step and ids involved.  Sinks receive each
record; `LoguruSink` forwards its text (message and fields) to loguru, `ListSink` keeps them;
`sinks` has the stdlib `logging` and JSON-lines sinks, `otel` the OpenTelemetry one.
"""

from __future__ import annotations

import threading
from collections import Counter
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from .frozen import fast_init
from .vocabulary import Level

__all__ = ["Record", "RecordSink", "ListSink", "LoguruSink", "Counters", "Level", "MESSAGES"]


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
    "decision": "decision recorded",
    "timer": "timer fired",
    "retry": "failed call tried again",
    "incident_resolved": "incident resolved",
}


@fast_init
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
    """Forwards records to loguru: the line is the record's text (its stable message and its fields as `name=value`,
    `sinks.record_text`); the fields are bound too (`extra`), with the stable message as `stable_message`."""

    _LEVELS = {"debug": "DEBUG", "info": "INFO", "warning": "WARNING", "error": "ERROR"}

    def __call__(self, record: Record) -> None:
        if record.level == "silent":
            return
        from loguru import logger

        from .sinks import record_text

        fields = dict(record.fields)
        # loguru consumers search by the names kandev's designs use: task_id, session_id (always bound,
        # None when the record concerns no task or no session)
        fields["task_id"] = fields.pop("task", None)
        fields["session_id"] = fields.pop("session", None)
        # `opt(depth=1)`: the line names the recorder's caller, not this sink; the text goes in as an argument,
        # so braces in a field are never read as a format
        fields["stable_message"] = record.message  # the line is the text; a consumer matches on this
        logger.bind(record=record.kind, **fields).opt(depth=1).log(self._LEVELS[record.level], "{}",
                                                                   record_text(record))


class _Shard(threading.local):
    """One thread's counters (attributes set by `Counters._register`)."""

    values: dict[str, int]
    skips: dict[str, int]


class Counters:
    """Monotonic counters, readable at any time through `snapshot()`.

    Each thread counts into a shard of its own (no lock on the hot path); `snapshot()` sums
    the shards.  A dead thread's shard is folded into `retired` when the next thread
    registers, so executor threads that call back into the runtime do not pile up shards."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._local: _Shard = _Shard()
        # plain dicts, not Counters: a dict subclass's item access is slower, and `add` runs on every hot path
        self._shards: list[tuple[threading.Thread, dict[str, int], dict[str, int]]] = []
        self._retired: Counter[str] = Counter()
        self._retired_skips: Counter[str] = Counter()

    def _register(self) -> _Shard:
        values: dict[str, int] = {}
        skips: dict[str, int] = {}
        with self._lock:
            live = []
            for thread, v, s in self._shards:
                if thread.is_alive():
                    live.append((thread, v, s))
                else:  # its owner is gone: nothing writes to it any more
                    self._retired.update(v)
                    self._retired_skips.update(s)
            live.append((threading.current_thread(), values, skips))
            self._shards = live
        shard: _Shard = self._local
        shard.values, shard.skips = values, skips
        return shard

    def add(self, name: str, n: int = 1) -> None:
        try:
            values = self._local.values
        except AttributeError:
            values = self._register().values
        values[name] = values.get(name, 0) + n

    def add_each(self, names: tuple[str, ...]) -> None:
        """Add one to each of `names`."""
        try:
            values = self._local.values
        except AttributeError:
            values = self._register().values
        for name in names:
            values[name] = values.get(name, 0) + 1

    def count(self, *names: str) -> None:
        """`add_each(names)`, for `Recorder.count` to be this bound method itself (no frame of its own: ADR 0052)."""
        try:
            values = self._local.values
        except AttributeError:
            values = self._register().values
        for name in names:
            values[name] = values.get(name, 0) + 1

    def skip(self, guard: str) -> None:
        try:
            skips = self._local.skips
        except AttributeError:
            skips = self._register().skips
        skips[guard] = skips.get(guard, 0) + 1

    @property
    def values(self) -> Counter[str]:
        """Every counter, summed over the threads (a copy)."""
        return self._sums()[0]

    @property
    def guard_skips(self) -> Counter[str]:
        """Quorum guard skips by reason, summed over the threads (a copy)."""
        return self._sums()[1]

    def _sums(self) -> tuple[Counter[str], Counter[str]]:
        with self._lock:
            values, skips = Counter(self._retired), Counter(self._retired_skips)
            for _thread, shard_values, shard_skips in self._shards:
                values.update(dict(shard_values))  # dict() copies in one step under the GIL
                skips.update(dict(shard_skips))
        return values, skips

    def snapshot(self) -> dict[str, Any]:
        values, skips = self._sums()
        names = ("arrivals", "entries_dispatched", "redeliveries_discarded", "effects", "executor_failures",
                 "missing_executors", "dispatches", "idempotent", "transitions", "superseded_discarded",
                 "timers_fired", "retries")
        snap: dict[str, Any] = {n: values.get(n, 0) for n in names}
        snap.update({k: v for k, v in values.items() if k not in snap})
        snap["guard_skips"] = dict(sorted(skips.items()))
        return snap
