"""A `Scenario` and a compiled plan in, a trace out: the simulator behind `interlock simulate` and `interlock test`.

Runs the scenario's events against a real `Runtime` over a store the caller supplies
(the CLI passes an in-memory SQLite store), with simulated host executors and fault
injection.  Each event is a distinct delivery; `redeliver: N` repeats event N with the
same identity; `restart` builds a new runtime over the same store.  The trace is the
docs/runtime.md §5 record stream, `seq` strictly increasing across restarts.
"""

from __future__ import annotations

import time
from collections import Counter
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from .api import Runtime
from .errors import ActionFailed, RuntimeFault
from .executors import ActionContext, Effect, ExecutorRegistry, StaticDirectory
from .loaders import task_record
from .plan import Plan
from .records import Record
from .scenario import (
    Advance,
    Create,
    Decide,
    Dispatch,
    Event,
    ExecutorFault,
    Fire,
    Move,
    Redrive,
    Scenario,
    ScenarioError,
    TurnComplete,
    did_you_mean,
)
from .store import Participant, Store, TaskState

__all__ = ["Trace", "SimClock", "simulate", "check_scenario", "check_expectations", "WORKING_STATES", "SIM_EPOCH"]

SIM_EPOCH = 1_767_225_600.0
"""2026-01-01T00:00:00Z: where the simulator's clock starts (docs/scenarios.md)."""


class SimClock:
    """The simulator's clock: a store built with it (`open_store(url, clock=…)`, `MemoryStore(clock=…)`) judges
    what is due by it, and `advance: 4h` moves it.  Epoch seconds."""

    def __init__(self, start: float = SIM_EPOCH) -> None:
        self.now = start

    def __call__(self) -> float:
        return self.now

    def advance(self, seconds: float) -> None:
        self.now += seconds

WORKING_STATES = frozenset({"running", "starting"})
_ENDED_STATES = frozenset({"completed", "failed", "cancelled", "canceled", "stopped"})


@dataclass
class Trace:
    records: list[dict[str, Any]] = field(default_factory=list)
    on_record: Callable[[dict[str, Any]], None] | None = field(default=None, repr=False, compare=False)
    """Called with each record as it is made (the CLI streams the trace with it: an interrupted or long run
    leaves what happened so far)."""

    def add(self, record: dict[str, Any]) -> None:
        self.records.append(record)
        if self.on_record is not None:
            self.on_record(record)

    def summary(self) -> dict[str, Any]:
        return self.records[-1] if self.records and self.records[-1]["record"] == "summary" else {}


class _Faults:
    """Counts calls per kind across restarts, so `fail: 1` fails exactly the first call."""

    def __init__(self, faults: Mapping[str, ExecutorFault]) -> None:
        self.faults = faults
        self.calls: Counter[str] = Counter()

    def wrap(self, kind: str, fn: Callable[[Mapping[str, Any], ActionContext], Any]) -> Any:
        fault = self.faults[kind]

        def faulty(args: Mapping[str, Any], ctx: ActionContext) -> Any:
            self.calls[kind] += 1
            n = self.calls[kind]
            if n <= fault.fail:
                raise ActionFailed(fault.error or f"simulated failure of {kind}")
            if n <= fault.fail + fault.panic:
                raise RuntimeError(fault.error or f"simulated panic in {kind}")
            if n <= fault.fail + fault.panic + fault.hang:
                time.sleep(fault.seconds)
            return fn(args, ctx)

        return faulty


def _host_executor(kind: str) -> Callable[[Mapping[str, Any], ActionContext], list[Effect]]:
    """A simulated host executor: succeeds; a few kinds act on the runtime (re-entrantly)."""

    def run(args: Mapping[str, Any], ctx: ActionContext) -> list[Effect]:
        rt = ctx.runtime
        if kind == "switch_workflow" and rt is not None:
            rt.switch_workflow(ctx.task.id, str(args["workflow"]), args.get("step") or None,
                               session_id=ctx.session_id)
        elif kind == "create_child_task" and rt is not None:
            child = f"{ctx.task.id}.{ctx.idempotency_key or ctx.position}"
            if rt.store.get_task(child) is None:
                rt.create_task(child, str(args.get("workflow") or ctx.workflow_id), args.get("step") or None,
                               description=str(args.get("title") or ""))
        return [{"kind": kind, **({"args": dict(args)} if args else {}),
                 **({"arrival_options": dict(ctx.arrival_options)} if ctx.arrival_options else {})}]

    return run


class _Sim:
    def __init__(self, scenario: Scenario, plan: Plan, store: Store,
                 on_record: Callable[[dict[str, Any]], None] | None = None, clock: SimClock | None = None) -> None:
        self.scenario = scenario
        self.plan = plan
        self.store = store
        self.clock = clock
        self.trace = Trace(on_record=on_record)
        self.seq = 0
        self.event = 0
        self.faults = _Faults({k: v for k, v in scenario.executors.items() if not v.missing})
        self.memo: dict[int, dict[str, Any]] = {}  # event index -> identity for redelivery
        self.runtime = self._runtime()

    # ---- set-up ---------------------------------------------------------------------------------
    def _sink(self, record: Record) -> None:
        self.seq += 1
        entry: dict[str, Any] = {"seq": self.seq, "event": self.event, "record": record.kind}
        entry.update(record.fields)
        if record.kind in ("dispatch", "skip", "warning", "error", "incident_opened", "retry"):
            entry.setdefault("level", record.level)
            entry.setdefault("message", record.message)
        self.trace.add(entry)

    def _registry(self) -> ExecutorRegistry:
        """Built-ins and simulated host executors, faults wrapped around them, `missing` kinds removed (built-ins
        included: the runtime is built with `builtins=False`, so nothing registers them again)."""
        from .builtins import register_builtins

        registry = register_builtins(ExecutorRegistry())
        for kind in self.plan.kinds:
            if kind.action_class != "transition" and kind.name not in registry:
                registry.register(kind.name, _host_executor(kind.name))
        for name, fault in self.scenario.executors.items():
            if fault.missing:
                registry.unregister(name)
                continue
            fn = registry.get(name)
            if fn is None:
                raise ScenarioError(f"{self.scenario.at('executors', name)}: executors: `{name}` is not an action "
                                    "kind of the plan")
            # a fault keeps count of calls: never replayable (a run again would move the count)
            registry.register(name, self.faults.wrap(name, fn), transactional=registry.is_transactional(name))
        return registry

    def _runtime(self) -> Runtime:
        agents = self.scenario.agents
        return Runtime(self.plan, self.store, executors=self._registry(), builtins=False, loaders=self._loaders(),
                       directory=StaticDirectory(primary=agents.primary, ceo=agents.ceo), sinks=[self._sink],
                       host=self.scenario.host, executor_timeout=self.scenario.executor_timeout,
                       operation_lease=max(60.0, self.scenario.executor_timeout or 0.0),
                       session_live=lambda task_id: self.live_session(task_id, None) is not None)

    def _loaders(self) -> dict[str, Callable[[Any, Mapping[str, Any]], Mapping[str, Any] | None]]:
        sessions = self.scenario.sessions
        tasks = self.scenario.tasks

        def session(session_id: Any, event: Mapping[str, Any]) -> Mapping[str, Any] | None:
            spec = sessions.get(str(session_id))
            if spec is None:
                return None
            if spec.fail_load:
                raise RuntimeError(f"session store unavailable for {session_id}")
            return {"id": str(session_id), "task_id": spec.task, "agent_profile_id": spec.agent_profile,
                    "state": spec.state}

        def task(task_id: Any, event: Mapping[str, Any]) -> Mapping[str, Any] | None:
            spec = tasks.get(str(task_id))
            if spec is not None and spec.fail_load:
                raise RuntimeError(f"task store unavailable for {task_id}")
            row = self.store.get_task(str(task_id))
            if row is None:
                return None
            other = next((sid for sid, s in sessions.items() if s.task == row.id and sid != event.get("session_id")
                          and s.state in WORKING_STATES), "")
            return task_record(row, other)

        return {"session": session, "task": task}

    def setup(self) -> None:
        for task_id, spec in self.scenario.tasks.items():
            # step "": the task stands on no step, as a detached one does (docs/runtime.md §5)
            self.store.put_task(TaskState(task_id, spec.workflow, spec.step or None, spec.description, spec.office,
                                          spec.ephemeral, spec.archived))
        for p in self.scenario.participants:
            self.store.add_participant(Participant(p.task, p.step, p.role, p.agent, p.decision_required, p.position))

    def live_session(self, task_id: str, named: str | None) -> str | None:
        if named:
            return named
        for sid, s in self.scenario.sessions.items():
            if s.task == task_id and s.state not in _ENDED_STATES:
                return sid
        return None

    # ---- events -----------------------------------------------------------------------------------
    def run(self) -> Trace:
        self.setup()
        for event in self.scenario.events:
            self.event = event.index
            try:
                self.handle(event, redelivery=False)
            except RuntimeFault as exc:  # the runtime refused the event: a mistake in the scenario
                raise ScenarioError(f"{event.where}: event {event.index} (`{event.kind}`): {exc}",
                                    trace=self.trace) from None
        self.event = len(self.scenario.events)
        self._summary()
        return self.trace

    def handle(self, event: Event, *, redelivery: bool) -> None:
        rt = self.runtime
        memo = self.memo.setdefault(event.index, {})
        body = event.body
        if event.kind == "redeliver":
            self.handle(self.scenario.events[int(body) - 1], redelivery=True)
        elif event.kind == "restart":
            self.runtime.close()  # the process before it is gone: its owner with it (docs/runtime.md §6)
            self.runtime = self._runtime()
        elif event.kind == "recover":
            rt.recover()
        elif event.kind == "tick":
            rt.tick()
        elif isinstance(body, Advance):
            if self.clock is None:
                raise RuntimeFault("`advance` needs the simulator's clock: run the scenario with `interlock simulate` "
                                   "or `interlock test` (or pass `clock=` to `simulate` and the store)")
            self.clock.advance(body.seconds)
            rt.tick()
        elif isinstance(body, Redrive):
            for incident in rt.incidents(body.task):
                rt.redrive(incident)
        elif isinstance(body, Move | Create):
            if redelivery and "ledger_id" in memo and not (isinstance(body, Create) and body.operation):
                rt.dispatch_entry(memo["ledger_id"], session_live=memo.get("live", False))
                return
            if redelivery and not (isinstance(body, Create) and body.operation):
                return
            if isinstance(body, Create):
                result = rt.create_task(body.task, body.workflow, body.step, description=body.description,
                                        session_id=body.session, options=body.options, operation_id=body.operation)
            else:
                session = self.live_session(body.task, body.session)
                result = rt.move(body.task, body.to, route=body.route, session_id=session,
                                 actor_kind="agent" if body.session else "human",
                                 dispatch=event.kind != "crash_after_commit", options=body.options)
            memo["ledger_id"] = result.ledger_id
            memo["live"] = body.session is not None
        elif isinstance(body, TurnComplete):
            op = body.operation or f"turn_complete:{body.task}:{body.session}:event-{event.index}"
            rt.fire("on_turn_complete", body.task, session_id=body.session, operation_id=op, entry_id=body.entry)
        elif isinstance(body, Fire):
            rt.fire(body.trigger, body.task, session_id=body.session, payload=body.payload,
                    operation_id=body.operation, entry_id=body.entry)
        elif isinstance(body, Dispatch):
            rt.dispatch(body.sequence, body.event, host=body.host)
        elif isinstance(body, Decide):
            who, actor_kind = (body.agent, "agent") if body.agent is not None else (body.user, "human")
            if redelivery and "decision" in memo:
                step_id, decision_id = memo["decision"]
                rt.reevaluate(body.task, step_id, decision_id, actor=who, actor_kind=actor_kind,
                              session_id=body.session)
                return
            decided = rt.record_decision(body.task, verdict=body.verdict, agent=body.agent, user=body.user,
                                         role=body.role, session_id=body.session, entry_id=body.entry)
            memo["decision"] = (decided.step_id, decided.decision_id)

    def _summary(self) -> None:
        tasks = {t.id: {"step": t.step_id or ""} for t in (self.store.get_task(i) for i in self._task_ids()) if t}
        runs = [{"task": r.task_id, "agent": r.agent, "reason": r.reason} for r in self.store.runs()]
        self.seq += 1
        counters = self.runtime.counters.snapshot()
        counters["incidents_open"] = len(self.store.incidents(state="open")) + len(self.store.incidents(
            state="redriving"))
        self.trace.add({"seq": self.seq, "event": self.event, "record": "summary", "tasks": tasks,
                        "runs": runs, "counters": counters})

    def _task_ids(self) -> list[str]:
        ids = list(self.scenario.tasks)
        for row in self.store.ledger():
            if row.task_id not in ids:
                ids.append(row.task_id)
        return ids


def simulate(scenario: Scenario, plan: Plan, store: Store, *,
             on_record: Callable[[dict[str, Any]], None] | None = None, clock: SimClock | None = None) -> Trace:
    """Check the scenario against the plan, then run it against `store` (which should be empty) and return its
    trace.  Raises `ScenarioError` (file:line:col) for a mistake in the scenario, found up front or when the
    runtime refuses an event (the error then carries the trace so far).  `on_record` is called with each
    record as it is made.  `clock`: the clock `store` was built with (`advance` moves it)."""
    problems = check_scenario(scenario, plan)
    if problems:
        raise ScenarioError("\n".join(problems))
    return _Sim(scenario, plan, store, on_record, clock).run()


# ---- the scenario against the plan ------------------------------------------------------------------
class _Checker:
    """Every name a scenario uses, checked against the compiled plan before anything runs (file:line:col)."""

    def __init__(self, scenario: Scenario, plan: Plan) -> None:
        self.scenario = scenario
        self.problems: list[str] = []
        self.steps = {wf.id: [s.id for s in wf.steps] for wf in plan.workflows}
        self.all_steps = sorted({s for steps in self.steps.values() for s in steps})
        self.roles = list(plan.roles)
        self.triggers = [t.name for t in plan.triggers if t.name != plan.entry_policy.trigger]
        self.entry_trigger = plan.entry_policy.trigger
        self.sequences = [q.name for q in plan.sequences]
        self.kinds = {k.name: k.action_class for k in plan.kinds}
        self.tasks: dict[str, str] = {t: spec.workflow for t, spec in scenario.tasks.items()}

    def add(self, loc: tuple[Any, ...], message: str) -> None:
        self.problems.append(f"{self.scenario.at(*loc)}: {message}")

    def name(self, loc: tuple[Any, ...], what: str, value: str, known: list[str], *, where: str = "") -> bool:
        if value in known:
            return True
        listed = ", ".join(known[:12]) + (", ..." if len(known) > 12 else "") if known else "none"
        self.add(loc, f"{_path(loc)}: no {what} `{value}`{where}{did_you_mean(value, known)} ({what}s: {listed})")
        return False

    def task(self, loc: tuple[Any, ...], task_id: str) -> None:
        # a child made by the simulated `create_child_task` is named `<parent>.<key>`: known only as it runs
        if task_id in self.tasks or (task_id.split(".", 1)[0] in self.tasks and "." in task_id):
            return
        self.name(loc, "task", task_id, list(self.tasks))

    def step(self, loc: tuple[Any, ...], workflow: str | None, step: str) -> None:
        if workflow is not None and workflow in self.steps:
            self.name(loc, "step", step, self.steps[workflow], where=f" in workflow `{workflow}`")
        else:
            self.name(loc, "step", step, self.all_steps)

    def check(self) -> list[str]:
        sc = self.scenario
        for task_id, spec in sc.tasks.items():
            if self.name(("tasks", task_id, "workflow"), "workflow", spec.workflow, list(self.steps)) and spec.step:
                self.step(("tasks", task_id, "step"), spec.workflow, spec.step)
        created = {e.body.task for e in sc.events if isinstance(e.body, Create)}
        for session_id, session in sc.sessions.items():
            if session.task not in created:
                self.task(("sessions", session_id, "task"), session.task)
        for i, p in enumerate(sc.participants):
            workflow = None
            if p.task and p.task not in created:
                self.task(("participants", i, "task"), p.task)
                workflow = self.tasks.get(p.task)
            self.step(("participants", i, "step"), workflow, p.step)
            self.name(("participants", i, "role"), "role", p.role, self.roles)
        runnable = sorted(k for k, c in self.kinds.items() if c != "transition")
        for kind in sc.executors:
            self.name(("executors", kind), "action kind", kind, runnable)
        for event in sc.events:
            self.event(event)
        return self.problems

    def event(self, event: Event) -> None:
        loc: tuple[Any, ...] = ("events", event.index - 1, event.kind)
        body = event.body
        if event.kind == "redeliver":
            target = self.scenario.events[int(body) - 1]
            if target.kind in ("redeliver", "restart", "recover", "tick", "advance", "redrive"):
                self.add(loc, f"{_path(loc)}: `{target.kind}` (event {target.index}) cannot be redelivered")
            return
        if isinstance(body, Create):
            if body.task in self.tasks:
                self.add((*loc, "task"), f"{_path((*loc, 'task'))}: task `{body.task}` exists already")
            elif self.name((*loc, "workflow"), "workflow", body.workflow, list(self.steps)):
                if body.step:
                    self.step((*loc, "step"), body.workflow, body.step)
                self.tasks[body.task] = body.workflow
            return
        task = getattr(body, "task", None)
        if task is not None:
            self.task((*loc, "task"), task)
        session = getattr(body, "session", None)
        if session is not None:
            self.name((*loc, "session"), "session", session, list(self.scenario.sessions))
        if isinstance(body, Move):
            self.step((*loc, "to"), None, body.to)
        elif isinstance(body, Fire):
            if body.trigger == self.entry_trigger:
                self.add((*loc, "trigger"), f"{_path((*loc, 'trigger'))}: `{body.trigger}` is the entry trigger: arrivals dispatch "
                                            "it (use `move:` or `create:`)")
            else:
                self.name((*loc, "trigger"), "trigger", body.trigger, self.triggers)
        elif isinstance(body, Dispatch):
            self.name((*loc, "sequence"), "sequence", body.sequence, self.sequences)
        elif isinstance(body, Decide) and body.agent is not None:
            self.name((*loc, "role"), "role", body.role, self.roles)


def _path(loc: tuple[Any, ...]) -> str:
    """`tasks.T1.step`, or `event 3 (`move`): to` for a field of an event."""
    if len(loc) >= 3 and loc[0] == "events":
        return f"event {loc[1] + 1} (`{loc[2]}`): " + ".".join(str(p) for p in loc[3:])
    return ".".join(str(p) for p in loc)


def check_scenario(scenario: Scenario, plan: Plan) -> list[str]:
    """Every name the scenario uses that the plan does not know (tasks, sessions, steps, roles, triggers,
    sequences, action kinds), one `file:line:col: message` each; empty when it may run."""
    return _Checker(scenario, plan).check()


def check_expectations(scenario: Scenario, trace: Trace) -> list[str]:
    """Every way the trace misses the scenario's `expect:` block (empty: it passes); runtime/expectations.py has
    them located, with the nearest record."""
    from .expectations import expectation_failures

    return [failure.message for failure in expectation_failures(scenario, trace.records)]
