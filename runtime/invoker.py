"""An action, its context and an executor in, an outcome value out: `Ok(effects)` or `Failed(reason, fault)`.

The invoker is the only component that calls executors.  Every way a call can go wrong ends in a
`Failed` value — `ActionFailed` an ordinary failure, anything else a contained fault, `BaseException`s
on a worker thread and effects that are not plain JSON data included (ADR 0021) — so callers branch
on a value instead of threading exceptions through.  Two things are not an executor's outcome and
propagate: a `KeyboardInterrupt` in the host's own thread (the host's), and a transient `StoreError`
of an entry's transaction (the entry is then incomplete, for `recover`).

Host executors run on a thread of their own with the configured timeout (one thread per call, not a
pool: a hung executor keeps only its own thread, and one that calls back into the runtime never waits
for a worker it holds); store-backed ones run in the caller's thread, in a unit of the store.
"""

from __future__ import annotations

import contextvars
import threading
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from .builtins import QUEUEING_KINDS
from .errors import ActionFailed
from .executors import ActionContext, Directory, Effect, ExecutorRegistry, RegisteredExecutor, RuntimeCalls
from .frozen import builder, fast_init
from .index import PlanIndex
from .plan import PlanAction
from .store import Store, StoreError, TaskState

__all__ = ["Ok", "Failed", "Outcome", "OK", "Invoker", "check_effects", "failed_from"]

_new_context = builder(ActionContext)  # the hot path's constructor (frozen.builder: ADR 0027's ablation)


@fast_init
@dataclass(frozen=True)
class Ok:
    """The call took effect; `effects` describe what it did (for the records)."""

    effects: tuple[Effect, ...] = ()


@fast_init
@dataclass(frozen=True)
class Failed:
    """The call failed: `reason` is recorded; `fault` says it raised an unexpected exception (an `error` record)."""

    reason: str
    fault: bool = False


Outcome = Ok | Failed

OK = Ok()
"""The outcome of a call that returned no effects (shared: it is immutable)."""

_SCALARS = (str, int, bool, type(None))
_MAX_EFFECT_VALUES = 100_000


def failed_from(exc: BaseException) -> Failed:
    """An executor's exception as its outcome: `ActionFailed` (and a store-backed executor's `StoreError`)
    ordinary, anything else a fault."""
    if isinstance(exc, (ActionFailed, StoreError)):
        return Failed(str(exc) or type(exc).__name__)
    text = str(exc)
    return Failed(f"{type(exc).__name__}: {text}" if text else type(exc).__name__, True)


def check_effects(result: Any) -> Outcome:
    """An executor's return value as its outcome: None or a list of effect dicts of plain JSON data is `Ok`;
    anything else is `Failed` (found before anything is recorded)."""
    if result is None:
        return OK
    if not isinstance(result, (list, tuple)):
        return Failed(f"executor returned {type(result).__name__}, expected a list of effect dicts or None")
    effects = []
    for effect in result:
        if not isinstance(effect, Mapping):
            return Failed(f"executor returned a {type(effect).__name__} among its effects, expected a list of "
                          "effect dicts or None")
        problem = _not_plain(effect)
        if problem is not None:
            return Failed(f"executor returned an effect that is not plain JSON data: {problem}")
        effects.append(dict(effect))
    return Ok(tuple(effects)) if effects else OK


def _not_plain(value: Mapping[Any, Any]) -> str | None:
    """Why an effect is not plain JSON data (string keys at every level, finite numbers, nothing else), or None.
    A flat effect of strings and integers (every built-in's) is checked in one pass over its items."""
    for key, item in value.items():
        if type(key) is not str:
            return f"a {type(key).__name__} key {key!r} (keys are strings)"
        kind = type(item)
        if kind is not str and kind is not int and item is not None and kind is not bool:
            return _not_plain_nested(value)
    return None


def _not_plain_nested(value: Any) -> str | None:
    stack = [value]
    seen = 0
    while stack:
        item = stack.pop()
        seen += 1
        if seen > _MAX_EFFECT_VALUES:
            return f"more than {_MAX_EFFECT_VALUES} values"
        if isinstance(item, _SCALARS):
            continue
        if isinstance(item, float):
            if item != item or item in (float("inf"), float("-inf")):
                return f"the number {item!r} is not JSON"
            continue
        if isinstance(item, Mapping):
            for key, inner in item.items():
                if not isinstance(key, str):
                    return f"a {type(key).__name__} key {key!r} (keys are strings)"
                stack.append(inner)
            continue
        if isinstance(item, (list, tuple)):
            stack.extend(item)
            continue
        return f"a value of type {type(item).__name__}"
    return None


def call_with_timeout(fn: Callable[..., Any], args: Mapping[str, Any], ctx: ActionContext,
                      timeout: float) -> Outcome:
    """Run `fn(args, ctx)` on a thread of its own and wait at most `timeout` seconds.  Every exception raised on
    that thread, `BaseException`s included, is the executor's: a `Failed` outcome."""
    outcome: list[Outcome] = []
    store_fault: list[StoreError] = []
    done = threading.Event()

    def target() -> None:
        try:
            outcome.append(check_effects(fn(args, ctx)))
        except StoreError as exc:  # the runtime's store failing under the executor: the caller's to handle
            store_fault.append(exc)
        except BaseException as exc:  # the worker thread is the executor's own: nothing here is the host's
            outcome.append(failed_from(exc))
        finally:
            done.set()

    context = contextvars.copy_context()
    threading.Thread(target=context.run, args=(target,), name="interlock-exec", daemon=True).start()
    if not done.wait(timeout):
        return Failed(f"executor timed out after {timeout:g}s")
    if store_fault:
        raise store_fault[0]
    return outcome[0]


class Invoker:
    """Calls executors: the registry, the timeout, the directory and the contexts they receive."""

    def __init__(self, registry: ExecutorRegistry, index: PlanIndex, directory: Directory,
                 callbacks: RuntimeCalls | None, timeout: float | None) -> None:
        self.registry = registry
        self.index = index
        self.directory = directory
        self.callbacks = callbacks
        self.timeout = timeout
        self.config_digests = index_digests(index)

    def context(self, action: PlanAction, task: TaskState, workflow_id: str, step_id: str, trigger: str,
                key: str | None, entry_id: int | None, operation_id: str | None, session_id: str | None,
                payload: Mapping[str, Any] | None, store: Store | None,
                workflow_steps: tuple[str, ...] | None) -> ActionContext:
        """What an executor receives (positional: it is built for every action).  `workflow_steps`: the workflow's
        step ids when the caller has them."""
        kind = action.kind
        digest = self.config_digests.get((workflow_id, step_id, trigger, action.position)) \
            if kind in QUEUEING_KINDS else None
        return _new_context(kind, task, workflow_id, step_id, trigger, action.position, key, entry_id, operation_id,
                            session_id, {} if payload is None else payload, store, self.callbacks, self.directory,
                            workflow_steps or self.index.workflow_steps(workflow_id, step_id), digest)

    def call(self, executor: RegisteredExecutor, args: Mapping[str, Any], ctx: ActionContext,
             store: Store) -> Outcome:
        """Outside an entry's transaction: a store-backed executor in a unit of its own (its writes commit or roll
        back with its outcome), a host executor with the timeout (in place when there is none).  A `StoreError`
        propagates (the caller decides: an entry is then incomplete, a fire aborts on it)."""
        try:
            if executor.transactional:
                with store.unit() as tx:
                    outcome = check_effects(executor.fn(args, ctx.with_store(tx)))
                    if isinstance(outcome, Failed):
                        raise _Undo(outcome)
                    return outcome
            if self.timeout is not None:
                return call_with_timeout(executor.fn, args, ctx, self.timeout)
            return check_effects(executor.fn(args, ctx))
        except _Undo as undo:
            return undo.outcome
        except (KeyboardInterrupt, StoreError):
            raise
        except BaseException as exc:  # contained: a fault of this call (ADR 0021)
            return failed_from(exc)

    def call_here(self, fn: Callable[..., Any], args: Mapping[str, Any], ctx: ActionContext) -> Outcome:
        """In the caller's thread and open unit (an entry's store-backed action).  A transient `StoreError`
        propagates: the entry's transaction failed, not the action; a permanent one (the data itself refused) is
        the action's failure."""
        try:
            return check_effects(fn(args, ctx))
        except KeyboardInterrupt:
            raise
        except StoreError as exc:
            if not exc.permanent:
                raise
            return failed_from(exc)
        except BaseException as exc:  # contained: a fault of this call (ADR 0021)
            return failed_from(exc)


class _Undo(Exception):
    """Internal: a store-backed call returned garbage: its unit is rolled back."""

    def __init__(self, outcome: Failed) -> None:
        super().__init__(outcome.reason)
        self.outcome = outcome


def index_digests(index: PlanIndex) -> dict[tuple[str, str, str, int], str]:
    """The run-key digests of the plan's queueing actions, by where they are written: (workflow, step, trigger,
    position).  Computed once: a plan is immutable."""
    from .builtins import config_digest

    digests: dict[tuple[str, str, str, int], str] = {}
    for (workflow_id, step_id), step in index.steps.items():
        located = [(index.entry_trigger, a) for a in step.entry_dispatch]
        located += [(trigger, a) for trigger, actions in step.handlers.items() for a in actions]
        for trigger, action in located:
            if action.kind in QUEUEING_KINDS:
                digests[(workflow_id, step_id, trigger, action.position)] = config_digest(action.kind, action.args)
    return digests
