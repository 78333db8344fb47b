"""What the runtime's calls return: small frozen result records (no behaviour)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal

from .frozen import fast_init

__all__ = ["EntryResult", "ArrivalResult", "FireResult", "DispatchResult", "DecisionResult", "RecoverResult"]


@fast_init
@dataclass(frozen=True)
class EntryResult:
    """`dispatched`, `redelivery` (discarded: the entry has its record), `in_progress` (discarded: a live runtime is
    dispatching it), `detach` (no destination), `incomplete` (the store failed mid-dispatch; `recover` finishes
    it)."""

    entry_id: int
    status: Literal["dispatched", "redelivery", "in_progress", "detach", "incomplete"]
    attempted: tuple[str, ...] = ()
    failed: tuple[tuple[str, str], ...] = ()


@fast_init
@dataclass(frozen=True)
class ArrivalResult:
    """`moved` (a ledger row was written), `same_step` (not an arrival), `refused`, `cas_lost`."""

    status: Literal["moved", "same_step", "refused", "cas_lost"]
    task_id: str
    from_step: str | None = None
    to_step: str | None = None
    ledger_id: int | None = None
    entry: EntryResult | None = None
    reason: str | None = None


@fast_init
@dataclass(frozen=True)
class FireResult:
    """`dispatched`; `idempotent` (the operation took effect before: nothing ran); `in_progress` (a live runtime's
    delivery of the operation is running it: nothing ran here, deliver it again later if it matters);
    `superseded` (the delivery belongs to an activation the task has left: nothing ran); `stranded` (the task stands
    on a step the plan does not have: nothing ran); `pruned` (the operation took effect, and `interlock db prune`
    deleted its marker since, keeping its fingerprint: refused, nothing ran, a `redelivery_refused` warning says so);
    `error` (an action failed: the rest did not run, a redelivery runs the whole list)."""

    result: Literal["dispatched", "idempotent", "in_progress", "superseded", "stranded", "pruned", "error"]
    trigger: str
    task_id: str
    step_id: str | None = None
    operation_id: str | None = None
    actions: tuple[str, ...] = ()
    arrival: ArrivalResult | None = None
    error: str | None = None
    failed: tuple[tuple[str, str], ...] = ()  # (kind, reason) of each failure continued from (ADR 0042)
    failed_kind: str | None = None  # `error`: the kind whose failure aborted the handler


@fast_init
@dataclass(frozen=True)
class DispatchResult:
    """A dispatch sequence's outcome: `skipped` by a guard, or the fired trigger's result (see `FireResult`)."""

    result: Literal["dispatched", "skipped", "idempotent", "in_progress", "superseded", "stranded", "pruned",
                    "error"]
    sequence: str
    guard: str | None = None
    operation_id: str | None = None
    payload: dict[str, Any] = field(default_factory=dict)
    fire: FireResult | None = None
    error: str | None = None


@fast_init
@dataclass(frozen=True)
class DecisionResult:
    decision_id: int
    task_id: str
    step_id: str
    transitioned: bool = False
    abandoned: bool = False
    idempotent: bool = False
    arrival: ArrivalResult | None = None
    superseded: bool = False  # the decision belongs to a round (activation) the task has left: not stored
    stranded: bool = False  # the task stands on a step the plan does not have: not stored


@fast_init
@dataclass(frozen=True)
class RecoverResult:
    """`dispatched`: entries dispatched; `entries`: every entry the sweep took up; `decisions`: the re-evaluations
    of stored decisions whose re-evaluation a crash cut short (`transitioned` ones moved their task)."""

    dispatched: int
    entries: tuple[EntryResult, ...] = ()
    decisions: tuple[DecisionResult, ...] = ()
    operations_released: tuple[str, ...] = ()  # claims of dead owners released: a redelivery runs them
