"""Crash injection: a worker process killed with SIGKILL mid-script, and the checks made after its restart.

Imported by name (tests/runtime/test_crash_injection.py, benchmarks/crash_campaign.py) and run as a
script.  One trial:

1. A worker opens the store (a SQLite file or a PostgreSQL schema), builds a `Runtime` over the
   Office plan (`examples/office_default.wf`, handed over as plan JSON: `dump_plan` / `load_plan`)
   and performs `script(prefix)`: creations, fires with operation ids, reviewer decisions, manual
   moves and a redelivery, on two fresh tasks.  Before each call it appends `C <i>` to an
   append-only journal (fsync'd), after the call returns `R <i> <result>`, so the parent knows
   which calls completed and which one (at most one) was in flight.
2. The worker dies by SIGKILL: either the parent kills it after a seeded random delay (`timed`),
   or it kills itself at the seeded n-th *point* of its store traffic (`point`: before or after
   each store call, at the start of each unit and before and after each unit's commit — so kills
   land before a commit, between a commit and the entry dispatch, mid-dispatch and between
   actions).  Sometimes a second worker running `recover()` is killed too (a crash during recovery).
3. The parent starts a fresh `Runtime` over the reopened store, calls `recover()` and checks the
   invariants (`check_recovered`); then it redelivers the in-flight call (same operation id, or for
   a decision the host-side `reevaluate` of the stored decision), performs the rest of the script
   and compares the final state with a run that was never killed (`normalise`).

Workers are forked from a *zygote* (`python tests/support/crash_worker.py serve PLAN.json`) that has imported
everything and loaded the plan once, so a trial costs a fork instead of an interpreter start-up.
`python tests/support/crash_worker.py run SPEC.json PLAN.json` runs one worker directly (for reproducing a seed).

Variants: `tx` registers only the built-in (transactional) executors, so every arrival commits with
its whole entry in one transaction (ADR 0010: no per-position markers) and every effect must happen
exactly once; `split` is `tx` with `atomic_arrivals=False`: the entry runs after the arrival's commit,
in one transaction of its own, each action with its marker; `host` (atomic arrivals on: a mix of both
shapes, since only the entries with the host executor are entered after the commit) registers
`ensure_seats` as a host (non-transactional) executor that logs `X <idempotency key>` to the
journal, so the entry takes the action-by-action path, where a crash between the marker's claim
and its finish leaves the outcome unknown (ADR 0008 §4: recorded as failed, never re-run: at most once);
`retry` is `tx` with a store-backed `ensure_seats` that writes the seat and then fails, so every entry
into approval takes the failure path of an atomic arrival (ADR 0010: the transaction is undone and run
again with savepoints): the seat must never survive, the failure must be recorded once.
"""

from __future__ import annotations

import contextlib
import itertools
import json
import os
import random
import signal
import subprocess
import sys
import time
import traceback
from collections import Counter
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
EXAMPLE = ROOT / "examples" / "office_default.wf"

WF = "office_default"
REVIEWERS = ("rev-a", "rev-b")
PRIMARY = "primary"
CEO = "ceo-1"
ENTRY_STEPS = ("review", "approval")
IN_PROGRESS_PREFIX = "not run: its marker is in progress"


# ---- the script ----------------------------------------------------------------------------------------


def _comment(cid: str) -> dict[str, str]:
    return {"comment_id": cid, "author_id": "u1", "body": "please look"}


def script(prefix: str) -> list[dict[str, Any]]:
    """The deterministic calls of one trial, on tasks `<prefix>A` and `<prefix>B`."""
    a, b = prefix + "A", prefix + "B"

    def decide(task: str, step: str, agent: str, role: str, verdict: str) -> dict[str, Any]:
        return {"op": "decide", "task": task, "step": step, "agent": agent, "role": role, "verdict": verdict}

    return [
        {"op": "create", "task": a},
        {"op": "create", "task": b},
        {"op": "fire", "trigger": "on_comment", "task": a, "operation": f"{a}:cm1", "payload": _comment("c1")},
        {"op": "fire", "trigger": "on_turn_complete", "task": a, "operation": f"{a}:tc1", "session": f"S-{a}"},
        {"op": "fire", "trigger": "on_turn_complete", "task": b, "operation": f"{b}:tc1", "session": f"S-{b}"},
        decide(a, "review", "rev-a", "reviewer", "approved"),
        decide(a, "review", "rev-b", "reviewer", "rejected"),  # any_reject: back to work
        {"op": "redeliver", "task": a},  # the last arrival of A again: discarded
        {"op": "move", "task": a, "to": "review"},  # a manual re-entry: a fresh review round
        decide(b, "review", "rev-a", "reviewer", "approved"),
        decide(b, "review", "rev-b", "reviewer", "approved"),  # all_approve: on to approval
        decide(a, "review", "rev-a", "reviewer", "approved"),
        decide(a, "review", "rev-b", "reviewer", "approved"),
        {"op": "fire", "trigger": "on_turn_complete", "task": b, "operation": f"{b}:tc2", "session": f"S-{b}"},
        decide(b, "approval", CEO, "approver", "approved"),  # the seat ensure_seats gave the CEO: done
        {"op": "fire", "trigger": "on_comment", "task": b, "operation": f"{b}:cm2", "payload": _comment("c2")},
        {"op": "fire", "trigger": "on_comment", "task": a, "operation": f"{a}:cm2", "payload": _comment("c3")},
        {"op": "move", "task": a, "to": "work"},
    ]


def perform(rt: Any, call: Mapping[str, Any]) -> dict[str, Any]:
    """Make one call of the script; return its result as plain data without store ids."""
    op, task = call["op"], call["task"]
    if op == "create":
        arrival = rt.create_task(task, WF)
        return {"status": arrival.status, "to": arrival.to_step, "entry": _entry(arrival.entry)}
    if op == "fire":
        fired = rt.fire(call["trigger"], task, session_id=call.get("session"), payload=call.get("payload"),
                        operation_id=call["operation"])
        return {"result": fired.result, "actions": list(fired.actions), "error": fired.error,
                "arrival": _arrival(fired.arrival)}
    if op == "decide":
        decided = rt.record_decision(task, verdict=call["verdict"], agent=call["agent"], role=call["role"])
        return {"step": decided.step_id, "transitioned": decided.transitioned, "abandoned": decided.abandoned,
                "arrival": _arrival(decided.arrival)}
    if op == "move":
        return {"arrival": _arrival(rt.move(task, call["to"], actor_id="crash-test"))}
    if op == "redeliver":
        return {"status": rt.dispatch_entry(rt.store.ledger(task)[-1].id).status}
    raise ValueError(f"unknown call {op!r}")


def _entry(entry: Any) -> dict[str, Any] | None:
    if entry is None:
        return None
    return {"status": entry.status, "attempted": list(entry.attempted), "failed": [list(f) for f in entry.failed]}


def _arrival(arrival: Any) -> dict[str, Any] | None:
    if arrival is None:
        return None
    return {"status": arrival.status, "from": arrival.from_step, "to": arrival.to_step, "entry": _entry(arrival.entry)}


# ---- the journal -----------------------------------------------------------------------------------------


class Journal:
    """Append-only lines, each written with one `write(2)` on an O_APPEND descriptor and fsync'd."""

    def __init__(self, path: str | Path, *, fsync: bool = True) -> None:
        self.fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
        self.fsync = fsync

    def write(self, line: str) -> None:
        os.write(self.fd, (line.replace("\n", " ") + "\n").encode())
        if self.fsync:
            os.fsync(self.fd)

    def close(self) -> None:
        os.close(self.fd)


@dataclass
class JournalView:
    """What a journal says: calls begun and returned (with results), host effects, the kill point."""

    ready: bool = False
    called: list[int] = field(default_factory=list)
    returned: dict[int, dict[str, Any]] = field(default_factory=dict)
    effects: list[str] = field(default_factory=list)
    kill: str | None = None
    done: tuple[int, float] | None = None
    error: str | None = None
    recover: str | None = None  # "called" / "returned" for a recover worker
    trace: list[tuple[int, str]] = field(default_factory=list)  # (call, label) of each point, when traced
    owners: list[str] = field(default_factory=list)  # the runtime owners the process ran as

    @property
    def in_flight(self) -> int | None:
        pending = [i for i in self.called if i not in self.returned]
        assert len(pending) <= 1, f"more than one call in flight: {pending}"
        return pending[0] if pending else None

    @property
    def next_call(self) -> int:
        """The first call that did not return."""
        return max(self.returned, default=-1) + 1


def read_journal(path: str | Path) -> JournalView:
    view = JournalView()
    p = Path(path)
    if not p.exists():
        return view
    for line in p.read_text().splitlines():
        tag, _, rest = line.partition(" ")
        if tag == "ready":
            view.ready = True
        elif tag == "C":
            if rest == "recover":
                view.recover = "called"
            else:
                view.called.append(int(rest))
        elif tag == "R":
            if rest == "recover":
                view.recover = "returned"
            else:
                index, _, result = rest.partition(" ")
                view.returned[int(index)] = json.loads(result)
        elif tag == "X":
            view.effects.append(rest)
        elif tag == "O":
            view.owners.append(rest)
        elif tag == "K":
            view.kill = rest
        elif tag == "D":
            points, _, elapsed = rest.partition(" ")
            view.done = (int(points), float(elapsed))
        elif tag == "T":
            view.trace = [(int(c), str(label)) for c, label in json.loads(rest)]
        elif tag == "E":
            view.error = json.loads(rest)
    return view


RETRY_FAILURE = "refused after writing the seat"
"""The failure of the `retry` variant's `ensure_seats`."""


# ---- the runtime of a worker (and of the parent after a restart) ----------------------------------------


def build_runtime(store: Any, plan: Any, variant: str, journal: Journal | None) -> Any:
    from interlock.runtime.api import Runtime
    from interlock.runtime.builtins import ensure_seats
    from interlock.runtime.errors import ActionFailed
    from interlock.runtime.executors import ExecutorRegistry, StaticDirectory

    registry = ExecutorRegistry()
    if variant == "host":
        def host_ensure_seats(args: Mapping[str, Any], ctx: Any) -> Any:
            # A host executor: its own transactions through the runtime's store, then its effect log.
            effects = ensure_seats(args, replace(ctx, store=ctx.runtime.store))
            if journal is not None:
                journal.write(f"X {ctx.idempotency_key} {ctx.attempt}")
            return effects

        registry.register("ensure_seats", host_ensure_seats)
    if variant == "retry":
        def failing_ensure_seats(args: Mapping[str, Any], ctx: Any) -> Any:
            ensure_seats(args, ctx)  # written in the entry's transaction: the failure must undo it
            raise ActionFailed(RETRY_FAILURE)

        registry.register("ensure_seats", failing_ensure_seats, transactional=True, replayable=True)
    rt = Runtime(plan, store, executors=registry, directory=StaticDirectory(primary=PRIMARY, ceo=CEO), sinks=[],
                 executor_timeout=None, atomic_arrivals=variant != "split")
    if journal is not None:
        journal.write(f"O {rt.owner_id}")
    return rt


class _Points:
    """Counts the points of a worker's store traffic; SIGKILLs the process at point `kill_at` (0: never)."""

    def __init__(self, kill_at: int, journal: Journal, *, trace: bool = False) -> None:
        self.n = 0
        self.kill_at = kill_at
        self.journal = journal
        self.call = -1  # the script call being made
        self.trace: list[tuple[int, str]] | None = [] if trace else None

    def __call__(self, label: str) -> None:
        self.n += 1
        if self.trace is not None:
            self.trace.append((self.call, label))
        if self.n == self.kill_at:
            self.journal.write(f"K {self.n} {label}")
            os.kill(os.getpid(), signal.SIGKILL)
            time.sleep(10)  # pragma: no cover - the signal is delivered first


class PointStore:
    """Forwards every call to `inner`, passing a point before and after each (and around each unit's commit)."""

    def __init__(self, inner: Any, points: _Points) -> None:
        self._inner = inner
        self._points = points
        self.durable = inner.durable

    def __getattr__(self, name: str) -> Any:
        attr = getattr(self._inner, name)
        if not callable(attr):
            return attr
        points = self._points

        def call(*args: Any, **kwargs: Any) -> Any:
            points(f"before {name}")
            result = attr(*args, **kwargs)
            points(f"after {name}")
            return result

        return call

    @contextmanager
    def unit(self) -> Iterator[PointStore]:
        self._points("begin unit")
        with self._inner.unit() as tx:
            yield PointStore(tx, self._points)
            self._points("before unit commit")
        self._points("after unit commit")


def worker(spec: Mapping[str, Any], plan: Any) -> int:
    """One worker: open the store, build the runtime, write `ready`, run the script (or `recover`)."""
    from interlock.stores import open_store

    journal = Journal(spec["journal"], fsync=spec.get("fsync", True))
    try:
        store = open_store(spec["url"], create=False)
        points = _Points(int(spec.get("kill_at") or 0), journal, trace=bool(spec.get("trace")))
        rt = build_runtime(PointStore(store, points), plan, spec["variant"], journal)
        journal.write("ready")
        started = time.perf_counter()
        if spec["mode"] == "recover":
            journal.write("C recover")
            rt.recover()
            journal.write("R recover")
        else:
            for index, call in enumerate(script(spec["prefix"])):
                journal.write(f"C {index}")
                points.call = index
                result = perform(rt, call)
                journal.write(f"R {index} {json.dumps(result, sort_keys=True)}")
        elapsed = time.perf_counter() - started
        if points.trace is not None:
            journal.write("T " + json.dumps(points.trace))
        journal.write(f"D {points.n} {elapsed:.6f}")
        store.close()
        return 0
    except BaseException:
        journal.write("E " + json.dumps(traceback.format_exc()))
        return 3


def _load_plan(path: str) -> Any:
    from interlock.runtime.plan import load_plan

    return load_plan(Path(path).read_text(encoding="utf-8"))


def serve(plan_path: str) -> int:
    """The zygote: import everything, load the plan once, then fork one worker per request line.

    Requests (JSON lines on stdin): a worker spec → `{"pid": N}`; `{"wait": N}` → `{"pid": N, "code": C}`
    (C negative: killed by that signal)."""
    import interlock.runtime.api
    import interlock.stores.engine
    import interlock.stores.migrate
    import interlock.stores.sql  # noqa: F401 - imported before forking, so a worker costs only a fork

    with contextlib.suppress(ImportError):  # SQLite-only environments have no psycopg
        import psycopg  # noqa: F401
    plan = _load_plan(plan_path)
    out = sys.stdout
    out.write(json.dumps({"ready": os.getpid()}) + "\n")
    out.flush()
    for line in sys.stdin:
        request = json.loads(line)
        if "wait" in request:
            pid, status = os.waitpid(int(request["wait"]), 0)
            out.write(json.dumps({"pid": pid, "code": os.waitstatus_to_exitcode(status)}) + "\n")
        else:
            pid = os.fork()
            if pid == 0:  # the worker
                code = 3
                try:
                    code = worker(request, plan)
                finally:
                    os._exit(code)
            out.write(json.dumps({"pid": pid}) + "\n")
        out.flush()
    return 0


class Zygote:
    """The parent's handle on a zygote process (`serve`)."""

    def __init__(self, plan_path: Path) -> None:
        self.proc = subprocess.Popen([sys.executable, str(Path(__file__).resolve()), "serve", str(plan_path)],
                                     stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, bufsize=1)
        self._read()

    def _read(self) -> dict[str, Any]:
        assert self.proc.stdout is not None
        line = self.proc.stdout.readline()
        if not line:
            self.proc.wait(10)
            raise RuntimeError(f"the crash-test zygote exited with {self.proc.returncode}")
        answer: dict[str, Any] = json.loads(line)
        return answer

    def _ask(self, request: Mapping[str, Any]) -> dict[str, Any]:
        assert self.proc.stdin is not None
        self.proc.stdin.write(json.dumps(request) + "\n")
        self.proc.stdin.flush()
        return self._read()

    def spawn(self, spec: Mapping[str, Any]) -> int:
        return int(self._ask(spec)["pid"])

    def wait(self, pid: int) -> int:
        return int(self._ask({"wait": pid})["code"])

    def close(self) -> None:
        if self.proc.stdin is not None:
            self.proc.stdin.close()
        try:
            self.proc.wait(20)
        except subprocess.TimeoutExpired:  # pragma: no cover
            self.proc.kill()
            self.proc.wait(5)
        if self.proc.stdout is not None:
            self.proc.stdout.close()


# ---- reading the store ---------------------------------------------------------------------------------


@dataclass
class Snapshot:
    """The rows of one trial's tasks (every table), straight from the database."""

    tasks: dict[str, str | None]
    ledger: list[dict[str, Any]]
    entries: dict[int, dict[str, Any]]
    markers: list[dict[str, Any]]
    operations: list[str]
    runs: list[dict[str, Any]]
    seats: list[dict[str, Any]]
    decisions: list[dict[str, Any]]


_ENGINES: dict[str, Any] = {}


def snapshot(url: str, prefix: str) -> Snapshot:
    """Read the trial's rows (through one cached engine per URL: `dispose_snapshots()` releases them)."""
    import sqlalchemy as sa

    from interlock.stores.engine import make_engine
    from interlock.stores.schema import (
        decisions,
        entry_markers,
        operations,
        participants,
        runs,
        step_transitions,
        tasks,
    )

    like = prefix.replace("_", r"\_") + "%"
    engine = _ENGINES.get(url)
    if engine is None:
        engine = _ENGINES[url] = make_engine(url, pool_size=1)
    with engine.connect() as conn:
        def rows(table: sa.Table, column: str, *, order: str | None = None) -> list[dict[str, Any]]:
            query = sa.select(table).where(table.c[column].like(like, escape="\\"))
            if order is not None:
                query = query.order_by(table.c[order])
            return [dict(r._mapping) for r in conn.execute(query)]

        ledger = rows(step_transitions, "task_id", order="id")
        ids = [r["id"] for r in ledger]
        entry_rows = {}  # an entry record is three columns of its ledger row (ADR 0013)
        for r in ledger:
            attempted, failed, recorded = r.pop("entry_attempted"), r.pop("entry_failed"), r.pop("entry_recorded_at")
            if recorded is not None:
                entry_rows[int(r["id"])] = {"entry_id": r["id"], "task_id": r["task_id"],
                                            "workflow_id": r["to_workflow_id"], "step_id": r["to_step_id"],
                                            "attempted": attempted, "failed": failed, "recorded_at": recorded}
        marker_rows = [dict(r._mapping) for r in conn.execute(
            sa.select(entry_markers).where(entry_markers.c.entry_id.in_(ids))
            .order_by(entry_markers.c.entry_id, entry_markers.c.position))] if ids else []
        decision_rows = rows(decisions, "task_id", order="id")
        return Snapshot(
            tasks={r["id"]: r["step_id"] for r in rows(tasks, "id")},
            ledger=ledger, entries=entry_rows, markers=marker_rows,
            # applied host operations, and the decisions whose re-evaluation is marked (ADR 0020), as their
            # pre-0003 marker names
            operations=sorted([r["operation_id"] for r in rows(operations, "task_id") if r["state"] == "applied"]
                              + [f"decision:{d['task_id']}:{d['step_id']}:{d['id']}" for d in decision_rows
                                 if d["evaluated_at"] is not None]),
            runs=rows(runs, "task_id", order="id"),
            seats=rows(participants, "task_id", order="id"),
            decisions=[{k: v for k, v in d.items() if k != "evaluated_at"} for d in decision_rows])


def dispose_snapshots() -> None:
    for engine in _ENGINES.values():
        engine.dispose()
    _ENGINES.clear()


def _ordinals(snap: Snapshot) -> dict[int, tuple[str, int]]:
    """ledger id -> (task, index of the row in the task's ledger)."""
    seen: Counter[str] = Counter()
    out = {}
    for row in snap.ledger:
        out[int(row["id"])] = (row["task_id"], seen[row["task_id"]])
        seen[row["task_id"]] += 1
    return out


def normalise(snap: Snapshot, prefix: str) -> dict[str, Any]:
    """The trial's state without store ids and prefixes: equal for equal histories."""
    def short(task: str) -> str:
        return task[len(prefix):] if task.startswith(prefix) else task

    ordinal = _ordinals(snap)
    by_id = {int(d["id"]): d for d in snap.decisions}

    def op_name(op: str | None) -> Any:
        if op is None:
            return None
        if op.startswith("decision:"):
            _, task, step, decision_id = op.split(":")
            d = by_id.get(int(decision_id))
            who = (d["decider_id"], d["role"], d["verdict"]) if d else ("?", "?", "?")
            return ("decision", short(task), step, *who)
        return ("op", short(op.split(":")[0]), op.split(":", 1)[1])

    def origin(run: Mapping[str, Any]) -> Any:
        if run["entry_id"] is not None:
            return ("entry", ordinal[int(run["entry_id"])][1])
        return op_name(run["operation_id"])

    return {
        "tasks": {short(t): s for t, s in sorted(snap.tasks.items())},
        "ledger": [(short(r["task_id"]), r["from_step_id"], r["to_step_id"], r["route"]) for r in snap.ledger],
        "entries": sorted((short(e["task_id"]), ordinal[i][1], e["step_id"], e["attempted"], e["failed"])
                          for i, e in snap.entries.items()),
        "markers": sorted((short(ordinal[int(m["entry_id"])][0]), ordinal[int(m["entry_id"])][1], m["position"],
                           m["kind"], m["state"]) for m in snap.markers),
        "operations": sorted(map(str, (op_name(o) for o in snap.operations))),
        "runs": sorted((short(r["task_id"]), r["step_id"], r["agent"], r["reason"], str(origin(r)))
                       for r in snap.runs),
        "seats": sorted((short(s["task_id"]), s["step_id"], s["role"], s["agent"]) for s in snap.seats),
        "decisions": sorted((short(d["task_id"]), d["step_id"], d["decider_id"], d["role"], d["verdict"],
                             d["superseded_at"] is None) for d in snap.decisions),
    }


# ---- the invariants -------------------------------------------------------------------------------------


def _entry_kinds(plan: Any) -> dict[str, tuple[tuple[int, str], ...]]:
    wf = plan.workflow(WF)
    return {s.id: tuple((a.position, a.kind) for a in s.entry_dispatch) for s in wf.steps}


def check_chain(snap: Snapshot) -> list[str]:
    """Each task's ledger is a chain: first row a creation, each row's `from` the previous `to`, the last
    `to` the task's current step; a task with no ledger row does not exist (creation is atomic)."""
    problems = []
    by_task: dict[str, list[dict[str, Any]]] = {}
    for row in snap.ledger:
        by_task.setdefault(row["task_id"], []).append(row)
    for task, step in snap.tasks.items():
        rows = by_task.get(task, [])
        if not rows:
            problems.append(f"{task}: exists (at {step}) but has no ledger row")
            continue
        if rows[0]["route"] != "creation" or rows[0]["from_step_id"] is not None:
            problems.append(f"{task}: first ledger row is not a creation: {rows[0]}")
        for prev, row in itertools.pairwise(rows):
            if row["from_step_id"] != prev["to_step_id"]:
                problems.append(f"{task}: ledger row {row['id']} comes from {row['from_step_id']}, but the row "
                                f"before it ({prev['id']}) went to {prev['to_step_id']} (a lost step change)")
        if rows[-1]["to_step_id"] != step:
            problems.append(f"{task}: at {step}, but its last ledger row ({rows[-1]['id']}) went to "
                            f"{rows[-1]['to_step_id']}")
    for task in by_task:
        if task not in snap.tasks:
            problems.append(f"{task}: ledger rows but no task")
    return problems


def check_recovered(snap: Snapshot, plan: Any, variant: str, view: JournalView, calls: list[dict[str, Any]],
                    effects: list[str]) -> list[str]:
    """The invariants after a restart and `recover()` (before the in-flight call is redelivered)."""
    problems = check_chain(snap)
    kinds = _entry_kinds(plan)
    ledger_ids = {int(r["id"]) for r in snap.ledger}
    rows = {int(r["id"]): r for r in snap.ledger}
    markers: dict[int, dict[int, dict[str, Any]]] = {}
    for m in snap.markers:
        markers.setdefault(int(m["entry_id"]), {})[int(m["position"])] = m
    # every ledger row that names a destination has exactly one entry record (the PK makes it at most one)
    for row in snap.ledger:
        if row["to_step_id"] is not None and int(row["id"]) not in snap.entries:
            problems.append(f"ledger row {row['id']} ({row['task_id']} -> {row['to_step_id']}) has no entry record")
    for entry_id, entry in snap.entries.items():
        row = rows[entry_id]
        expected = [k for _, k in kinds[row["to_step_id"]]]
        attempted = json.loads(entry["attempted"])
        failed = json.loads(entry["failed"])
        if entry["step_id"] != row["to_step_id"] or attempted != expected:
            problems.append(f"entry {entry_id}: step {entry['step_id']} attempted {attempted}; the ledger row "
                            f"goes to {row['to_step_id']}, whose entry dispatches {expected}")
        got = markers.get(entry_id, {})
        want = dict(kinds[row["to_step_id"]])
        # entered in its arrival's transaction (ADR 0010): no marker, the entry record stands for every position;
        # `host` mixes both shapes: entries with the host executor are entered after the commit
        # `split` enters after the commit, in one transaction of its own (ADR 0036): no marker either
        atomic = variant in ("tx", "retry", "split") or (variant == "host" and "ensure_seats" not in want.values())
        if atomic:
            if got:
                problems.append(f"entry {entry_id}: markers {sorted(got)} for an entry of its arrival's transaction")
        elif set(got) != set(want) or any(got[p]["kind"] != want[p] for p in got):
            problems.append(f"entry {entry_id}: markers {sorted((p, m['kind']) for p, m in got.items())}, "
                            f"expected {sorted(want.items())}")
        for position, marker in got.items():
            # a host call a crash interrupted is run again by `recover` (docs/runtime.md §7): every marker is done
            if marker["state"] != "done":
                problems.append(f"entry {entry_id}: marker {position} ({marker['kind']}) is {marker['state']} "
                                f"({marker['error']})")
        allowed: list[list[str]] = []
        if variant == "retry" and "ensure_seats" in want.values():
            allowed = [["ensure_seats", RETRY_FAILURE]]
        if failed != allowed:
            problems.append(f"entry {entry_id} ({row['task_id']} -> {row['to_step_id']}): failed {failed}")
    for marker in snap.markers:
        if int(marker["entry_id"]) not in snap.entries:
            problems.append(f"marker {marker['entry_id']}/{marker['position']} of an entry with no record")
    # effects: exactly one run per (recorded entry into review/approval x seat); op runs once per operation
    seats_of = {}
    for task in snap.tasks:
        per_task = [s for s in snap.seats if s["task_id"] == task and s["role"] == "approver"]
        seats_of[task] = {"review": set(REVIEWERS), "approval": {s["agent"] for s in per_task}}
        if len(per_task) > 1:
            problems.append(f"{task}: {len(per_task)} approver seats (ensure_seats ran twice): {per_task}")
        if variant == "retry" and per_task:
            problems.append(f"{task}: the seat of a failed ensure_seats survived its undoing: {per_task}")
        approval_entries = [e for e in snap.entries.values() if e["task_id"] == task and e["step_id"] == "approval"]
        if approval_entries and not per_task and not any("ensure_seats" in e["failed"] for e in approval_entries):
            problems.append(f"{task}: entered approval but no approver seat was ensured")
    entry_runs: dict[int, list[str]] = {}
    op_runs: Counter[tuple[str, str]] = Counter()
    for run in snap.runs:
        # a run of an operation names the activation it was queued in too (`entry_id`): told apart by its operation
        if run["operation_id"] is None:
            entry_runs.setdefault(int(run["entry_id"]), []).append(run["agent"])
            if int(run["entry_id"]) not in ledger_ids:
                problems.append(f"run {run['idempotency_key']} names entry {run['entry_id']}, not in the ledger")
        else:
            op_runs[(run["operation_id"], run["agent"])] += 1
    for entry_id, entry in snap.entries.items():
        if entry["step_id"] not in ENTRY_STEPS:
            continue
        agents = sorted(entry_runs.get(entry_id, []))
        want = sorted(seats_of[entry["task_id"]][entry["step_id"]])
        if agents != want:
            problems.append(f"entry {entry_id} ({entry['task_id']} -> {entry['step_id']}): runs for {agents}, "
                            f"expected one per seat {want}")
    for (op, agent), n in op_runs.items():
        if n != 1:
            problems.append(f"operation {op}: {n} runs for {agent}")
    # every call the journal says returned is reflected in the store
    for index, result in sorted(view.returned.items()):
        call = calls[index]
        if call["op"] == "create" and call["task"] not in snap.tasks:
            problems.append(f"call {index} (create {call['task']}) returned, but the task does not exist")
        if call["op"] == "fire":
            if call["operation"] not in snap.operations:
                problems.append(f"call {index} (fire {call['operation']}) returned, but its operation is unmarked")
            if call["trigger"] == "on_comment" and result["actions"] and \
                    op_runs.get((call["operation"], PRIMARY)) != 1:
                problems.append(f"call {index} (fire {call['operation']}) returned, but queued no run")
        if call["op"] == "decide":
            decided = [d for d in snap.decisions if d["task_id"] == call["task"] and d["step_id"] == call["step"]
                       and d["decider_id"] == call["agent"] and d["verdict"] == call["verdict"]]
            if not decided:
                problems.append(f"call {index} (decision {call}) returned, but no such decision is stored")
            ops = {f"decision:{call['task']}:{call['step']}:{d['id']}" for d in decided}
            if not ops & set(snap.operations):
                problems.append(f"call {index} (decision {call}) returned, but its re-evaluation is unmarked")
        arrival = result.get("arrival") or (result if call["op"] == "create" else None)
        if arrival and arrival.get("status") == "moved":
            moved = [r for r in snap.ledger if r["task_id"] == call["task"] and r["to_step_id"] == arrival["to"]]
            if not moved:
                problems.append(f"call {index} ({call['op']} {call['task']}) moved it to {arrival['to']}, "
                                "but the ledger has no such row")
    # host effects: at least once, with one key — a call a crash interrupted runs again with the same key and the
    # next attempt (docs/runtime.md §7), so a key may be called more than once, never twice with one attempt
    attempts: dict[str, list[str]] = {}
    for effect in effects:
        key, _, attempt = effect.partition(" ")
        attempts.setdefault(key, []).append(attempt)
    counts = Counter({key: 1 for key in attempts})
    for key, seen in attempts.items():
        if len(set(seen)) != len(seen):
            problems.append(f"host effect {key}: attempt(s) {sorted(seen)} called twice")
    for marker in snap.markers:
        if variant == "host" and marker["kind"] == "ensure_seats":
            key = f"entry:{marker['entry_id']}:{marker['position']}:ensure_seats"
            if marker["state"] == "done" and counts.get(key) != 1:
                problems.append(f"host effect {key}: marker done, but it happened {counts.get(key, 0)} times")
    return problems


# ---- one trial (the parent's side) ----------------------------------------------------------------------


@dataclass
class Trial:
    seed: int
    backend: str
    variant: str
    kill: str  # "timed" | "point"
    delay: float = 0.0
    kill_at: int = 0
    double: bool = False
    double_kill_at: int = 0
    code: int | None = None
    phase: str = ""
    problems: list[str] = field(default_factory=list)

    def describe(self) -> str:
        how = f"point {self.kill_at}" if self.kill == "point" else f"timed {self.delay * 1000:.1f} ms"
        double = f", recover killed at point {self.double_kill_at}" if self.double else ""
        return f"seed {self.seed} ({self.backend}, {self.variant}, {how}{double}): {self.phase}"


class Campaign:
    """Runs trials against one store URL through a zygote; `reference` holds a never-killed run per variant."""

    def __init__(self, url: str, backend: str, workdir: Path, *, fsync: bool = True) -> None:
        from interlock.runtime.plan import dump_plan, load_plan
        from interlock.stores import open_store
        from interlock.stores.sql import SqlStore

        self.url = url
        self.backend = backend
        self.workdir = workdir
        self.fsync = fsync
        # PostgreSQL application names are server-wide: this campaign's own, so that a campaign running beside it
        # (another pytest-xdist worker, another checkout's suite) never makes it wait for the other's backends
        self.app_tag = os.urandom(4).hex()
        self.plan_path = workdir / "office.plan.json"
        self.plan_path.write_text(plan_json(), encoding="utf-8")
        self.plan = load_plan(self.plan_path.read_text(encoding="utf-8"))
        assert dump_plan(self.plan) == self.plan_path.read_text(encoding="utf-8")
        store = open_store(url, create=False)
        assert isinstance(store, SqlStore)
        try:
            prepare(store)
        finally:
            store.close()
        self.zygote = Zygote(self.plan_path)
        self.reference: dict[str, dict[str, Any]] = {}
        self.results: dict[str, dict[int, dict[str, Any]]] = {}
        self.points: dict[str, int] = {}
        self.elapsed: dict[str, float] = {}
        self.trace: dict[str, list[tuple[int, str]]] = {}
        self.trials: list[Trial] = []

    def close(self) -> None:
        self.zygote.close()
        dispose_snapshots()

    # -- workers -----------------------------------------------------------------------------------
    def _worker_url(self, name: str) -> str:
        """PostgreSQL: the URL with an application_name, so the parent can wait for the killed worker's
        server processes to end (a transaction in flight at the kill commits or aborts before the restart)."""
        if self.backend != "postgresql":
            return self.url
        from sqlalchemy.engine import make_url

        return make_url(self.url).update_query_dict({"application_name": self._app_name(name)}).render_as_string(
            hide_password=False)

    def _app_name(self, name: str) -> str:
        return f"il_crash_{self.app_tag}_{name}"

    def _await_backends(self, name: str, timeout: float = 30.0) -> None:
        if self.backend != "postgresql":
            return
        import sqlalchemy as sa

        engine = _ENGINES.get(self.url)
        if engine is None:
            from interlock.stores.engine import make_engine

            engine = _ENGINES[self.url] = make_engine(self.url, pool_size=1)
        deadline = time.monotonic() + timeout
        while True:
            with engine.connect() as conn:
                left = conn.execute(sa.text("SELECT count(*) FROM pg_stat_activity WHERE application_name = :app"),
                                    {"app": self._app_name(name)}).scalar_one()
            if not left:
                return
            if time.monotonic() > deadline:
                raise RuntimeError(f"the server processes of killed worker {name} did not end")
            time.sleep(0.002)

    def _spawn(self, spec: dict[str, Any]) -> int:
        return self.zygote.spawn({**spec, "url": self._worker_url(Path(spec["journal"]).name), "fsync": self.fsync})

    def _wait_ready(self, journal: Path, pid: int, timeout: float = 60.0) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            try:
                text = journal.read_bytes()
            except FileNotFoundError:
                text = b""
            if b"\nready\n" in b"\n" + text or b"\nE " in b"\n" + text:
                return
            time.sleep(0.0005)
        os.kill(pid, signal.SIGKILL)
        raise RuntimeError(f"worker {pid} not ready after {timeout}s")

    def run_worker(self, spec: dict[str, Any], *, delay: float | None = None) -> tuple[int, JournalView]:
        """Fork a worker; kill it `delay` seconds after it is ready (None: let it finish or kill itself)."""
        journal = Path(spec["journal"])
        pid = self._spawn(spec)
        if delay is not None:
            self._wait_ready(journal, pid)
            time.sleep(delay)
            with contextlib.suppress(ProcessLookupError):  # a zombie until the zygote reaps it: no error
                os.kill(pid, signal.SIGKILL)
        code = self.zygote.wait(pid)
        self._await_backends(journal.name)
        view = read_journal(journal)
        if view.error:
            raise RuntimeError(f"worker failed:\n{view.error}")
        self._stop_owners(view.owners)
        return code, view

    def _stop_owners(self, owners: list[str]) -> None:
        """What a supervisor that saw its worker die tells the store: the worker's runtime owner is gone, so its
        claims are taken up at once rather than when its lease runs out (the lease path: the clock-skew mode)."""
        if not owners:
            return
        from interlock.stores import open_store

        store = open_store(self.url, create=False)
        try:
            for owner in owners:
                store.stop_owner(owner)
        finally:
            store.close()  # type: ignore[attr-defined]

    # -- the reference --------------------------------------------------------------------------------
    def calibrate(self, variant: str, runs: int = 4) -> None:
        """Never-killed runs: their state is the reference; their length sets the kill ranges."""
        samples = []
        for i in range(runs):
            prefix = f"REF{variant}{i}_"
            journal = self.workdir / f"{prefix}.journal"
            code, view = self.run_worker({"journal": str(journal), "prefix": prefix, "variant": variant,
                                          "mode": "script", "kill_at": 0, "trace": i == 0})
            assert code == 0 and view.done is not None, (code, view)
            if i == 0:
                self.trace[variant] = view.trace
            else:
                samples.append(view.done)
            state = normalise(snapshot(self.url, prefix), prefix)
            problems = check_recovered(snapshot(self.url, prefix), self.plan, variant, view, script(prefix),
                                       view.effects)
            assert problems == [], problems
            if variant not in self.reference:
                self.reference[variant] = state
                self.results[variant] = view.returned
            else:
                assert state == self.reference[variant], "two never-killed runs ended in different states"
                assert view.returned == self.results[variant]
        self.points[variant] = max(p for p, _ in samples)
        self.elapsed[variant] = sorted(e for _, e in samples)[len(samples) // 2]

    # -- a trial ----------------------------------------------------------------------------------------------
    def plan_trial(self, seed: int) -> Trial:
        rng = random.Random(seed)
        draw = rng.random()
        variant = "host" if draw < 0.25 else "split" if draw < 0.45 else "retry" if draw < 0.65 else "tx"
        trial = Trial(seed, self.backend, variant, "timed" if rng.random() < 0.5 else "point")
        trial.delay = rng.uniform(0.0, self.elapsed[variant])
        trial.kill_at = rng.randint(1, self.points[variant])
        trial.double = rng.random() < 0.2
        trial.double_kill_at = rng.randint(1, 60)
        return trial

    def targeted(self, labels: tuple[str, ...] = ("after move_task", "after create_task")) -> list[Trial]:
        """Point kills at every point of the never-killed `split` run whose label is one of `labels` (by default
        every moment between an arrival's commit and its entry dispatch, which only the split path has: a `tx`
        arrival commits with its entry); seeds from 100000 up."""
        hits = [n for n, (_, label) in enumerate(self.trace["split"], start=1) if label in labels]
        return [Trial(100_000 + k, self.backend, "split", "point", kill_at=n) for k, n in enumerate(hits)]

    def trial(self, seed: int) -> Trial:
        """Run trial `seed`; its `problems` list every invariant it found broken (empty: none)."""
        return self.run(self.plan_trial(seed))

    def run(self, trial: Trial) -> Trial:
        self.trials.append(trial)
        try:
            self._trial(trial)
        except Exception:
            trial.problems.append("the trial raised:\n" + traceback.format_exc())
        return trial

    def _trial(self, trial: Trial) -> None:
        from interlock.stores import open_store

        seed = trial.seed
        prefix = f"K{seed}_"
        calls = script(prefix)
        journal = self.workdir / f"{prefix}.journal"
        spec = {"journal": str(journal), "prefix": prefix, "variant": trial.variant, "mode": "script",
                "kill_at": trial.kill_at if trial.kill == "point" else 0}
        trial.code, view = self.run_worker(spec, delay=trial.delay if trial.kill == "timed" else None)
        trial.phase = _phase(view, calls)
        problems = trial.problems
        before = snapshot(self.url, prefix)
        problems += [f"after the kill: {p}" for p in check_chain(before)]
        rjournal = self.workdir / f"{prefix}.recover.journal"
        journals = [journal, rjournal]
        if trial.double:  # a crash during recovery too
            self.run_worker({"journal": str(rjournal), "prefix": prefix, "variant": trial.variant,
                             "mode": "recover", "kill_at": trial.double_kill_at})
            problems += [f"after the killed recover: {p}" for p in check_chain(snapshot(self.url, prefix))]
        # the restart: a fresh store and runtime, then recover
        store = open_store(self.url, create=False)
        host_log = Journal(journal, fsync=self.fsync)
        try:
            rt = build_runtime(store, self.plan, trial.variant, host_log)
            recovered = rt.recover()
            incomplete = [e for e in recovered.entries if e.status == "incomplete"]
            if incomplete:
                problems.append(f"recover left entries incomplete: {incomplete}")
            if store.unrecorded_arrivals():
                problems.append(f"unrecorded arrivals after recover: {store.unrecorded_arrivals()}")
            after = snapshot(self.url, prefix)
            effects = [e for j in journals for e in read_journal(j).effects]
            problems += [f"after recover: {p}" for p in check_recovered(after, self.plan, trial.variant, view, calls,
                                                                          effects)]
            for index, result in view.returned.items():
                if result != self.results[trial.variant][index]:
                    problems.append(f"call {index} returned {result}, the never-killed run "
                                    f"{self.results[trial.variant][index]}")
            # An unknown outcome (host variant: a host executor cut short, recorded as failed and never re-run,
            # ADR 0008 §4) may legitimately change what follows: then only the invariants are compared.
            unknown = any(IN_PROGRESS_PREFIX in e["failed"] for e in after.entries.values())
            # redeliver the in-flight call, then make the rest of the calls
            start = view.next_call
            if view.in_flight is not None:
                assert view.in_flight == start
                redeliver(rt, store, calls[start])
                start += 1
            for index in range(start, len(calls)):
                result = perform(rt, calls[index])
                if result != self.results[trial.variant][index] and not unknown:
                    problems.append(f"after the restart, call {index} returned {result}, the never-killed run "
                                    f"{self.results[trial.variant][index]}")
        finally:
            host_log.close()
            store.close()  # type: ignore[attr-defined]
        final = snapshot(self.url, prefix)
        effects = [e for j in journals for e in read_journal(j).effects]  # the host effects of every process
        problems += [f"at the end: {p}" for p in check_recovered(final, self.plan, trial.variant, view, calls,
                                                                 effects)]
        unknown = unknown or any(IN_PROGRESS_PREFIX in e["failed"] for e in final.entries.values())
        if not unknown:  # an unknown outcome (host variant) may legitimately change what follows
            state = normalise(final, prefix)
            for key, want in self.reference[trial.variant].items():
                if state[key] != want:
                    problems.append(f"at the end, {key} differs from the never-killed run:\n"
                                    f"  got  {state[key]}\n  want {want}")
        else:
            trial.phase += " [unknown outcome]"


def redeliver(rt: Any, store: Any, call: Mapping[str, Any]) -> None:
    """What a host does with the call that was in flight when it crashed."""
    op, task = call["op"], call["task"]
    if op == "create":
        if store.get_task(task) is None:
            perform(rt, call)
    elif op == "decide":
        # A decision has no operation id: redeliver the re-evaluation of the stored one (idempotent per
        # decision), or the decision itself if it never reached the store.
        stored = [d for d in store.decisions(task, call["step"])
                  if d.decider_id == call["agent"] and d.role == call["role"] and d.verdict == call["verdict"]]
        if stored:
            rt.reevaluate(task, call["step"], stored[-1].id, actor=call["agent"], actor_kind="agent")
        elif store.get_task(task).step_id == call["step"]:
            perform(rt, call)
    else:  # fire (same operation id), move (same target: same_step if it committed), redeliver
        perform(rt, call)


def _phase(view: JournalView, calls: list[dict[str, Any]]) -> str:
    """Where the kill landed, in words."""
    if view.done is not None:
        return "after the last call (not killed)"
    if not view.called:
        return "before the first call"
    where = view.in_flight
    if where is None:
        return f"between calls {view.next_call - 1} and {view.next_call}"
    call = calls[where]
    label = call["op"] + (f" {call['trigger']}" if call["op"] == "fire" else "")
    return f"in call {where} ({label})" + (f" at {view.kill.split(' ', 1)[1]}" if view.kill else "")


# ---- set-up ------------------------------------------------------------------------------------------


def plan_json() -> str:
    from interlock.compiler import compile_path
    from interlock.runtime.plan import dump_plan

    result = compile_path(EXAMPLE)
    assert result.plan is not None, result.diagnostics
    return dump_plan(result.plan)


def prepare(store: Any) -> None:
    """Pre-existing state shared by every trial: the template reviewer seats of `review`."""
    from interlock.runtime.store import Participant

    for position, agent in enumerate(REVIEWERS):
        store.add_participant(Participant("", "review", "reviewer", agent, position=position))


def main(argv: list[str]) -> int:
    if len(argv) == 3 and argv[1] == "serve":
        return serve(argv[2])
    if len(argv) == 4 and argv[1] == "run":
        spec = json.loads(Path(argv[2]).read_text())
        return worker(spec, _load_plan(argv[3]))
    sys.stderr.write("usage: crash_worker.py serve PLAN.json | run SPEC.json PLAN.json\n")
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv))
