"""A store and a task id in, the task's timeline out, built from the store alone (`interlock inspect`; ADR 0046).

    from interlock.runtime import inspect_task
    timeline = inspect_task(store, "T1")
    timeline.to_json()          # the `inspect_version` 1 document
    timeline.why("run_code_review")

No plan is needed: the revisions a task's ledger rows name are read from the store.  Nothing is
written: the read is `HistoryReader.task_history`, one read-only snapshot on a SQL store.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ..errors import RuntimeFault, UnknownTaskError
from ..history import HistoryReader, TaskHistory
from .events import build_events, where
from .plans import Revisions
from .state import current_step, incidents, quorums, seats, timers
from .why import answers

__all__ = ["Timeline", "inspect_task", "INSPECT_VERSION"]

INSPECT_VERSION = 1
"""The version of the timeline document's shape (`Timeline.to_json()`); a change of shape raises it."""


@dataclass(frozen=True)
class Timeline:
    """A task's timeline: `history` (the rows as read) and `document` (events, seats, quorum, timers, incidents;
    the `inspect_version` 1 shape).  `why()` answers from it."""

    history: TaskHistory
    document: dict[str, Any]

    def why(self, subject: str | None = None) -> list[dict[str, Any]]:
        """Why the task is on its step, and why each thing that did not run did not; `subject`: only the answers
        about it (a kind, a trigger, a decider `agent:ID`, a step)."""
        found = answers(self.document)
        return found if subject is None else [a for a in found if a["subject"] == subject]

    def to_json(self, *, why: bool = False) -> dict[str, Any]:
        """The document (with the answers under `why` when asked); JSON-ready."""
        return {**self.document, "why": self.why()} if why else dict(self.document)


def inspect_task(store: Any, task_id: str) -> Timeline:
    """The timeline of `task_id` from `store` (`UnknownTaskError` when the store knows no such task)."""
    if not isinstance(store, HistoryReader):
        raise RuntimeFault(f"{type(store).__name__} cannot read a task's history (no `task_history`)")
    history = store.task_history(task_id)
    if history is None:
        raise UnknownTaskError(f"no task `{task_id}` in the store (no task row, no ledger row)")
    revisions = Revisions(history.plans)
    step, digest = current_step(history, revisions)
    task = history.task
    current = task.entry_id if task is not None else (history.arrivals[-1].ledger.id if history.arrivals else None)
    last = history.arrivals[-1].ledger if history.arrivals else None
    wf = task.workflow_id if task is not None else (last.to_workflow_id if last else None)
    step_id = task.step_id if task is not None else (last.to_step_id if last else None)
    document = {
        "inspect_version": INSPECT_VERSION,
        "task": {"id": task_id, "workflow": wf, "step": where(wf, step_id), "entry_id": current,
                 "archived": task.archived if task is not None else None, "task_row": task is not None,
                 "plan": digest},
        "now": history.now,
        "events": build_events(history, revisions),
        "seats": seats(history),
        "quorum": quorums(history, step),
        "timers": timers(history, current),
        "incidents": incidents(history),
    }
    return Timeline(history, document)
