"""A plan, a store and executors in; arrivals, entry dispatch, trigger dispatch, dispatch sequences and decisions
out — the runtime a host orchestrator embeds.

Step entry is record-and-continue (docs/runtime.md §1), every other trigger abort-on-first (§2),
dispatch sequences first-match-wins (§3).  Idempotency is durable: entry records and per-position
markers for arrivals, operation claims and marks for other triggers, all in the store.  The runtime
holds no lock while an executor runs, so executors may call back in.

`Runtime` builds its components and each public method delegates to one of them (ADR 0027).  Calls go
one way, down this list; no component reads another's state:

    Runtime ─┬─ Sequences ── TriggerDispatch ─┬─ Arrivals ─┬─ EntryDispatch ─┬─ Invoker ── PlanIndex
             ├─ Decisions ───────────────────┤            └─ Exits ─────────┤
             ├─ Recovery (claims, entry, decisions)                           └─ Recorder
             └─ OperationClaims ── Store
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

from .arrivals import Arrivals
from .builtins import register_builtins
from .claims import OperationClaims
from .decisions import Decisions
from .entry import EntryDispatch
from .errors import RuntimeFault
from .executors import Directory, ExecutorRegistry, StaticDirectory
from .exits import Exits
from .index import PlanIndex
from .invoker import Invoker
from .plan import Plan
from .recorder import Recorder
from .records import Counters, RecordSink
from .recovery import Recovery
from .results import ArrivalResult, DecisionResult, DispatchResult, EntryResult, FireResult, RecoverResult
from .sequences import Loader, Sequences
from .store import Store
from .triggers import TriggerDispatch

__all__ = ["Runtime", "Loader"]


class Runtime:
    """Interprets one compiled plan against one store.  Thread-safe; holds no lock across host executors.

    `Runtime(plan, store, *, executors=None, loaders=None, directory=None, sinks=None, host=None,
    executor_timeout=60.0, builtins=True, session_live=None, atomic_arrivals=True, operation_lease=600.0)`:

    - `plan`: a compiled `Plan` (or a compile result with one); `store`: a `Store`.
    - `executors`: an `ExecutorRegistry` (the built-in store-backed kinds are added unless
      `builtins=False`); `executor_timeout`: seconds before a host executor is abandoned (None:
      called in place, no thread).
    - `loaders`: the records dispatch sequences `load`; `directory`: who the agents are;
      `host`: host flags guards read; `session_live(task_id)`: whether a task has a live session.
    - `sinks`: record sinks (default: loguru); `[]` builds no records at all.
    - `atomic_arrivals`: on a durable store, an arrival whose entry is all store-backed commits
      with its entry in one transaction (ADR 0010); False dispatches every entry after the commit.
    - `operation_lease`: seconds a delivery's claim on its operation id lasts (ADR 0020).
    """

    def __init__(self, plan: Plan, store: Store, *, executors: ExecutorRegistry | None = None,
                 loaders: Mapping[str, Loader] | None = None, directory: Directory | None = None,
                 sinks: Sequence[RecordSink] | None = None, host: Mapping[str, Any] | None = None,
                 executor_timeout: float | None = 60.0, builtins: bool = True,
                 session_live: Callable[[str], bool] | None = None, atomic_arrivals: bool = True,
                 operation_lease: float = 600.0) -> None:
        plan = _the_plan(plan)
        if not isinstance(store, Store):
            raise RuntimeFault(f"`store` must implement interlock.runtime.Store (e.g. interlock.stores.open_store(url) "
                               f"or MemoryStore()), not {type(store).__name__}")
        self.plan = plan
        self.store = store
        self.executors = executors if executors is not None else ExecutorRegistry()
        if builtins:
            defaults = register_builtins(ExecutorRegistry())
            for kind, entry in defaults.entries.items():
                if kind not in self.executors:
                    self.executors.register(kind, entry.fn, transactional=True, replayable=entry.replayable)
        self.atomic_arrivals = atomic_arrivals
        self.operation_lease = operation_lease
        self.session_live = session_live
        self.recorder = Recorder(sinks, Counters())
        index = self.index = PlanIndex(plan)
        self.invoker = Invoker(self.executors, index, directory or StaticDirectory(), self, executor_timeout)
        # A durable store writes a step change and an entry whose actions are all store-backed in one transaction
        # (ADR 0010); False keeps docs/runtime.md §1's literal shape: the entry after the commit.
        atomic = atomic_arrivals and bool(getattr(store, "durable", False))
        self.claims = OperationClaims(store, operation_lease)
        self.entries = EntryDispatch(index, store, self.invoker, self.recorder)
        self.exits = Exits(index, store, self.invoker, self.recorder)
        self.arrivals = Arrivals(index, store, self.entries, self.exits, self.recorder, atomic=atomic,
                                 session_live=session_live)
        self.triggers = TriggerDispatch(index, store, self.claims, self.invoker, self.exits, self.arrivals,
                                        self.recorder)
        self.decisions = Decisions(index, store, self.exits, self.arrivals, self.recorder)
        self.sequences = Sequences(index, loaders or {}, {"engine_ready": True, **(host or {})}, self.triggers,
                                   self.recorder)
        self.recovery = Recovery(store, self.claims, self.entries, self.decisions, self.recorder)

    # ---- what hosts read and set ---------------------------------------------------------------------------------
    @property
    def counters(self) -> Counters:
        return self.recorder.counters

    @property
    def sinks(self) -> list[RecordSink]:
        return self.recorder.sinks

    @property
    def loaders(self) -> dict[str, Loader]:
        """The loaders of dispatch sequences (a live dict: a host may add to it)."""
        return self.sequences.loaders

    @property
    def host(self) -> dict[str, Any]:
        """The host flags guards read (a live dict)."""
        return self.sequences.host

    @property
    def directory(self) -> Directory:
        """Who the agents are (settable: a host may swap its directory)."""
        return self.invoker.directory

    @directory.setter
    def directory(self, directory: Directory) -> None:
        self.invoker.directory = directory

    @property
    def executor_timeout(self) -> float | None:
        return self.invoker.timeout

    @executor_timeout.setter
    def executor_timeout(self, seconds: float | None) -> None:
        self.invoker.timeout = seconds

    def add_sink(self, sink: RecordSink) -> None:
        self.recorder.add_sink(sink)

    # ---- the calls, each a line ------------------------------------------------------------------------------
    def create_task(self, task_id: str, workflow_id: str, step_id: str | None = None, *, description: str = "",
                    session_id: str | None = None, is_from_office: bool = False, is_ephemeral: bool = False,
                    actor_kind: str = "system", actor_id: str | None = None) -> ArrivalResult:
        """Create a task into a step (its workflow's start step by default): an arrival, route `creation`."""
        return self.arrivals.create_task(task_id, workflow_id, step_id, description=description,
                                         session_id=session_id, is_from_office=is_from_office,
                                         is_ephemeral=is_ephemeral, actor_kind=actor_kind, actor_id=actor_id)

    def move(self, task_id: str, to_step: str, *, route: str = "manual_move", session_id: str | None = None,
             actor_kind: str = "human", actor_id: str | None = None, workflow_id: str | None = None,
             expected_step: str | None = None, dispatch: bool = True) -> ArrivalResult:
        """Move a task (docs/runtime.md §1, §2): `on_exit` first, the ledger row with the step change, then entry."""
        return self.arrivals.move(task_id, to_step, route=route, session_id=session_id, actor_kind=actor_kind,
                                  actor_id=actor_id, workflow_id=workflow_id, expected_step=expected_step,
                                  dispatch=dispatch)

    def switch_workflow(self, task_id: str, workflow_id: str, step_id: str | None = None, *,
                        session_id: str | None = None) -> ArrivalResult:
        """Move a task into another workflow (its start step by default): one arrival, one entry dispatch."""
        return self.arrivals.switch_workflow(task_id, workflow_id, step_id, session_id=session_id)

    def dispatch_entry(self, ledger_id: int, *, session_live: bool = False) -> EntryResult:
        """Dispatch the entry of a ledger row written by the host (through `LedgerWriter`), after its commit."""
        return self.entries.dispatch_entry(ledger_id, session_live=session_live)

    def fire(self, trigger: str, task_id: str, *, session_id: str | None = None,
             payload: Mapping[str, Any] | None = None, operation_id: str | None = None) -> FireResult:
        """Run a step's handler for a non-entry trigger (docs/runtime.md §2)."""
        return self.triggers.fire(trigger, task_id, session_id, payload, operation_id)

    def dispatch(self, sequence: str, event: Mapping[str, Any], *,
                 host: Mapping[str, Any] | None = None) -> DispatchResult:
        """Run a `dispatch` block for a host event (docs/runtime.md §3).  Never raises for engine errors."""
        return self.sequences.dispatch(sequence, event, host=host)

    def record_decision(self, task_id: str, *, verdict: str, agent: str | None = None, user: str | None = None,
                        role: str = "", session_id: str | None = None) -> DecisionResult:
        """Store a checked decision and re-evaluate the step's guarded transitions (docs/runtime.md §2)."""
        return self.decisions.record_decision(task_id, verdict=verdict, agent=agent, user=user, role=role,
                                              session_id=session_id)

    def reevaluate(self, task_id: str, step_id: str, decision_id: int, *, actor: str | None = None,
                   actor_kind: str = "system", session_id: str | None = None) -> DecisionResult:
        """Re-evaluate the guarded transitions of `step_id` after decision `decision_id` (idempotent per decision)."""
        return self.decisions.reevaluate(task_id, step_id, decision_id, actor=actor, actor_kind=actor_kind,
                                         session_id=session_id)

    def recover(self) -> RecoverResult:
        """Finish what a crash left: abandoned claims, arrivals without an entry record, decisions not re-evaluated."""
        return self.recovery.recover()


def _the_plan(plan: Any) -> Plan:
    """The `Plan` a runtime interprets; a compile result is taken for its plan, and one without a plan (its source
    has errors) is refused with its first diagnostics instead of failing somewhere inside the runtime."""
    if isinstance(plan, Plan):
        return plan
    inner = getattr(plan, "plan", _NOTHING)
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


_NOTHING = object()


def _where(diagnostic: Any) -> str:
    span = getattr(diagnostic, "span", None)
    if span is None:
        return ""
    return f"{getattr(span, 'file', '?')}:{getattr(span, 'line', '?')}:{getattr(span, 'col', '?')}: "
