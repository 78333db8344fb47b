"""Due-row and incident calls in, the SQL store's answers out, in process memory: the part of `MemoryStore` that
keeps `interlock_timers` and `interlock_incidents` (`MemoryDue`).

`MemoryStore` composes one `MemoryDue` and delegates each `DueWork` and `IncidentStore` call to it.  It shares the
store's lock, clock and undo log, so its writes take part in `unit()` exactly like the store's own tables: a unit
that raises undoes them.  Ids are never handed out twice, even when the unit that took them is undone.

What is due is found through a heap of (due_at, id, slot) entries, read lazily: a write pushes the row's entry
and never searches the heap, and a reader drops the entries that no longer match their row (moved on, dropped,
undone).  Undoing a write pushes the restored row's entry again, so no row is ever lost to a reader that dropped
its entry inside a unit that was then undone.  The heap is rebuilt from the rows when stale entries outnumber them.
"""

from __future__ import annotations

import heapq
import itertools
from collections.abc import Callable, Sequence
from contextlib import AbstractContextManager
from dataclasses import replace
from typing import Any, Protocol, TypeVar

from interlock.runtime.store_due import DueRow, Incident, IncidentState, TimerArm

from ._due_rules import (
    check_failures,
    check_incident,
    check_incident_state,
    check_retry,
    check_settle,
    check_timer,
    row_key,
    timer_key,
)

__all__ = ["MemoryDue"]

K = TypeVar("K")
V = TypeVar("V")
_MISSING: Any = object()
_Entry = tuple[float, int, int]  # (due_at, id, slot): a heap entry, valid while its row has that due_at and slot
_Failures = tuple[tuple[int, str, str], ...]


class UndoHost(Protocol):
    """What `MemoryDue` uses of the `MemoryStore` that composes it: its lock, clock, undo log and owners."""

    @property
    def _lock(self) -> AbstractContextManager[Any]: ...

    def now(self) -> float: ...

    def _put(self, table: dict[K, V], key: K, value: V) -> None: ...

    def _pop(self, table: dict[K, V], key: K) -> None: ...

    def _push(self, inverse: Callable[[], object]) -> None: ...

    def _owner_alive(self, owner_id: str | None, now: float) -> bool: ...


class MemoryDue:
    """`DueWork` and `IncidentStore` in process memory, inside a `MemoryStore` (see the module's docstring)."""

    def __init__(self, host: UndoHost) -> None:
        self._host = host
        self._row_ids = itertools.count(1)
        self._incident_ids = itertools.count(1)
        self._rows: dict[int, DueRow] = {}
        self._keys: dict[str, int] = {}  # dedupe key -> row id
        self._by_task: dict[str, dict[int, None]] = {}  # task id -> its row ids
        self._heap: list[_Entry] = []
        self._incidents: dict[int, Incident] = {}
        self._incident_keys: dict[str, int] = {}

    # ---- rows -----------------------------------------------------------------------------------
    def _write(self, row: DueRow, key: str) -> None:
        """Insert a new row under its dedupe key."""
        host = self._host
        self._set(row)
        host._put(self._keys, key, row.id)
        ids = self._by_task.get(row.task_id)
        if ids is None:
            ids = {}
            host._put(self._by_task, row.task_id, ids)
        host._put(ids, row.id, None)

    def _set(self, row: DueRow) -> None:
        old = self._rows.get(row.id, _MISSING)
        self._rows[row.id] = row
        heapq.heappush(self._heap, (row.due_at, row.id, row.slot))
        self._host._push(lambda: self._restore(row.id, old))

    def _delete(self, row: DueRow) -> None:
        host = self._host
        old = self._rows.pop(row.id)
        host._push(lambda: self._restore(row.id, old))
        host._pop(self._keys, row_key(row))
        ids = self._by_task.get(row.task_id)
        if ids is not None:
            host._pop(ids, row.id)
        if len(self._heap) > 2 * len(self._rows) + 1024:  # mostly stale: rebuild from the rows
            self._heap = [(r.due_at, r.id, r.slot) for r in self._rows.values()]
            heapq.heapify(self._heap)

    def _restore(self, row_id: int, old: DueRow) -> None:
        if old is _MISSING:
            self._rows.pop(row_id, None)
            return
        self._rows[row_id] = old
        heapq.heappush(self._heap, (old.due_at, row_id, old.slot))

    def _valid(self, entry: _Entry) -> DueRow | None:
        row = self._rows.get(entry[1])
        return row if row is not None and row.due_at == entry[0] and row.slot == entry[2] else None

    def arm_timers(self, task_id: str, entry_id: int, workflow_id: str, step_id: str, plan: str | None,
                   timers: Sequence[TimerArm]) -> None:
        """One row per timer of the entry (slot 1, due now + its seconds); a timer armed already is left alone."""
        checked = [check_timer(t) for t in timers]
        now = self._host.now()
        with self._host._lock:
            for t in checked:
                key = timer_key(entry_id, t.position)
                if key in self._keys:
                    continue
                self._write(DueRow(next(self._row_ids), task_id, int(entry_id), workflow_id, step_id, t.kind,
                                   t.label, t.position, t.seconds, now, 1, now + t.seconds, plan), key)

    def schedule_retry(self, row: DueRow) -> bool:
        """Write a retry row (its id is the store's, `armed_at` the store's clock); False if one is scheduled."""
        key = check_retry(row)
        now = self._host.now()
        with self._host._lock:
            if key in self._keys:
                return False
            self._write(replace(row, id=next(self._row_ids), armed_at=now, due_at=float(row.due_at)), key)
            return True

    def disarm(self, task_id: str, keep_entry: int | None) -> list[DueRow]:
        """Delete the task's rows of every entry but `keep_entry`; the rows deleted, earliest first."""
        with self._host._lock:
            ids = self._by_task.get(task_id, {})
            gone = sorted((self._rows[i] for i in ids if self._rows[i].entry_id != keep_entry), key=_due_order)
            for row in gone:
                self._delete(row)
            return gone

    def due(self, limit: int = 1000) -> list[DueRow]:
        """The rows due now (due_at on or before the store's clock), earliest first, then by id."""
        now = self._host.now()
        out: list[DueRow] = []
        with self._host._lock:
            heap, kept, seen = self._heap, [], set()
            while heap and len(out) < limit and heap[0][0] <= now:
                entry = heapq.heappop(heap)
                row = self._valid(entry)
                if row is None or row.id in seen:  # stale, or a second copy pushed by an undo
                    continue
                seen.add(row.id)
                kept.append(entry)
                out.append(row)
            for entry in kept:
                heapq.heappush(heap, entry)
        return out

    def next_due(self) -> float | None:
        """When the earliest row is due; None when no row is pending."""
        with self._host._lock:
            heap = self._heap
            while heap and self._valid(heap[0]) is None:
                heapq.heappop(heap)
            return heap[0][0] if heap else None

    def due_rows(self, task_id: str) -> list[DueRow]:
        with self._host._lock:
            return sorted((self._rows[i] for i in self._by_task.get(task_id, {})), key=_due_order)

    def advance_due(self, row_id: int, slot: int, next_slot: int, due_at: float) -> bool:
        """Compare-and-swap on the row's slot: move it on to `next_slot`, due at `due_at`."""
        with self._host._lock:
            row = self._rows.get(row_id)
            if row is None or row.slot != slot:
                return False
            self._set(replace(row, slot=int(next_slot), due_at=float(due_at)))
            return True

    def drop_due(self, row_id: int, slot: int) -> bool:
        """Compare-and-swap on the row's slot: delete it."""
        with self._host._lock:
            row = self._rows.get(row_id)
            if row is None or row.slot != slot:
                return False
            self._delete(row)
            return True

    # ---- incidents --------------------------------------------------------------------------------
    def open_incident(self, incident: Incident) -> Incident:
        """Open an incident, or update the one with its key (reopened, with a new `opened_at`, if resolved)."""
        incident = check_incident(incident)
        now = self._host.now()
        with self._host._lock:
            found = self._incident_keys.get(incident.key)
            if found is None:
                stored = replace(incident, id=next(self._incident_ids), state="open", opened_at=now,
                                 updated_at=now, owner_id=None, resolution=None, note=None)
                self._host._put(self._incident_keys, incident.key, stored.id)
            else:
                old = self._incidents[found]
                stored = replace(old, failures=incident.failures, error=incident.error,
                                 attempts=incident.attempts, updated_at=now)
                if old.state == "resolved":
                    stored = replace(stored, state="open", opened_at=now, owner_id=None, resolution=None,
                                     note=None)
            self._host._put(self._incidents, stored.id, stored)
            return stored

    def incident(self, incident_id: int) -> Incident | None:
        with self._host._lock:
            return self._incidents.get(incident_id)

    def incidents(self, task_id: str | None = None, *, state: IncidentState | None = "open",
                  limit: int = 1000) -> list[Incident]:
        """Incidents in that state (None: any), oldest (smallest id) first; of one task when given."""
        check_incident_state(state)
        with self._host._lock:
            found = [i for i in self._incidents.values()
                     if (state is None or i.state == state) and (task_id is None or i.task_id == task_id)]
        return sorted(found, key=_by_id)[:max(limit, 0)]

    def claim_incident(self, incident_id: int, owner_id: str) -> Incident | None:
        """Hand an open incident, or one whose redriver's owner is dead, to `owner_id` (state `redriving`)."""
        now = self._host.now()
        with self._host._lock:
            old = self._incidents.get(incident_id)
            if old is None or old.state == "resolved" or (
                    old.state == "redriving" and self._host._owner_alive(old.owner_id, now)):
                return None
            stored = replace(old, state="redriving", owner_id=owner_id, updated_at=now)
            self._host._put(self._incidents, incident_id, stored)
            return stored

    def settle_incident(self, incident_id: int, *, owner_id: str | None, state: IncidentState,
                        resolution: str | None = None, note: str | None = None, error: str | None = None,
                        attempts: int | None = None, failures: _Failures | None = None) -> bool:
        """Close an incident or give it back, only from the state the call names (see the protocol)."""
        target = check_settle(state, resolution)
        failures = None if failures is None else check_failures(failures)
        now = self._host.now()
        with self._host._lock:
            old = self._incidents.get(incident_id)
            if old is None or not (old.state == "open" if owner_id is None
                                   else old.state == "redriving" and old.owner_id == owner_id):
                return False
            stored = replace(old, state=target, updated_at=now,
                             owner_id=old.owner_id if target == "resolved" else None,
                             resolution=resolution if target == "resolved" else None,
                             note=note if note is not None else old.note,
                             error=error if error is not None else old.error,
                             attempts=attempts if attempts is not None else old.attempts,
                             failures=failures if failures is not None else old.failures)
            self._host._put(self._incidents, incident_id, stored)
            return True


def _due_order(row: DueRow) -> tuple[float, int]:
    return row.due_at, row.id


def _by_id(incident: Incident) -> int:
    return incident.id
