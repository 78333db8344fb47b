"""The workflows of two plans compared: workflows and steps by id (renames by title), handlers by trigger.

A mixin of the plan comparison (`interlock/diffing/__init__.py`): each method adds the `Change`s of one part;
a handler's actions are compared by interlock/diffing/actions.py.  Every field of a workflow and of a step
that has no change of its own is compared by `DifferBase.fields` (`workflow.attribute`,
`step.attribute`), host metadata included, so none is ever left out.
"""

from __future__ import annotations

from collections.abc import Sequence
from difflib import SequenceMatcher
from typing import Any

from interlock.runtime.plan import PlanStep, PlanWorkflow

from .actions import action_json
from .change import _canon, _json, _src, _union, category_of
from .guards import has_way_out
from .timers import TimerDiffer

__all__ = ["WorkflowDiffer", "STEP_ATTRIBUTES"]

_STEP_COMPARED = ("id", "title", "position", "handlers", "timers", "entry_dispatch", "entry_inline")
"""The step fields with changes of their own; every other field is a `step.attribute`."""

STEP_ATTRIBUTES = tuple(f for f in PlanStep.model_fields if f not in (*_STEP_COMPARED, "source"))
"""The step attributes compared one by one (`step.attribute`): every field of `PlanStep` but its id, title,
position, handlers, timers, entry lists and source."""


class WorkflowDiffer(TimerDiffer):
    """Workflows and their steps, handlers, timers, actions and guards."""

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
        meta = "metadata"
        if wo.title != wn.title:
            self.add("workflow.title", False, f"workflow `{wf}`: title {_canon(wo.title)} -> {_canon(wn.title)}",
                     workflow=wf, subject="title", old=wo.title, new=wn.title, source=src,
                     category=category_of(PlanWorkflow, "title"))
        if wo.hidden != wn.hidden:
            self.add("workflow.hidden", False, f"workflow `{wf}` is {'now' if wn.hidden else 'no longer'} hidden",
                     workflow=wf, subject="hidden", old=wo.hidden, new=wn.hidden, source=src,
                     category=category_of(PlanWorkflow, "hidden"))
        if wo.start_step != wn.start_step:
            self.add("workflow.start_step", False, f"workflow `{wf}`: new tasks start in `{wn.start_step}` "
                     f"instead of `{wo.start_step}`", workflow=wf, subject="start_step", old=wo.start_step,
                     new=wn.start_step, source=src)
        self.fields("workflow.attribute", f"workflow `{wf}`", wo, wn, ("id", "title", "hidden", "start_step", "steps"),
                    workflow=wf, source=src)
        o = {s.id: s for s in wo.steps}
        n = {s.id: s for s in wn.steps}
        renamed = self.steps_gone_and_added(wo, wn)
        old_order = [s.id for s in wo.steps if s.id in n]
        new_order = [s.id for s in wn.steps if s.id in o]
        kept: set[str] = set()
        for block in SequenceMatcher(None, old_order, new_order, autojunk=False).get_matching_blocks():
            kept.update(old_order[block.a:block.a + block.size])
        pairs = [(o[s.id], s) for s in wn.steps if s.id in o]
        pairs += [(o[old], n[new]) for old, new in renamed.items()]
        for so, sn in pairs:
            self.step(wo, wn, so, sn, moved=so.id not in kept and so.id == sn.id)
        renumbered = [(so, sn) for so, sn in pairs if so.position != sn.position and (so.id in kept or so.id != sn.id)]
        if renumbered:
            old_pos = {sn.id: so.position for so, sn in renumbered}
            new_pos = {sn.id: sn.position for so, sn in renumbered}
            self.add("workflow.positions", False, f"workflow `{wf}`: positions renumbered, the order of the steps "
                     f"unchanged ({', '.join(f'`{k}` {old_pos[k]} -> {new_pos[k]}' for k in new_pos)})",
                     workflow=wf, subject="position", old=old_pos, new=new_pos, source=src, category=meta)

    def steps_gone_and_added(self, wo: PlanWorkflow, wn: PlanWorkflow) -> dict[str, str]:
        """Report the steps only one side has (a rename counts once); return the renames, old id -> new id."""
        wf = wo.id
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
        return renamed

    def step(self, wo: PlanWorkflow, wn: PlanWorkflow, so: PlanStep, sn: PlanStep, *, moved: bool) -> None:
        loc = {"workflow": wo.id, "step": sn.id}
        src = _src(sn.source)
        label = f"step `{sn.id}`"
        if so.title != sn.title:
            self.add("step.title", False, f"{label}: title {_canon(so.title)} -> {_canon(sn.title)}", subject="title",
                     old=so.title, new=sn.title, source=src, category=category_of(PlanStep, "title"), **loc)
        if moved:
            self.add("step.moved", False, f"{label} moved (position {so.position} -> {sn.position}): its order "
                     "among the other steps changed", subject="position", old=so.position, new=sn.position,
                     source=src, **loc)
        self.fields("step.attribute", label, so, sn, _STEP_COMPARED, source=src, **loc)
        for trigger in _union(so.handlers, sn.handlers):
            ao, an = so.handlers.get(trigger), sn.handlers.get(trigger)
            if an is None:
                assert ao is not None
                self.add("handler.removed", False, f"{label}: handler `on {trigger}` removed", trigger=trigger,
                         subject=trigger, old=[action_json(a, i) for i, a in enumerate(ao)], source=src, **loc)
            elif ao is None:
                self.add("handler.added", False, f"{label}: handler `on {trigger}` added", trigger=trigger,
                         subject=trigger, new=[action_json(a, i) for i, a in enumerate(an)], source=src, **loc)
            else:
                self.actions(wo.id, sn.id, trigger, ao, an)
        self.timers(wo.id, so, sn)
        self.entry(so, sn, label, src, loc)
        if has_way_out(wo, so) and not has_way_out(wn, sn):
            self.add("step.dead_end", True, f"{label} lost every way out: it is not terminal, no handler moves the "
                     "task on and no other step allows a manual move", subject="way_out", old=True, new=False,
                     source=src, **loc)

    def entry(self, so: PlanStep, sn: PlanStep, label: str, src: str | None, loc: dict[str, Any]) -> None:
        """A step's effective entry lists.  A change of the entry handler's actions is reported with the handler; the
        lists are compared whole only when that handler is the same on both sides (a hand-edited plan)."""
        entry_old = ([a.kind for a in so.entry_dispatch], list(so.entry_inline))
        entry_new = ([a.kind for a in sn.entry_dispatch], list(sn.entry_inline))
        if entry_old != entry_new:
            self.add("step.entry", False, f"{label}: entry dispatch {entry_old[0]} inline {entry_old[1]} -> "
                     f"dispatch {entry_new[0]} inline {entry_new[1]}", subject="entry",
                     old={"dispatch": entry_old[0], "inline": entry_old[1]},
                     new={"dispatch": entry_new[0], "inline": entry_new[1]}, source=src, **loc)
            return
        trigger = self.new.entry_policy.trigger
        same_handler = _canon(_json(so.handlers.get(trigger, ()))) == _canon(_json(sn.handlers.get(trigger, ())))
        old_actions, new_actions = _json(so.entry_dispatch), _json(sn.entry_dispatch)
        if same_handler and _canon(old_actions) != _canon(new_actions):
            self.value("step.entry", label, "entry_dispatch", old_actions, new_actions, source=src, **loc)


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
