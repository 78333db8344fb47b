"""Records in, lines a person or a log shipper reads out: the text of a record, a stdlib `logging` sink and a JSON-lines
sink.

A record's text is its stable message followed by its fields as `name=value`, the naming fields first in a fixed
order (task, workflow, step, from, to, trigger, sequence, entry, operation, kind, code, result, error,
session), the rest in the order the record has them; fields that are None are left out.  The default loguru sink prints that text too
(`LoguruSink`).  Nothing here is imported until a sink is used, so neither `interlock check` nor a runtime built
with `sinks=[]` pays for it (ADR 0048).
"""

from __future__ import annotations

import datetime
import json
import logging
import os
import re
import threading
from collections.abc import Mapping
from typing import IO, Any, Protocol

__all__ = ["FIRST_FIELDS", "record_text", "LoggingSink", "JsonLinesSink"]

FIRST_FIELDS = ("task", "workflow", "step", "from", "to", "trigger", "sequence", "entry_id", "operation_id", "kind",
                "code", "result", "error", "session")
"""The fields a record's text names first, in this order (the rest follow in the record's own order)."""

_MAX_VALUE = 300  # characters of one value in a record's text: a line stays a line (the JSON sink keeps all)
_BARE = re.compile(r'[^\s"=\\]+')  # a string shown as it is; any other is quoted (JSON)
_DIGEST = re.compile(r"sha256:[0-9a-f]{64}")  # a plan revision
_LEVELS = {"debug": logging.DEBUG, "info": logging.INFO, "warning": logging.WARNING, "error": logging.ERROR}
# names a `logging.LogRecord` has already: such a field is kept only under the record's `interlock` attribute
_RESERVED = frozenset(logging.LogRecord("", 0, "", 0, "", (), None).__dict__) | {"message", "asctime", "interlock"}


class Record(Protocol):
    """What a sink reads of a record (`interlock.runtime.records.Record`, which imports this module when its
    `LoguruSink` first prints one: this module does not import it back)."""

    @property
    def kind(self) -> str: ...
    @property
    def level(self) -> str: ...
    @property
    def message(self) -> str: ...
    @property
    def fields(self) -> Mapping[str, Any]: ...


def _value_text(value: Any) -> str:
    if isinstance(value, str) and _BARE.fullmatch(value):
        text = value
    else:
        text = json.dumps(value, ensure_ascii=False, separators=(",", ":"), default=str)
    if len(text) > _MAX_VALUE:
        return f"{text[:_MAX_VALUE]}…(+{len(text) - _MAX_VALUE} chars)"
    return text


def record_text(record: Record) -> str:
    """`message name=value …`: the record's stable message and its fields (None ones left out), naming fields
    first (`FIRST_FIELDS`).  E.g. `step entry dispatched task=T1 step=review entry_id=7 attempted=["ensure_seats"]`.
    A plan revision (`plan=sha256:…`) is shown by its first 12 hex digits: enough to tell revisions apart on a line
    (the JSON-lines sink keeps it whole)."""
    fields = record.fields
    names = [n for n in FIRST_FIELDS if n in fields] + [n for n in fields if n not in FIRST_FIELDS]
    parts = [record.message]
    for name in names:
        value = fields[name]
        if value is None:
            continue
        if name == "plan" and isinstance(value, str) and _DIGEST.fullmatch(value):
            value = value[:len("sha256:") + 12]
        parts.append(f"{name}={_value_text(value)}")
    return " ".join(parts)


class LoggingSink:
    """Sends records to a stdlib `logging` logger (default `interlock.runtime`): the message is the record's text
    (`record_text`); the fields are attributes of the `LogRecord` (`extra`), and all of them, with the record's
    kind as `record`, are its `interlock` attribute (a field whose name `LogRecord` already uses, such as
    `message`, is only there).  Trace-only (`silent`) records are not logged."""

    def __init__(self, logger: str | logging.Logger = "interlock.runtime") -> None:
        self.logger = logging.getLogger(logger) if isinstance(logger, str) else logger

    def __call__(self, record: Record) -> None:
        level = _LEVELS.get(record.level)
        if level is None or not self.logger.isEnabledFor(level):
            return
        fields = dict(record.fields)
        extra: dict[str, Any] = {k: v for k, v in fields.items() if k not in _RESERVED}
        extra["record"] = record.kind
        extra["interlock"] = {"record": record.kind, **fields}
        self.logger.log(level, record_text(record), extra=extra)


class JsonLinesSink:
    """Writes one JSON object per record to a text stream or a file (appended to): `time` (UTC, ISO 8601),
    `record` (the kind) and the record's fields under the names the simulator's trace uses, then `level` and
    `message` unless the record has fields of those names.  Trace-only (`silent`) records are written only with
    `silent=True`.  Safe to share between threads; `close()` closes a file it opened."""

    def __init__(self, target: IO[str] | str | os.PathLike[str], *, silent: bool = False) -> None:
        self._owned = isinstance(target, (str, os.PathLike))
        # a file this sink opened stays open for its life (records arrive until the host stops): `close()` closes it
        self.stream: IO[str] = open(target, "a", encoding="utf-8") if isinstance(target, (str, os.PathLike)) else target  # noqa: SIM115
        self.silent = silent
        self._lock = threading.Lock()

    def __call__(self, record: Record) -> None:
        if record.level == "silent" and not self.silent:
            return
        self.write(record.kind, record.level, record.message, record.fields)

    def write(self, kind: str, level: str, message: str, fields: Mapping[str, Any]) -> None:
        obj: dict[str, Any] = {"time": datetime.datetime.now(datetime.UTC).isoformat(timespec="microseconds"),
                               "record": kind, **fields}
        obj.setdefault("level", level)
        obj.setdefault("message", message)
        # ASCII: no character but the newline can break the line for a reader (U+2028, U+0085 are escaped too)
        line = json.dumps(obj, default=str) + "\n"
        with self._lock:
            self.stream.write(line)
            self.stream.flush()

    def close(self) -> None:
        if self._owned:
            self.stream.close()
