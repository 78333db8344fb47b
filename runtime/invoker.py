"""A delivery, an action and its executor in, an outcome value out: the runtime's one executor boundary.

Every executor call of the runtime goes through `Invoker.call` (outside a transaction) or
`Invoker.call_in` (inside the caller's open unit), and both end in the one policy of `_contained`
(ADR 0036, superseding the four copies ADR 0021 left): the call's outcome is a value — `Ok(effects)`,
or `Failed` for `ActionFailed`, a permanent `StoreError`, effects that are not plain JSON data, and
(as a fault) any other exception, `BaseException`s on a worker thread included.  Two things are not
an executor's outcome and propagate: a `KeyboardInterrupt` in the host's own thread (the host's), and
a transient `StoreError` (the store failed, not the action: the caller's unit is undone and the
delivery stays unfinished for a redelivery or `recover`).

Host executors run on a thread of their own when there is a timeout (one thread per call, not a pool:
a hung executor keeps only its own thread, and one that calls back into the runtime never waits for a
worker it holds).  A call that outlives its timeout is recorded as failed (`timed out`) and keeps
running; if it returns later, `on_late` is told (a `late_completion` record: docs/runtime.md §7).
Without a timeout a host executor runs in place — the speed device of `fire`'s hot path, behind the
same `call`.  Store-backed executors run in the caller's thread, in a unit of the store.
"""

from __future__ import annotations

import contextvars
import threading
from collections.abc import Callable, Mapping
from typing import Any

from .builtins import QUEUEING_KINDS, config_digest
from .delivery import Delivery
from .executors import ActionContext, Directory, ExecutorRegistry, RegisteredExecutor, RuntimeCalls
from .frozen import builder
from .keys import action_key
from .outcomes import OK, Failed, Ok, Outcome, check_effects, failed_from
from .plan import PlanAction
from .store import Store, StoreError

__all__ = ["Invoker", "LateCallback", "Ok", "Failed", "Outcome", "OK", "check_effects", "failed_from"]

_new_context = builder(ActionContext)  # the hot path's constructor (frozen.builder: ADR 0027's ablation)

LateCallback = Callable[[ActionContext, Outcome], None]
"""Told, on the executor's own thread, when a call the runtime gave up on (timed out) returns after all."""


def _contained(fn: Callable[..., Any], args: Mapping[str, Any], ctx: ActionContext) -> Outcome:
    """The boundary's one policy (see the module's docstring)."""
    try:
        result = fn(args, ctx)
        return OK if result is None else check_effects(result)  # None: `check_effects`' common case, inline
    except KeyboardInterrupt:
        raise
    except StoreError as exc:
        if not exc.permanent:
            raise
        return failed_from(exc)
    except BaseException as exc:  # contained: a fault of this call
        return failed_from(exc)


class _TimedCall:
    """One host executor call on a thread of its own, waited for at most `timeout` seconds."""

    __slots__ = ("done", "late", "lock", "outcome", "store_fault", "timed_out")

    def __init__(self) -> None:
        self.done = threading.Event()
        self.lock = threading.Lock()
        self.outcome: Outcome | None = None
        self.store_fault: StoreError | None = None
        self.timed_out = False
        self.late: LateCallback | None = None

    def run(self, fn: Callable[..., Any], args: Mapping[str, Any], ctx: ActionContext, timeout: float,
            late: LateCallback | None) -> Outcome:
        self.late = late
        context = contextvars.copy_context()
        threading.Thread(target=context.run, args=(self._target, fn, args, ctx), name="interlock-exec",
                         daemon=True).start()
        if self.done.wait(timeout):
            if self.store_fault is not None:
                raise self.store_fault
            assert self.outcome is not None
            return self.outcome
        with self.lock:
            if self.outcome is None and self.store_fault is None:
                self.timed_out = True
                return Failed(f"executor timed out after {timeout:g}s")
        if self.store_fault is not None:  # it finished in the instant the wait ended
            raise self.store_fault
        assert self.outcome is not None
        return self.outcome

    def _target(self, fn: Callable[..., Any], args: Mapping[str, Any], ctx: ActionContext) -> None:
        outcome: Outcome | None = None
        try:
            outcome = _contained(fn, args, ctx)
        except StoreError as exc:  # transient: the runtime's store failing under the executor is the caller's
            self.store_fault = exc
        except BaseException as exc:  # the worker thread is the executor's own: nothing here is the host's
            outcome = failed_from(exc)
        with self.lock:
            self.outcome = outcome
            late = self.timed_out
        self.done.set()
        if late and self.late is not None:
            self.late(ctx, outcome if outcome is not None else Failed("the store failed"))


class Invoker:
    """Calls executors: the registry, the timeout, the directory, and the contexts calls receive."""

    def __init__(self, registry: ExecutorRegistry, directory: Directory, callbacks: RuntimeCalls | None,
                 timeout: float | None, on_late: LateCallback | None = None) -> None:
        self.registry = registry
        self.directory = directory
        self.callbacks = callbacks
        self.timeout = timeout
        self.on_late = on_late
        self._digests: dict[tuple[int, str, str, str, int], str] = {}

    def context(self, delivery: Delivery, action: PlanAction, *, store: Store | None = None,
                attempt: int | None = None) -> ActionContext:
        """What an executor receives for `action` of `delivery` (`attempt`: the position's own try, when it counts
        its own — an entry's marker; else the delivery's)."""
        kind = action.kind
        digest = self._digest(delivery, action) if kind in QUEUEING_KINDS else None
        key = delivery.key  # `delivery.action_key(action)`, inline
        return _new_context(kind, delivery.task, delivery.workflow_id, delivery.step_id, delivery.trigger,
                            action.position, None if key is None else action_key(key, action.position, kind),
                            delivery.entry_id, delivery.operation_id,
                            delivery.session_id, delivery.payload, store, self.callbacks, self.directory,
                            delivery.workflow_steps, digest, attempt or delivery.attempt, delivery.key, delivery.revision.digest,
                            delivery.options)

    def _digest(self, delivery: Delivery, action: PlanAction) -> str:
        """The run-key digest of a queueing action's configuration, computed once per place in a plan."""
        where = (id(delivery.revision), delivery.workflow_id, delivery.step_id, delivery.trigger, action.position)
        digest = self._digests.get(where)
        if digest is None:
            digest = config_digest(action.kind, action.args)
            if len(self._digests) < 100_000:
                self._digests[where] = digest
        return digest

    def call(self, executor: RegisteredExecutor, args: Mapping[str, Any], ctx: ActionContext,
             store: Store) -> Outcome:
        """Outside a transaction: a store-backed executor in a unit of its own (its writes commit or roll back with
        its outcome), a host executor with the timeout (in place when there is none)."""
        if executor.transactional:
            try:
                with store.unit() as tx:
                    outcome = _contained(executor.fn, args, ctx.with_store(tx))
                    if isinstance(outcome, Failed):
                        raise _Undo(outcome)
                    return outcome
            except _Undo as undo:
                return undo.outcome
        timeout = self.timeout
        if timeout is None:
            return _contained(executor.fn, args, ctx)
        return _TimedCall().run(executor.fn, args, ctx, timeout, self.on_late)

    @staticmethod
    def call_in(fn: Callable[..., Any], args: Mapping[str, Any], ctx: ActionContext) -> Outcome:
        """Inside the caller's open unit (an entry's store-backed action), in the caller's thread."""
        return _contained(fn, args, ctx)


class _Undo(Exception):
    """Internal: a store-backed call failed: its unit is rolled back."""

    def __init__(self, outcome: Failed) -> None:
        super().__init__(outcome.reason)
        self.outcome = outcome

