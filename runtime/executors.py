"""Action kinds in, callables out: the executor registry and what an executor receives.

An executor is `fn(args, ctx) -> effects`: `args` are the action's arguments from the
plan (defaults filled in, checked against the kind's parameter types before the call),
`ctx` names the task, step, trigger, entry id or operation id and carries a ready-made
idempotency key; an entry's executors also read the arrival's one-shot options
(`ctx.arrival_options`, ADR 0043).  It returns a list of effect dicts (what took effect, for records) or
None.  Raising `ActionFailed` is an ordinary failure; any other exception is a fault
that the runtime contains and records.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import TYPE_CHECKING, Any, Protocol

from .coroutines import refuse_async
from .frozen import fast_init
from .options import NO_OPTIONS
from .store import Store, TaskState

if TYPE_CHECKING:
    from .results import ArrivalResult, DecisionResult, DispatchResult, FireResult

__all__ = ["ActionContext", "Executor", "ExecutorRegistry", "Directory", "StaticDirectory", "Effect",
           "RuntimeCalls", "RegisteredExecutor"]

Effect = dict[str, Any]


class RuntimeCalls(Protocol):
    """What an executor may call back on the runtime that called it (`ctx.runtime`): the host-facing calls and
    the store.  No lock is held while an executor runs, so these may be called from inside one."""

    store: Store

    def create_task(self, task_id: str, workflow_id: str, step_id: str | None = None, *,
                    description: str = "", session_id: str | None = None,
                    options: Mapping[str, Any] | None = None) -> ArrivalResult: ...

    def move(self, task_id: str, to_step: str, *, route: str = "manual_move",
             session_id: str | None = None, options: Mapping[str, Any] | None = None) -> ArrivalResult: ...

    def switch_workflow(self, task_id: str, workflow_id: str, step_id: str | None = None, *,
                        session_id: str | None = None) -> ArrivalResult: ...

    def fire(self, trigger: str, task_id: str, *, session_id: str | None = None,
             payload: Mapping[str, Any] | None = None, operation_id: str | None = None) -> FireResult: ...

    def record_decision(self, task_id: str, *, verdict: str, agent: str | None = None, user: str | None = None,
                        role: str = "", session_id: str | None = None) -> DecisionResult: ...

    def dispatch(self, sequence: str, event: Mapping[str, Any], *,
                 host: Mapping[str, Any] | None = None) -> DispatchResult: ...


@fast_init
@dataclass(frozen=True)
class ActionContext:
    kind: str
    task: TaskState
    workflow_id: str
    step_id: str
    trigger: str
    position: int
    idempotency_key: str | None
    entry_id: int | None = None  # the activation the call belongs to (an entry's own row; else the task's current)
    operation_id: str | None = None
    session_id: str | None = None
    payload: Mapping[str, Any] = field(default_factory=dict)
    store: Store | None = None  # the open unit, for transactional executors
    runtime: RuntimeCalls | None = None  # for executors that call back into the runtime
    directory: Directory | None = None
    workflow_steps: tuple[str, ...] = ()  # every step id of the task's workflow
    config_digest: str | None = None  # the digest of the action's configuration, when the runtime has it
    attempt: int = 1  # 1-based: the tries of this action the runtime started (a re-run carries the same key)
    delivery_key: str | None = None  # the key of the delivery this call belongs to (runs' keys derive from it)
    plan: str | None = None  # the plan revision the delivery runs under
    # entry only: the arrival's one-shot options, read-only (ADR 0043); the factory hands out one shared empty view
    arrival_options: Mapping[str, Any] = field(default_factory=lambda: NO_OPTIONS)

    def with_store(self, store: Store) -> ActionContext:
        """This context for a call inside the unit `store`."""
        return dataclasses.replace(self, store=store)


Executor = Callable[[Mapping[str, Any], ActionContext], "Sequence[Effect] | None"]


class Directory(Protocol):
    """Who the agents are: the host answers; the default is a static map."""

    def primary_agent(self, task: TaskState) -> str | None: ...

    def ceo_agent(self) -> str | None: ...

    def seat_candidates(self, task: TaskState, role: str) -> Sequence[str]: ...


@dataclass(frozen=True)
class StaticDirectory:
    primary: str | None = "primary"
    ceo: str | None = None

    def primary_agent(self, task: TaskState) -> str | None:
        return self.primary

    def ceo_agent(self) -> str | None:
        return self.ceo

    def seat_candidates(self, task: TaskState, role: str) -> Sequence[str]:
        """Casting order: the workspace CEO unless it is the task's runner, then the runner itself."""
        out = [a for a in (self.ceo,) if a and a != self.primary]
        if self.primary:
            out.append(self.primary)
        return out


@dataclass(frozen=True)
class RegisteredExecutor:
    fn: Executor
    transactional: bool
    replayable: bool = False


class ExecutorRegistry:
    """One executor per action kind.  Transactional executors run inside the store unit
    that also writes the action's durable marker (their effects are exactly-once).

    A *replayable* executor is a transactional one whose only effects are its writes through
    `ctx.store`: it keeps no state of its own between calls, calls no runtime method and
    records nothing elsewhere.  An entry whose actions are all replayable runs without a
    savepoint per action; if one fails, the transaction is undone and run again with
    savepoints, so the actions before the failed one are called a second time (ADR 0010).
    The built-ins are replayable."""

    def __init__(self) -> None:
        self._entries: dict[str, RegisteredExecutor] = {}
        self.entries: Mapping[str, RegisteredExecutor] = MappingProxyType(self._entries)
        """Kind -> registered executor: a read-only live view (the runtime's hot path reads it directly)."""

    def register(self, kind: str, fn: Executor, *, transactional: bool = False, replayable: bool = False) -> None:
        """Register `fn` for `kind` (replacing any).  An `async def` executor is refused: `AsyncRuntime.register`
        takes those."""
        refuse_async(fn, f"executor `{kind}`")
        if replayable and not transactional:
            raise ValueError(f"executor `{kind}`: only a transactional executor can be replayable")
        self._entries[kind] = RegisteredExecutor(fn, transactional, replayable)

    def unregister(self, kind: str) -> None:
        self._entries.pop(kind, None)

    def get(self, kind: str) -> Executor | None:
        entry = self._entries.get(kind)
        return entry.fn if entry else None

    def is_transactional(self, kind: str) -> bool:
        entry = self._entries.get(kind)
        return bool(entry and entry.transactional)

    def is_replayable(self, kind: str) -> bool:
        entry = self._entries.get(kind)
        return bool(entry and entry.replayable)

    def kinds(self) -> list[str]:
        return sorted(self._entries)

    def __contains__(self, kind: object) -> bool:
        return kind in self._entries

    def copy(self) -> ExecutorRegistry:
        new = ExecutorRegistry()
        new._entries = dict(self._entries)
        new.entries = MappingProxyType(new._entries)
        return new

