"""Store arguments in, checked and normalised values out: the rules both stores share (no database imports here).

Every check that can fail is done here, before a store touches its state, so the
memory store and the SQL store refuse the same calls with the same exceptions.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable, Iterator, Mapping
from typing import Any, cast, get_args

from interlock.runtime.store import Decision, EntryRecord, MarkerState, StoreError

__all__ = [
    "MARKER_STATES", "DECIDER_TYPES", "clean_id", "is_arrival", "check_state", "check_decider",
    "check_route", "check_seat_task", "payload_text", "payload_value", "attempted_text", "failed_text",
    "attempted_value", "failed_value", "steps_tuple", "exists_error", "no_ledger_row_error",
    "foreign_entry_error", "no_destination_error", "operation_key", "check_arrival_options", "cached_attempted_text",
    "stored_shape",
]

MARKER_STATES: tuple[str, ...] = get_args(MarkerState)
DECIDER_TYPES: tuple[str, ...] = ("agent", "user")


def clean_id(value: str | None) -> str | None:
    """Empty workflow and step ids mean "none" (stored as NULL)."""
    return value if value else None


def is_arrival(from_workflow_id: str | None, from_step_id: str | None,
               to_workflow_id: str | None, to_step_id: str | None) -> bool:
    """Whether a change from one (workflow, step) to another gets a ledger row.

    No row when nothing changes or when neither side names a step (a task without a
    step changing workflow is not a step change).  The pair is compared, not the step
    alone: step names repeat across workflows (`work` in two workflows).  A row with
    no destination step is a detach: it is recorded but enters nothing."""
    if (from_workflow_id, from_step_id) == (to_workflow_id, to_step_id):
        return False
    return from_step_id is not None or to_step_id is not None


def check_arrival_options(text: str | None) -> str | None:
    """An arrival's entry options as a ledger row keeps them: None, or the text of a JSON object (the runtime hands
    over `interlock.runtime.options.check_options`' canonical text; a host writing rows itself may not)."""
    if text is None:
        return None
    if not isinstance(text, str):
        raise ValueError(f"arrival_options must be the JSON text of an object, not {type(text).__name__}")
    try:
        value = json.loads(text)
    except ValueError:
        value = None
    if not isinstance(value, dict):
        raise ValueError("arrival_options must be the JSON text of an object")
    return text


def check_state(state: str) -> MarkerState:
    if state not in MARKER_STATES:
        raise ValueError(f"marker state must be one of {', '.join(MARKER_STATES)}, not {state!r}")
    return cast(MarkerState, state)


def check_decider(decision: Decision) -> None:
    if decision.decider_type not in DECIDER_TYPES:
        raise ValueError(f"decider_type must be 'agent' or 'user', not {decision.decider_type!r}")
    for name in ("task_id", "step_id", "decider_id", "verdict"):
        if not getattr(decision, name):
            raise ValueError(f"a decision needs a non-empty {name}")


def check_route(route: str) -> None:
    if not route:
        raise ValueError("a ledger row needs a route")


def check_seat_task(task_id: str) -> None:
    if not task_id:
        raise ValueError("ensure_seat writes per-task seats: task_id must not be empty")


def payload_text(payload: Mapping[str, Any]) -> str:
    """A run payload as stored: JSON text (a payload that is not JSON is refused with `StoreError`)."""
    try:
        return json.dumps(dict(payload), sort_keys=True, separators=(",", ":"), allow_nan=False)
    except (TypeError, ValueError) as exc:
        raise StoreError(f"a run payload must be JSON (objects, arrays, strings, numbers, booleans, null): {exc}") \
            from exc


def payload_value(text: str) -> dict[str, Any]:
    return cast(dict[str, Any], json.loads(text))


def attempted_text(attempted: Iterable[str]) -> str:
    return json.dumps(list(attempted), separators=(",", ":"))


def failed_text(failed: Iterable[tuple[str, str]]) -> str:
    return json.dumps([[kind, error] for kind, error in failed], separators=(",", ":"))


def attempted_value(text: str) -> tuple[str, ...]:
    return tuple(str(kind) for kind in json.loads(text))


def failed_value(text: str) -> tuple[tuple[str, str], ...]:
    return tuple((str(kind), str(error)) for kind, error in json.loads(text))


def steps_tuple(workflow_steps: Iterator[str] | tuple[str, ...]) -> tuple[str, ...]:
    return tuple(dict.fromkeys(workflow_steps))


def exists_error(task_id: str) -> StoreError:
    return StoreError(f"cannot create task {task_id!r}: a task with this id exists already")


def no_ledger_row_error(entry_id: int) -> StoreError:
    return StoreError(f"entry {entry_id} names no ledger row: entry ids are ledger row ids")


def no_destination_error(entry_id: int) -> StoreError:
    return StoreError(f"entry {entry_id}: its ledger row names no destination (workflow and step): it has no entry "
                      "to record")


def foreign_entry_error(entry_id: int, record: tuple[object, ...], row: tuple[object, ...]) -> StoreError:
    """An entry record whose (task, workflow, step) is not its ledger row's (task, destination)."""
    return StoreError(f"entry {entry_id} records (task, workflow, step) {record!r}, but its ledger row moves "
                      f"{row[0]!r} to {row[1:]!r}: an entry record belongs to its row's task and destination")


def operation_key(operation_id: str) -> str:
    """The key a store files a host's operation id under: its SHA-256, hex (ADR 0020).  Fixed-size, so an id of
    any length fits a B-tree on both dialects; the host's own namespace, so no runtime key can equal it."""
    return hashlib.sha256(operation_id.encode("utf-8", "surrogatepass")).hexdigest()


_ATTEMPTED: dict[tuple[str, ...], str] = {}
"""`attempted` texts by kinds: a step's entry attempts the same kinds every time (bounded: memory stays flat)."""


def cached_attempted_text(kinds: tuple[str, ...]) -> str:
    """`attempted_text`, cached by kinds (the SQL store writes it with every entry record)."""
    try:
        text = _ATTEMPTED.get(kinds)
    except TypeError:  # not hashable (a list): nothing to cache
        return attempted_text(kinds)
    if text is None:
        text = attempted_text(kinds)
        if len(_ATTEMPTED) < 1024:
            _ATTEMPTED[kinds] = text
    return text


def stored_shape(record: EntryRecord) -> bool:
    """Whether a record is in the shape the SQL store hands back (tuples; every attempted kind a str, every
    failure a (str, str) tuple): then it is stored as given."""
    if type(record.attempted) is not tuple or type(record.failed) is not tuple:
        return False
    for k in record.attempted:
        if type(k) is not str:
            return False
    for f in record.failed:
        if type(f) is not tuple or len(f) != 2 or type(f[0]) is not str or type(f[1]) is not str:
            return False
    return True
