"""Two plans in, the typed list of what changed between them out: `interlock diff`'s comparison (docs/diff.md).

Everything is compared by id, never by list position: workflows and steps by id, triggers,
kinds, records, roles and dispatch sequences by name, a trigger's or kind's parameters by
name.  A handler's actions have no id, so they are aligned as an ordered list: difflib's
`SequenceMatcher` over each action's canonical form (kind, arguments, guard, approval,
target), then, inside each replaced run, over kinds alone, so an action whose arguments
changed is reported as changed rather than as removed and added; an action that only
moved within its handler is reported as moved.

Each `Change` says whether it is *breaking*: whether tasks, entries, seats or host calls
that were valid under the old plan may be stranded or refused under the new one (the list
and the reasons are in docs/diff.md).  The module is pure: no I/O, deterministic output.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from difflib import SequenceMatcher
from typing import Any

from interlock.runtime.plan import (
    Plan,
    PlanAction,
    PlanGuard,
    PlanKind,
    PlanParam,
    PlanRecord,
    PlanSequence,
    PlanStep,
    PlanTrigger,
    PlanWorkflow,
    SourceRef,
)

__all__ = ["Change", "diff_plans", "has_way_out", "guard_strictness", "STEP_ATTRIBUTES", "MOVES_TASK"]

STEP_ATTRIBUTES = ("start", "manual_move", "terminal", "stage", "prompt", "wip_limit", "pull_from")
"""The step attributes compared one by one (title and position have changes of their own)."""

MOVES_TASK = frozenset({"switch_workflow"})
"""Non-transition kinds that take a task out of its step (the prelude's `switch_workflow`)."""


@dataclass(frozen=True)
class Change:
    """One difference between two plans.

    `code` names what changed (`step.removed`, `guard.tightened`, … — the list is in
    docs/diff.md); `workflow`, `step` and `trigger` locate it; `subject` is the id of the
    thing itself (a role, a parameter, an attribute, a kind); `old` and `new` are JSON
    values (None for an absent side); `source` is `file:line:col` in the new plan (the old
    one for a removal)."""

    code: str
    breaking: bool
    message: str
    workflow: str | None = None
    step: str | None = None
    trigger: str | None = None
    subject: str | None = None
    old: Any = None
    new: Any = None
    source: str | None = None

    def to_json(self) -> dict[str, Any]:
        return {"code": self.code, "breaking": self.breaking, "workflow": self.workflow, "step": self.step,
                "trigger": self.trigger, "subject": self.subject, "message": self.message, "old": self.old,
                "new": self.new, "source": self.source}


def _src(ref: SourceRef | None) -> str | None:
    return None if ref is None else f"{ref.file}:{ref.line}:{ref.col}"


def _canon(value: Any) -> str:
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def _json(model: Any) -> Any:
    """A model (or tuple of models) as JSON data without source positions."""
    if isinstance(model, tuple):
        return [_json(m) for m in model]
    if hasattr(model, "model_dump"):
        return _strip(model.model_dump(mode="json"))
    return model


def _strip(data: Any) -> Any:
    if isinstance(data, dict):
        return {k: _strip(v) for k, v in data.items() if k != "source"}
    if isinstance(data, list):
        return [_strip(v) for v in data]
    return data


def _union(old: Iterable[str], new: Iterable[str]) -> list[str]:
    """Ids of both sides: the old order, then the ids only the new side has, in its order."""
    out = list(dict.fromkeys(old))
    seen = set(out)
    out.extend(i for i in dict.fromkeys(new) if i not in seen)
    return out


# ---- guards ---------------------------------------------------------------------------------------------


def _required(guard: PlanGuard, seats: int) -> int:
    if guard.threshold == "n_approve":
        return guard.count or 0
    if guard.threshold == "majority_approve":
        return seats // 2 + 1
    return seats  # all_approve


_FAMILY = {"all_approve": "approvals", "majority_approve": "approvals", "n_approve": "approvals",
           "all_decide": "all_decide", "any_reject": "any_reject"}


def guard_strictness(old: PlanGuard, new: PlanGuard) -> str:
    """`same`, `tightened`, `loosened` or `changed` (incomparable) for one transition's guard.

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


def _guard_text(guard: PlanGuard | None) -> str:
    if guard is None:
        return "no guard"
    threshold = f"n_approve({guard.count})" if guard.threshold == "n_approve" else guard.threshold
    return f"quorum({guard.role}, {threshold})"


# ---- ways out ---------------------------------------------------------------------------------------------


def has_way_out(workflow: PlanWorkflow, step: PlanStep) -> bool:
    """Whether a task on `step` can leave it: the step is terminal (it needs none), or one of its handlers has a
    transition to another step or a `switch_workflow`, or another step of the workflow allows `manual_move` (a
    person can move the task there).  Guards are not weighed: a guarded transition is a way out."""
    if step.terminal:
        return True
    for actions in step.handlers.values():
        for action in actions:
            if action.action_class == "transition" and action.target_step not in (None, step.id):
                return True
            if action.kind in MOVES_TASK:
                return True
    return any(other.manual_move for other in workflow.steps if other.id != step.id)


# ---- the comparison ---------------------------------------------------------------------------------------


class _Differ:
    def __init__(self, old: Plan, new: Plan) -> None:
        self.old = old
        self.new = new
        self.out: list[Change] = []

    def add(self, code: str, breaking: bool, message: str, **fields: Any) -> None:
        self.out.append(Change(code, breaking, message, **fields))

    # -- vocabulary
    def roles(self) -> None:
        old, new = set(self.old.roles), set(self.new.roles)
        for role in _union(self.old.roles, self.new.roles):
            if role not in new:
                self.add("role.removed", True, f"role `{role}` removed: its seats and decisions no longer count",
                         subject=role, old=role)
            elif role not in old:
                self.add("role.added", False, f"role `{role}` added", subject=role, new=role)

    def params(self, prefix: str, owner: str, label: str, old: Sequence[PlanParam], new: Sequence[PlanParam],
               *, host_facing: bool, source: str | None) -> None:
        """Parameters by name.  For a trigger (`host_facing`) a removed parameter, a changed type, a new required
        parameter or one that became required refuses payloads a host sends today: breaking."""
        o = {p.name: p for p in old}
        n = {p.name: p for p in new}
        where = {"subject": owner, "source": source}
        for name in _union(o, n):
            po, pn = o.get(name), n.get(name)
            if pn is None:
                assert po is not None
                self.add(f"{prefix}.param_removed", host_facing, f"{label} `{owner}`: parameter `{name}` removed",
                         old=_json(po), **where)
            elif po is None:
                breaking = host_facing and pn.required
                what = "required" if pn.required else "optional"
                self.add(f"{prefix}.param_added", breaking,
                         f"{label} `{owner}`: {what} parameter `{name}: {pn.type}` added", new=_json(pn), **where)
            elif po != pn:
                if po.type != pn.type:
                    detail = f"type `{po.type}` -> `{pn.type}`"
                    breaking = host_facing
                elif po.required != pn.required:
                    detail = "now required" if pn.required else "now optional"
                    breaking = host_facing and pn.required
                else:
                    detail = f"default {_canon(po.default)} -> {_canon(pn.default)}"
                    breaking = False
                self.add(f"{prefix}.param_changed", breaking, f"{label} `{owner}`: parameter `{name}` {detail}",
                         old=_json(po), new=_json(pn), **where)

    def triggers(self) -> None:
        o: dict[str, PlanTrigger] = {t.name: t for t in self.old.triggers}
        n: dict[str, PlanTrigger] = {t.name: t for t in self.new.triggers}
        for name in _union(o, n):
            to, tn = o.get(name), n.get(name)
            if tn is None:
                self.add("trigger.removed", True, f"trigger `{name}` removed: a host that fires it is refused",
                         subject=name, old=_json(to))
            elif to is None:
                self.add("trigger.added", False, f"trigger `{name}` added", subject=name, new=_json(tn))
            else:
                self.params("trigger", name, "trigger", to.params, tn.params, host_facing=True, source=None)
                if to.entry != tn.entry:
                    self.add("trigger.entry", False, f"trigger `{name}` is {'now' if tn.entry else 'no longer'} "
                             "the entry trigger", subject=name, old=to.entry, new=tn.entry)

    def kinds(self) -> None:
        o: dict[str, PlanKind] = {k.name: k for k in self.old.kinds}
        n: dict[str, PlanKind] = {k.name: k for k in self.new.kinds}
        for name in _union(o, n):
            ko, kn = o.get(name), n.get(name)
            if kn is None:
                assert ko is not None
                self.add("kind.removed", False, f"action kind `{name}` removed", subject=name, old=_json(ko),
                         source=_src(ko.source))
                continue
            if ko is None:
                self.add("kind.added", False, f"action kind `{name}` added", subject=name, new=_json(kn),
                         source=_src(kn.source))
                continue
            src = _src(kn.source)
            if ko.action_class != kn.action_class:
                self.add("kind.class_changed", False,
                         f"action kind `{name}`: {ko.action_class} kind -> {kn.action_class} kind", subject=name,
                         old=ko.action_class, new=kn.action_class, source=src)
            if set(ko.triggers) != set(kn.triggers):
                self.add("kind.triggers_changed", False, f"action kind `{name}`: allowed triggers changed",
                         subject=name, old=sorted(ko.triggers), new=sorted(kn.triggers), source=src)
            self.params("kind", name, "action kind", ko.params, kn.params, host_facing=False, source=src)

    def records(self) -> None:
        o: dict[str, PlanRecord] = {r.name: r for r in self.old.records}
        n: dict[str, PlanRecord] = {r.name: r for r in self.new.records}
        for name in _union(o, n):
            ro, rn = o.get(name), n.get(name)
            if rn is None:
                self.add("record.removed", False, f"record `{name}` removed", subject=name, old=_json(ro))
            elif ro is None:
                self.add("record.added", False, f"record `{name}` added", subject=name, new=_json(rn))
            elif ro.fields != rn.fields:
                self.add("record.changed", False, f"record `{name}`: fields changed", subject=name,
                         old=dict(ro.fields), new=dict(rn.fields))

    def entry_policy(self) -> None:
        po, pn = self.old.entry_policy, self.new.entry_policy
        if po.trigger != pn.trigger:
            self.add("entry.trigger", True, f"entry trigger `{po.trigger}` -> `{pn.trigger}`",
                     subject="trigger", old=po.trigger, new=pn.trigger)

        def place(policy: Any, kind: str) -> str | None:
            return "dispatch" if kind in policy.dispatch else "exclude" if kind in policy.exclude else None

        for kind in _union((*po.dispatch, *po.exclude), (*pn.dispatch, *pn.exclude)):
            a, b = place(po, kind), place(pn, kind)
            if a == b:
                continue
            if a is None:
                self.add("entry.kind_placed", False, f"entry kind `{kind}` placed in `{b}`", subject=kind, new=b)
            elif b is None:
                self.add("entry.kind_unplaced", False, f"entry kind `{kind}` no longer in `{a}`", subject=kind, old=a)
            else:
                who = "the host's arriving session runs it inline" if b == "exclude" else "the runtime dispatches it"
                self.add("entry.kind_moved", True, f"entry kind `{kind}` moved from `{a}` to `{b}`: {who} now",
                         subject=kind, old=a, new=b)

    def sequences(self) -> None:
        o: dict[str, PlanSequence] = {s.name: s for s in self.old.sequences}
        n: dict[str, PlanSequence] = {s.name: s for s in self.new.sequences}
        for name in _union(o, n):
            so, sn = o.get(name), n.get(name)
            if sn is None:
                assert so is not None
                self.add("sequence.removed", True, f"dispatch sequence `{name}` removed: a host that dispatches "
                         "it is refused", subject=name, old=name, source=_src(so.source))
            elif so is None:
                self.add("sequence.added", False, f"dispatch sequence `{name}` added", subject=name, new=name,
                         source=_src(sn.source))
            else:
                self.sequence(name, so, sn)

    def sequence(self, name: str, so: PlanSequence, sn: PlanSequence) -> None:
        src = _src(sn.source)
        for attr in ("trigger", "event"):
            a, b = getattr(so, attr), getattr(sn, attr)
            if a != b:
                self.add(f"sequence.{attr}", False, f"dispatch sequence `{name}`: {attr} `{a}` -> `{b}`",
                         subject=name, old=a, new=b, source=src)

        def ident(step: Any) -> str:
            return f"skip {step.guard}" if step.step == "skip" else f"load {step.name}"

        old_ids = [ident(s) for s in so.steps]
        new_ids = [ident(s) for s in sn.steps]
        old_by = {ident(s): s for s in so.steps}
        new_by = {ident(s): s for s in sn.steps}
        for sid in _union(old_ids, new_ids):
            a, b = old_by.get(sid), new_by.get(sid)
            if b is None:
                self.add("sequence.guard_removed", False, f"dispatch sequence `{name}`: `{sid}` removed",
                         subject=name, old=_json(a), source=src)
            elif a is None:
                self.add("sequence.guard_added", False, f"dispatch sequence `{name}`: `{sid}` added",
                         subject=name, new=_json(b), source=_src(b.source))
            elif _canon(_json(a)) != _canon(_json(b)):
                self.add("sequence.guard_changed", False, f"dispatch sequence `{name}`: `{sid}` changed",
                         subject=name, old=_json(a), new=_json(b), source=_src(b.source))
        common_old = [i for i in old_ids if i in new_by]
        common_new = [i for i in new_ids if i in old_by]
        if common_old != common_new:
            self.add("sequence.guard_order", False, f"dispatch sequence `{name}`: guards reordered (first match "
                     "wins)", subject=name, old=common_old, new=common_new, source=src)
        if _canon(_json(so.operations)) != _canon(_json(sn.operations)):
            self.add("sequence.operations", False, f"dispatch sequence `{name}`: operation ids changed",
                     subject=name, old=[op.template for op in so.operations],
                     new=[op.template for op in sn.operations], source=src)
        for key in _union(so.payload, sn.payload):
            a_expr, b_expr = so.payload.get(key), sn.payload.get(key)
            if a_expr is None or b_expr is None or _canon(_json(a_expr)) != _canon(_json(b_expr)):
                what = "added" if a_expr is None else "removed" if b_expr is None else "changed"
                self.add("sequence.payload", False, f"dispatch sequence `{name}`: payload field `{key}` {what}",
                         subject=name, old=None if a_expr is None else _json(a_expr),
                         new=None if b_expr is None else _json(b_expr), source=src)

    # -- workflows
    def workflows(self) -> None:
        o = {w.id: w for w in self.old.workflows}
        n = {w.id: w for w in self.new.workflows}
        for wf_id in _union(o, n):
            wo, wn = o.get(wf_id), n.get(wf_id)
            if wn is None:
                assert wo is not None
                self.add("workflow.removed", True, f"workflow `{wf_id}` removed: tasks in it are stranded",
                         workflow=wf_id, old=[s.id for s in wo.steps], source=_src(wo.source))
            elif wo is None:
                self.add("workflow.added", False, f"workflow `{wf_id}` added", workflow=wf_id,
                         new=[s.id for s in wn.steps], source=_src(wn.source))
            else:
                self.workflow(wo, wn)

    def workflow(self, wo: PlanWorkflow, wn: PlanWorkflow) -> None:
        wf = wo.id
        src = _src(wn.source)
        if wo.title != wn.title:
            self.add("workflow.title", False, f"workflow `{wf}`: title {_canon(wo.title)} -> {_canon(wn.title)}",
                     workflow=wf, subject="title", old=wo.title, new=wn.title, source=src)
        if wo.hidden != wn.hidden:
            self.add("workflow.hidden", False, f"workflow `{wf}` is {'now' if wn.hidden else 'no longer'} hidden",
                     workflow=wf, subject="hidden", old=wo.hidden, new=wn.hidden, source=src)
        if wo.start_step != wn.start_step:
            self.add("workflow.start_step", False, f"workflow `{wf}`: new tasks start in `{wn.start_step}` "
                     f"instead of `{wo.start_step}`", workflow=wf, subject="start_step", old=wo.start_step,
                     new=wn.start_step, source=src)
        o = {s.id: s for s in wo.steps}
        n = {s.id: s for s in wn.steps}
        gone = [s for s in wo.steps if s.id not in n]
        fresh = [s for s in wn.steps if s.id not in o]
        renamed = _renames(gone, fresh)
        for step in gone:
            to = renamed.get(step.id)
            if to is not None:
                self.add("step.renamed", True, f"step `{step.id}` renamed to `{to}` (title {_canon(step.title)}): "
                         "tasks standing on the old id are stranded", workflow=wf, step=step.id, subject=step.id,
                         old=step.id, new=to, source=_src(n[to].source))
            else:
                self.add("step.removed", True, f"step `{step.id}` removed: tasks standing on it are stranded",
                         workflow=wf, step=step.id, subject=step.id, old=step.id, source=_src(step.source))
        for step in fresh:
            if step.id not in renamed.values():
                self.add("step.added", False, f"step `{step.id}` added", workflow=wf, step=step.id,
                         subject=step.id, new=step.id, source=_src(step.source))
        old_order = [s.id for s in wo.steps if s.id in n]
        new_order = [s.id for s in wn.steps if s.id in o]
        kept: set[str] = set()
        for block in SequenceMatcher(None, old_order, new_order, autojunk=False).get_matching_blocks():
            kept.update(old_order[block.a:block.a + block.size])
        for step in wn.steps:
            if step.id in o:
                self.step(wo, wn, o[step.id], step, moved=step.id not in kept)

    def step(self, wo: PlanWorkflow, wn: PlanWorkflow, so: PlanStep, sn: PlanStep, *, moved: bool) -> None:
        loc = {"workflow": wo.id, "step": so.id}
        src = _src(sn.source)
        label = f"step `{so.id}`"
        if so.title != sn.title:
            self.add("step.title", False, f"{label}: title {_canon(so.title)} -> {_canon(sn.title)}", subject="title",
                     old=so.title, new=sn.title, source=src, **loc)
        if moved:
            self.add("step.moved", False, f"{label} moved (position {so.position} -> {sn.position}): its order "
                     "among the other steps changed", subject="position", old=so.position, new=sn.position,
                     source=src, **loc)
        for attr in STEP_ATTRIBUTES:
            a, b = getattr(so, attr), getattr(sn, attr)
            if a != b:
                self.add("step.attribute", False, f"{label}: `{attr}` {_canon(a)} -> {_canon(b)}", subject=attr,
                         old=a, new=b, source=src, **loc)
        for trigger in _union(so.handlers, sn.handlers):
            ao, an = so.handlers.get(trigger), sn.handlers.get(trigger)
            if an is None:
                assert ao is not None
                self.add("handler.removed", False, f"{label}: handler `on {trigger}` removed", trigger=trigger,
                         subject=trigger, old=[_action_json(a) for a in ao], source=src, **loc)
            elif ao is None:
                self.add("handler.added", False, f"{label}: handler `on {trigger}` added", trigger=trigger,
                         subject=trigger, new=[_action_json(a) for a in an], source=src, **loc)
            else:
                self.actions(wo.id, so.id, trigger, ao, an)
        entry_old = ([a.kind for a in so.entry_dispatch], list(so.entry_inline))
        entry_new = ([a.kind for a in sn.entry_dispatch], list(sn.entry_inline))
        if entry_old != entry_new:
            self.add("step.entry", False, f"{label}: entry dispatch {entry_old[0]} inline {entry_old[1]} -> "
                     f"dispatch {entry_new[0]} inline {entry_new[1]}", subject="entry",
                     old={"dispatch": entry_old[0], "inline": entry_old[1]},
                     new={"dispatch": entry_new[0], "inline": entry_new[1]}, source=src, **loc)
        if has_way_out(wo, so) and not has_way_out(wn, sn):
            self.add("step.dead_end", True, f"{label} lost every way out: it is not terminal, no handler moves the "
                     "task on and no other step allows a manual move", subject="way_out", old=True, new=False,
                     source=src, **loc)

    def actions(self, wf: str, step: str, trigger: str, old: Sequence[PlanAction], new: Sequence[PlanAction]) -> None:
        loc = {"workflow": wf, "step": step, "trigger": trigger}
        label = f"step `{step}`, `on {trigger}`"
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
                     subject=old[i].kind, old=_action_json(old[i], i), source=_src(old[i].source), **loc)
        for j in added:
            self.add("action.added", False, f"{label}: action #{j + 1} `{_action_text(new[j])}` added",
                     subject=new[j].kind, new=_action_json(new[j], j), source=_src(new[j].source), **loc)
        for i, j in sorted(moved, key=lambda p: p[1]):
            self.add("action.moved", False, f"{label}: action `{_action_text(new[j])}` moved from #{i + 1} to "
                     f"#{j + 1}", subject=new[j].kind, old=_action_json(old[i], i), new=_action_json(new[j], j),
                     source=_src(new[j].source), **loc)

    def action_pair(self, label: str, loc: Mapping[str, Any], i: int, a: PlanAction, j: int, b: PlanAction) -> None:
        if _action_key(a) == _action_key(b):
            return
        here = f"{label}: action #{j + 1} `{b.kind}`"
        fields = {"subject": b.kind, "source": _src(b.source), **loc}
        if _strip_guard(a.guard) != _strip_guard(b.guard):
            old_g, new_g = _guard_json(a.guard), _guard_json(b.guard)
            if a.guard is None:
                self.add("guard.added", True, f"{here}: guard added ({_guard_text(b.guard)}): the transition "
                         "no longer fires unguarded", old=old_g, new=new_g, **fields)
            elif b.guard is None:
                self.add("guard.removed", False, f"{here}: guard removed (was {_guard_text(a.guard)})",
                         old=old_g, new=new_g, **fields)
            else:
                verdict = guard_strictness(a.guard, b.guard)
                if verdict != "same":
                    self.add(f"guard.{verdict}", verdict != "loosened",
                             f"{here}: guard {verdict} ({_guard_text(a.guard)} -> {_guard_text(b.guard)})",
                             old=old_g, new=new_g, **fields)
        if a.requires_approval != b.requires_approval:
            if b.requires_approval:
                self.add("guard.requires_approval", True, f"{here}: now `requires_approval`: a person must move "
                         "the task", old=False, new=True, **fields)
            else:
                self.add("guard.approval_dropped", False, f"{here}: no longer `requires_approval`", old=True,
                         new=False, **fields)
        if (_canon(a.args), a.target_step) != (_canon(b.args), b.target_step):
            self.add("action.changed", False, f"{here}: `{_action_text(a)}` -> `{_action_text(b)}`",
                     old=_action_json(a, i), new=_action_json(b, j), **fields)

    def run(self) -> list[Change]:
        self.roles()
        self.triggers()
        self.kinds()
        self.records()
        self.entry_policy()
        self.sequences()
        self.workflows()
        return self.out


def _renames(gone: Sequence[PlanStep], fresh: Sequence[PlanStep]) -> dict[str, str]:
    """Removed step id -> added step id, for titles that name exactly one removed and one added step."""
    def by_title(steps: Sequence[PlanStep]) -> dict[str, list[str]]:
        out: dict[str, list[str]] = {}
        for s in steps:
            out.setdefault(s.title, []).append(s.id)
        return out

    old_titles, new_titles = by_title(gone), by_title(fresh)
    return {ids[0]: new_titles[title][0] for title, ids in old_titles.items()
            if len(ids) == 1 and len(new_titles.get(title, ())) == 1}


def _strip_guard(guard: PlanGuard | None) -> tuple[str, str, int | None] | None:
    return None if guard is None else (guard.role, guard.threshold, guard.count)


def _guard_json(guard: PlanGuard | None) -> dict[str, Any] | None:
    return None if guard is None else {"role": guard.role, "threshold": guard.threshold, "count": guard.count}


def _action_key(action: PlanAction) -> str:
    """The canonical form actions are aligned on (no position, no source)."""
    return _canon([action.kind, action.args, _strip_guard(action.guard), action.requires_approval,
                   action.target_step])


def _action_json(action: PlanAction, index: int | None = None) -> dict[str, Any]:
    out: dict[str, Any] = {"kind": action.kind, "args": action.args, "guard": _guard_json(action.guard),
                           "requires_approval": action.requires_approval, "target_step": action.target_step}
    if index is not None:
        out = {"index": index, **out}
    return out


def _action_text(action: PlanAction) -> str:
    args = ", ".join(f"{k}: {_canon(v)}" for k, v in action.args.items() if v is not None)
    text = f"{action.kind}({args})" if args else action.kind
    if action.action_class == "transition" and action.target_step is not None and "step" not in action.args:
        text += f" -> {action.target_step}"
    if action.guard is not None:
        text += f" when {_guard_text(action.guard)}"
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


def diff_plans(old: Plan, new: Plan) -> list[Change]:
    """Every difference between `old` and `new`, in a fixed order: roles, triggers, kinds, records, the entry
    policy, dispatch sequences, then workflows (old order, added ones last) step by step.  Empty when the plans
    compile the same rules (sources, compiler version and digest are not compared)."""
    return _Differ(old, new).run()
