"""A plan, a store and executors in; the runtime's shared state, records and executor calls out.

Executors run with the configured timeout on a thread of their own; their failures become records.
"""

from __future__ import annotations

import contextlib
import contextvars
import itertools
import os
import socket
import threading
import uuid
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import replace
from typing import Any, NamedTuple

from .builtins import config_digests, register_builtins
from .errors import (
    ActionFailed,
    RuntimeFault,
    UnknownStepError,
    UnknownTaskError,
    UnknownWorkflowError,
)
from .executors import ActionContext, Directory, Effect, ExecutorRegistry, RegisteredExecutor, StaticDirectory
from .frozen import builder
from .plan import (
    Plan,
    PlanAction,
    PlanStep,
    PlanWorkflow,
)
from .records import MESSAGES, Counters, Level, LoguruSink, Record, RecordSink
from .store import Store, StoreError, TaskState

_new_context = builder(ActionContext)  # the hot paths' constructor (frozen.builder)

__all__ = ["Loader"]

Loader = Callable[[Any, Mapping[str, Any]], "Mapping[str, Any] | None"]

def _call_with_timeout(fn: Callable[..., Any], args: Mapping[str, Any], ctx: ActionContext, timeout: float) -> Any:
    """Run `fn(args, ctx)` on a thread of its own and wait at most `timeout` seconds.

    One thread per call, not a bounded pool: a hung executor (which Python cannot kill)
    keeps only its own thread, so it never starves the executors after it, and an
    executor that calls back into the runtime never waits for a worker held by itself."""
    outcome: dict[str, Any] = {}
    done = threading.Event()

    def target() -> None:
        try:
            outcome["result"] = fn(args, ctx)
        except Exception as exc:  # handed to the caller below
            outcome["error"] = exc
        except BaseException as exc:
            # raised on this worker thread, they concern the executor only: a fault of the call, never the host's
            outcome["error"] = _Failure(f"{type(exc).__name__} raised by the executor: {exc}".rstrip(": "),
                                        panic=True)
        finally:
            done.set()

    context = contextvars.copy_context()
    threading.Thread(target=context.run, args=(target,), name="interlock-exec", daemon=True).start()
    if not done.wait(timeout):
        raise _Failure(f"executor timed out after {timeout:g}s")
    if "error" in outcome:
        raise outcome["error"]
    return outcome.get("result")


IN_PROGRESS = "not run: its marker is in progress (another delivery is running it, or one was interrupted)"
"""The failure an entry records for a position whose marker was claimed but never finished: the position
is not run again (docs/runtime.md §1: only positions without a marker run), and its outcome is unknown."""


class _Redelivered(Exception):
    """Internal: the entry has its record already (raised inside a unit to undo this delivery)."""


class _Retry(Exception):
    """Internal: an entry action failed in a transaction run without savepoints; the transaction is undone and run
    again with a savepoint per action, the failed action recorded as failed without being called again."""

    def __init__(self, position: int, failure: _Failure) -> None:
        super().__init__(position)
        self.position = position
        self.failure = failure


class _Failure(Exception):
    """An action failed; `panic` says whether it was an unexpected exception."""

    def __init__(self, message: str, *, panic: bool = False) -> None:
        super().__init__(message)
        self.message = message
        self.panic = panic

def claim_owner() -> str:
    """The prefix of this process's claim tokens: `<host>/<pid>/<random>` (`recover` tells a dead process's claims
    by it)."""
    return f"{socket.gethostname()}/{os.getpid()}/{uuid.uuid4().hex[:12]}"


def claim_abandoned(token: str) -> bool:
    """Whether a claim token names a process of this host that is no longer running (its claim was left by a
    crash).  Claims of other hosts are never judged here: their lease covers them."""
    host, _, rest = token.partition("/")
    pid_text = rest.partition("/")[0]
    if host != socket.gethostname() or not pid_text.isdigit():
        return False
    pid = int(pid_text)
    if pid == os.getpid():
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    except OSError:  # it exists (another user's): alive
        return False
    return False


def as_failure(exc: BaseException) -> _Failure:
    """An executor's exception as a failure: `ActionFailed` (and a store-backed executor's `StoreError`) ordinary,
    anything else a contained fault.  `KeyboardInterrupt` is not an executor's to contain: the caller re-raises it
    (ADR 0021)."""
    if isinstance(exc, _Failure):
        return exc
    if isinstance(exc, (ActionFailed, StoreError)):
        return _Failure(str(exc) or type(exc).__name__)
    text = str(exc)
    return _Failure(f"{type(exc).__name__}: {text}" if text else type(exc).__name__, panic=True)


def check_effects(result: Any) -> list[Effect]:
    """An executor's return value as effect dicts: None is no effect; anything but a list of mappings with string
    keys and plain JSON values is a failure of that call (`_Failure`), found before anything is recorded."""
    if result is None:
        return []
    if not isinstance(result, (list, tuple)):
        raise _Failure(f"executor returned {type(result).__name__}, expected a list of effect dicts or None")
    effects = []
    for effect in result:
        if not isinstance(effect, Mapping):
            raise _Failure(f"executor returned a {type(effect).__name__} among its effects, expected a list of effect "
                           "dicts or None")
        bad = next((k for k in effect if not isinstance(k, str)), _NO_KEY)
        if bad is not _NO_KEY:
            raise _Failure(f"executor returned an effect with a {type(bad).__name__} key {bad!r}: effect keys are "
                           "strings")
        problem = _not_plain(effect)
        if problem is not None:
            raise _Failure(f"executor returned an effect that is not plain JSON data: {problem}")
        effects.append(dict(effect))
    return effects


_NO_KEY = object()
_SCALARS = (str, int, bool, type(None))
_MAX_EFFECT_ITEMS = 100_000


def _not_plain(value: Any) -> str | None:
    """Why `value` is not plain JSON data (string keys at every level, finite numbers, no other objects), or None:
    what a record sink, a trace or a store can carry without turning it into something else."""
    stack = [value]
    seen = 0
    while stack:
        item = stack.pop()
        seen += 1
        if seen > _MAX_EFFECT_ITEMS:
            return f"more than {_MAX_EFFECT_ITEMS} values"
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


def _the_plan(plan: Any) -> Plan:
    """The `Plan` a runtime interprets; a compile result is taken for its plan, and one without a plan (its source
    has errors) is refused with its first diagnostics instead of failing somewhere inside the runtime."""
    if isinstance(plan, Plan):
        return plan
    inner = getattr(plan, "plan", _NO_KEY)
    diagnostics = getattr(plan, "diagnostics", None)
    if isinstance(inner, Plan):
        return inner
    if inner is None and diagnostics is not None:
        errors = [d for d in diagnostics if getattr(d, "severity", "error") == "error"]
        shown = "; ".join(_where(d) + f"{getattr(d, 'code', '')} {getattr(d, 'message', d)}" for d in errors[:3])
        more = f" (and {len(errors) - 3} more)" if len(errors) > 3 else ""
        raise RuntimeFault(f"the compile result has no plan: its source has {len(errors)} error(s): {shown}{more}; "
                           "fix them (`interlock check`) and compile again")
    raise RuntimeFault(f"`plan` must be a compiled Plan (interlock.compiler.compile_path(...).plan, or "
                       f"interlock.runtime.load_plan(text)), not {type(plan).__name__}")


def _where(diagnostic: Any) -> str:
    span = getattr(diagnostic, "span", None)
    if span is None:
        return ""
    return f"{getattr(span, 'file', '?')}:{getattr(span, 'line', '?')}:{getattr(span, 'col', '?')}: "


class Handler(NamedTuple):
    """A step's handler of one trigger, compiled once: `kinds` are the kinds it runs through executors (the
    pre-dispatch walk's list); when the first transition that needs no approval has no guard (`plain`), it is
    the target whatever happens, no guard is ever evaluated and `fire` walks only `runs`, the other actions."""

    actions: tuple[PlanAction, ...]
    kinds: tuple[str, ...]
    runs: tuple[PlanAction, ...]
    plain: bool
    target: str | None
    workflow_steps: tuple[str, ...]  # the step ids of the handler's workflow (the contexts' `workflow_steps`)
    exit: Handler | None = None  # the step's `on_exit` handler, run before a transition leaves the step


NO_HANDLER = Handler((), (), (), True, None, ())


def _compile_handler(actions: Sequence[PlanAction], workflow_steps: tuple[str, ...],
                     exit: Handler | None = None) -> Handler:
    runs = tuple(a for a in actions if a.action_class != "transition")
    first = next((a for a in actions if a.action_class == "transition" and not a.requires_approval), None)
    plain = first is None or first.guard is None
    return Handler(tuple(actions), tuple(a.kind for a in runs), runs, plain,
                   first.target_step if plain and first is not None else None, workflow_steps, exit)


EXIT_TRIGGER = "on_exit"
"""The trigger a step's exit handler is declared on (docs/runtime.md §2, "Leaving a step")."""


class _Core:
    """Shared state and helpers of the runtime: the plan indexes, records, executor calls."""

    def __init__(
        self,
        plan: Plan,
        store: Store,
        *,
        executors: ExecutorRegistry | None = None,
        loaders: Mapping[str, Loader] | None = None,
        directory: Directory | None = None,
        sinks: Sequence[RecordSink] | None = None,
        host: Mapping[str, Any] | None = None,
        executor_timeout: float | None = 60.0,
        builtins: bool = True,
        session_live: Callable[[str], bool] | None = None,
        atomic_arrivals: bool = True,
        operation_lease: float = 600.0,
    ) -> None:
        plan = _the_plan(plan)
        if not isinstance(store, Store):
            raise RuntimeFault(f"`store` must implement interlock.runtime.Store (e.g. interlock.stores.open_store(url) "
                               f"or MemoryStore()), not {type(store).__name__}")
        self.plan = plan
        self.store = store
        self.executors = executors if executors is not None else ExecutorRegistry()
        if builtins:
            defaults = register_builtins(ExecutorRegistry())
            for kind in defaults.kinds():
                if kind not in self.executors:
                    fn = defaults.get(kind)
                    assert fn is not None
                    self.executors.register(kind, fn, transactional=True, replayable=defaults.is_replayable(kind))
        self.loaders: dict[str, Loader] = dict(loaders or {})
        self.directory: Directory = directory or StaticDirectory()
        self.sinks: list[RecordSink] = list(sinks) if sinks is not None else [LoguruSink()]
        self.host: dict[str, Any] = {"engine_ready": True, **(host or {})}
        self.executor_timeout = executor_timeout
        self.session_live = session_live
        # A durable store writes a step change and an entry whose actions are all store-backed in one
        # transaction (ADR 0010); False keeps docs/runtime.md §1's literal shape: the entry after the commit.
        self.atomic_arrivals = atomic_arrivals
        self._atomic = atomic_arrivals and bool(getattr(store, "durable", False))
        self.counters = Counters()
        self._workflows = {wf.id: wf for wf in plan.workflows}
        self._steps = {(wf.id, s.id): s for wf in plan.workflows for s in wf.steps}
        # (workflow, step, trigger) -> the handler, compiled for `fire` (see `_compile_handler`)
        self._step_ids = {wf.id: tuple(s.id for s in wf.steps) for wf in plan.workflows}
        exits = {(wf.id, s.id): _compile_handler(s.handlers[EXIT_TRIGGER], self._step_ids[wf.id])
                 for wf in plan.workflows for s in wf.steps if s.handlers.get(EXIT_TRIGGER)}
        self._exits = exits
        self._handlers = {(wf.id, s.id, trigger): _compile_handler(actions, self._step_ids[wf.id],
                                                                   exits.get((wf.id, s.id)))
                          for wf in plan.workflows for s in wf.steps for trigger, actions in s.handlers.items()}
        # a delivery's claim on its operation id (ADR 0020): who claims (host, process), a counter per delivery
        self._claim_prefix = claim_owner()
        self._claims = itertools.count(1)
        self.operation_lease = operation_lease
        self._triggers = {t.name: t for t in plan.triggers}
        self._kinds = {k.name: k for k in plan.kinds}
        self._sequences = {s.name: s for s in plan.sequences}
        self._records = {r.name: r.fields for r in plan.records}
        self._roles = frozenset(plan.roles)
        self._entry_trigger = plan.entry_policy.trigger
        # triggers whose empty payload needs no check (the kanban-era ones): `fire` skips `_check_payload`
        self.config_digests = config_digests(a for wf in plan.workflows for s in wf.steps
                                             for a in (*s.entry_dispatch, *(x for h in s.handlers.values() for x in h)))
        self._paramless = frozenset(t.name for t in plan.triggers if not t.params and t.name != self._entry_trigger)

    # ---- records -------------------------------------------------------------------------------
    def emit(self, kind: str, level: Level = "info", message: str | None = None, /, **fields: Any) -> None:
        """Send one record to every sink (a failing sink is ignored)."""
        if not self.sinks:
            return
        record = Record(kind, level, message or MESSAGES.get(kind, kind), fields)
        for sink in self.sinks:
            with contextlib.suppress(Exception):  # a broken sink must not take the runtime down
                sink(record)

    def add_sink(self, sink: RecordSink) -> None:
        self.sinks.append(sink)

    # ---- lookups ----------------------------------------------------------------------------------
    def workflow(self, workflow_id: str) -> PlanWorkflow:
        wf = self._workflows.get(workflow_id)
        if wf is None:
            raise UnknownWorkflowError(f"workflow `{workflow_id}` is not in the plan (known: "
                                       f"{', '.join(sorted(self._workflows)) or 'none'})")
        return wf

    def step(self, workflow_id: str, step_id: str) -> PlanStep:
        self.workflow(workflow_id)
        step = self._steps.get((workflow_id, step_id))
        if step is None:
            raise UnknownStepError(f"workflow `{workflow_id}` has no step `{step_id}` (steps: "
                                   f"{', '.join(self._step_ids[workflow_id])})")
        return step

    def task(self, task_id: str) -> TaskState:
        task = self.store.get_task(task_id)
        if task is None:
            raise UnknownTaskError(f"no task `{task_id}`")
        return task

    def _context(self, action: PlanAction, task: TaskState, workflow_id: str, step_id: str, trigger: str,
                 entry_id: int | None = None, operation_id: str | None = None, session_id: str | None = None,
                 payload: Mapping[str, Any] | None = None, key: str | None = None,
                 store: Store | None = None) -> ActionContext:
        # positional: ActionContext's field order (kind, task, workflow_id, step_id, trigger, position,
        # idempotency_key, entry_id, operation_id, session_id, payload, store, runtime, directory, workflow_steps)
        return _new_context(action.kind, task, workflow_id, step_id, trigger, action.position, key, entry_id,
                            operation_id, session_id, {} if payload is None else payload, store, self,
                            self.directory, self._step_ids.get(workflow_id) or (step_id,))

    def _record_failure(self, failure: _Failure, task_id: str, session_id: str | None, kind: str) -> None:
        self.counters.add("executor_failures")
        if failure.panic:
            self.emit("error", "error", task=task_id, session=session_id, kind=kind, message=failure.message)

    def _emit_effects(self, effects: Iterable[Effect], kind: str, task_id: str, step_id: str, **ids: Any) -> None:
        for effect in effects:
            self.counters.add("effects")
            fields = {"kind": kind, "task": task_id, "step": step_id, **ids,
                      **{k: v for k, v in effect.items() if k != "kind"}}
            self.emit("effect", "info", **fields)

    def _call(self, fn: Callable[..., Any], args: Mapping[str, Any], ctx: ActionContext) -> Sequence[Effect]:
        """Call a host executor, with the configured timeout; failures become `_Failure` (a `StoreError` of the
        runtime's own store passes through)."""
        try:
            if self.executor_timeout is None:
                result = fn(args, ctx)
            else:
                result = _call_with_timeout(fn, args, ctx, self.executor_timeout)
        except (_Failure, StoreError):
            raise
        except KeyboardInterrupt:
            raise
        except BaseException as exc:
            raise as_failure(exc) from None
        return check_effects(result)

    def _invoke(self, executor: RegisteredExecutor, args: Mapping[str, Any], ctx: ActionContext) -> list[Effect]:
        """Run one action's executor outside entry dispatch (a store-backed one in a unit of its own, a host one with
        the timeout); every failure of the call, garbage effects included, is a `_Failure` raised before anything
        is recorded.  Only a `KeyboardInterrupt` on the host's own thread propagates (units roll back first)."""
        try:
            if executor.transactional:
                with self.store.unit() as tx:
                    return check_effects(executor.fn(args, replace(ctx, store=tx)))
            if self.executor_timeout is None:
                return check_effects(executor.fn(args, ctx))
            return check_effects(_call_with_timeout(executor.fn, args, ctx, self.executor_timeout))
        except KeyboardInterrupt:
            raise
        except BaseException as exc:
            raise as_failure(exc) from None

    def new_claim(self) -> str:
        """A token for one delivery's claim on its operation id."""
        return f"{self._claim_prefix}:{next(self._claims)}"

    @staticmethod
    def _effects(result: Any) -> list[Effect]:
        """An executor's return value as effect dicts (`_Failure` if it is something else)."""
        return check_effects(result)

    def _warn_missing(self, workflow_id: str, step_id: str, kind: str, task_id: str, session_id: str | None) -> None:
        self.counters.add("missing_executors")
        step = self._steps.get((workflow_id, step_id))
        self.emit("warning", "warning", "no executor registered for action kind", code="no_executor",
                  workflow=workflow_id, step=step_id, step_title=step.title if step else None, kind=kind,
                  task=task_id, session=session_id)
