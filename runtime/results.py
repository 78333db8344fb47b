"""What the runtime's calls return: small frozen result records (no behaviour)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal

from .frozen import fast_init

__all__ = ["EntryResult", "ArrivalResult", "FireResult", "DispatchResult", "DecisionResult", "RecoverResult"]


@fast_init
@dataclass(frozen=True)
class EntryResult:
    """`dispatched`, `redelivery` (discarded: the entry has its record), `detach` (no destination),
    `incomplete` (the store failed mid-dispatch; `recover` finishes it)."""

    entry_id: int
    status: Literal["dispatched", "redelivery", "detach", "incomplete"]
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
    result: Literal["dispatched", "idempotent", "error"]
    trigger: str
    task_id: str
    step_id: str | None = None
    operation_id: str | None = None
    actions: tuple[str, ...] = ()
    arrival: ArrivalResult | None = None
    error: str | None = None


@fast_init
@dataclass(frozen=True)
class DispatchResult:
    result: Literal["dispatched", "skipped", "idempotent", "error"]
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


@fast_init
@dataclass(frozen=True)
class RecoverResult:
    """`dispatched`: entries dispatched; `entries`: every entry the sweep took up; `decisions`: the re-evaluations
    of stored decisions whose re-evaluation a crash cut short (`transitioned` ones moved their task)."""

    dispatched: int
    entries: tuple[EntryResult, ...] = ()
    decisions: tuple[DecisionResult, ...] = ()
