"""Store rows in, dispatch-sequence records out: ready-made loaders for the prelude's `task` record."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from .store import Store, TaskState

__all__ = ["task_record", "store_task_loader"]


def task_record(task: TaskState, other_working_session: str = "") -> dict[str, Any]:
    """The prelude's `task` record for a stored task."""
    return {"id": task.id, "workflow_id": task.workflow_id or "", "workflow_step_id": task.step_id or "",
            "description": task.description, "is_from_office": task.is_from_office,
            "is_ephemeral": task.is_ephemeral, "archived": task.archived,
            "other_working_session": other_working_session}


def store_task_loader(
    store: Store, working_sibling: Callable[[str, str], str] | None = None,
) -> Callable[[Any, Mapping[str, Any]], Mapping[str, Any] | None]:
    """A `task` loader reading the store; `working_sibling(task_id, event_session_id)` names
    another session of the task in a working state, or "" (the host knows its sessions)."""

    def load(task_id: Any, event: Mapping[str, Any]) -> Mapping[str, Any] | None:
        task = store.get_task(str(task_id))
        if task is None:
            return None
        sibling = working_sibling(task.id, str(event.get("session_id") or "")) if working_sibling else ""
        return task_record(task, sibling)

    return load
