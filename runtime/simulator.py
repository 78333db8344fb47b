"""A `Scenario` and a compiled plan in, a trace out: the simulator behind `interlock simulate` and `interlock test`.

Runs the scenario's events against a real `Runtime` over a store the caller supplies
(the CLI passes an in-memory SQLite store), with simulated host executors and fault
injection.  Each event is a distinct delivery; `redeliver: N` repeats event N with the
same identity; `restart` builds a new runtime over the same store.  The trace is the
RUNTIME.md §5 record stream, `seq` strictly increasing across restarts.
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
from .scenario import ExecutorFault, Scenario, ScenarioError
from .store import Participant, Store, TaskState

__all__ = ["Trace", "simulate", "check_expectations", "WORKING_STATES"]

WORKING_STATES = frozenset({"running", "starting"})
_ENDED_STATES = frozenset({"completed", "failed", "cancelled", "canceled", "stopped"})


@dataclass
class Trace:
    records: list[dict[str, Any]] = field(default_factory=list)

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
        return [{"kind": kind, **({"args": dict(args)} if args else {})}]

    return run


class _Sim:
    def __init__(self, scenario: Scenario, plan: Plan, store: Store) -> None:
        self.scenario = scenario
        self.plan = plan
        self.store = store
        self.trace = Trace()
        self.seq = 0
        self.event = 0
        self.faults = _Faults({k: v for k, v in scenario.executors.items() if isinstance(v, ExecutorFault)})
        self.memo: dict[int, dict[str, Any]] = {}  # event index -> identity for redelivery
        self.runtime = self._runtime()

    # ---- set-up ---------------------------------------------------------------------------------
    def _sink(self, record: Record) -> None:
        self.seq += 1
        entry: dict[str, Any] = {"seq": self.seq, "event": self.event, "record": record.kind}
        entry.update(record.fields)
        if record.kind in ("dispatch", "skip", "warning", "error"):
            entry.setdefault("level", record.level)
            entry.setdefault("message", record.message)
        self.trace.records.append(entry)

    def _registry(self) -> ExecutorRegistry:
        from .builtins import register_builtins

        registry = register_builtins(ExecutorRegistry())
        for kind in self.plan.kinds:
            if kind.action_class != "transition" and kind.name not in registry:
                registry.register(kind.name, _host_executor(kind.name))
        for name, fault in self.scenario.executors.items():
            if fault == "missing":
                registry.unregister(name)
            elif name in registry:
                fn = registry.get(name)
                assert fn is not None
                # a fault keeps count of calls: never replayable (a run again would move the count)
                registry.register(name, self.faults.wrap(name, fn), transactional=registry.is_transactional(name))
            else:
                raise ScenarioError(f"executors: `{name}` is not an action kind of the plan")
        return registry

    def _runtime(self) -> Runtime:
        agents = self.scenario.agents
        return Runtime(self.plan, self.store, executors=self._registry(), loaders=self._loaders(),
                       directory=StaticDirectory(primary=agents.primary, ceo=agents.ceo), sinks=[self._sink],
                       host=self.scenario.host, executor_timeout=self.scenario.executor_timeout,
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
            self.runtime.step(spec.workflow, spec.step)
            self.store.put_task(TaskState(task_id, spec.workflow, spec.step, spec.description, spec.office,
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
        for index, event in enumerate(self.scenario.events, start=1):
            self.event = index
            (kind, body), = event.items()
            try:
                self.handle(index, kind, body, redelivery=False)
            except RuntimeFault as exc:
                self.runtime.emit("warning", "warning", str(exc), code="event_refused", event_kind=kind)
        self.event = len(self.scenario.events)
        self._summary()
        return self.trace

    def _need(self, index: int, kind: str, body: Mapping[str, Any], *names: str) -> list[Any]:
        missing = [n for n in names if not body.get(n)]
        if missing:
            raise ScenarioError(f"event {index} (`{kind}`): missing {', '.join(missing)}")
        return [body[n] for n in names]

    def handle(self, index: int, kind: str, body: Any, *, redelivery: bool) -> None:
        rt = self.runtime
        memo = self.memo.setdefault(index, {})
        if kind == "redeliver":
            target = int(body)
            (tkind, tbody), = self.scenario.events[target - 1].items()
            if tkind in ("redeliver", "restart", "recover"):
                raise ScenarioError(f"event {index}: `{tkind}` (event {target}) cannot be redelivered")
            self.handle(target, tkind, tbody, redelivery=True)
        elif kind == "restart":
            self.runtime = self._runtime()
        elif kind == "recover":
            rt.recover()
        elif kind in ("move", "crash_after_commit", "create"):
            if redelivery and "ledger_id" in memo:
                rt.dispatch_entry(memo["ledger_id"], session_live=memo.get("live", False))
                return
            if redelivery:
                return
            if kind == "create":
                task, workflow = self._need(index, kind, body, "task", "workflow")
                result = rt.create_task(task, workflow, body.get("step"), description=body.get("description", ""),
                                        session_id=body.get("session"))
            else:
                task, to = self._need(index, kind, body, "task", "to")
                session = self.live_session(task, body.get("session"))
                default_route = "manual_move" if kind == "move" else "engine_transition"
                result = rt.move(task, to, route=body.get("route", default_route), session_id=session,
                                 actor_kind="agent" if body.get("session") else "human",
                                 dispatch=kind != "crash_after_commit")
            memo["ledger_id"] = result.ledger_id
            memo["live"] = body.get("session") is not None
        elif kind == "turn_complete":
            task, session = self._need(index, kind, body, "task", "session")
            op = body.get("operation") or f"turn_complete:{task}:{session}:event-{index}"
            rt.fire("on_turn_complete", task, session_id=session, operation_id=op)
        elif kind == "fire":
            trigger, task = self._need(index, kind, body, "trigger", "task")
            op = body.get("operation")
            rt.fire(trigger, task, session_id=body.get("session"), payload=body.get("payload") or {},
                    operation_id=op)
        elif kind == "dispatch":
            sequence, event = self._need(index, kind, body, "sequence", "event")
            rt.dispatch(sequence, event, host=body.get("host"))
        elif kind == "decide":
            (task,) = self._need(index, kind, body, "task")
            if redelivery and "decision" in memo:
                d = memo["decision"]
                rt.reevaluate(task, d[0], d[1], actor=d[2], actor_kind=d[3], session_id=body.get("session"))
                return
            if "verdict" not in body or ("agent" in body) == ("user" in body):
                raise ScenarioError(f"event {index} (`decide`): give `verdict` and one of `agent` or `user`")
            decided = rt.record_decision(task, verdict=body["verdict"], agent=body.get("agent"), user=body.get("user"),
                                        role=body.get("role", ""), session_id=body.get("session"))
            memo["decision"] = (decided.step_id, decided.decision_id, body.get("agent") or body.get("user"),
                                "agent" if body.get("agent") else "human")

    def _summary(self) -> None:
        tasks = {t.id: {"step": t.step_id} for t in (self.store.get_task(i) for i in self._task_ids()) if t}
        runs = [{"task": r.task_id, "agent": r.agent, "reason": r.reason} for r in self.store.runs()]
        self.seq += 1
        self.trace.records.append({"seq": self.seq, "event": self.event, "record": "summary", "tasks": tasks,
                                   "runs": runs, "counters": self.runtime.counters.snapshot()})

    def _task_ids(self) -> list[str]:
        ids = list(self.scenario.tasks)
        for row in self.store.ledger():
            if row.task_id not in ids:
                ids.append(row.task_id)
        return ids


def simulate(scenario: Scenario, plan: Plan, store: Store) -> Trace:
    """Run a scenario against `store` (which should be empty) and return its trace."""
    return _Sim(scenario, plan, store).run()


def _subset(want: Mapping[str, Any], got: Mapping[str, Any]) -> bool:
    for key, value in want.items():
        if key not in got:
            return False
        if isinstance(value, Mapping) and isinstance(got[key], Mapping):
            if not _subset(value, got[key]):
                return False
        elif got[key] != value:
            return False
    return True


def check_expectations(scenario: Scenario, trace: Trace) -> list[str]:
    """Every way the trace misses the scenario's `expect:` block (empty: it passes)."""
    expect = scenario.expect
    if expect is None:
        return []
    summary = trace.summary()
    problems: list[str] = []
    for task_id, want in expect.tasks.items():
        got = summary.get("tasks", {}).get(task_id)
        if got is None:
            problems.append(f"task {task_id}: not in the trace")
        elif got["step"] != want.step:
            problems.append(f"task {task_id}: at step `{got['step']}`, expected `{want.step}`")
    if expect.runs is not None:
        got_runs = Counter((r["task"], r["agent"], r["reason"]) for r in summary.get("runs", []))
        want_runs = Counter((r.task, r.agent, r.reason) for r in expect.runs)
        for run, n in (want_runs - got_runs).items():
            problems.append(f"runs: missing {n} x {{task: {run[0]}, agent: {run[1]}, reason: {run[2]}}}")
        for run, n in (got_runs - want_runs).items():
            problems.append(f"runs: unexpected {n} x {{task: {run[0]}, agent: {run[1]}, reason: {run[2]}}}")
    if expect.counters and not _subset(expect.counters, summary.get("counters", {})):
        problems.append(f"counters: expected {expect.counters}, got {summary.get('counters')}")
    pos = 0
    records = trace.records
    for want_record in expect.records:
        while pos < len(records) and not _subset(want_record, records[pos]):
            pos += 1
        if pos == len(records):
            problems.append(f"records: no {want_record} (in order)")
            break
        pos += 1
    return problems
