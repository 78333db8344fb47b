"""The store's part of time and failure: due rows (timers and retries) and incidents, as value types and the protocol
a store implements (docs/runtime.md §7; ADR 0050).

A **due row** is work that becomes due at a time on the store's clock: a step's timer (`after` /
`every`, armed in the transaction of the arrival that entered the step, one row per timer of the
entry) or a retry (of an entry position, or of an operation, written when the failed call is not the
last its policy allows).  The runtime fires a due row through an operation claim, so a row read by
several ticking processes at once runs once; the row itself then moves on (`advance_due`: an
`every` timer's next slot, a retry's next attempt) or goes (`drop_due`), each a compare-and-swap on
the row's slot so two processes never both move it.

An **incident** is a failure nothing will retry: the failed positions of an entry, or an operation
whose delivery aborted.  One row per entry or operation (`key`), reopened if the same thing fails
again after it was closed.  `claim_incident` hands it to one redriver at a time (a redriver whose
owner is dead loses it); `settle_incident` closes it or gives it back.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, fields
from typing import Any, Literal, Protocol

from .frozen import builder, fast_init

__all__ = ["TimerArm", "DueRow", "DueKind", "Incident", "IncidentKind", "IncidentState", "DueWork",
           "IncidentStore", "NO_POSITION", "due_row"]

DueKind = Literal["after", "every", "retry"]
IncidentKind = Literal["entry", "operation"]
IncidentState = Literal["open", "redriving", "resolved"]
NO_POSITION = -1
"""The `position` of a due row or a failure that belongs to an operation, not to an entry position."""


@dataclass(frozen=True)
class TimerArm:
    """One timer of a step, as an arrival arms it: the timer's index among the step's timers, its kind, its label
    (`after 48h`) and its duration in seconds."""

    position: int
    kind: Literal["after", "every"]
    label: str
    seconds: int


@fast_init
@dataclass(frozen=True)
class DueRow:
    """A row of `interlock_timers` (see the module's docstring)."""

    id: int
    task_id: str
    entry_id: int  # the activation the row belongs to: it never fires once the task has left it
    workflow_id: str
    step_id: str
    kind: DueKind
    label: str  # the timer's label (`every 1h`); a retry's: the kind of the action retried
    position: int  # a timer's index in its step's timers; a retried entry position; NO_POSITION: an operation
    period: int  # seconds: an `every` timer's period, an `after` timer's duration; 0 for a retry
    armed_at: float  # the store's clock when the row was written (a timer's: the entry's arrival)
    slot: int  # a timer's next slot to fire (1-based); a retry's attempt it will run (2-based: 1 failed)
    due_at: float  # the store's clock, epoch seconds
    plan: str | None  # the revision whose handler the row runs (the entry's)
    operation_id: str | None = None  # a retried operation: the delivery as stored
    trigger: str | None = None
    payload: str | None = None  # JSON object text
    session_id: str | None = None


def due_row(values: Sequence[Any]) -> DueRow:
    """The `DueRow` of a store's row, its values in field order: equal to `DueRow(*values)` in every respect, built
    by `frozen.builder` (ADR 0027) instead of the frozen dataclass's `__init__` (one `object.__setattr__` call per
    field: two thirds of what reading 1,000 due rows cost a tick; ADR 0058).  A row of another length raises
    ValueError."""
    if len(values) != _DUE_ROW_FIELDS:
        raise ValueError(f"a due row has {_DUE_ROW_FIELDS} values, not {len(values)}")
    return _build_due_row(*values)


_build_due_row = builder(DueRow)
_DUE_ROW_FIELDS = len(fields(DueRow))


@dataclass(frozen=True)
class Incident:
    """A failure nothing will retry (see the module's docstring).  `failures`: (position, kind, error) of each failed
    entry position in order, or one (NO_POSITION, kind, error) for an operation."""

    id: int
    key: str  # `entry:<entry id>` or `op:<operation id>`: one incident per entry or operation
    task_id: str
    kind: IncidentKind
    failures: tuple[tuple[int, str, str], ...]
    error: str  # the last error
    attempts: int  # the tries made of what failed (the most of any position)
    state: IncidentState
    opened_at: float
    updated_at: float
    entry_id: int | None = None
    workflow_id: str | None = None
    step_id: str | None = None
    plan: str | None = None
    operation_id: str | None = None  # an operation's delivery as stored: redriven as it is
    trigger: str | None = None
    payload: str | None = None  # JSON object text
    session_id: str | None = None
    owner_id: str | None = None  # the redriver (state `redriving`)
    resolution: str | None = None  # `redriven`, `resolved`, `superseded` or `applied` (state `resolved`)
    note: str | None = None


class DueWork(Protocol):
    """Timers and retries (see the module's docstring).  Times are the store's clock (its test clock when it was
    given one)."""

    def arm_timers(self, task_id: str, entry_id: int, workflow_id: str, step_id: str, plan: str | None,
                   timers: Sequence[TimerArm]) -> None:
        """Write one due row per timer of an entry (slot 1, due now + its seconds); a timer armed already for that
        entry is left as it is.  Called inside the arrival's unit."""
        ...

    def schedule_retry(self, row: DueRow) -> bool:
        """Write a retry row (its `id` ignored); False (nothing written) when a retry of the same entry position, or
        of the same operation, is scheduled already."""
        ...

    def disarm(self, task_id: str, keep_entry: int | None) -> list[DueRow]:
        """Delete the task's due rows of every entry but `keep_entry` (timers and retries); the rows deleted."""
        ...

    def due(self, limit: int = 1000) -> list[DueRow]:
        """The rows due now, earliest first (then by id)."""
        ...

    def next_due(self) -> float | None:
        """When the earliest row is due (None: nothing is pending)."""
        ...

    def due_rows(self, task_id: str) -> list[DueRow]:
        """Every due row of a task, earliest first."""
        ...

    def advance_due(self, row_id: int, slot: int, next_slot: int, due_at: float) -> bool:
        """Move a row on to `next_slot`, due at `due_at`, if its slot is still `slot`; False otherwise."""
        ...

    def drop_due(self, row_id: int, slot: int) -> bool:
        """Delete a row if its slot is still `slot`; False otherwise."""
        ...


class IncidentStore(Protocol):
    """Incidents (see the module's docstring)."""

    def open_incident(self, incident: Incident) -> Incident:
        """Open an incident (its `id`, `state`, times and redriver ignored), or, when one with its key exists, update
        it with these failures, error and attempts and open it again if it was resolved; the row as stored."""
        ...

    def incident(self, incident_id: int) -> Incident | None: ...

    def incidents(self, task_id: str | None = None, *, state: IncidentState | None = "open",
                  limit: int = 1000) -> list[Incident]:
        """Incidents in that state (None: any), oldest first; of one task when `task_id` is given."""
        ...

    def claim_incident(self, incident_id: int, owner_id: str) -> Incident | None:
        """Hand an open incident (or one whose redriver's owner is dead) to `owner_id` to redrive (state
        `redriving`); None when it is resolved or a live owner redrives it."""
        ...

    def settle_incident(self, incident_id: int, *, owner_id: str | None, state: IncidentState,
                        resolution: str | None = None, note: str | None = None, error: str | None = None,
                        attempts: int | None = None,
                        failures: tuple[tuple[int, str, str], ...] | None = None) -> bool:
        """Close an incident (`resolved`, with its resolution and note) or give it back (`open`, with what failed this
        time).  With `owner_id`, only while that owner redrives it; without, only while it is open.  False when
        it was not in that state."""
        ...
