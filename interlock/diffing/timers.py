"""The timers of one step in two plans compared, and the retry policies of two kinds: what changed, in words.

A mixin of the plan comparison (`interlock/diffing/__init__.py`).  Timers are named by their label (`after 48h`), as
plans, due rows and records name them, so they are paired by label; an old and a new timer of the same kind that
found no partner are paired in declaration order as one timer whose duration changed (`after 48h` -> `after 72h`).
A pair's actions are compared like a handler's; any other field that differs is a `timer.attribute`.

Why a changed duration is breaking: a task's timers are armed when it enters the step and fire under the ticking
plan, matched by step and label, so a task already waiting on the step loses the old timer (its row is cancelled at
the next tick) and is not armed with the new one until it enters the step again (docs/diff.md §3).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from interlock.runtime.durations import label_seconds, retry_clause
from interlock.runtime.plan import PlanKind, PlanRetry, PlanStep, PlanTimer

from .actions import ActionDiffer, action_json
from .change import Change, _src

__all__ = ["TimerDiffer", "retry_text", "retry_change"]

_COMPARED = ("label", "actions")
"""The timer fields compared by name; the others (its kind, its seconds) by `DifferBase.fields`."""


def retry_text(retry: PlanRetry | None) -> str:
    """`retry 3 backoff 30s..10m`, or `no retry`."""
    return "no retry" if retry is None else retry_clause(retry.attempts, retry.backoff, retry.max_backoff)


def _timer_json(timer: PlanTimer) -> dict[str, Any]:
    return {"kind": timer.kind, "label": timer.label, "seconds": timer.seconds,
            "actions": [action_json(a, i) for i, a in enumerate(timer.actions)]}


def _pairs(old: Sequence[PlanTimer], new: Sequence[PlanTimer]) -> tuple[list[tuple[PlanTimer, PlanTimer]],
                                                                       list[PlanTimer], list[PlanTimer]]:
    """Timers paired by label, then the rest by kind in declaration order; the old and new ones left over."""
    by_label = {t.label: t for t in new}
    pairs = [(t, by_label[t.label]) for t in old if t.label in by_label]
    paired_new = {id(n) for _, n in pairs}
    gone = [t for t in old if t.label not in by_label]
    fresh = [t for t in new if id(t) not in paired_new]
    for kind in ("after", "every"):
        o = [t for t in gone if t.kind == kind]
        n = [t for t in fresh if t.kind == kind]
        for a, b in zip(o, n):
            pairs.append((a, b))
            gone.remove(a)
            fresh.remove(b)
    return pairs, gone, fresh


class TimerDiffer(ActionDiffer):
    """A step's `after`/`every` timers."""

    def timers(self, wf: str, so: PlanStep, sn: PlanStep) -> None:
        label = f"step `{sn.id}`"
        loc = {"workflow": wf, "step": sn.id}
        pairs, gone, fresh = _pairs(so.timers, sn.timers)
        for timer in gone:
            self.add("timer.removed", False, f"{label}: timer `{timer.label}` removed: its pending rows are "
                     "cancelled at the next tick", trigger=timer.label, subject=timer.label, old=_timer_json(timer),
                     source=_src(timer.source), **loc)
        for timer in fresh:
            self.add("timer.added", False, f"{label}: timer `{timer.label}` added: armed for tasks that enter the "
                     "step from now on (tasks already on it are not armed)", trigger=timer.label,
                     subject=timer.label, new=_timer_json(timer), source=_src(timer.source), **loc)
        for a, b in pairs:
            src = _src(b.source)
            compared: tuple[str, ...] = _COMPARED
            if a.label != b.label:
                if all(label_seconds(t.kind, t.label) == t.seconds for t in (a, b)):
                    compared = (*_COMPARED, "seconds")  # the labels say it
                self.add("timer.duration", True, f"{label}: timer `{a.label}` -> `{b.label}`: tasks already on the "
                         "step lose the old timer and are armed with the new one only when they enter the step "
                         "again", trigger=b.label, subject=b.label, old=a.label, new=b.label, source=src, **loc)
            self.fields("timer.attribute", f"{label}, timer `{b.label}`", a, b, compared, trigger=b.label,
                        source=src, **loc)
            self.actions(wf, sn.id, b.label, a.actions, b.actions, where=f"{label}, `{b.label}`")


def retry_change(ko: PlanKind, kn: PlanKind, source: str | None) -> Change | None:
    """A kind's retry policy added, removed or changed (`kind.retry`, a behaviour change); None: the same."""
    if ko.retry == kn.retry:
        return None
    name = kn.name
    if ko.retry is None:
        what = f"now retried: `{retry_text(kn.retry)}`"
    elif kn.retry is None:
        what = f"no longer retried (was `{retry_text(ko.retry)}`): a failure becomes an incident at once"
    else:
        what = f"retry policy `{retry_text(ko.retry)}` -> `{retry_text(kn.retry)}`"
    old = None if ko.retry is None else ko.retry.model_dump()
    new = None if kn.retry is None else kn.retry.model_dump()
    return Change("kind.retry", False, f"action kind `{name}`: {what}", subject=name, old=old, new=new, source=source)
