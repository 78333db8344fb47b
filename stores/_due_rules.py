"""Due rows and incidents as a caller hands them in, checked and normalised values out: the rules both stores share.

Each check that can fail is done here, before a store touches its state, so the memory store and the SQL store
refuse the same calls with the same exceptions.  The dedupe key is what makes `arm_timers` and `schedule_retry`
insert-or-ignore: one row per timer of an entry (`t:<entry>:<position>`), per retried entry position
(`r:e:<entry>:<position>`) and per retried operation (`r:o:<SHA-256 of the operation id>`, fixed-size like every
operation key, ADR 0020).
"""

from __future__ import annotations

import json
from dataclasses import replace
from typing import cast, get_args

from interlock.runtime.store_due import (
    NO_POSITION,
    DueKind,
    DueRow,
    Incident,
    IncidentKind,
    IncidentState,
    TimerArm,
)

from ._common import operation_key

__all__ = [
    "DUE_KINDS", "INCIDENT_KINDS", "INCIDENT_STATES", "RESOLUTIONS", "timer_key", "retry_key", "row_key",
    "check_timer", "check_retry", "check_failures", "check_incident", "check_incident_state", "check_settle", "failures_text",
    "failures_value", "check_json_object",
]

DUE_KINDS: tuple[str, ...] = get_args(DueKind)
INCIDENT_KINDS: tuple[str, ...] = get_args(IncidentKind)
INCIDENT_STATES: tuple[str, ...] = get_args(IncidentState)
RESOLUTIONS: tuple[str, ...] = ("redriven", "resolved", "superseded", "applied")

Failures = tuple[tuple[int, str, str], ...]


def timer_key(entry_id: int, position: int) -> str:
    """The dedupe key of an entry's timer `position`."""
    return f"t:{int(entry_id)}:{int(position)}"


def retry_key(row: DueRow) -> str:
    """The dedupe key of a retry row: its entry position's, or (NO_POSITION) its operation's."""
    if row.position == NO_POSITION:
        if row.operation_id is None:
            raise ValueError("a retry of an operation (position NO_POSITION) needs its operation_id")
        return f"r:o:{operation_key(row.operation_id)}"
    return f"r:e:{int(row.entry_id)}:{int(row.position)}"


def row_key(row: DueRow) -> str:
    """The dedupe key of any due row (a timer's or a retry's)."""
    return retry_key(row) if row.kind == "retry" else timer_key(row.entry_id, row.position)


def check_timer(timer: TimerArm) -> TimerArm:
    """A timer as `arm_timers` writes it: kind `after` or `every`, a position of 0 or more, seconds of 1 or more (an
    `every 0s` would be due for ever)."""
    if timer.kind not in ("after", "every"):
        raise ValueError(f"a timer's kind must be 'after' or 'every', not {timer.kind!r}")
    if type(timer.position) is not int or timer.position < 0:
        raise ValueError(f"a timer's position must be an int of 0 or more, not {timer.position!r}")
    if type(timer.seconds) is not int or timer.seconds < 1:
        raise ValueError(f"a timer's seconds must be an int of 1 or more, not {timer.seconds!r}")
    return timer


def check_retry(row: DueRow) -> str:
    """A retry row as `schedule_retry` writes it (kind `retry`, a JSON object payload); its dedupe key."""
    if row.kind != "retry":
        raise ValueError(f"schedule_retry writes retry rows: kind must be 'retry', not {row.kind!r}")
    if row.position < NO_POSITION:
        raise ValueError(f"a retry's position must be an entry position or NO_POSITION, not {row.position!r}")
    check_json_object("a retry's payload", row.payload)
    return retry_key(row)


def check_incident(incident: Incident) -> Incident:
    """An incident as `open_incident` writes it: a key, a known kind, failures of (int, str, str), a JSON object
    payload; its failures normalised to tuples (as the SQL store hands them back)."""
    if not incident.key:
        raise ValueError("an incident needs a key (`entry:<id>` or `op:<operation id>`)")
    if incident.kind not in INCIDENT_KINDS:
        raise ValueError(f"an incident's kind must be one of {', '.join(INCIDENT_KINDS)}, not {incident.kind!r}")
    check_json_object("an incident's payload", incident.payload)
    failures = check_failures(incident.failures)
    return incident if failures is incident.failures else replace(incident, failures=failures)


def check_failures(failures: Failures) -> Failures:
    """Failures as the SQL store hands them back: a tuple of (int, str, str) tuples (`failures` itself when it is
    that already)."""
    return failures if _stored_failures(failures) else failures_value(failures_text(failures))


def check_incident_state(state: str | None) -> IncidentState | None:
    if state is not None and state not in INCIDENT_STATES:
        raise ValueError(f"an incident's state must be one of {', '.join(INCIDENT_STATES)}, not {state!r}")
    return cast("IncidentState | None", state)


def check_settle(state: str, resolution: str | None) -> IncidentState:
    """`settle_incident`'s target: `resolved` (with a known resolution, or none) or `open` (give it back)."""
    if state not in ("open", "resolved"):
        raise ValueError(f"settle_incident closes an incident (`resolved`) or gives it back (`open`), not {state!r}")
    if resolution is not None and resolution not in RESOLUTIONS:
        raise ValueError(f"an incident's resolution must be one of {', '.join(RESOLUTIONS)}, not {resolution!r}")
    return cast(IncidentState, state)


def failures_text(failures: Failures) -> str:
    """Failures as stored: a JSON array of [position, kind, error] (a failure of another shape is refused)."""
    try:
        return json.dumps([[_position(p), str(k), str(e)] for p, k, e in failures], separators=(",", ":"))
    except (TypeError, ValueError) as exc:
        raise ValueError(f"an incident's failures must be (position, kind, error) triples: {exc}") from exc


def failures_value(text: str) -> Failures:
    return tuple((int(p), str(k), str(e)) for p, k, e in json.loads(text))


def check_json_object(what: str, text: str | None) -> None:
    """`text` is None or the text of a JSON object (a payload kept as the runtime gave it)."""
    if text is None:
        return
    try:
        value = json.loads(text) if isinstance(text, str) else None
    except ValueError:
        value = None
    if not isinstance(value, dict):
        raise ValueError(f"{what} must be the JSON text of an object")


def _position(value: object) -> int:
    if type(value) is not int:
        raise TypeError(f"a position must be an int, not {value!r}")
    return value


def _stored_failures(failures: object) -> bool:
    if type(failures) is not tuple:
        return False
    for f in failures:
        if (type(f) is not tuple or len(f) != 3 or type(f[0]) is not int or type(f[1]) is not str
                or type(f[2]) is not str):
            return False
    return True
