"""The store protocol: what the runtime asks of durable state, and the plain rows it gets back.

The runtime never imports a database library.  `interlock.stores` implements this
protocol on SQLAlchemy (SQLite, PostgreSQL) and in memory.  Every method is one
atomic step unless it runs inside `unit()`, which groups calls into one transaction:
the runtime writes an effect and its durable marker in one unit, so a crash leaves
either both or neither.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping
from contextlib import AbstractContextManager
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol, runtime_checkable

from interlock.errors import InterlockError

from .frozen import fast_init
from .store_due import DueWork, IncidentStore

__all__ = [
    "TaskState", "LedgerRow", "MoveResult", "EntryRecord", "Marker", "QueuedRun", "Participant", "Decision",
    "Store", "StoreError", "MarkerState", "Route", "ROUTES", "Claim", "EntryClaim", "OwnerRow", "PendingRun",
    "DEFAULT_RUN_LEASE",
]

Route = Literal["creation", "manual_move", "engine_transition", "decision", "workflow_switch", "queue_promotion",
                "migration", "detach"]
ROUTES: tuple[str, ...] = ("creation", "manual_move", "engine_transition", "decision", "workflow_switch",
                           "queue_promotion", "migration", "detach")
MarkerState = Literal["in_progress", "done", "failed"]
Claim = Literal["claimed", "taken_over", "applied", "busy", "pruned"]
"""What `Store.claim_operation` found: `claimed` (this delivery may run it), `taken_over` (a claim whose owner is
dead — its heartbeat ran out on the store's clock, or it stopped —: now this one's), `applied` (it took effect
already), `busy` (a live owner's delivery holds the claim) or `pruned` (it took effect, and `interlock db prune`
deleted its marker since, keeping its fingerprint: refused, never run again)."""
DEFAULT_RUN_LEASE = 300.0
"""Seconds a claim of queued runs lasts unless the consumer says otherwise (`Store.claim_runs`)."""


class StoreError(InterlockError):
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
    entry_id: int | None = None  # the current activation: the ledger id of the arrival that put the task here


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
    plan: str | None = None  # the plan revision (digest) that decided the row; its entry runs under it
    arrival_options: str | None = None  # the arrival's entry options, canonical JSON text (ADR 0043); None: none


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
    attempt: int = 1  # the tries started (1-based)


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


@dataclass(frozen=True)
class PendingRun:
    """A queued run not acknowledged yet: its queue id (the consumers' cursor: ids only grow), the run, and its claim
    (`consumer` None: nobody holds it; a claim whose `lease_until` has passed on the store's clock is claimable
    again).  `claims` > 1: an earlier consumer held it and may have started it (`run.key` is the idempotency key)."""

    id: int
    run: QueuedRun
    consumer: str | None = None
    lease_until: float | None = None
    claims: int = 0


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
    entry_id: int | None = None  # the round: the task's activation when the decision was made


@fast_init
@dataclass(frozen=True)
class EntryClaim:
    """What `Store.claim_entry` found: `claimed` (the row's entry is this owner's to dispatch: nobody had it, or this
    owner had it already), `taken_over` (its owner is dead: now this one's), `recorded` (the entry has its record),
    `busy` (a live owner is dispatching it) or `missing` (no such row).  `row` is the ledger row with the revision
    its entry runs under (the claim sets it when the row had none)."""

    status: Literal["claimed", "taken_over", "recorded", "busy", "missing"]
    row: LedgerRow | None = None
    owner: str | None = None  # `busy`: the live owner


@fast_init
@dataclass(frozen=True)
class OwnerRow:
    """A runtime that has run on the store: live while `heartbeat_at + lease` has not passed on the store's clock and
    it has not stopped."""

    owner_id: str
    host: str
    pid: int
    plan: str | None
    started_at: float
    heartbeat_at: float
    lease: float
    stopped: bool = False
    alive: bool = False


@runtime_checkable
class Store(DueWork, IncidentStore, Protocol):
    """Durable state the runtime reads and writes.  Implementations must be safe for
    concurrent use from threads of one process (SQLite) or many processes (PostgreSQL)."""

    durable: bool

    def unit(self) -> AbstractContextManager[Store]:
        """A transaction: calls on the yielded store commit together or not at all."""
        ...

    def now(self) -> float:
        """The store's clock, epoch seconds: the one clock leases, due times and record times are judged by (the
        database's, never a host's)."""
        ...

    # ---- plan revisions and owners -------------------------------------------------------------
    def save_plan(self, digest: str, text: str) -> bool:
        """Keep a plan revision (its JSON) under its digest; False if it was kept already."""
        ...

    def plan_text(self, digest: str) -> str | None:
        """The JSON of a kept plan revision."""
        ...

    def register_owner(self, owner_id: str, *, host: str, pid: int, plan: str | None, lease: float) -> None:
        """A runtime starts: its owner row, heartbeat now."""
        ...

    def heartbeat(self, owner_id: str) -> bool:
        """The owner is live: its heartbeat is now.  False if it has no row or has stopped."""
        ...

    def stop_owner(self, owner_id: str) -> None:
        """The owner stops: whatever it still holds is taken up by others at once."""
        ...

    def owners(self) -> list[OwnerRow]:
        """Every owner row, with whether it is live on the store's clock."""
        ...

    # ---- tasks and the step-transition ledger ---------------------------------------------
    def get_task(self, task_id: str) -> TaskState | None: ...

    def put_task(self, task: TaskState) -> None:
        """Insert or replace a task as pre-existing state: no ledger row, no arrival."""
        ...

    def create_task(self, task: TaskState, *, actor_kind: str = "system", actor_id: str | None = None,
                    session_id: str | None = None, plan: str | None = None, entry_owner: str | None = None,
                    operation_id: str | None = None, arrival_options: str | None = None,
                    record_in_unit: bool = False) -> MoveResult:
        """Insert a new task into its step and write its genesis ledger row (route `creation`), with the arrival's
        entry options (`arrival_options`, canonical JSON text) in the row; the task's `entry_id` is that row's.  `plan`, `entry_owner`: the row's revision and the owner dispatching its entry.
        `operation_id`, if given, is marked applied in the same transaction.  `record_in_unit`: see `move_task`."""
        ...

    def move_task(self, task_id: str, to_workflow_id: str | None, to_step_id: str | None, *, route: str,
                  actor_kind: str = "system", actor_id: str | None = None, session_id: str | None = None,
                  expected_step_id: str | None = None, operation_id: str | None = None,
                  operation_trigger: str | None = None, decision_id: int | None = None,
                  expected_entry_id: int | None = None, plan: str | None = None,
                  entry_owner: str | None = None, arrival_options: str | None = None,
                  record_in_unit: bool = False) -> MoveResult:
        """Change a task's step and write the ledger row in one transaction; the task's `entry_id` becomes the
        row's id.

        No row when the step does not change.  `expected_step_id` makes it a compare-and-swap on the step,
        `expected_entry_id` on the activation (a task that left and came back is another activation).
        `operation_id`, if given, is marked applied in the same transaction (also when the step does not
        change), and so is decision `decision_id`'s re-evaluation (`mark_decision_evaluated`).  `plan`,
        `entry_owner`: the row's revision and the owner dispatching its entry; `arrival_options` (canonical JSON
        text) is kept in the row: its entry reads it (ADR 0043).

        `record_in_unit` is a hint, never a change of meaning: the caller, in an open unit, writes the row's entry
        record in that unit before it commits.  A store may then write the row ready for its record (ADR 0057: the
        SQL store skips the index of unrecorded rows); the row reads and commits without a record until the record is
        written, whether or not it comes."""
        ...

    def ledger_row(self, ledger_id: int) -> LedgerRow | None: ...

    def ledger(self, task_id: str | None = None) -> list[LedgerRow]: ...

    def unrecorded_arrivals(self, limit: int = 1000, *, after_id: int = 0,
                            owner_id: str | None = None) -> list[LedgerRow]:
        """Ledger rows after `after_id` that name a destination (workflow and step), have no entry record and that
        no live owner other than `owner_id` is dispatching, oldest first."""
        ...

    def claim_entry(self, entry_id: int, owner_id: str, plan: str | None) -> EntryClaim:
        """Claim the dispatch of ledger row `entry_id`'s entry for `owner_id` (see `EntryClaim`), in a transaction of
        its own (or the open unit); a row with no revision is given `plan`."""
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
        """Insert an `in_progress` marker (attempt 1); False if this position has a marker already."""
        ...

    def start_marker(self, entry_id: int, position: int, kind: str) -> Marker:
        """Start a try of a position, by the owner of its entry's claim: insert an `in_progress` marker (attempt 1),
        or — when one is in progress, left by an owner that died — count the next attempt.  A finished marker is
        returned as it is (nothing changes)."""
        ...

    def finish_marker(self, entry_id: int, position: int, state: MarkerState, error: str | None = None) -> None: ...

    def rerun_marker(self, entry_id: int, position: int, kind: str) -> Marker | None:
        """Start position `position` of a recorded entry again (a retry, a redrive: the caller holds the claim that
        makes it the only one): a `failed` or `in_progress` marker becomes `in_progress` with the next attempt; a
        position with no marker (a store-backed one that failed inside a one-transaction entry) gets one at attempt
        2.  None, with nothing changed, when the marker is `done`."""
        ...

    # ---- operations (other triggers) -----------------------------------------------------------
    # Operation ids are the host's: any text (no NUL, no lone surrogate), of any length; a store keys them on a
    # fixed-size digest (ADR 0020).  The runtime's own marks (decisions) live elsewhere, so no host id can equal one.
    def operation_applied(self, operation_id: str) -> bool:
        """Whether the operation took effect (a claim in progress is not applied)."""
        ...

    def claim_operation(self, operation_id: str, *, token: str, owner_id: str, task_id: str | None = None,
                        trigger: str | None = None) -> Claim:
        """Claim the operation for the delivery `token` of `owner_id`, in a transaction of its own, before any of its
        actions runs (see `Claim`).  Two deliveries that overlap get `claimed` once: the other gets `busy` (or
        `applied` once the first took effect); a claim whose owner is dead is taken over."""
        ...

    def release_operation(self, operation_id: str, token: str) -> bool:
        """Give up `token`'s claim (an aborted delivery: a later one runs the whole list again); False if
        `token` holds no claim of it (taken over, applied, or never claimed)."""
        ...

    def mark_operation(self, operation_id: str, *, task_id: str | None = None, trigger: str | None = None) -> bool:
        """Mark applied (whoever holds its claim); False if it already was."""
        ...

    def claimed_operations(self, limit: int = 1000) -> list[tuple[str, str]]:
        """Every operation claimed and not applied, as (operation id, claim token)."""
        ...

    def abandoned_claims(self, limit: int = 1000, *, owner_id: str | None = None) -> list[tuple[str, str]]:
        """Operations claimed and not applied whose owner is dead (or is `owner_id`), as (operation id, claim
        token): what `recover` looks through for claims left by a crash."""
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

    def runs(self, task_id: str | None = None) -> list[QueuedRun]:
        """Every run queued and not pruned, acknowledged or not, in the order they were queued (all tasks, or one)."""
        ...

    # ---- the run queue's consumers (docs/runtime.md, "Consuming queued runs"; ADR 0047) -------------------------
    # A run is pending until a consumer claims it, claimed while the claim's lease runs on the store's clock, and
    # acknowledged once.  Of consumers claiming at once each run goes to one; a claim whose lease ran out (a dead or
    # slow consumer) is pending again.  Delivery to the agent is at least once: `QueuedRun.key` deduplicates.
    def claim_runs(self, consumer: str, *, limit: int = 100, lease: float = DEFAULT_RUN_LEASE,
                   after: int = 0) -> list[PendingRun]:
        """Claim up to `limit` pending runs with ids above `after`, oldest first, for `consumer` for `lease` seconds,
        in a transaction of its own."""
        ...

    def ack_runs(self, consumer: str, run_ids: Iterable[int]) -> list[int]:
        """Acknowledge the runs `consumer` holds among `run_ids` (a lease that ran out still counts while nobody
        claimed the run since); the ids acknowledged, each acknowledged once ever."""
        ...

    def release_runs(self, consumer: str, run_ids: Iterable[int]) -> list[int]:
        """Give back the runs `consumer` holds among `run_ids`: pending again at once; the ids released."""
        ...

    def queued_runs(self, *, after: int = 0, limit: int = 1000) -> list[PendingRun]:
        """The runs not acknowledged with ids above `after`, oldest first, claimed or not."""
        ...

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
