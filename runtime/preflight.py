"""A plan's lookups, the registered executors and loaders in, what the plan can need that nobody registered out:
`Runtime.check()` (docs/runtime.md, "Checking a runtime before it runs").

The plan can run, through executors, the kinds of every step's entry `dispatch` list and every non-transition
kind of its other handlers (`on_exit` included); its dispatch sequences `load` records through the host's loaders.
Each kind without an executor and each record without a loader is one `Problem`, with every place that needs it —
found at start-up instead of at the first event that reaches it in production.
"""

from __future__ import annotations

from collections.abc import Container, Mapping
from dataclasses import dataclass
from typing import Any, Literal

from .errors import RuntimeFault
from .index import PlanIndex
from .plan import LoadStep
from .recorder import Recorder

__all__ = ["Where", "Problem", "RuntimeMisconfigured", "find_problems", "misconfigured"]


@dataclass(frozen=True)
class Where:
    """A place in the plan: a step's handler (workflow, step, trigger) or a dispatch sequence."""

    workflow: str | None = None
    step: str | None = None
    trigger: str | None = None
    sequence: str | None = None

    def __str__(self) -> str:
        if self.sequence is not None:
            return f"dispatch sequence `{self.sequence}`"
        return f"{self.workflow}.{self.step} {self.trigger}"

    def as_dict(self) -> dict[str, str]:
        return {k: v for k, v in (("workflow", self.workflow), ("step", self.step), ("trigger", self.trigger),
                                  ("sequence", self.sequence)) if v is not None}


@dataclass(frozen=True)
class Problem:
    """One thing the plan can need that is not registered: an action `kind` with no executor (`no_executor`) or a
    `record` with no loader (`no_loader`), with every place (`where`) that needs it, in plan order."""

    code: Literal["no_executor", "no_loader"]
    kind: str | None
    record: str | None
    where: tuple[Where, ...]

    @property
    def message(self) -> str:
        places = ", ".join(str(w) for w in self.where)
        if self.code == "no_executor":
            return f"action kind `{self.kind}` has no registered executor (run at {places})"
        return f"record `{self.record}` has no loader (loaded by {places})"

    def __str__(self) -> str:
        return self.message

    def as_dict(self) -> dict[str, Any]:
        named = {"kind": self.kind} if self.code == "no_executor" else {"record": self.record}
        return {"code": self.code, **named, "where": [w.as_dict() for w in self.where], "message": self.message}


class RuntimeMisconfigured(RuntimeFault):
    """`Runtime.check(strict=True)` found problems; `problems` lists them."""

    def __init__(self, problems: list[Problem]) -> None:
        super().__init__(f"the runtime cannot run everything its plan can ask for ({len(problems)} problem(s)): "
                         + "; ".join(p.message for p in problems))
        self.problems = problems


def find_problems(index: PlanIndex, executors: Container[str], loaders: Mapping[str, Any]) -> list[Problem]:
    """Every kind the plan can run with no executor in `executors`, then every record its sequences load with no
    loader in `loaders`."""
    kinds: dict[str, list[Where]] = {}
    entry = index.entry_trigger
    for (workflow, step_id), step in index.steps.items():
        for action in step.entry_dispatch:
            if action.kind not in executors:
                kinds.setdefault(action.kind, []).append(Where(workflow, step_id, entry))
        for trigger, actions in step.handlers.items():
            if trigger == entry:  # the entry runs `entry_dispatch` only: the excluded kinds are the host's
                continue
            for action in actions:
                if action.action_class != "transition" and action.kind not in executors:
                    kinds.setdefault(action.kind, []).append(Where(workflow, step_id, trigger))
    records: dict[str, list[Where]] = {}
    for name, sequence in index.sequences.items():
        for load in sequence.steps:
            if isinstance(load, LoadStep) and load.loader not in loaders:
                records.setdefault(load.loader, []).append(Where(sequence=name))
    return ([Problem("no_executor", kind, None, _unique(where)) for kind, where in kinds.items()]
            + [Problem("no_loader", None, record, _unique(where)) for record, where in records.items()])


def _unique(places: list[Where]) -> tuple[Where, ...]:
    return tuple(dict.fromkeys(places))


def misconfigured(recorder: Recorder, problems: list[Problem]) -> None:
    """The one `warning` record (code `runtime_misconfigured`) a runtime built with `problems` leaves: the kinds,
    the records and each problem."""
    if problems:
        recorder.warning("runtime_misconfigured", "runtime misconfigured: the plan can run action kinds with no "
                         "executor or load records with no loader (Runtime.check() lists them)",
                         kinds=[p.kind for p in problems if p.kind is not None],
                         records=[p.record for p in problems if p.record is not None],
                         problems=[p.as_dict() for p in problems])
