"""Two aligned transitions in, what changed about their guards out: the plan comparison's guard judgement
(docs/diff.md, "Tightened guards").

A guard is compared as one expression (`runtime.guards.guard_of`: a plan's quorum-only `guard` and its `when`
alike).  Two single quorums are weighed (`guard_strictness`); any other change of the expression is
`guard.changed`, breaking: a changed condition may hold for tasks it did not hold for, or no longer hold for
tasks waiting on it (ADR 0038).
"""

from __future__ import annotations

from typing import Any, NamedTuple

from interlock.compiler.guard_text import expr_text
from interlock.runtime.guards import guard_of
from interlock.runtime.plan import PlanAction, PlanExpr, QuorumX

__all__ = ["GuardChange", "guard_changes", "guard_strictness", "guard_key", "guard_json", "guard_words"]


class GuardChange(NamedTuple):
    """One guard difference: its code, whether it is breaking, and the message's tail after the action's name."""

    code: str
    breaking: bool
    message: str


def _required(guard: QuorumX, seats: int) -> int:
    if guard.threshold == "n_approve":
        return guard.count or 0
    if guard.threshold == "majority_approve":
        return seats // 2 + 1
    return seats  # all_approve


_FAMILY = {"all_approve": "approvals", "majority_approve": "approvals", "n_approve": "approvals",
           "all_decide": "all_decide", "any_reject": "any_reject"}


def guard_strictness(old: Any, new: Any) -> str:
    """`same`, `tightened`, `loosened` or `changed` (incomparable) for one transition's quorum (a `QuorumX` or a
    plan's `PlanGuard`: both have `role`, `threshold`, `count`).

    Approve-style thresholds are compared by the approvals they require for every seat count
    s >= 1 (n_approve(N): N; majority_approve: s // 2 + 1; all_approve: s): *tightened* when
    the new one requires more for some s, *loosened* when it never requires more.  Another
    role, or a switch between approvals, `all_decide` and `any_reject`, is *changed*."""
    if old.role != new.role or _FAMILY[old.threshold] != _FAMILY[new.threshold]:
        return "changed"
    if _FAMILY[old.threshold] != "approvals":
        return "same"
    top = 2 * max(old.count or 0, new.count or 0) + 4  # past it n_approve is constant and the others grow
    diffs = [_required(new, s) - _required(old, s) for s in range(1, top)]
    if any(d > 0 for d in diffs):
        return "tightened"
    if any(d < 0 for d in diffs):
        return "loosened"
    return "same"


def guard_words(expr: PlanExpr | None) -> str:
    """A guard as messages show it: its expression, or `no guard`."""
    return "no guard" if expr is None else expr_text(expr)


def guard_key(action: PlanAction) -> Any:
    """A guard's comparable form (no source position): None, or the expression's JSON."""
    expr = guard_of(action)
    return None if expr is None else expr.model_dump(mode="json")


def guard_json(action: PlanAction) -> dict[str, Any] | None:
    """A guard in `diff --format json`: a quorum as `{role, threshold, count}` (as before guards were
    expressions), any other guard as `{when: TEXT, expr: PLAN EXPRESSION}`."""
    expr = guard_of(action)
    if expr is None:
        return None
    if isinstance(expr, QuorumX):
        return {"role": expr.role, "threshold": expr.threshold, "count": expr.count}
    return {"when": expr_text(expr), "expr": expr.model_dump(mode="json")}


def guard_changes(a: PlanAction, b: PlanAction) -> list[GuardChange]:
    """What changed about the guard between an old transition `a` and its new self `b` (empty: nothing)."""
    if guard_key(a) == guard_key(b):
        return []
    old, new = guard_of(a), guard_of(b)
    if old is None:
        return [GuardChange("guard.added", True, f"guard added ({guard_words(new)}): the transition no longer "
                            "fires unguarded")]
    if new is None:
        return [GuardChange("guard.removed", False, f"guard removed (was {guard_words(old)})")]
    both_quorums = isinstance(old, QuorumX) and isinstance(new, QuorumX)
    verdict = guard_strictness(old, new) if both_quorums else "changed"
    if verdict == "same":  # the same by its quorum, yet another guard: a field the strictness rule does not weigh
        verdict = "changed"
    return [GuardChange(f"guard.{verdict}", verdict != "loosened",
                        f"guard {verdict} ({guard_words(old)} -> {guard_words(new)})")]
