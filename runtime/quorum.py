"""Quorum guards: seat rows, a task's decisions at a step and a guard's role and threshold in, a `QuorumResult` out.

Pure functions, no I/O: the caller reads the participant rows (`Store.participants`)
and the decisions of the task at the evaluating step (oldest first) and passes them in.

Thresholds (docs/runtime.md §2, the engine facts §3.2-3.4):

- approve-style — `all_approve`, `all_decide`, `majority_approve`, `n_approve` (with
  `count`) — count the **seats** of the guard's role (`seats`) and each seat's latest
  decision;
- `any_reject` is a veto by any latest rejection of an agent in the guard's role or of a
  user in any role; it never looks at seats.

`approved` is an approval; `rejected` and `changes_requested` are rejections; any other
verdict is stored by the host and counts only toward `all_decide`.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from .store import Decision, Participant
from .vocabulary import THRESHOLDS

__all__ = [
    "QuorumResult", "seats", "evaluate",
    "THRESHOLDS", "APPROVE_STYLE", "REASONS", "APPROVAL", "REJECTIONS",
]

APPROVE_STYLE: tuple[str, ...] = tuple(t for t in THRESHOLDS if t != "any_reject")
"""The thresholds that count approvals of seats (`any_reject` is a veto and never looks at seats)."""
REASONS: tuple[str, ...] = ("threshold_not_met", "slate_empty", "threshold_unrecognized", "threshold_unsatisfiable")
APPROVAL = "approved"
REJECTIONS: frozenset[str] = frozenset({"rejected", "changes_requested"})
_DECIDER_TYPES = frozenset({"agent", "user"})


@dataclass(frozen=True)
class QuorumResult:
    """The outcome of one quorum guard.

    `reason` is None exactly when `satisfied`; otherwise one of `REASONS`:
    `threshold_not_met` (more decisions may still satisfy it), `slate_empty` (no seat of
    the role: approve-style thresholds fail closed), `threshold_unrecognized` (unknown
    threshold name, or `n_approve` with a count missing or below 1) and
    `threshold_unsatisfiable` (`n_approve` asks for more approvals than there are seats —
    stuck, not waiting).

    `required` is the count `received` must reach: the seat count for `all_approve` and
    `all_decide`, a strict majority of the seats (`seats // 2 + 1`) for
    `majority_approve`, N for `n_approve`, 1 for `any_reject`; 0 with `slate_empty` and
    `threshold_unrecognized`.  `received` is the approvals (`all_approve`,
    `majority_approve`, `n_approve`), the decided seats (`all_decide`) or the vetoers
    (`any_reject`).
    """

    satisfied: bool
    reason: str | None
    required: int
    received: int
    role: str
    threshold: str

    def __post_init__(self) -> None:
        if self.satisfied != (self.reason is None):
            raise ValueError("QuorumResult: reason must be None exactly when satisfied")
        if self.reason is not None and self.reason not in REASONS:
            raise ValueError(f"QuorumResult: unknown reason {self.reason!r}")


def seats(participants: Iterable[Participant], *, task_id: str, step_id: str, role: str) -> list[Participant]:
    """The required slate of `role` for the task at the evaluating step `step_id`.

    1. Gather the task's per-task rows (`task_id == task_id`) at ANY step among those
       given (the caller passes the steps of the task's workflow) and the template rows
       (`task_id == ""`) of the evaluating step only; rows of other tasks and template
       rows of other steps are ignored.
    2. Keep rows of `role` with `decision_required`.
    3. One seat per agent: a per-task row beats a template row; among per-task rows the
       one at the evaluating step wins, then the lowest id (template rows: lowest id).
       A row with an empty agent names nobody and is a seat of its own (an exact
       duplicate of a row is dropped); no decision can fill it (see `evaluate`).

    Seats come back ordered by (position, agent, id).
    """
    by_agent: dict[str, Participant] = {}
    anonymous: list[Participant] = []
    for row in participants:
        if row.task_id == "":
            if row.step_id != step_id:
                continue
        elif row.task_id != task_id:
            continue
        if row.role != role or not row.decision_required:
            continue
        if row.agent == "":
            if row not in anonymous:
                anonymous.append(row)
            continue
        held = by_agent.get(row.agent)
        if held is None or _preference(row, step_id) < _preference(held, step_id):
            by_agent[row.agent] = row
    return sorted([*by_agent.values(), *anonymous], key=_seat_order)


def _preference(row: Participant, step_id: str) -> tuple[bool, bool, int, str, int, str]:
    """Sort key among rows of one agent: per-task first, then at the evaluating step, then lowest id.

    The trailing fields only make the choice total (independent of input order) when
    rows tie on all three."""
    return (row.task_id == "", row.step_id != step_id, row.id, row.step_id, row.position, row.workflow_id)


def _seat_order(row: Participant) -> tuple[int, str, int, str, str, str]:
    """Seats by (position, agent, id); the rest only makes the order total."""
    return (row.position, row.agent, row.id, row.task_id, row.step_id, row.workflow_id)


def evaluate(*, role: str, threshold: str, count: int | None, participants: Iterable[Participant],
             decisions: Sequence[Decision], task_id: str, step_id: str) -> QuorumResult:
    """Evaluate one `wait_for_quorum(role, threshold[, count])` guard for a task at `step_id`.

    `decisions` are the task's decisions at the step, oldest first (a decision of another
    task or step is ignored).  `count` is N for `n_approve` and ignored otherwise.

    `any_reject` (seats never consulted): keep agent decisions whose role is `role` and
    user decisions of any role; the latest per (decider_type, decider_id) is that
    decider's standing; satisfied when at least one standing is a rejection.  No
    decisions, or none rejecting, is `threshold_not_met`; a user's rejection vetoes even
    when the role has no seat at all.

    Approve-style, in this order (the facts' precedence): an empty slate is `slate_empty`
    (whatever the threshold — never satisfied, fails closed); an unknown threshold, or
    `n_approve` with `count` missing or below 1, is `threshold_unrecognized`; `n_approve`
    with N above the seat count is `threshold_unsatisfiable` (required N); otherwise
    satisfied or `threshold_not_met`:

    - a decision fills the seat of its role whose agent equals its decider id; the latest
      decision per seat wins; a decision from someone who holds no seat is ignored;
    - `all_approve`: approvals == seats; `all_decide`: decided seats == seats;
      `majority_approve`: approvals * 2 > seats; `n_approve`: approvals >= N.
    """
    mine = [d for d in decisions if d.task_id == task_id and d.step_id == step_id]
    if threshold == "any_reject":
        return _any_reject(role, mine)

    slate = seats(participants, task_id=task_id, step_id=step_id, role=role)

    def result(satisfied: bool, required: int, received: int, reason: str = "threshold_not_met") -> QuorumResult:
        return QuorumResult(satisfied, None if satisfied else reason, required, received, role, threshold)

    if not slate:
        return result(False, 0, 0, "slate_empty")
    if threshold not in APPROVE_STYLE:
        return result(False, 0, 0, "threshold_unrecognized")
    need = 0
    if threshold == "n_approve":
        if count is None or isinstance(count, bool) or count < 1:
            return result(False, 0, 0, "threshold_unrecognized")
        need = count

    standing = _latest_per_seat(slate, role, mine)
    approvals = sum(1 for verdict in standing.values() if verdict == APPROVAL)
    total = len(slate)
    if threshold == "all_approve":
        return result(approvals == total, total, approvals)
    if threshold == "all_decide":
        return result(len(standing) == total, total, len(standing))
    if threshold == "majority_approve":
        return result(approvals * 2 > total, total // 2 + 1, approvals)
    if need > total:  # n_approve
        return result(False, need, approvals, "threshold_unsatisfiable")
    return result(approvals >= need, need, approvals)


def _latest_per_seat(slate: Sequence[Participant], role: str, decisions: Sequence[Decision]) -> dict[str, str]:
    """The latest verdict per seated agent (seats with no decision are absent).

    A decision maps to the seat whose agent equals its decider id, in its own role
    (every seat of the slate is in the guard's role).  An agent decider maps by its agent
    id.  A user decider maps only when a seat's agent equals the user id in that role —
    users are not normally seated, so a user's approval is ignored by approve-style
    thresholds unless the host seated that user id as a participant; the user's veto
    goes through `any_reject` instead.  Seats with an empty agent are never filled.
    """
    seated = {p.agent for p in slate if p.agent != ""}
    latest: dict[str, str] = {}
    for d in decisions:  # oldest first: a later decision overwrites an earlier one
        if d.decider_type in _DECIDER_TYPES and d.role == role and d.decider_id in seated:
            latest[d.decider_id] = d.verdict
    return latest


def _any_reject(role: str, decisions: Sequence[Decision]) -> QuorumResult:
    """The decider-identity veto (see `evaluate`); rows with no decider type or id are ignored."""
    standing: dict[tuple[str, str], str] = {}
    for d in decisions:  # oldest first
        if d.decider_type not in _DECIDER_TYPES or d.decider_id == "":
            continue
        if d.decider_type == "agent" and d.role != role:
            continue  # an agent vetoes only in the guard's role; a user in any role
        standing[(d.decider_type, d.decider_id)] = d.verdict
    vetoers = sum(1 for verdict in standing.values() if verdict in REJECTIONS)
    return QuorumResult(vetoers > 0, None if vetoers else "threshold_not_met", 1, vetoers, role, "any_reject")
