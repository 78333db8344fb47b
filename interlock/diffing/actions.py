"""The actions of one handler in two plans compared: aligned in order, each pair compared field by field.

A mixin of the plan comparison (`interlock/diffing/__init__.py`).  Actions have no id, so a handler's
actions are aligned as an ordered list: difflib's `SequenceMatcher` over each action's canonical
form (every field but its position and source), then, inside each replaced run, over kinds alone,
so an action whose arguments changed is "changed", not "removed + added"; an identical action found
elsewhere in the handler is "moved".
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from difflib import SequenceMatcher
from typing import Any

from interlock.runtime.guards import guard_of
from interlock.runtime.plan import PlanAction

from .change import DifferBase, _canon, _json, _src
from .guard_changes import guard_changes, guard_json, guard_words

__all__ = ["ActionDiffer", "action_json"]

_COMPARED = ("position", "kind", "args", "target_step", "guard", "when", "requires_approval", "continue_on_failure")
"""The action fields compared by name below; every other field is compared by `DifferBase.fields`."""


class ActionDiffer(DifferBase):
    """A handler's actions: added, removed, moved, and changed (arguments, guard, approval, any other field)."""

    def actions(self, wf: str, step: str, trigger: str, old: Sequence[PlanAction], new: Sequence[PlanAction], *,
                where: str | None = None) -> None:
        """The actions of the handler of `trigger` (or of the timer `where` names: `trigger` is its label)."""
        loc = {"workflow": wf, "step": step, "trigger": trigger}
        label = where or f"step `{step}`, `on {trigger}`"
        pairs, removed, added = _align(old, new)
        for i, j in pairs:
            self.action_pair(label, loc, i, old[i], j, new[j])
        moved: list[tuple[int, int]] = []
        for i in list(removed):
            key = _action_key(old[i])
            match = next((j for j in added if _action_key(new[j]) == key), None)
            if match is not None:
                moved.append((i, match))
                removed.remove(i)
                added.remove(match)
        for i in removed:
            self.add("action.removed", False, f"{label}: action #{i + 1} `{_action_text(old[i])}` removed",
                     subject=old[i].kind, old=action_json(old[i], i), source=_src(old[i].source), **loc)
        for j in added:
            self.add("action.added", False, f"{label}: action #{j + 1} `{_action_text(new[j])}` added",
                     subject=new[j].kind, new=action_json(new[j], j), source=_src(new[j].source), **loc)
        for i, j in sorted(moved, key=lambda p: p[1]):
            self.add("action.moved", False, f"{label}: action `{_action_text(new[j])}` moved from #{i + 1} to "
                     f"#{j + 1}", subject=new[j].kind, old=action_json(old[i], i), new=action_json(new[j], j),
                     source=_src(new[j].source), **loc)

    def action_pair(self, label: str, loc: Mapping[str, Any], i: int, a: PlanAction, j: int, b: PlanAction) -> None:
        # a compiled action's position is its index in the handler: only a position that is not is a change
        if _action_key(a) == _action_key(b) and a.position - i == b.position - j:
            return
        here = f"{label}: action #{j + 1} `{b.kind}`"
        where = {"source": _src(b.source), **loc}
        fields = {"subject": b.kind, **where}
        self.guard(here, a, b, fields)
        if a.requires_approval != b.requires_approval:
            if b.requires_approval:
                self.add("guard.requires_approval", True, f"{here}: now `requires_approval`: a person must move "
                         "the task", old=False, new=True, **fields)
            else:
                self.add("guard.approval_dropped", False, f"{here}: no longer `requires_approval`", old=True,
                         new=False, **fields)
        if a.continue_on_failure != b.continue_on_failure:
            what = ("now continues on failure: a failure is recorded and the rest of the handler runs"
                    if b.continue_on_failure else "no longer continues on failure: a failure stops the rest of the "
                    "handler (on entry it is recorded and the entry goes on, as before)")
            self.add("action.failure_policy", False, f"{here}: {what}", old=a.continue_on_failure,
                     new=b.continue_on_failure, **fields)
        if (_canon(a.args), a.target_step) != (_canon(b.args), b.target_step):
            self.add("action.changed", False, f"{here}: `{_action_text(a)}` -> `{_action_text(b)}`",
                     old=action_json(a, i), new=action_json(b, j), **fields)
        if a.position - i != b.position - j:
            self.add("action.attribute", False, f"{here}: `position` {a.position} -> {b.position} (at #{i + 1} "
                     f"and #{j + 1} of the handler)", subject="position", old=a.position, new=b.position, **where)
        self.fields("action.attribute", here, a, b, _COMPARED, **where)

    def guard(self, here: str, a: PlanAction, b: PlanAction, fields: dict[str, Any]) -> None:
        """A transition's guard (a quorum or any expression, ADR 0038): added, removed, tightened, loosened or
        changed."""
        for change in guard_changes(a, b):
            self.add(change.code, change.breaking, f"{here}: {change.message}", old=guard_json(a), new=guard_json(b),
                     **fields)


def _meaning(action: PlanAction) -> dict[str, Any]:
    """The action's JSON without source positions and without its position in the handler."""
    data: dict[str, Any] = _json(action)
    data.pop("position", None)
    return data


def _action_key(action: PlanAction) -> str:
    """The canonical form actions are aligned on: every field but the position and the source."""
    return _canon(_meaning(action))


def action_json(action: PlanAction, index: int | None = None) -> dict[str, Any]:
    """An action as a change's `old`/`new` value: `{index, kind, action_class, args, guard, requires_approval,
    target_step, …}` (every field of the action but its position and source)."""
    out = _meaning(action)
    return out if index is None else {"index": index, **out}


def _action_text(action: PlanAction) -> str:
    args = ", ".join(f"{k}: {_canon(v)}" for k, v in action.args.items() if v is not None)
    text = f"{action.kind}({args})" if args else action.kind
    if action.action_class == "transition" and action.target_step is not None and "step" not in action.args:
        text += f" -> {action.target_step}"
    guard = guard_of(action)
    if guard is not None:
        text += f" when {guard_words(guard)}"
    if action.requires_approval:
        text += " requires_approval"
    return text


def _align(old: Sequence[PlanAction], new: Sequence[PlanAction]) -> tuple[list[tuple[int, int]], list[int], list[int]]:
    """Pairs of (old index, new index) that are the same action (identical or changed in place), and the old and new
    indexes left over.  Identical runs come from the canonical forms; inside each replaced run, actions are paired by
    kind, in order."""
    ka = [_action_key(a) for a in old]
    kb = [_action_key(b) for b in new]
    pairs: list[tuple[int, int]] = []
    removed: list[int] = []
    added: list[int] = []
    for tag, i1, i2, j1, j2 in SequenceMatcher(None, ka, kb, autojunk=False).get_opcodes():
        if tag == "equal":
            pairs.extend(zip(range(i1, i2), range(j1, j2)))
            continue
        kinds_a = [old[i].kind for i in range(i1, i2)]
        kinds_b = [new[j].kind for j in range(j1, j2)]
        for t2, a1, a2, b1, b2 in SequenceMatcher(None, kinds_a, kinds_b, autojunk=False).get_opcodes():
            if t2 == "equal":
                pairs.extend(zip(range(i1 + a1, i1 + a2), range(j1 + b1, j1 + b2)))
            else:
                removed.extend(range(i1 + a1, i1 + a2))
                added.extend(range(j1 + b1, j1 + b2))
    return pairs, removed, added
