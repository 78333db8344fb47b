"""Plans and the traces of the scenarios run on them in, what the scenarios exercised and what they never did out.

`interlock test --coverage` counts, per workflow: the steps entered (an `arrival` into them), the
transitions taken (an `engine_transition` arrival attributed to the handler of the `dispatch` before
it, a `decision` arrival to the step's quorum-guarded transitions), guard outcomes (each transition
guard seen true and false: from the `guards` lists of `dispatch` and `decision` records, `[{position,
to, result}]`, and a guarded transition taken counts as its guard seen true) and the entry kinds
dispatched (an `entry` record's `attempted` kinds); and per plan the dispatch-sequence guards matched
(`skip` records, and the `guard` of `outcome` records).  When no record carries `guards`, guard
outcomes are reported as not recorded and left out of the percentage, since half of them could never
be covered.  Scenarios whose workflows compile to the same plan (the same digest) are counted together.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from interlock.runtime.plan import Plan, PlanAction, PlanStep, PlanWorkflow

__all__ = ["CoverageMap", "PlanCoverage", "CATEGORIES"]

CATEGORIES = ("steps", "transitions", "guards", "entry_kinds")
"""The per-workflow categories, in report order (`sequences` is per plan)."""

Key = tuple[Any, ...]


def _transitions(step: PlanStep) -> Iterable[tuple[str, PlanAction]]:
    for trigger, actions in step.handlers.items():
        for action in actions:
            if action.action_class == "transition" and action.target_step is not None:
                yield trigger, action


@dataclass
class PlanCoverage:
    """What the scenarios run on one plan exercised (keys into the plan's units)."""

    label: str
    plan: Plan
    covered: set[Key] = field(default_factory=set)
    guards_recorded: bool = False
    scenarios: int = 0

    # ---- the units ------------------------------------------------------------------------------------------------
    def units(self, wf: PlanWorkflow) -> dict[str, list[tuple[Key, str]]]:
        """(key, label) of every unit of the workflow, by category."""
        out: dict[str, list[tuple[Key, str]]] = {c: [] for c in CATEGORIES}
        for step in wf.steps:
            out["steps"].append((("step", wf.id, step.id), step.id))
            for trigger, action in _transitions(step):
                where = f"{step.id} {trigger} #{action.position + 1} -> {action.target_step}"
                out["transitions"].append((("transition", wf.id, step.id, trigger, action.position), where))
                if action.guard is not None:
                    for result in (True, False):
                        out["guards"].append((("guard", wf.id, step.id, trigger, action.position, result),
                                              f"{where}: {'true' if result else 'false'}"))
            for kind in dict.fromkeys(a.kind for a in step.entry_dispatch):
                out["entry_kinds"].append((("entry", wf.id, step.id, kind), f"{step.id}: {kind}"))
        return out

    def sequence_units(self) -> list[tuple[Key, str]]:
        out: list[tuple[Key, str]] = []
        for seq in self.plan.sequences:
            names: list[str] = []
            for step in seq.steps:
                if step.step == "skip":
                    names.append(step.guard)
                else:
                    names += [case.guard for case in (step.on_missing, step.on_error) if case is not None]
            out += [(("sequence", seq.name, name), f"{seq.name}: {name}") for name in dict.fromkeys(names)]
        return out

    # ---- what a trace exercised -----------------------------------------------------------------------------------
    def add(self, tasks: Mapping[str, str], records: Sequence[Mapping[str, Any]]) -> None:
        """Count one scenario's trace; `tasks` maps the tasks set up before the first event to their workflows."""
        self.scenarios += 1
        task_wf = dict(tasks)
        for i, record in enumerate(records):
            kind = record.get("record")
            task = record.get("task")
            if kind == "arrival" and isinstance(task, str):
                task_wf[task] = record.get("workflow") or task_wf.get(task, "")
                self._arrival(task_wf[task], record, records[:i], records[i + 1:])
            elif kind == "entry":
                wf = record.get("workflow") or task_wf.get(str(task), "")
                for kind_name in record.get("attempted") or ():
                    self.covered.add(("entry", wf, record.get("step"), kind_name))
            elif kind in ("dispatch", "decision"):
                self._guards(task_wf.get(str(task), ""), record)
            elif kind in ("skip", "outcome") and record.get("sequence") and record.get("guard"):
                self.covered.add(("sequence", record["sequence"], record["guard"]))

    def _arrival(self, wf_id: str, record: Mapping[str, Any], before: Sequence[Mapping[str, Any]],
                 after: Sequence[Mapping[str, Any]]) -> None:
        to, origin = record.get("to"), record.get("from")
        if to:
            self.covered.add(("step", wf_id, to))
        wf = self.plan.workflow(wf_id)
        step = None if wf is None else next((s for s in wf.steps if s.id == origin), None)
        if step is None or record.get("route") not in ("engine_transition", "decision"):
            return
        same = [r for r in (*reversed(before), *after) if r.get("task") == record.get("task")
                and r.get("event") == record.get("event")]
        if record.get("route") == "engine_transition":
            cause = next((r for r in same if r.get("record") == "dispatch" and r.get("step") == origin), None)
            triggers = [cause["trigger"]] if cause is not None else list(step.handlers)
            guarded_only = False
        else:
            cause = next((r for r in same if r.get("record") == "decision" and r.get("step") == origin), None)
            triggers, guarded_only = list(step.handlers), True
        chosen = self._taken(step, triggers, to, guarded_only, cause)
        if chosen is not None:
            trigger, action = chosen
            self.covered.add(("transition", wf_id, step.id, trigger, action.position))
            if action.guard is not None:
                self.covered.add(("guard", wf_id, step.id, trigger, action.position, True))

    @staticmethod
    def _taken(step: PlanStep, triggers: Sequence[str], to: Any, guarded_only: bool,
               cause: Mapping[str, Any] | None) -> tuple[str, PlanAction] | None:
        """The transition that moved the task: the first true guard the cause recorded, else the first transition
        to `to` of the triggers' handlers (guarded ones only for a decision)."""
        candidates = [(t, a) for t, a in _transitions(step) if t in triggers and a.target_step == to
                      and (a.guard is not None or not guarded_only)]
        recorded = [g for g in (cause or {}).get("guards") or () if isinstance(g, Mapping) and g.get("result")]
        for guard in recorded:
            for trigger, action in candidates:
                if action.position == guard.get("position") and guard.get("to") == to:
                    return trigger, action
        return candidates[0] if candidates else None

    def _guards(self, wf_id: str, record: Mapping[str, Any]) -> None:
        outcomes = record.get("guards")
        if not isinstance(outcomes, list):
            return
        self.guards_recorded = True
        wf = self.plan.workflow(wf_id)
        step = None if wf is None else next((s for s in wf.steps if s.id == record.get("step")), None)
        if step is None:
            return
        trigger = record.get("trigger")
        for outcome in outcomes:
            if not isinstance(outcome, Mapping):
                continue
            for t, action in _transitions(step):
                if (trigger is None or t == trigger) and action.position == outcome.get("position") \
                        and action.target_step == outcome.get("to") and action.guard is not None:
                    self.covered.add(("guard", wf_id, step.id, t, action.position, bool(outcome.get("result"))))
                    break

    # ---- the report ----------------------------------------------------------------------------------------------
    def report(self) -> dict[str, Any]:
        """Covered and missed units by workflow and category, the sequences, and the counts (guards left out of the
        counts when no record carried them)."""
        workflows = []
        for wf in self.plan.workflows:
            parts = {c: self._part(units, c) for c, units in self.units(wf).items()}
            workflows.append({"id": wf.id, **_counts(parts.values()), **parts})
        sequences = self._part(self.sequence_units(), "sequences")
        total = _counts([*(p for w in workflows for p in (w[c] for c in CATEGORIES)), sequences])
        return {"source": self.label, "digest": self.plan.digest, "scenarios": self.scenarios,
                "guards_recorded": self.guards_recorded, **total, "workflows": workflows, "sequences": sequences}

    def _part(self, units: list[tuple[Key, str]], category: str) -> dict[str, Any]:
        counted = category != "guards" or self.guards_recorded
        return {"counted": counted, "covered": [label for key, label in units if key in self.covered],
                "missed": [label for key, label in units if key not in self.covered]}


def _counts(parts: Iterable[Mapping[str, Any]]) -> dict[str, Any]:
    counted = [p for p in parts if p["counted"]]
    covered = sum(len(p["covered"]) for p in counted)
    total = covered + sum(len(p["missed"]) for p in counted)
    return {"covered_units": covered, "total_units": total, "percent": _percent(covered, total)}


def _percent(covered: int, total: int) -> float:
    return 100.0 if total == 0 else round(100.0 * covered / total, 1)


class CoverageMap:
    """Coverage of every plan the scenarios ran on, by plan digest, in the order first met."""

    def __init__(self) -> None:
        self.plans: dict[str, PlanCoverage] = {}

    def add(self, label: str, plan: Plan, tasks: Mapping[str, str], records: Sequence[Mapping[str, Any]]) -> None:
        entry = self.plans.setdefault(plan.digest, PlanCoverage(label, plan))
        entry.add(tasks, records)

    def report(self, threshold: float | None) -> dict[str, Any]:
        plans = [p.report() for p in self.plans.values()]
        covered = sum(p["covered_units"] for p in plans)
        total = sum(p["total_units"] for p in plans)
        exact = 100.0 if total == 0 else 100.0 * covered / total
        return {"percent": _percent(covered, total), "covered_units": covered, "total_units": total,
                "threshold": threshold, "below_threshold": threshold is not None and exact < threshold,
                "plans": plans}
