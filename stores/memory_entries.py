"""Entry records and markers in process memory: the part of `MemoryStore` that records entries and starts,
finishes and reruns markers (`MemoryEntries`).

Entry records are kept as rows of plain values, as the SQL store hands them back (ADR 0035).  `MemoryStore`
(`stores/memory.py`) takes these methods in as a base class; they name the store through the `MemoryHost` protocol
(`stores/memory_host.py`) and write through its undo log.
"""

from __future__ import annotations

from dataclasses import replace
from typing import TYPE_CHECKING

from interlock.runtime.frozen import builder
from interlock.runtime.store import EntryRecord, Marker, MarkerState

from ._common import (
    attempted_text,
    attempted_value,
    check_state,
    failed_text,
    failed_value,
    foreign_entry_error,
    no_destination_error,
    no_ledger_row_error,
    stored_shape,
)
from .memory_ledger import TO_STEP as _TO_STEP
from .memory_ledger import TO_WORKFLOW as _TO_WORKFLOW

if TYPE_CHECKING:
    from .memory_host import MemoryHost

__all__ = ["MemoryEntries"]

_entry_record = builder(EntryRecord)


class MemoryEntries:
    """Entry records and markers of `MemoryStore` (see the module's docstring)."""

    __slots__ = ()

    def entry_record(self: MemoryHost, entry_id: int) -> EntryRecord | None:
        with self._lock:
            values = self._entries.get(entry_id)
        return None if values is None else _entry_record(*values)

    def record_entry(self: MemoryHost, record: EntryRecord) -> bool:
        """Record the entry (see the protocol): False if the row has one already (nothing changed)."""
        attempted, failed = record.attempted, record.failed
        if type(attempted) is not tuple or type(failed) is not tuple or ((attempted or failed)
                                                                       and not stored_shape(record)):
            # kept as the SQL store hands it back: tuples of str (an empty entry's record is that already)
            attempted, failed = attempted_value(attempted_text(attempted)), failed_value(failed_text(failed))
        entry_id = record.entry_id
        values = (entry_id, record.task_id, record.workflow_id, record.step_id, attempted, failed)
        with self._lock:
            row = self._ledger.get(entry_id)
            if row is None:
                raise no_ledger_row_error(entry_id)
            if entry_id in self._entries:
                return False
            if row[_TO_WORKFLOW] is None or row[_TO_STEP] is None:
                raise no_destination_error(entry_id)
            if row[1] != values[1] or row[_TO_WORKFLOW] != values[2] or row[_TO_STEP] != values[3]:
                raise foreign_entry_error(entry_id, values[1:4], (row[1], row[_TO_WORKFLOW], row[_TO_STEP]))
            if self._undo is None:  # outside a unit: nothing to undo (`_put` without its call)
                self._entries[entry_id] = values
                self._unrecorded.pop(entry_id, None)
            else:
                self._put(self._entries, entry_id, values)
                self._pop(self._unrecorded, entry_id)
            return True

    def markers(self: MemoryHost, entry_id: int) -> dict[int, Marker]:
        with self._lock:
            return dict(sorted(self._markers.get(entry_id, {}).items()))

    def claim_marker(self: MemoryHost, entry_id: int, position: int, kind: str) -> bool:
        """Insert an `in_progress` marker; False if this position has a marker already."""
        with self._lock:
            if entry_id not in self._ledger:
                raise no_ledger_row_error(entry_id)
            markers = self._markers.get(entry_id)
            if markers is None:
                markers = {}
                self._put(self._markers, entry_id, markers)
            if position in markers:
                return False
            self._put(markers, position, Marker(entry_id, position, kind, "in_progress"))
            return True

    def start_marker(self: MemoryHost, entry_id: int, position: int, kind: str) -> Marker:
        """Start a try of a position (see the protocol)."""
        with self._lock:
            if entry_id not in self._ledger:
                raise no_ledger_row_error(entry_id)
            markers = self._markers.get(entry_id)
            if markers is None:
                markers = {}
                self._put(self._markers, entry_id, markers)
            old = markers.get(position)
            if old is not None and old.state != "in_progress":
                return old
            marker = Marker(entry_id, position, kind, "in_progress", None, 1 if old is None else old.attempt + 1)
            self._put(markers, position, marker)
            return marker

    def finish_marker(self: MemoryHost, entry_id: int, position: int, state: MarkerState, error: str | None = None) -> None:
        """Set a marker's state (and error); a position with no marker is left alone."""
        state = check_state(state)
        with self._lock:
            markers = self._markers.get(entry_id)
            old = markers.get(position) if markers is not None else None
            if markers is not None and old is not None:
                self._put(markers, position, replace(old, state=state, error=error))

    def rerun_marker(self: MemoryHost, entry_id: int, position: int, kind: str) -> Marker | None:
        """Start a position of a recorded entry again (see the protocol): the next attempt, or attempt 2."""
        with self._lock:
            if entry_id not in self._ledger:
                raise no_ledger_row_error(entry_id)
            markers = self._markers.get(entry_id)
            if markers is None:
                markers = {}
                self._put(self._markers, entry_id, markers)
            old = markers.get(position)
            if old is not None and old.state == "done":
                return None
            marker = Marker(entry_id, position, kind, "in_progress", None, 2 if old is None else old.attempt + 1)
            self._put(markers, position, marker)
            return marker

