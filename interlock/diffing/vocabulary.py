"""The vocabulary of two plans compared: roles, triggers, kinds, records, the entry policy and dispatch sequences.

A mixin of the plan comparison (`interlock/diffing/__init__.py`): each method adds the `Change`s of one part.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from interlock.runtime.plan import PlanKind, PlanParam, PlanRecord, PlanSequence, PlanTrigger

from .change import DifferBase, _canon, _json, _src, _union, text_diff
from .timers import retry_change

__all__ = ["VocabularyDiffer"]


class VocabularyDiffer(DifferBase):
    """Roles, triggers, kinds, records, the entry policy and dispatch sequences, each by name."""

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
            elif _canon(_json(po)) != _canon(_json(pn)):
                breaking = host_facing and (po.type != pn.type or (pn.required and not po.required))
                self.add(f"{prefix}.param_changed", breaking,
                         f"{label} `{owner}`: parameter `{name}` {_param_detail(po, pn)}", old=_json(po),
                         new=_json(pn), **where)

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
                self.fields("trigger.attribute", f"trigger `{name}`", to, tn, ("name", "entry", "params"))

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
            changed = retry_change(ko, kn, src)
            if changed is not None:
                self.out.append(changed)
            self.fields("kind.attribute", f"action kind `{name}`", ko, kn,
                        ("name", "action_class", "triggers", "params", "retry"), source=src)

    def records(self) -> None:
        o: dict[str, PlanRecord] = {r.name: r for r in self.old.records}
        n: dict[str, PlanRecord] = {r.name: r for r in self.new.records}
        for name in _union(o, n):
            ro, rn = o.get(name), n.get(name)
            if rn is None:
                self.add("record.removed", False, f"record `{name}` removed", subject=name, old=_json(ro))
            elif ro is None:
                self.add("record.added", False, f"record `{name}` added", subject=name, new=_json(rn))
            elif _canon(_json(ro)) != _canon(_json(rn)):
                self.add("record.changed", False, f"record `{name}`: fields changed", subject=name,
                         old=_json(ro), new=_json(rn))

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
        self.fields("entry.attribute", "entry policy", po, pn, ("trigger", "dispatch", "exclude"))

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
                         subject=name, old=_json(a), new=_json(b), source=_src(b.source),
                         text_diff=text_diff(_json(a), _json(b)))
        common_old = [i for i in old_ids if i in new_by]
        common_new = [i for i in new_ids if i in old_by]
        if common_old != common_new:
            self.add("sequence.guard_order", False, f"dispatch sequence `{name}`: guards reordered (first match "
                     "wins)", subject=name, old=common_old, new=common_new, source=src)
        if _canon(_json(so.operations)) != _canon(_json(sn.operations)):
            self.add("sequence.operations", False, f"dispatch sequence `{name}`: operation ids changed",
                     subject=name, old=_json(so.operations), new=_json(sn.operations), source=src,
                     text_diff=text_diff(_json(so.operations), _json(sn.operations)))
        for key in _union(so.payload, sn.payload):
            a_expr, b_expr = so.payload.get(key), sn.payload.get(key)
            if a_expr is None or b_expr is None or _canon(_json(a_expr)) != _canon(_json(b_expr)):
                what = "added" if a_expr is None else "removed" if b_expr is None else "changed"
                self.add("sequence.payload", False, f"dispatch sequence `{name}`: payload field `{key}` {what}",
                         subject=name, old=None if a_expr is None else _json(a_expr),
                         new=None if b_expr is None else _json(b_expr), source=src)
        self.fields("sequence.attribute", f"dispatch sequence `{name}`", so, sn,
                    ("name", "trigger", "event", "steps", "operations", "payload"), source=src)


def _param_detail(po: PlanParam, pn: PlanParam) -> str:
    """What changed about a parameter, field by field: its type, whether it is required, its default, and any
    other field of the parameter model."""
    parts: list[str] = []
    for name in type(po).model_fields:
        a, b = getattr(po, name), getattr(pn, name)
        if _canon(a) == _canon(b):
            continue
        if name == "type":
            parts.append(f"type `{a}` -> `{b}`")
        elif name == "required":
            parts.append("now required" if b else "now optional")
        else:
            parts.append(f"{name} {_canon(a)} -> {_canon(b)}")
    return ", ".join(parts)
