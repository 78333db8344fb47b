"""Runs, seats and decisions in process memory: the part of `MemoryStore` that queues runs, writes seats and
records, supersedes and clears decisions (`MemorySeats`).

`MemoryStore` (`stores/memory.py`) takes these methods in as a base class; they name the store through the
`MemoryHost` protocol (`stores/memory_host.py`) and write through its undo log.
"""

from __future__ import annotations

import heapq
from collections.abc import Iterator
from dataclasses import replace
from typing import TYPE_CHECKING

from interlock.runtime.store import Decision, LedgerRow, Participant, QueuedRun

from ._common import check_decider, check_seat_task, payload_text, payload_value, steps_tuple

if TYPE_CHECKING:
    from .memory_host import MemoryHost

__all__ = ["MemorySeats", "write_seat"]


def write_seat(store: MemoryHost, seat: Participant) -> None:
    """Write a seat and its place in the per-task index (the caller holds the lock)."""
    key = (seat.task_id, seat.step_id, seat.role, seat.agent)
    store._put(store._seats, key, seat)
    by_task = store._seats_by_task.get(seat.task_id)
    if by_task is None:
        by_task = {}
        store._put(store._seats_by_task, seat.task_id, by_task)
    store._put(by_task, key, seat)



def _by_id(row: LedgerRow | Participant | Decision) -> int:
    return int(row.id)


class MemorySeats:
    """Queued runs, seats and decisions of `MemoryStore` (see the module's docstring)."""

    __slots__ = ()

    def enqueue_run(self: MemoryHost, run: QueuedRun) -> bool:
        """Queue a run; False (and nothing written) if a run with this key exists."""
        stored = replace(run, payload=payload_value(payload_text(run.payload)))
        with self._lock:
            if run.key in self._runs:
                return False
            self._put(self._runs, run.key, stored)
            self._stamps["r", run.key] = (self.clock(), next(self._stamp_seq))
            self._append(self._runs_by_task, run.task_id, stored)
            return True

    def runs(self: MemoryHost, task_id: str | None = None) -> list[QueuedRun]:
        """Queued runs in the order they were queued (all tasks, or one)."""
        with self._lock:
            if task_id is None:
                return list(self._runs.values())
            return list(self._runs_by_task.get(task_id, ()))

    def add_participant(self: MemoryHost, participant: Participant) -> None:
        """Insert a seat, or update the one with the same (task, step, role, agent); the store assigns the id."""
        key = (participant.task_id, participant.step_id, participant.role, participant.agent)
        with self._lock:
            old = self._seats.get(key)
            seat_id = old.id if old is not None else next(self._seat_ids)
            write_seat(self, replace(participant, id=seat_id))

    def participants(self: MemoryHost, task_id: str, workflow_steps: Iterator[str] | tuple[str, ...]) -> list[Participant]:
        """Per-task seats at any of `workflow_steps` plus template rows of those steps, by id."""
        steps = set(steps_tuple(workflow_steps))
        with self._lock:
            rows = [p for p in self._seats_by_task.get(task_id, {}).values() if p.step_id in steps]
            if task_id != "":
                rows.extend(p for p in self._seats_by_task.get("", {}).values() if p.step_id in steps)
            return sorted(rows, key=_by_id)

    def ensure_seat(self: MemoryHost, task_id: str, step_id: str, role: str, agent: str,
                    workflow_steps: tuple[str, ...]) -> bool:
        """Write a per-task seat unless the task has a seat in `role` at any workflow step (or at `step_id`)."""
        check_seat_task(task_id)
        steps = {*steps_tuple(workflow_steps), step_id}
        with self._lock:
            for seat in self._seats_by_task.get(task_id, {}).values():
                if seat.role == role and seat.step_id in steps:
                    return False
            write_seat(self, Participant(task_id=task_id, step_id=step_id, role=role, agent=agent,
                                         decision_required=True, position=0, id=next(self._seat_ids)))
            return True

    def record_decision(self: MemoryHost, decision: Decision) -> Decision:
        """Store a decision, superseding the same decider's active one in that role; return it with its id."""
        check_decider(decision)
        key = (decision.task_id, decision.step_id, decision.decider_type, decision.decider_id, decision.role)
        with self._lock:
            stored = replace(decision, id=next(self._decision_ids))
            active = self._active_by_step.get((decision.task_id, decision.step_id))
            if active is None:
                active = {}
                self._put(self._active_by_step, (decision.task_id, decision.step_id), active)
            old = self._active.get(key)
            if old is not None:
                self._pop(active, old.id)
                self._stamps["s", old.id] = (self.clock(), next(self._stamp_seq))
            self._put(self._active, key, stored)
            self._put(self._decision_log, stored.id, stored)
            self._stamps["d", stored.id] = (self.clock(), next(self._stamp_seq))
            self._put(active, stored.id, stored)
            self._put(self._evaluated, stored.id, False)
            return stored

    def decisions(self: MemoryHost, task_id: str, step_id: str) -> list[Decision]:
        """Active decisions for a task at a step, oldest first."""
        with self._lock:
            return sorted(self._active_by_step.get((task_id, step_id), {}).values(), key=_by_id)

    def unevaluated_decisions(self: MemoryHost, limit: int = 1000) -> list[Decision]:
        """Active decisions whose re-evaluation is not marked applied, oldest first."""
        with self._lock:
            pending = (d for d in self._active.values() if not self._evaluated.get(d.id, False))
            return heapq.nsmallest(max(limit, 0), pending, key=_by_id)

    def clear_decisions(self: MemoryHost, task_id: str, step_id: str) -> int:
        """Supersede every active decision of the task at the step; return how many there were."""
        with self._lock:
            active = self._active_by_step.get((task_id, step_id))
            if not active:
                return 0
            cleared = list(active.values())
            for d in cleared:
                self._pop(active, d.id)
                self._pop(self._active, (d.task_id, d.step_id, d.decider_type, d.decider_id, d.role))
                self._stamps["s", d.id] = (self.clock(), next(self._stamp_seq))
            return len(cleared)

