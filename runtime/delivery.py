"""A trigger, a task and the delivery's identity in, one `Delivery` value out: built once per entry, fire, exit or
dispatch, carrying everything its actions' calls and claims need.

A delivery knows its revision (the plan it runs under), its owner (the runtime whose claim it runs
under), its fence (`entry_id`: the activation of the task it belongs to) and its key (`key`: the
prefix every idempotency key of its actions derives from — `entry:<ledger id>` for an entry,
`op:<escaped operation id>` for an operation, `exit:` before either for a step's exit; None for a
delivery with no identity, which is never deduplicated).  Components pass the value down instead
of threading a dozen positional parameters, and the executor boundary builds each action's
`ActionContext` from it.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import TYPE_CHECKING, Any

from .frozen import builder, fast_init
from .keys import action_key, operation_ident
from .store import TaskState

if TYPE_CHECKING:
    from .owner import Owner
    from .plan import PlanAction
    from .revision import Revision

__all__ = ["Delivery", "new_delivery", "entry_key", "operation_key", "EMPTY"]

EMPTY: Mapping[str, Any] = MappingProxyType({})


@fast_init
@dataclass(frozen=True)
class Delivery:
    """One delivery of a trigger to a task's step (see the module's docstring)."""

    trigger: str
    task: TaskState
    workflow_id: str
    step_id: str
    revision: Revision
    owner: Owner
    key: str | None
    session_id: str | None = None
    payload: Mapping[str, Any] = field(default_factory=dict)
    operation_id: str | None = None
    entry_id: int | None = None
    workflow_steps: tuple[str, ...] = ()
    options: Mapping[str, Any] = field(default_factory=lambda: EMPTY)  # an entry's arrival options, read-only (ADR 0043)
    attempt: int = 1  # the try of the delivery's actions this is (1-based): a retry's, a redrive's, a take-over's

    def action_key(self, action: PlanAction) -> str | None:
        """The idempotency key a host executor receives for `action` (None: the delivery has no identity)."""
        return None if self.key is None else action_key(self.key, action.position, action.kind)


new_delivery = builder(Delivery)
"""`Delivery(...)` for the hot paths (frozen.builder)."""


def entry_key(entry_id: int) -> str:
    """The key of an entry delivery."""
    return f"entry:{entry_id}"


def operation_key(operation_id: str | None, *, exit: bool = False) -> str | None:
    """The key of an operation's delivery (of its step's exit, with `exit`); None without an operation id."""
    if not operation_id:
        return None
    ident = operation_ident(operation_id)
    return f"exit:{ident}" if exit else ident
