"""A plan, a store and executors in; arrivals, entry dispatch, trigger dispatch, dispatch sequences and decisions
out — the runtime a host orchestrator embeds.

Step entry is record-and-continue (docs/runtime.md §1), every other trigger abort-on-first (§2),
dispatch sequences first-match-wins (§3).  Idempotency is durable: entry records and per-position
markers for arrivals, operation claims and marks for other triggers, all in the store.  A runtime is
one owner in the store (§6): its claims name it, its heartbeat keeps them, and the plan it runs is
kept there under its digest, so that any runtime of any revision can finish what it began.  The
runtime holds no lock while an executor runs, so executors may call back in.

`Runtime` builds its components and each public method delegates to one of them (ADRs 0027, 0036).
Calls go one way, down this list; no component reads another's state:

    Runtime ─┬─ Sequences ── TriggerDispatch ─┬─ Arrivals ─┬─ Entries ── EntryRun (per revision) ─┬─ Invoker
             ├─ Decisions ───────────────────┤            └─ Exits ────────────────────────────────┤
             ├─ Recovery (claims, entries, decisions)                                               └─ Recorder
             ├─ Ticker (trigger dispatch, entries) ── Incidents (ticker)
             └─ Claims ── Owner ── Store
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

from .arrivals import Arrivals
from .builtins import register_builtins
from .checks import check_id
from .claims import Claims
from .coroutines import SyncLoaders
from .decisions import Decisions
from .entries import Entries
from .errors import RuntimeFault
from .executors import ActionContext, Directory, ExecutorRegistry, StaticDirectory
from .exits import Exits
from .guards import TransitionGuards
from .incidents import Incidents, RedriveResult
from .invoker import Invoker
from .outcomes import Failed, Outcome
from .owner import Owner
from .plan import Plan
from .preflight import Problem, RuntimeMisconfigured, find_problems, misconfigured
from .recorder import Recorder
from .records import Counters, RecordSink
from .recovery import Recovery
from .results import ArrivalResult, DecisionResult, DispatchResult, EntryResult, FireResult, RecoverResult
from .revision import Revision, Revisions
from .sequences import Loader, Sequences
from .store import Store
from .store_due import Incident
from .ticks import Ticker, TickResult
from .triggers import TriggerDispatch

__all__ = ["Runtime", "Loader"]


class Runtime:
    """Interprets one compiled plan against one store.  Thread-safe; holds no lock across host executors.

    `Runtime(plan, store, *, executors=None, loaders=None, directory=None, sinks=None, host=None,
    executor_timeout=60.0, builtins=True, session_live=None, atomic_arrivals=True, operation_lease=60.0,
    heartbeat=True)`:

    - `plan`: a compiled `Plan` (or a compile result with one); `store`: a `Store`.
    - `executors`: an `ExecutorRegistry` (the built-in store-backed kinds are added unless
      `builtins=False`); `executor_timeout`: seconds before a host executor is given up on (None:
      called in place, no thread).
    - `loaders`: the records dispatch sequences `load`; `directory`: who the agents are;
      `host`: host flags guards read; `session_live(task_id)`: whether a task has a live session.
    - `sinks`: record sinks (default: loguru); `[]` builds no records at all.
    - `atomic_arrivals`: on a durable store, an arrival commits with its entry's first segment in one
      transaction (ADRs 0010, 0036); False starts every entry after the commit.
    - `operation_lease`: seconds this runtime (its owner in the store) counts as live after its last
      heartbeat; its claims last as long.  At least `executor_timeout`.  `heartbeat`: renew it from a
      background thread every `operation_lease / 6` seconds (False: the owner is live for one lease
      after the runtime starts; tests that stage a dead owner use it).

    A plan that can run kinds with no executor or load records with no loader is reported by one `warning`
    record (code `runtime_misconfigured`) when the runtime is built; `check()` lists the same problems.
    `async def` executors and loaders are refused: `AsyncRuntime` runs those.
    """

    def __init__(self, plan: Plan, store: Store, *, executors: ExecutorRegistry | None = None,
                 loaders: Mapping[str, Loader] | None = None, directory: Directory | None = None,
                 sinks: Sequence[RecordSink] | None = None, host: Mapping[str, Any] | None = None,
                 executor_timeout: float | None = 60.0, builtins: bool = True,
                 session_live: Callable[[str], bool] | None = None, atomic_arrivals: bool = True,
                 operation_lease: float = 60.0, heartbeat: bool = True) -> None:
        plan = _the_plan(plan)
        if not isinstance(store, Store):
            raise RuntimeFault(f"`store` must implement interlock.runtime.Store (e.g. interlock.stores.open_store(url) "
                               f"or MemoryStore()), not {type(store).__name__}")
        _check_lease(operation_lease, executor_timeout)
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
        base = Recorder(sinks, Counters())
        self.revision = revision = Revision(plan, base)
        self.recorder = recorder = revision.recorder
        self.revisions = Revisions(revision, store, base)
        self.revisions.keep_own()
        self.owner = owner = Owner(store, lease=operation_lease, plan=revision.digest,
                                   interval=operation_lease / 6 if heartbeat else None)
        self.index = revision.index
        self.invoker = Invoker(self.executors, directory or StaticDirectory(), self, executor_timeout,
                               self._late)
        # A durable store writes a step change and its entry's first segment in one transaction (ADR 0036);
        # False keeps docs/runtime.md §1's literal shape: the entry after the commit.
        atomic = atomic_arrivals and bool(getattr(store, "durable", False))
        self.claims = Claims(store, owner)
        self.entries = Entries(self.revisions, store, self.claims, self.invoker, owner)
        self.exits = Exits(revision, store, self.invoker, owner)
        self.arrivals = Arrivals(revision, store, self.entries, self.exits, atomic=atomic, session_live=session_live)
        flags = {"engine_ready": True, **(host or {})}  # one live dict: sequences and transition guards read it
        self.guards = TransitionGuards(self.index, store, flags, recorder)
        self.triggers = TriggerDispatch(revision, store, self.claims, self.invoker, self.exits, self.arrivals, owner,
                                        self.guards)
        self.decisions = Decisions(revision, store, self.exits, self.arrivals, self.guards)
        self.sequences = Sequences(self.index, loaders or {}, flags, self.triggers, recorder)
        self.sequences.loaders = SyncLoaders(self.sequences.loaders)  # `async def` loaders refused (AsyncRuntime's)
        self.recovery = Recovery(store, self.claims, self.entries, self.decisions, recorder, owner)
        self.ticker = Ticker(store, self.revisions, self.triggers, self.entries)
        self.incidents_ = Incidents(store, owner, self.revisions, self.ticker, recorder)
        if recorder.active:
            misconfigured(recorder, self.check())

    def _late(self, ctx: ActionContext, outcome: Outcome) -> None:
        """A host executor that timed out returned after all (on its own thread): a `late_completion` record."""
        result = f"failed: {outcome.reason}" if isinstance(outcome, Failed) else "ok"
        self.recorder.late_completion(ctx.kind, ctx.task.id, ctx.step_id, ctx.idempotency_key, result,
                                      entry_id=ctx.entry_id, operation_id=ctx.operation_id, attempt=ctx.attempt)

    # ---- what hosts read and set ---------------------------------------------------------------------------------
    @property
    def counters(self) -> Counters:
        return self.recorder.counters

    @property
    def sinks(self) -> list[RecordSink]:
        return self.recorder.sinks

    @property
    def digest(self) -> str:
        """The plan's revision (its digest): what the rows and records this runtime writes name."""
        return self.revision.digest

    @property
    def owner_id(self) -> str:
        """This runtime's owner id in the store (what its claims name)."""
        return self.owner.id

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
        _check_lease(self.operation_lease, seconds)
        self.invoker.timeout = seconds

    def add_sink(self, sink: RecordSink) -> None:
        self.recorder.add_sink(sink)

    def close(self) -> None:
        """Stop this runtime's owner: no more heartbeats, and what it still holds is taken up by others at once.
        Call it when the host shuts down (after its deliveries returned)."""
        self.owner.stop()

    # ---- the calls, each a line ------------------------------------------------------------------------------
    def create_task(self, task_id: str, workflow_id: str, step_id: str | None = None, *, description: str = "",
                    session_id: str | None = None, is_from_office: bool = False, is_ephemeral: bool = False,
                    actor_kind: str = "system", actor_id: str | None = None,
                    operation_id: str | None = None, options: Mapping[str, Any] | None = None) -> ArrivalResult:
        """Create a task into a step (its workflow's start step by default): an arrival, route `creation`.  With
        `operation_id`, delivering the same creation again returns the first one's arrival and writes nothing.
        `options`: its entry's one-shot options, stored with the ledger row (`ctx.arrival_options`, ADR 0043)."""
        return self.arrivals.create_task(task_id, workflow_id, step_id, description=description,
                                         session_id=session_id, is_from_office=is_from_office,
                                         is_ephemeral=is_ephemeral, actor_kind=actor_kind, actor_id=actor_id,
                                         operation_id=operation_id, options=options)

    def move(self, task_id: str, to_step: str, *, route: str = "manual_move", session_id: str | None = None,
             actor_kind: str = "human", actor_id: str | None = None, workflow_id: str | None = None,
             expected_step: str | None = None, dispatch: bool = True,
             options: Mapping[str, Any] | None = None) -> ArrivalResult:
        """Move a task (docs/runtime.md §1, §2): `on_exit` first, the ledger row with the step change, then entry.
        `options`: the arrival's one-shot entry options (kandev's `instructions`, `skip_step_prompt`, …), plain JSON
        data stored with the ledger row and read by the destination's entry executors (`ctx.arrival_options`)."""
        return self.arrivals.move(task_id, to_step, route=route, session_id=session_id, actor_kind=actor_kind,
                                  actor_id=actor_id, workflow_id=workflow_id, expected_step=expected_step,
                                  dispatch=dispatch, options=options)

    def switch_workflow(self, task_id: str, workflow_id: str, step_id: str | None = None, *,
                        session_id: str | None = None) -> ArrivalResult:
        """Move a task into another workflow (its start step by default): one arrival, one entry dispatch."""
        return self.arrivals.switch_workflow(task_id, workflow_id, step_id, session_id=session_id)

    def migrate_task(self, task_id: str, workflow_id: str, step_id: str, *, enter: bool = False) -> ArrivalResult:
        """Move a task that stands on a step this plan does not have onto one it has (`interlock migrate`): one
        ledger row, route `migration`; its entry runs only with `enter` (docs/runtime.md, "Deployments")."""
        return self.arrivals.migrate(task_id, workflow_id, step_id, enter=enter)

    def dispatch_entry(self, ledger_id: int, *, session_live: bool = False) -> EntryResult:
        """Dispatch the entry of a ledger row written by the host (through `LedgerWriter`), after its commit."""
        from .checks import check_bool, check_ledger_id

        check_ledger_id(ledger_id)
        check_bool(session_live, "session_live")
        return self.entries.dispatch_entry(ledger_id, session_live=session_live)

    def current_entry(self, task_id: str) -> int | None:
        """The task's current activation: the ledger id of the arrival that put it on its step (None for a task
        written as pre-existing state).  Stamp it on the work an agent does for the task, and pass it back as
        `entry_id=` with the events that work produces (docs/runtime.md §6, "Stale deliveries")."""
        check_id(task_id, "task_id")
        task = self.store.get_task(task_id)
        if task is None:
            from .errors import UnknownTaskError

            raise UnknownTaskError(f"no task `{task_id}`")
        return task.entry_id

    def fire(self, trigger: str, task_id: str, *, session_id: str | None = None,
             payload: Mapping[str, Any] | None = None, operation_id: str | None = None,
             entry_id: int | None = None) -> FireResult:
        """Run a step's handler for a non-entry trigger (docs/runtime.md §2); `entry_id` fences it (§6)."""
        return self.triggers.fire(trigger, task_id, session_id, payload, operation_id, None, entry_id)

    def dispatch(self, sequence: str, event: Mapping[str, Any], *, host: Mapping[str, Any] | None = None,
                 entry_id: int | None = None) -> DispatchResult:
        """Run a `dispatch` block for a host event (docs/runtime.md §3).  Never raises for engine errors."""
        return self.sequences.dispatch(sequence, event, host=host, entry_id=entry_id)

    def record_decision(self, task_id: str, *, verdict: str, agent: str | None = None, user: str | None = None,
                        role: str = "", session_id: str | None = None, entry_id: int | None = None) -> DecisionResult:
        """Store a checked decision and re-evaluate the step's guarded transitions (docs/runtime.md §2); `entry_id`
        names the round (the activation) it was made in (§6)."""
        return self.decisions.record_decision(task_id, verdict=verdict, agent=agent, user=user, role=role,
                                              session_id=session_id, entry_id=entry_id)

    def reevaluate(self, task_id: str, step_id: str, decision_id: int, *, actor: str | None = None,
                   actor_kind: str = "system", session_id: str | None = None) -> DecisionResult:
        """Re-evaluate the guarded transitions of `step_id` after decision `decision_id` (idempotent per decision)."""
        return self.decisions.reevaluate(task_id, step_id, decision_id, actor=actor, actor_kind=actor_kind,
                                         session_id=session_id)

    def recover(self) -> RecoverResult:
        """Finish what a crash left: dead owners' claims, arrivals whose entry nobody live is dispatching,
        decisions not re-evaluated.  Safe at any time, from any process, beside live workers."""
        return self.recovery.recover()

    def tick(self, *, limit: int = 1000) -> TickResult:
        """Fire the due timers and run the due retries (at most `limit` rows), each exactly once however many
        processes tick; `next_due` says when the next one is due on the store's clock (docs/runtime.md §7)."""
        from .checks import check_limit

        check_limit(limit)
        return self.ticker.tick(limit)

    def incidents(self, task_id: str | None = None) -> list[Incident]:
        """Failures nothing will retry, open (of one task with `task_id`), oldest first (docs/runtime.md §7)."""
        if task_id is not None:
            check_id(task_id, "task_id")
        return self.incidents_.list(task_id)

    def redrive(self, incident: Incident | int) -> RedriveResult:
        """Run again only what failed: an entry's failed positions, in order, once each, or an operation's delivery
        as stored; the incident is resolved when it all took effect."""
        return self.incidents_.redrive(incident)

    def resolve(self, incident: Incident | int, note: str) -> bool:
        """Close an open incident without running anything (`note` says why); False when it is not open."""
        from .checks import check_text

        check_text(note, "note")
        return self.incidents_.resolve(incident, note)

    def check(self, *, strict: bool = False) -> list[Problem]:
        """What the plan can ask for that is not registered: each action kind it can run with no executor, each
        record its dispatch sequences load with no loader, with the places that need it (docs/runtime.md,
        "Checking a runtime").  `strict`: raise `RuntimeMisconfigured` listing them instead of returning them."""
        problems = find_problems(self.index, self.executors, self.loaders)
        if problems and strict:
            raise RuntimeMisconfigured(problems)
        return problems


def _check_lease(lease: Any, timeout: float | None) -> None:
    if isinstance(lease, bool) or not isinstance(lease, (int, float)) or not lease > 0:
        raise RuntimeFault(f"`operation_lease` must be a positive number of seconds, not {lease!r}")
    if timeout is not None and lease < timeout:
        raise RuntimeFault(f"`operation_lease` ({lease:g}s) is shorter than `executor_timeout` ({timeout:g}s): a "
                           "runtime's claims must outlast the executor calls they cover; raise the lease or lower "
                           "the timeout")


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
    if plan is None:  # most often `compile_path(...).plan` of a source with errors
        raise RuntimeFault("`plan` is None: a compile whose source has errors produces no plan. Look at the "
                           "compile result's `diagnostics` (or pass the compile result itself as `plan`: the "
                           "runtime then names its errors), fix them (`interlock check`) and compile again")
    raise RuntimeFault(f"`plan` must be a compiled Plan (interlock.compiler.compile_path(...).plan, or "
                       f"interlock.runtime.load_plan(text)), not {type(plan).__name__}")


_NOTHING = object()


def _where(diagnostic: Any) -> str:
    span = getattr(diagnostic, "span", None)
    if span is None:
        return ""
    return f"{getattr(span, 'file', '?')}:{getattr(span, 'line', '?')}:{getattr(span, 'col', '?')}: "
