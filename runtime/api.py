"""A plan, a store and executors in; arrivals, entry dispatch, trigger dispatch, dispatch
sequences and decisions out — the runtime a host orchestrator embeds.

Step entry is record-and-continue (RUNTIME.md §1), every other trigger abort-on-first
(§2), dispatch sequences first-match-wins (§3).  Idempotency is durable: entry records
and per-position markers for arrivals, operation markers for other triggers, all in the
store.  The runtime holds no lock while an executor runs, so executors may call back in.
"""

from __future__ import annotations

import contextlib
import contextvars
import json
import threading
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import replace
from typing import Any

from .builtins import register_builtins
from .errors import (
    ActionFailed,
    PayloadError,
    RuntimeFault,
    UnknownStepError,
    UnknownTaskError,
    UnknownTriggerError,
    UnknownWorkflowError,
)
from .executors import ActionContext, Directory, Effect, ExecutorRegistry, StaticDirectory
from .expr import evaluate, lookup
from .plan import (
    BinX,
    LoadStep,
    NotX,
    PathX,
    Plan,
    PlanAction,
    PlanExpr,
    PlanSequence,
    PlanStep,
    PlanWorkflow,
    SkipStep,
)
from .quorum import evaluate as evaluate_quorum
from .records import MESSAGES, Counters, Level, LoguruSink, Record, RecordSink
from .results import ArrivalResult, DecisionResult, DispatchResult, EntryResult, FireResult, RecoverResult
from .store import Decision, EntryRecord, LedgerRow, Store, StoreError, TaskState

__all__ = ["Runtime", "Loader"]

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
        except BaseException as exc:  # handed to the caller below
            outcome["error"] = exc
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
is not run again (RUNTIME.md §1: only positions without a marker run), and its outcome is unknown."""


class _Redelivered(Exception):
    """Internal: the entry has its record already (raised inside a unit to undo this delivery)."""


class _Failure(Exception):
    """An action failed; `panic` says whether it was an unexpected exception."""

    def __init__(self, message: str, *, panic: bool = False) -> None:
        super().__init__(message)
        self.message = message
        self.panic = panic


class Runtime:
    """Interprets one compiled plan against one store.  Thread-safe; holds no lock across executors."""

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
    ) -> None:
        self.plan = plan
        self.store = store
        self.executors = executors if executors is not None else ExecutorRegistry()
        if builtins:
            defaults = register_builtins(ExecutorRegistry())
            for kind in defaults.kinds():
                if kind not in self.executors:
                    fn = defaults.get(kind)
                    assert fn is not None
                    self.executors.register(kind, fn, transactional=True)
        self.loaders: dict[str, Loader] = dict(loaders or {})
        self.directory: Directory = directory or StaticDirectory()
        self.sinks: list[RecordSink] = list(sinks) if sinks is not None else [LoguruSink()]
        self.host: dict[str, Any] = {"engine_ready": True, **(host or {})}
        self.executor_timeout = executor_timeout
        self.session_live = session_live
        self.counters = Counters()
        self._workflows = {wf.id: wf for wf in plan.workflows}
        self._steps = {(wf.id, s.id): s for wf in plan.workflows for s in wf.steps}
        self._step_ids = {wf.id: tuple(s.id for s in wf.steps) for wf in plan.workflows}
        self._triggers = {t.name: t for t in plan.triggers}
        self._kinds = {k.name: k for k in plan.kinds}
        self._sequences = {s.name: s for s in plan.sequences}
        self._records = {r.name: r.fields for r in plan.records}
        self._entry_trigger = plan.entry_policy.trigger

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

    # ---- arrivals ---------------------------------------------------------------------------------
    def create_task(self, task_id: str, workflow_id: str, step_id: str | None = None, *, description: str = "",
                    session_id: str | None = None, is_from_office: bool = False, is_ephemeral: bool = False,
                    actor_kind: str = "system", actor_id: str | None = None) -> ArrivalResult:
        """Create a task into a step (its workflow's start step by default): an arrival, route `creation`."""
        wf = self.workflow(workflow_id)
        step_id = step_id or wf.start_step
        self.step(workflow_id, step_id)
        if self.store.get_task(task_id) is not None:
            raise RuntimeFault(f"task `{task_id}` exists already")
        task = TaskState(task_id, workflow_id, step_id, description, is_from_office, is_ephemeral, False)
        try:
            result = self.store.create_task(task, actor_kind=actor_kind, actor_id=actor_id, session_id=session_id)
        except StoreError:
            if self.store.get_task(task_id) is not None:  # a concurrent creation won: a refusal, not a store fault
                raise RuntimeFault(f"task `{task_id}` exists already") from None
            raise
        return self._after_move(result.ledger, task_id, None, session_id)

    def move(self, task_id: str, to_step: str, *, route: str = "manual_move", session_id: str | None = None,
             actor_kind: str = "human", actor_id: str | None = None, workflow_id: str | None = None,
             expected_step: str | None = None, dispatch: bool = True) -> ArrivalResult:
        """Move a task; the ledger row commits with the step change, entry dispatch runs after commit.

        A `manual_move` into a step without `manual_move` is refused (a `warning` record).
        `dispatch=False` commits the arrival without dispatching (what a crash after commit
        leaves behind; `recover` dispatches it)."""
        task = self.task(task_id)
        target_wf = workflow_id or task.workflow_id
        if target_wf is None:
            raise UnknownWorkflowError(f"task `{task_id}` is in no workflow; name `workflow_id`")
        step = self.step(target_wf, to_step)
        if route == "manual_move" and not step.manual_move:
            self.emit("warning", "warning", "manual move refused: the step does not allow manual moves",
                      code="manual_move_not_allowed", task=task_id, workflow=target_wf, step=to_step,
                      **({"from": task.step_id}))
            return ArrivalResult("refused", task_id, task.step_id, to_step, reason="manual_move_not_allowed")
        result = self.store.move_task(task_id, target_wf, to_step, route=route, actor_kind=actor_kind,
                                      actor_id=actor_id if actor_kind != "agent" else (actor_id or session_id),
                                      session_id=session_id, expected_step_id=expected_step)
        if result.status == "unknown_task":
            raise UnknownTaskError(f"no task `{task_id}`")
        if result.status == "cas_lost":
            return ArrivalResult("cas_lost", task_id, task.step_id, to_step, reason="the task moved meanwhile")
        if result.status == "same_step":
            return ArrivalResult("same_step", task_id, task.step_id, to_step)
        return self._after_move(result.ledger, task_id, task.step_id, session_id, dispatch=dispatch)

    def switch_workflow(self, task_id: str, workflow_id: str, step_id: str | None = None, *,
                        session_id: str | None = None) -> ArrivalResult:
        """Move a task into another workflow (its start step by default): one arrival, one entry dispatch."""
        wf = self.workflow(workflow_id)
        return self.move(task_id, step_id or wf.start_step, route="workflow_switch", workflow_id=workflow_id,
                         session_id=session_id, actor_kind="agent" if session_id else "system")

    def _after_move(self, ledger: LedgerRow | None, task_id: str, from_step: str | None, session_id: str | None,
                    *, dispatch: bool = True) -> ArrivalResult:
        if ledger is None:
            return ArrivalResult("same_step", task_id, from_step, from_step)
        self.counters.add("arrivals")
        self.emit("arrival", "info", task=task_id, **{"from": ledger.from_step_id}, to=ledger.to_step_id,
                  ledger_id=ledger.id, route=ledger.route, workflow=ledger.to_workflow_id, session=session_id)
        live = session_id is not None or (self.session_live is not None and self.session_live(task_id))
        entry = self._enter(ledger, session_live=live) if dispatch else None
        return ArrivalResult("moved", task_id, ledger.from_step_id, ledger.to_step_id, ledger.id, entry)

    def dispatch_entry(self, ledger_id: int, *, session_live: bool = False) -> EntryResult:
        """Dispatch the entry of a ledger row written by the host (through `LedgerWriter`), after its commit."""
        row = self.store.ledger_row(ledger_id)
        if row is None:
            raise RuntimeFault(f"no ledger row {ledger_id}")
        return self._enter(row, session_live=session_live)

    def recover(self) -> RecoverResult:
        """Dispatch every arrival that has no entry record (the crash window between commit and dispatch)."""
        entries = []
        while True:
            rows = self.store.unrecorded_arrivals(limit=500)
            done = [self._enter(row, session_live=False) for row in rows]
            entries.extend(done)
            if len(rows) < 500 or all(e.status == "incomplete" for e in done):
                break
        return RecoverResult(sum(1 for e in entries if e.status == "dispatched"), tuple(entries))

    # ---- step entry: record-and-continue ------------------------------------------------------------
    def _enter(self, row: LedgerRow, *, session_live: bool) -> EntryResult:
        if row.to_step_id is None or row.to_workflow_id is None:
            return EntryResult(row.id, "detach")
        step_plan = self._steps.get((row.to_workflow_id, row.to_step_id))
        if step_plan is not None and self._all_transactional(step_plan):
            return self._enter_atomically(row, step_plan, session_live=session_live)
        try:
            if self.store.entry_record(row.id) is not None:
                self.counters.add("redeliveries_discarded")
                self.emit("redelivery_discarded", "info", task=row.task_id, entry_id=row.id, step=row.to_step_id,
                          session=row.session_id)
                return EntryResult(row.id, "redelivery")
            step = self._steps.get((row.to_workflow_id, row.to_step_id))
            if step is None:
                reason = f"step `{row.to_step_id}` of workflow `{row.to_workflow_id}` is not in the plan"
                self.emit("warning", "warning", "entry of a step the plan does not know", code="unknown_step",
                          task=row.task_id, workflow=row.to_workflow_id, step=row.to_step_id, entry_id=row.id)
                record = EntryRecord(row.id, row.task_id, row.to_workflow_id, row.to_step_id, (),
                                     ((row.to_step_id, reason),))
                self.store.record_entry(record)
                self.counters.add("entries_dispatched")
                self.emit("entry", "info", task=row.task_id, step=row.to_step_id, entry_id=row.id, attempted=[],
                          failed=[{"kind": k, "error": e} for k, e in record.failed], workflow=row.to_workflow_id,
                          session=row.session_id)
                return EntryResult(row.id, "dispatched", (), record.failed)
            task = self.store.get_task(row.task_id) or TaskState(row.task_id, row.to_workflow_id, row.to_step_id)
            if session_live and step.entry_inline:
                self.emit("inline", "debug", task=row.task_id, step=step.id, kinds=list(step.entry_inline),
                          entry_id=row.id, session=row.session_id)
            markers = self.store.markers(row.id)
            attempted: list[str] = []
            failed: list[tuple[str, str]] = []
            for action in step.entry_dispatch:
                attempted.append(action.kind)
                error = self._entry_action(row, task, step, action, markers.get(action.position))
                if error is not None:
                    failed.append((action.kind, error))
            record = EntryRecord(row.id, row.task_id, row.to_workflow_id, step.id, tuple(attempted), tuple(failed))
            if not self.store.record_entry(record):
                # another delivery of this entry recorded it meanwhile: it is the one dispatch of the row
                self.counters.add("redeliveries_discarded")
                self.emit("redelivery_discarded", "info", task=row.task_id, entry_id=row.id, step=row.to_step_id,
                          session=row.session_id)
                return EntryResult(row.id, "redelivery")
        except StoreError as exc:
            self.emit("error", "error", "entry dispatch interrupted: the store failed; `recover` will finish it",
                      task=row.task_id, session=row.session_id, entry_id=row.id, message=str(exc))
            return EntryResult(row.id, "incomplete")
        self.counters.add("entries_dispatched")
        self.emit("entry", "info", task=row.task_id, step=step.id, entry_id=row.id, attempted=attempted,
                  failed=[{"kind": k, "error": e} for k, e in failed], workflow=row.to_workflow_id,
                  session=row.session_id)
        return EntryResult(row.id, "dispatched", tuple(attempted), tuple(failed))

    def _all_transactional(self, step: PlanStep) -> bool:
        """Every dispatched entry action has a transactional (store-backed) executor."""
        is_tx = self.executors.is_transactional
        return all(is_tx(a.kind) for a in step.entry_dispatch)

    def _redelivered(self, row: LedgerRow) -> EntryResult:
        self.counters.add("redeliveries_discarded")
        self.emit("redelivery_discarded", "info", task=row.task_id, entry_id=row.id, step=row.to_step_id,
                  session=row.session_id)
        return EntryResult(row.id, "redelivery")

    def _enter_atomically(self, row: LedgerRow, step: PlanStep, *, session_live: bool) -> EntryResult:
        """Dispatch an entry whose actions are all store-backed in ONE transaction: each action in a
        savepoint (record-and-continue), the entry record last.  One commit per entry; records are
        emitted only once it has committed."""
        assert row.to_workflow_id is not None
        pending: list[tuple[str, Level, str | None, dict[str, Any]]] = []
        attempted: list[str] = []
        failed: list[tuple[str, str]] = []
        try:
            with self.store.unit() as tx:
                if tx.entry_record(row.id) is not None:
                    raise _Redelivered
                task = tx.get_task(row.task_id) or TaskState(row.task_id, row.to_workflow_id, step.id)
                markers = tx.markers(row.id) if step.entry_dispatch else {}
                for action in step.entry_dispatch:
                    attempted.append(action.kind)
                    error = self._entry_action_in(tx, row, task, step, action, markers.get(action.position),
                                                  pending)
                    if error is not None:
                        failed.append((action.kind, error))
                record = EntryRecord(row.id, row.task_id, row.to_workflow_id, step.id, tuple(attempted),
                                     tuple(failed))
                if not tx.record_entry(record):
                    raise _Redelivered  # another delivery recorded it meanwhile: undo ours
        except _Redelivered:
            return self._redelivered(row)
        except StoreError as exc:
            self.emit("error", "error", "entry dispatch interrupted: the store failed; `recover` will finish it",
                      task=row.task_id, session=row.session_id, entry_id=row.id, message=str(exc))
            return EntryResult(row.id, "incomplete")
        if session_live and step.entry_inline:
            self.emit("inline", "debug", task=row.task_id, step=step.id, kinds=list(step.entry_inline),
                      entry_id=row.id, session=row.session_id)
        for kind, level, message, fields in pending:
            if kind == "effect":
                self.counters.add("effects")
            self.emit(kind, level, message, **fields)
        self.counters.add("entries_dispatched")
        self.emit("entry", "info", task=row.task_id, step=step.id, entry_id=row.id, attempted=attempted,
                  failed=[{"kind": k, "error": e} for k, e in failed], workflow=row.to_workflow_id,
                  session=row.session_id)
        return EntryResult(row.id, "dispatched", tuple(attempted), tuple(failed))

    def _entry_action_in(self, tx: Store, row: LedgerRow, task: TaskState, step: PlanStep, action: PlanAction,
                         marker: Any, pending: list[tuple[str, Level, str | None, dict[str, Any]]]) -> str | None:
        """One store-backed entry action inside the entry's transaction, in a savepoint of its own."""
        if marker is not None:
            if marker.state == "done":
                return None
            return str(marker.error or "failed") if marker.state == "failed" else IN_PROGRESS
        assert row.to_workflow_id is not None
        kind, position = action.kind, action.position
        fn = self.executors.get(kind)
        assert fn is not None
        ctx = self._context(action, task, row.to_workflow_id, step.id, self._entry_trigger, entry_id=row.id,
                            session_id=row.session_id, key=f"entry:{row.id}:{position}:{kind}")
        try:
            with tx.unit() as sp:
                if not sp.claim_marker(row.id, position, kind):
                    return None  # another delivery has it
                effects = fn(action.args, replace(ctx, store=sp)) or ()
                sp.finish_marker(row.id, position, "done")
        except StoreError:
            raise
        except Exception as exc:  # ActionFailed: an ordinary failure; anything else: a contained fault
            panic = not isinstance(exc, ActionFailed)
            message = f"{type(exc).__name__}: {exc}" if panic else str(exc)
            self.counters.add("executor_failures")
            if panic:
                pending.append(("error", "error", None, {"task": task.id, "session": row.session_id, "kind": kind,
                                                         "message": message}))
            if tx.claim_marker(row.id, position, kind):
                tx.finish_marker(row.id, position, "failed", message)
            return message
        for effect in effects:
            pending.append(("effect", "info", None, {"kind": kind, "task": task.id, "step": step.id,
                                                     "entry_id": row.id,
                                                     **{k: v for k, v in effect.items() if k != "kind"}}))
        return None

    def _context(self, action: PlanAction, task: TaskState, workflow_id: str, step_id: str, trigger: str, *,
                 entry_id: int | None = None, operation_id: str | None = None, session_id: str | None = None,
                 payload: Mapping[str, Any] | None = None, key: str | None = None) -> ActionContext:
        return ActionContext(kind=action.kind, task=task, workflow_id=workflow_id, step_id=step_id, trigger=trigger,
                             position=action.position, idempotency_key=key, entry_id=entry_id,
                             operation_id=operation_id, session_id=session_id, payload=payload or {},
                             runtime=self, directory=self.directory,
                             workflow_steps=self._step_ids.get(workflow_id, (step_id,)))

    def _entry_action(self, row: LedgerRow, task: TaskState, step: PlanStep, action: PlanAction,
                      marker: Any) -> str | None:
        """Run one dispatched entry action at most once per entry; return its error (None: ok)."""
        if marker is not None and marker.state == "done":
            return None
        if marker is not None and marker.state == "failed":
            return str(marker.error or "failed")
        if marker is not None:  # in_progress: claimed by a delivery still running it, or one a crash cut short
            return IN_PROGRESS
        assert row.to_workflow_id is not None
        kind = action.kind
        key = f"entry:{row.id}:{action.position}:{kind}"
        fn = self.executors.get(kind)
        if fn is None:
            self._warn_missing(row.to_workflow_id, step.id, kind, task.id, row.session_id)
            if self.store.claim_marker(row.id, action.position, kind):
                self.store.finish_marker(row.id, action.position, "failed", "no executor")
            return "no executor"
        ctx = self._context(action, task, row.to_workflow_id, step.id, self._entry_trigger, entry_id=row.id,
                            session_id=row.session_id, key=key)
        effects: Sequence[Effect] = ()
        # Whether this position's marker exists when a failure is recorded: a pre-existing marker, or
        # the one a host executor's call claimed outside any unit (a unit's claim is undone with it).
        held = marker is not None
        try:
            if self.executors.is_transactional(kind):
                with self.store.unit() as tx:
                    if marker is None and not tx.claim_marker(row.id, action.position, kind):
                        return None  # another delivery has it
                    effects = fn(action.args, replace(ctx, store=tx)) or ()
                    tx.finish_marker(row.id, action.position, "done")
            else:
                if marker is None:
                    if not self.store.claim_marker(row.id, action.position, kind):
                        return None
                    held = True
                effects = self._call(fn, action.args, ctx)
                self.store.finish_marker(row.id, action.position, "done")
        except _Failure as failure:
            self._record_failure(failure, task.id, row.session_id, kind)
            self._mark_failed(row.id, action.position, kind, failure.message, had_marker=held)
            return failure.message
        except ActionFailed as exc:
            self._record_failure(_Failure(str(exc)), task.id, row.session_id, kind)
            self._mark_failed(row.id, action.position, kind, str(exc), had_marker=held)
            return str(exc)
        except StoreError:
            raise
        except Exception as exc:  # an executor fault inside the unit
            fault = _Failure(f"{type(exc).__name__}: {exc}", panic=True)
            self._record_failure(fault, task.id, row.session_id, kind)
            self._mark_failed(row.id, action.position, kind, fault.message, had_marker=held)
            return fault.message
        self._emit_effects(effects, kind, task.id, step.id, entry_id=row.id)
        return None

    def _mark_failed(self, entry_id: int, position: int, kind: str, error: str, *, had_marker: bool) -> None:
        if had_marker or self.store.claim_marker(entry_id, position, kind):
            self.store.finish_marker(entry_id, position, "failed", error)

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
        """Call a host executor, with the configured timeout; failures become `_Failure`."""
        try:
            if self.executor_timeout is None:
                result = fn(args, ctx)
            else:
                result = _call_with_timeout(fn, args, ctx, self.executor_timeout)
        except (_Failure, StoreError):
            raise
        except ActionFailed as exc:
            raise _Failure(str(exc)) from None
        except Exception as exc:
            raise _Failure(f"{type(exc).__name__}: {exc}", panic=True) from None
        if result is None:
            return ()
        if not isinstance(result, (list, tuple)) or not all(isinstance(e, Mapping) for e in result):
            raise _Failure(f"executor returned {type(result).__name__}, expected a list of effect dicts or None")
        return [dict(e) for e in result]

    def _warn_missing(self, workflow_id: str, step_id: str, kind: str, task_id: str, session_id: str | None) -> None:
        self.counters.add("missing_executors")
        step = self._steps.get((workflow_id, step_id))
        self.emit("warning", "warning", "no executor registered for action kind", code="no_executor",
                  workflow=workflow_id, step=step_id, step_title=step.title if step else None, kind=kind,
                  task=task_id, session=session_id)

    # ---- other triggers: abort-on-first -------------------------------------------------------------
    def fire(self, trigger: str, task_id: str, *, session_id: str | None = None,
             payload: Mapping[str, Any] | None = None, operation_id: str | None = None) -> FireResult:
        """Run a step's handler for a non-entry trigger (RUNTIME.md §2)."""
        return self._fire(trigger, task_id, session_id=session_id, payload=payload, operation_id=operation_id,
                          outcome_label={"trigger": trigger})

    def _check_payload(self, trigger: str, payload: Mapping[str, Any] | None) -> dict[str, Any]:
        trig = self._triggers.get(trigger)
        if trig is None:
            raise UnknownTriggerError(f"unknown trigger `{trigger}` (known: {', '.join(self._triggers)})")
        if trigger == self._entry_trigger:
            raise RuntimeFault(f"`{trigger}` is the entry trigger: arrivals dispatch it (use move())")
        if not payload and not trig.params:
            return {}  # the common case of the kanban-era triggers: nothing to check
        if payload is not None and not isinstance(payload, Mapping):
            raise PayloadError(f"`{trigger}`'s payload is a mapping of field to value, not {type(payload).__name__}")
        given = dict(payload or {})
        names = {p.name for p in trig.params}
        extra = sorted(set(given) - names)
        if extra:
            raise PayloadError(f"`{trigger}` has no payload field {', '.join(f'`{e}`' for e in extra)} "
                               f"(fields: {', '.join(sorted(names)) or 'none'})")
        missing = [p.name for p in trig.params if p.required and p.name not in given]
        if missing:
            raise PayloadError(f"`{trigger}`'s payload lacks {', '.join(f'`{m}`' for m in missing)} "
                               f"(fields: {', '.join(f'{p.name}: {p.type}' for p in trig.params)})")
        for p in trig.params:
            if p.name in given:
                problem = self._type_problem(given[p.name], p.type)
                if problem:
                    raise PayloadError(f"`{trigger}`'s payload field `{p.name}` ({p.type}): {problem}")
            else:
                given[p.name] = p.default
        try:
            json.dumps(given)
        except (TypeError, ValueError) as exc:
            raise PayloadError(f"`{trigger}`'s payload is not plain JSON data: {exc}") from None
        return given

    def _type_problem(self, value: Any, type_: str) -> str | None:
        """Why `value` is not of the plan type `type_` (None: it is).  Record types are checked field by field;
        `any` is anything; step, role, target and task references are strings."""
        if type_.endswith("?"):
            if value is None:
                return None
            type_ = type_[:-1]
        if type_ == "any":
            return None
        if type_.startswith("list[") and type_.endswith("]"):
            if not isinstance(value, (list, tuple)):
                return f"expected a list, got {type(value).__name__}"
            for i, item in enumerate(value):
                problem = self._type_problem(item, type_[5:-1])
                if problem:
                    return f"item {i}: {problem}"
            return None
        if type_ == "map":
            return None if isinstance(value, Mapping) else f"expected a mapping, got {type(value).__name__}"
        record = self._records.get(type_)
        if record is not None:
            if not isinstance(value, Mapping):
                return f"expected a `{type_}` mapping, got {type(value).__name__}"
            for name, item in value.items():
                if name not in record:
                    return f"`{type_}` has no field `{name}`"
                problem = self._type_problem(item, record[name])
                if problem:
                    return f"field `{name}`: {problem}"
            return None
        python = {"int": int, "bool": bool}.get(type_, str)
        if (isinstance(value, bool) and python is not bool) or not isinstance(value, python):
            return f"expected {type_}, got {type(value).__name__}"
        return None

    def _fire(self, trigger: str, task_id: str, *, session_id: str | None, payload: Mapping[str, Any] | None,
              operation_id: str | None, outcome_label: Mapping[str, Any],
              task: TaskState | None = None) -> FireResult:
        payload = self._check_payload(trigger, payload)
        task = task or self.task(task_id)
        if task.workflow_id is None or task.step_id is None:
            raise UnknownStepError(f"task `{task_id}` is at no step")
        step = self.step(task.workflow_id, task.step_id)
        wf_id = task.workflow_id
        actions = step.handlers.get(trigger, ())
        for action in actions:  # the pre-dispatch walk: warns even on an idempotent replay
            if action.action_class != "transition" and action.kind not in self.executors:
                self._warn_missing(wf_id, step.id, action.kind, task.id, session_id)
        if operation_id and self.store.operation_applied(operation_id):
            self.counters.add("idempotent")
            self.counters.add("redeliveries_discarded")
            # trace-only (silent): an idempotent replay writes no dispatch record (RUNTIME.md §3)
            self.emit("redelivery_discarded", "silent", task=task.id, operation_id=operation_id, trigger=trigger)
            self.emit("outcome", "silent", **outcome_label, result="idempotent", guard=None, task=task.id,
                      operation_id=operation_id)
            return FireResult("idempotent", trigger, task.id, step.id, operation_id)
        target: str | None = None
        chosen = False
        executed: list[str] = []
        for action in actions:
            if action.action_class == "transition":
                if chosen or action.requires_approval:
                    continue
                if action.guard is not None:
                    q = self._quorum(action, task, step.id, wf_id)
                    if not q.satisfied:
                        self.counters.skip(f"quorum:{q.reason}")
                        continue
                chosen, target = True, action.target_step
                continue
            fn = self.executors.get(action.kind)
            if fn is None:
                continue
            key = f"{operation_id}:{action.position}:{action.kind}" if operation_id else None
            ctx = self._context(action, task, wf_id, step.id, trigger, operation_id=operation_id,
                                session_id=session_id, payload=payload, key=key)
            try:
                if self.executors.is_transactional(action.kind):
                    with self.store.unit() as tx:
                        effects = fn(action.args, replace(ctx, store=tx)) or ()
                else:
                    effects = self._call(fn, action.args, ctx)
            except (_Failure, ActionFailed, StoreError, Exception) as exc:
                failure = exc if isinstance(exc, _Failure) else _Failure(
                    str(exc) if isinstance(exc, (ActionFailed, StoreError)) else f"{type(exc).__name__}: {exc}",
                    panic=not isinstance(exc, (ActionFailed, StoreError)))
                self._record_failure(failure, task.id, session_id, action.kind)
                self.emit("dispatch", "error", MESSAGES["dispatch_error"], trigger=trigger, task=task.id,
                          session=session_id, step=step.id, operation_id=operation_id, actions=executed,
                          failed_kind=action.kind, error=failure.message)
                self.emit("outcome", "silent", **outcome_label, result="error", guard=None, task=task.id,
                          operation_id=operation_id)
                return FireResult("error", trigger, task.id, step.id, operation_id, tuple(executed),
                                  error=failure.message)
            executed.append(action.kind)
            self._emit_effects(effects, action.kind, task.id, step.id, operation_id=operation_id)
        self.counters.add("dispatches")
        level: Level = "info" if actions else "debug"
        self.emit("dispatch", level, MESSAGES["dispatch_info" if actions else "dispatch_debug"], trigger=trigger,
                  task=task.id, session=session_id, step=step.id, operation_id=operation_id,
                  actions=[a.kind for a in actions])
        arrival = None
        if target is not None and target != step.id:
            result = self.store.move_task(task.id, wf_id, target, route="engine_transition",
                                          actor_kind="agent" if session_id else "system", actor_id=session_id,
                                          session_id=session_id, expected_step_id=step.id,
                                          operation_id=operation_id, operation_trigger=trigger)
            if result.status == "moved":
                self.counters.add("transitions")
                arrival = self._after_move(result.ledger, task.id, step.id, session_id)
            else:
                if operation_id:
                    self.store.mark_operation(operation_id, task_id=task.id, trigger=trigger)
                arrival = ArrivalResult("cas_lost" if result.status == "cas_lost" else "same_step", task.id,
                                        step.id, target)
        elif operation_id:
            self.store.mark_operation(operation_id, task_id=task.id, trigger=trigger)
        self.emit("outcome", "silent", **outcome_label, result="dispatched", guard=None, task=task.id,
                  operation_id=operation_id)
        return FireResult("dispatched", trigger, task.id, step.id, operation_id, tuple(executed), arrival)

    def _quorum(self, action: PlanAction, task: TaskState, step_id: str, workflow_id: str) -> Any:
        guard = action.guard
        assert guard is not None
        participants = self.store.participants(task.id, self._step_ids.get(workflow_id, (step_id,)))
        decisions = self.store.decisions(task.id, step_id)
        return evaluate_quorum(role=guard.role, threshold=guard.threshold, count=guard.count,
                               participants=participants, decisions=decisions, task_id=task.id, step_id=step_id)

    # ---- decisions -------------------------------------------------------------------------------------
    def record_decision(self, task_id: str, *, verdict: str, agent: str | None = None, user: str | None = None,
                        role: str = "", session_id: str | None = None) -> DecisionResult:
        """Store a decision at the task's current step and re-evaluate its guarded `on_turn_complete`
        transitions; a satisfied one moves the task with a compare-and-swap (route `decision`)."""
        if (agent is None) == (user is None):
            raise RuntimeFault("a decision comes from exactly one of `agent` or `user`")
        if agent is not None and not role:
            raise RuntimeFault("an agent's decision names its role")
        task = self.task(task_id)
        if task.workflow_id is None or task.step_id is None:
            raise UnknownStepError(f"task `{task_id}` is at no step")
        step = self.step(task.workflow_id, task.step_id)
        decision = self.store.record_decision(Decision(
            task_id, step.id, "agent" if agent is not None else "user", agent if agent is not None else user or "",
            role, verdict, session_id=session_id))
        return self.reevaluate(task.id, step.id, decision.id, actor=agent or user, actor_kind="agent" if agent else
                               "human", session_id=session_id)

    def reevaluate(self, task_id: str, step_id: str, decision_id: int, *, actor: str | None = None,
                   actor_kind: str = "system", session_id: str | None = None) -> DecisionResult:
        """Re-evaluate the guarded transitions of `step_id` after decision `decision_id` (idempotent per decision)."""
        task = self.task(task_id)
        assert task.workflow_id is not None
        step = self.step(task.workflow_id, step_id)
        operation_id = f"decision:{task.id}:{step.id}:{decision_id}"
        agent = actor if actor_kind == "agent" else None
        user = actor if actor_kind != "agent" else None
        if self.store.operation_applied(operation_id):
            self.counters.add("redeliveries_discarded")
            self.emit("redelivery_discarded", "silent", task=task.id, operation_id=operation_id, trigger="decision")
            return DecisionResult(decision_id, task.id, step.id, idempotent=True)
        if task.step_id != step.id:  # the task left the decision's step: nothing to re-evaluate
            self.store.mark_operation(operation_id, task_id=task.id, trigger="decision")
            return DecisionResult(decision_id, task.id, step.id, abandoned=True)
        target = None
        for action in step.handlers.get("on_turn_complete", ()):
            if action.action_class != "transition" or action.guard is None or action.requires_approval:
                continue
            q = self._quorum(action, task, step.id, task.workflow_id)
            if not q.satisfied:
                self.counters.skip(f"quorum:{q.reason}")
                continue
            if action.target_step is not None and action.target_step != step.id:
                target = action.target_step
                break
        if target is None:
            self.store.mark_operation(operation_id, task_id=task.id, trigger="decision")
            return DecisionResult(decision_id, task.id, step.id)
        result = self.store.move_task(task.id, task.workflow_id, target, route="decision",
                                      actor_kind="agent" if agent else "human", actor_id=agent or user,
                                      session_id=session_id, expected_step_id=step.id, operation_id=operation_id,
                                      operation_trigger="decision")
        if result.status != "moved":
            return DecisionResult(decision_id, task.id, step.id, abandoned=True)
        self.counters.add("transitions")
        arrival = self._after_move(result.ledger, task.id, step.id, session_id)
        return DecisionResult(decision_id, task.id, step.id, transitioned=True, arrival=arrival)

    # ---- dispatch sequences: first match wins ---------------------------------------------------------
    def dispatch(self, sequence: str, event: Mapping[str, Any], *, host: Mapping[str, Any] | None = None) -> DispatchResult:
        """Run a `dispatch` block for a host event (RUNTIME.md §3).  Never raises for engine errors."""
        seq = self._sequences.get(sequence)
        if seq is None:
            raise RuntimeFault(f"no dispatch sequence `{sequence}` (known: {', '.join(self._sequences) or 'none'})")
        label = {"sequence": seq.name}
        task_id = str(event.get("task_id") or "")
        session_id = str(event.get("session_id") or "") or None
        try:
            return self._dispatch(seq, dict(event), {**self.host, **(host or {})}, label, task_id, session_id)
        except Exception as exc:  # an engine error: one ERROR record, never raised to the host
            message = f"{type(exc).__name__}: {exc}"
            self.emit("dispatch", "error", MESSAGES["dispatch_error"], trigger=seq.trigger, task=task_id,
                      session=session_id, step=None, operation_id=None, actions=[], error=message,
                      sequence=seq.name)
            self.emit("outcome", "silent", **label, result="error", guard=None, task=task_id)
            return DispatchResult("error", seq.name, error=message)

    def _skip(self, seq: PlanSequence, guard: str, level: Level, message: str | None, task_id: str,
              session_id: str | None, label: Mapping[str, Any], **why: Any) -> DispatchResult:
        self.counters.skip(guard)
        if level != "silent":
            # `why`: what made the guard match (the values its condition read, or the loader's error),
            # so a record names e.g. the blocking session (the on_agent_error seed's AC-F5)
            self.emit("skip", level, message or guard, sequence=seq.name, guard=guard, level=level,
                      task=task_id, session=session_id, **why)
        self.emit("outcome", "silent", **label, result="skipped", guard=guard, task=task_id)
        return DispatchResult("skipped", seq.name, guard=guard)

    def _dispatch(self, seq: PlanSequence, event: dict[str, Any], host: dict[str, Any], label: Mapping[str, Any],
                  task_id: str, session_id: str | None) -> DispatchResult:
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
        fire = self._fire(seq.trigger, task_id, session_id=session_id, payload=payload, operation_id=operation_id,
                          outcome_label=label)
        result = {"dispatched": "dispatched", "idempotent": "idempotent", "error": "error"}[fire.result]
        return DispatchResult(result, seq.name, operation_id=operation_id, payload=payload, fire=fire,  # type: ignore[arg-type]
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
