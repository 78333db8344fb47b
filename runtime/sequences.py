"""A host event in, a dispatch sequence's outcome out: first-match-wins guards, then the trigger (docs/runtime.md §3).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from .checks import check_ledger_id, check_mapping
from .coroutines import returned_coroutine
from .errors import RuntimeFault
from .expr import evaluate, lookup
from .index import PlanIndex
from .payloads import check_fields, record_fields
from .plan import (
    BinX,
    LoadStep,
    NotX,
    PathX,
    PlanExpr,
    PlanSequence,
    SkipStep,
)
from .recorder import Recorder
from .records import MESSAGES, Level
from .results import DispatchResult
from .triggers import TriggerDispatch

__all__ = ["Sequences", "Loader"]

Loader = Callable[[Any, Mapping[str, Any]], "Mapping[str, Any] | None"]
"""Reads a record a dispatch sequence `load`s: `loader(argument, event)` -> a mapping, None when missing; raises on
a read error."""


class Sequences:
    """Dispatch sequences (docs/runtime.md §3): guards first-match-wins, loads, operation id, payload, then the
    trigger.  Uses the plan index, the host's loaders and flags, the trigger dispatch and the recorder."""

    def __init__(self, index: PlanIndex, loaders: Mapping[str, Loader], host: Mapping[str, Any],
                 triggers: TriggerDispatch, recorder: Recorder) -> None:
        self.index = index
        self.loaders: dict[str, Loader] = dict(loaders)
        # the runtime's live flags (transition guards read the same dict), not a copy
        self.host: dict[str, Any] = host if isinstance(host, dict) else dict(host)
        self.triggers = triggers
        self.recorder = recorder

    # ---- dispatch sequences: first match wins ---------------------------------------------------------
    def dispatch(self, sequence: str, event: Mapping[str, Any], *, host: Mapping[str, Any] | None = None,
                 entry_id: int | None = None) -> DispatchResult:
        """Run a `dispatch` block for a host event (docs/runtime.md §3).  Never raises for engine errors.
        `entry_id`: the task's activation the event belongs to (a stale one is `superseded`)."""
        if not isinstance(sequence, str):
            raise RuntimeFault(f"`sequence` must be a string, not {type(sequence).__name__}")
        seq = self.index.sequences.get(sequence)
        if seq is None:
            raise RuntimeFault(f"no dispatch sequence `{sequence}` (known: {', '.join(self.index.sequences) or 'none'})")
        check_mapping(event, "event")
        check_mapping(host, "host", optional=True)
        if entry_id is not None:
            check_ledger_id(entry_id, "entry_id")
        # the fields of the sequence's event record, all of them (a null reads as empty): a misspelt or missing
        # field is the same `PayloadError` as a fire's (docs/runtime.md §3)
        event = check_fields(event, record_fields(self.index.records.get(seq.event, {})), f"`{sequence}`",
                             f"event ({seq.event})", self.index.records, nulls=True)
        label = {"sequence": seq.name}
        task_id = str(event.get("task_id") or "")
        session_id = str(event.get("session_id") or "") or None
        try:
            return self._dispatch(seq, dict(event), {**self.host, **(host or {})}, label, task_id, session_id,
                                  entry_id)
        except Exception as exc:  # an engine error: one ERROR record, never raised to the host
            message = f"{type(exc).__name__}: {exc}"
            self.recorder.emit("dispatch", "error", MESSAGES["dispatch_error"], trigger=seq.trigger, task=task_id,
                               session=session_id, step=None, operation_id=None, actions=[], error=message,
                               sequence=seq.name)
            self.recorder.emit("outcome", "silent", **label, result="error", guard=None, task=task_id)
            return DispatchResult("error", seq.name, error=message)

    def _skip(self, seq: PlanSequence, guard: str, level: Level, message: str | None, task_id: str,
              session_id: str | None, label: Mapping[str, Any], **why: Any) -> DispatchResult:
        self.recorder.counters.skip(guard)
        if level != "silent":
            # `why`: what made the guard match (the values its condition read, or the loader's error),
            # so a record names e.g. the blocking session (AC-F5 of kandev's on_agent_error design)
            self.recorder.emit("skip", level, message or guard, sequence=seq.name, guard=guard, level=level,
                               task=task_id, session=session_id, **why)
        self.recorder.emit("outcome", "silent", **label, result="skipped", guard=guard, task=task_id)
        return DispatchResult("skipped", seq.name, guard=guard)

    def _dispatch(self, seq: PlanSequence, event: dict[str, Any], host: dict[str, Any], label: Mapping[str, Any],
                  task_id: str, session_id: str | None, entry_id: int | None) -> DispatchResult:
        scope: dict[str, Any] = {"event": event, "host": host}
        for step in seq.steps:
            if isinstance(step, SkipStep):
                if evaluate(step.when, scope):
                    values = {".".join(p): lookup(scope, p) for p in _paths(step.when)}
                    return self._skip(seq, step.guard, step.level, step.message, task_id, session_id, label,
                                      values=values)
                continue
            assert isinstance(step, LoadStep)
            loader = self.loaders.get(step.loader)
            arg = evaluate(step.args[0], scope) if step.args else None
            outcome = None
            if loader is None:
                raise RuntimeFault(f"no loader registered for record `{step.loader}`")
            why: dict[str, Any] = {}
            try:
                loaded = loader(arg, event)
            except Exception as exc:
                outcome = step.on_error
                if outcome is None:
                    raise
                why["error"] = f"{type(exc).__name__}: {exc}"
            else:
                refused = returned_coroutine(loaded, f"loader `{step.loader}`")
                if refused is not None:  # a plain callable around an `async def` one: an engine error
                    raise RuntimeFault(refused)
                if loaded is None:
                    outcome = step.on_missing
                    if outcome is None:
                        raise RuntimeFault(f"`{step.loader}({arg!r})` is missing and the sequence has no "
                                           "`missing` case")
                else:
                    scope[step.name] = loaded
                    continue
            return self._skip(seq, outcome.guard, outcome.level, outcome.message, task_id, session_id, label, **why)
        operation_id = None
        for op in seq.operations:
            if op.when is None or evaluate(op.when, scope):
                operation_id = "".join(p if isinstance(p, str) else str(lookup(scope, p) or "") for p in op.parts)
                break
        payload = {name: evaluate(expr, scope) for name, expr in seq.payload.items()}
        fire = self.triggers.fire(seq.trigger, task_id, session_id=session_id, payload=payload,
                                  operation_id=operation_id, outcome_label=label, entry_id=entry_id)
        return DispatchResult(fire.result, seq.name, operation_id=operation_id, payload=payload, fire=fire,
                              error=fire.error)


def _paths(expr: PlanExpr) -> list[tuple[str, ...]]:
    """The field paths an expression reads, in order, each once."""
    found: list[tuple[str, ...]] = []

    def walk(e: PlanExpr) -> None:
        if isinstance(e, PathX):
            if e.path not in found:
                found.append(e.path)
        elif isinstance(e, NotX):
            walk(e.arg)
        elif isinstance(e, BinX):
            walk(e.left)
            walk(e.right)

    walk(expr)
    return found
