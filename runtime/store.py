"""The store protocol: what the runtime asks of durable state, and the plain rows it gets back.

The runtime never imports a database library.  `interlock.stores` implements this
protocol on SQLAlchemy (SQLite, PostgreSQL) and in memory.  Every method is one
atomic step unless it runs inside `unit()`, which groups calls into one transaction:
the runtime writes an effect and its durable marker in one unit, so a crash leaves
either both or neither.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from contextlib import AbstractContextManager
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol, runtime_checkable

from .frozen import fast_init

__all__ = [
    "TaskState", "LedgerRow", "MoveResult", "EntryRecord", "Marker", "QueuedRun", "Participant", "Decision",
    "Store", "StoreError", "MarkerState", "Route", "ROUTES", "Claim",
]

Route = Literal["creation", "manual_move", "engine_transition", "decision", "workflow_switch", "queue_promotion",
                "detach"]
ROUTES: tuple[str, ...] = ("creation", "manual_move", "engine_transition", "decision", "workflow_switch",
                           "queue_promotion", "detach")
MarkerState = Literal["in_progress", "done", "failed"]
Claim = Literal["claimed", "taken_over", "applied", "busy"]
"""What `Store.claim_operation` found: `claimed` (this delivery may run it), `taken_over` (a claim whose lease
ran out, i.e. left by a delivery that crashed or hung: now this one's), `applied` (it took effect already) or
`busy` (another delivery holds a live claim)."""


class StoreError(Exception):
    """The store could not do what was asked (connection lost, schema too old, …).

    `permanent`: the data itself was refused (a value the database cannot keep, a constraint it breaks), so the
    same write fails again however often it is tried; otherwise the failure may pass (a lock, a lost connection,
    a serialisation failure) and the write is worth retrying."""

    def __init__(self, message: str = "", *, permanent: bool = False) -> None:
        super().__init__(message)
        self.permanent = permanent


@fast_init
@dataclass(frozen=True)
class TaskState:
    id: str
    workflow_id: str | None
    step_id: str | None
    description: str = ""
    is_from_office: bool = False
    is_ephemeral: bool = False
    archived: bool = False


@fast_init
@dataclass(frozen=True)
class LedgerRow:
    """One committed change of a task's step.  `id` is the entry identity of the arrival."""

    id: int
    task_id: str
    from_workflow_id: str | None
    from_step_id: str | None
    to_workflow_id: str | None
    to_step_id: str | None
    route: str
    actor_kind: str = "system"
    actor_id: str | None = None
    session_id: str | None = None


@fast_init
@dataclass(frozen=True)
class MoveResult:
    """`moved` (ledger row written), `same_step` (no row: not an arrival), `cas_lost`, `unknown_task`."""

    status: Literal["moved", "same_step", "cas_lost", "unknown_task"]
    ledger: LedgerRow | None = None
    task: TaskState | None = None  # the task after the move (or as found)


@fast_init
@dataclass(frozen=True)
class EntryRecord:
    entry_id: int
    task_id: str
    workflow_id: str
    step_id: str
    attempted: tuple[str, ...]
    failed: tuple[tuple[str, str], ...] = ()  # (kind, error)


@fast_init
@dataclass(frozen=True)
class Marker:
    entry_id: int
    position: int
    kind: str
    state: MarkerState
    error: str | None = None


@fast_init
@dataclass(frozen=True)
class QueuedRun:
    key: str
    task_id: str
    step_id: str | None
    agent: str
    reason: str
    payload: Mapping[str, Any] = field(default_factory=dict)
    entry_id: int | None = None
    operation_id: str | None = None


@fast_init
@dataclass(frozen=True)
class Participant:
    """A seat row: `task_id == ""` is a template row of the step."""

    task_id: str
    step_id: str
    role: str
    agent: str
    decision_required: bool = True
    position: int = 0
    id: int = 0
    workflow_id: str = ""


@fast_init
@dataclass(frozen=True)
class Decision:
    task_id: str
    step_id: str
    decider_type: Literal["agent", "user"]
    decider_id: str
    role: str
    verdict: str
    id: int = 0
    session_id: str | None = None


@runtime_checkable
class Store(Protocol):
    """Durable state the runtime reads and writes.  Implementations must be safe for
    concurrent use from threads of one process (SQLite) or many processes (PostgreSQL)."""

    durable: bool

    def unit(self) -> AbstractContextManager[Store]:
        """A transaction: calls on the yielded store commit together or not at all."""
        ...

    # ---- tasks and the step-transition ledger ---------------------------------------------
    def get_task(self, task_id: str) -> TaskState | None: ...

    def put_task(self, task: TaskState) -> None:
        """Insert or replace a task as pre-existing state: no ledger row, no arrival."""
        ...

    def create_task(self, task: TaskState, *, actor_kind: str = "system", actor_id: str | None = None,
                    session_id: str | None = None) -> MoveResult:
        """Insert a new task into its step and write its genesis ledger row (route `creation`)."""
        ...

    def move_task(self, task_id: str, to_workflow_id: str | None, to_step_id: str | None, *, route: str,
                  actor_kind: str = "system", actor_id: str | None = None, session_id: str | None = None,
                  expected_step_id: str | None = None, operation_id: str | None = None,
                  operation_trigger: str | None = None, decision_id: int | None = None) -> MoveResult:
        """Change a task's step and write the ledger row in one transaction.

        No row when the step does not change.  `expected_step_id` makes it a
        compare-and-swap.  `operation_id`, if given, is marked applied in the same
        transaction (also when the step does not change), and so is decision
        `decision_id`'s re-evaluation (`mark_decision_evaluated`)."""
        ...

    def ledger_row(self, ledger_id: int) -> LedgerRow | None: ...

    def ledger(self, task_id: str | None = None) -> list[LedgerRow]: ...

    def unrecorded_arrivals(self, limit: int = 1000) -> list[LedgerRow]:
        """Ledger rows that name a destination (workflow and step) and have no entry record, oldest first."""
        ...

    # ---- step entry ------------------------------------------------------------------------
    def entry_record(self, entry_id: int) -> EntryRecord | None: ...

    def record_entry(self, record: EntryRecord) -> bool:
        """Record the entry of ledger row `record.entry_id`; False if it has one already (nothing changed).
        `StoreError` if there is no such row, if the row names no destination (workflow and step), or if the
        record names another task, workflow or step than the row's task and destination (an entry record belongs
        to its row)."""
        ...

    def markers(self, entry_id: int) -> dict[int, Marker]: ...

    def claim_marker(self, entry_id: int, position: int, kind: str) -> bool:
        """Insert an `in_progress` marker; False if this position has a marker already."""
        ...

    def finish_marker(self, entry_id: int, position: int, state: MarkerState, error: str | None = None) -> None: ...

    # ---- operations (other triggers) -----------------------------------------------------------
    # Operation ids are the host's: any text (no NUL, no lone surrogate), of any length; a store keys them on a
    # fixed-size digest (ADR 0020).  The runtime's own marks (decisions) live elsewhere, so no host id can equal one.
    def operation_applied(self, operation_id: str) -> bool:
        """Whether the operation took effect (a claim in progress is not applied)."""
        ...

    def claim_operation(self, operation_id: str, *, token: str, lease: float, task_id: str | None = None,
                        trigger: str | None = None) -> Claim:
        """Claim the operation for the delivery `token` for `lease` seconds, in a transaction of its own, before
        any of its actions runs (see `Claim`).  Two deliveries that overlap get `claimed` once: the other gets
        `busy` (or `applied` once the first took effect)."""
        ...

    def release_operation(self, operation_id: str, token: str) -> bool:
        """Give up `token`'s claim (an aborted delivery: a later one runs the whole list again); False if
        `token` holds no claim of it (taken over, applied, or never claimed)."""
        ...

    def mark_operation(self, operation_id: str, *, task_id: str | None = None, trigger: str | None = None) -> bool:
        """Mark applied (whoever holds its claim); False if it already was."""
        ...

    def claimed_operations(self, limit: int = 1000) -> list[tuple[str, str]]:
        """Operations claimed and not applied, as (operation id, claim token), oldest lease first: what `recover`
        looks through for claims left by a crashed process."""
        ...

    # ---- decisions' re-evaluation ---------------------------------------------------------------
    def decision_evaluated(self, decision_id: int) -> bool:
        """Whether decision `decision_id`'s re-evaluation is marked done (`recover` skips it)."""
        ...

    def mark_decision_evaluated(self, decision_id: int) -> bool:
        """Mark decision `decision_id`'s re-evaluation done; False if it was (or there is no such decision)."""
        ...

    # ---- effects the runtime owns -------------------------------------------------------------
    def enqueue_run(self, run: QueuedRun) -> bool:
        """Queue a run; False (and nothing written) if a run with this key exists."""
        ...

    def runs(self, task_id: str | None = None) -> list[QueuedRun]: ...

    def add_participant(self, participant: Participant) -> None: ...

    def participants(self, task_id: str, workflow_steps: Iterator[str] | tuple[str, ...]) -> list[Participant]:
        """Per-task seats at any of `workflow_steps` plus template rows of those steps."""
        ...

    def ensure_seat(self, task_id: str, step_id: str, role: str, agent: str,
                    workflow_steps: tuple[str, ...]) -> bool:
        """Write a per-task seat unless the task has a seat in `role` at any workflow step.

        True if a seat was written."""
        ...

    def record_decision(self, decision: Decision) -> Decision:
        """Store a decision (it supersedes the same decider's earlier one in that role) and return it with its id."""
        ...

    def decisions(self, task_id: str, step_id: str) -> list[Decision]:
        """Active decisions for a task at a step, oldest first."""
        ...

    def unevaluated_decisions(self, limit: int = 1000) -> list[Decision]:
        """Active decisions whose re-evaluation is not marked done (`mark_decision_evaluated`), oldest first: what
        `recover` re-evaluates."""
        ...

    def clear_decisions(self, task_id: str, step_id: str) -> int: ...
