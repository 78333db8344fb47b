"""A small host for the tests of host actions, retries, incidents and timers (docs/runtime.md §7): a workflow with
two host kinds and two timers, a test clock, executors that record each call (and may fail, block on a handshake
or hang), and the entry points of the worker processes the crash and race tests spawn (imported by name).

The workflow: `notify` (retried twice, 10 s then 20 s, at most 40 s) and `page` (no retry policy) run on entry
to `open`, `page` then `notify` on a comment; `open` has `after 1h { notify }` and `every 10m { page }`; `review` has
`after 30m { page }`; `closed` is terminal.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from interlock.compiler import compile_source
from interlock.dsl import SourceFile
from interlock.runtime import ActionContext, ActionFailed, ExecutorRegistry, ListSink, Runtime
from interlock.runtime.plan import Plan
from interlock.runtime.store import Store

WF = """\
task notify(text: str = "") on on_enter, on_comment
     retry 2 backoff 10s..40s
task page(text: str = "") on on_enter, on_comment
entry { dispatch notify, page }

workflow w "W" {
  step open "Open" {
    start
    manual_move
    on on_enter   { notify(text: "opened")  page(text: "new") }
    on on_comment { page(text: "comment")  notify(text: "comment") }
    after 1h      { notify(text: "overdue") }
    every 10m     { page(text: "heartbeat") }
  }
  step review "Review" {
    manual_move
    after 30m { page(text: "review overdue") }
  }
  step closed "Closed" { manual_move  terminal }
}
"""

T0 = 1_800_000_000.0  # the test clock's start (epoch seconds)
HOST_KINDS = ("notify", "page")


def plan() -> Plan:
    """The compiled workflow."""
    result = compile_source(SourceFile("timer_host.wf", WF))
    if result.plan is None:  # pragma: no cover - the text above compiles
        raise AssertionError("\n".join(str(d) for d in result.diagnostics))
    return result.plan


class Clock:
    """A test clock: the time it was set to, moved only by `advance` (or `set`)."""

    def __init__(self, now: float = T0) -> None:
        self.now = now

    def __call__(self) -> float:
        return self.now

    def advance(self, seconds: float) -> None:
        self.now += seconds


@dataclass(frozen=True)
class Call:
    """One executor call, as the executor saw it."""

    kind: str
    task: str
    trigger: str
    key: str | None
    attempt: int
    entry_id: int | None
    operation_id: str | None
    current_entry: int | None  # the task's activation in the store while the executor ran


@dataclass
class Calls:
    """Records every executor call; `fail(kind, n)` makes the next n calls of a kind fail, `block(kind, fn)` runs
    `fn(ctx)` inside the next call of a kind (a handshake: it returns when the test lets it)."""

    store: Store | None = None
    calls: list[Call] = field(default_factory=list)
    _fail: dict[str, list[str]] = field(default_factory=dict)
    _block: dict[str, list[Callable[[ActionContext], None]]] = field(default_factory=dict)
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def fail(self, kind: str, n: int = 1, error: str = "chat is down") -> None:
        self._fail.setdefault(kind, []).extend([error] * n)

    def block(self, kind: str, fn: Callable[[ActionContext], None]) -> None:
        self._block.setdefault(kind, []).append(fn)

    def of(self, kind: str | None = None, trigger: str | None = None) -> list[Call]:
        return [c for c in self.calls if (kind is None or c.kind == kind) and (trigger is None or c.trigger == trigger)]

    def executor(self, kind: str) -> Callable[[Mapping[str, Any], ActionContext], Any]:
        def run(args: Mapping[str, Any], ctx: ActionContext) -> Any:
            task = self.store.get_task(ctx.task.id) if self.store is not None else None
            with self._lock:
                self.calls.append(Call(kind, ctx.task.id, ctx.trigger, ctx.idempotency_key, ctx.attempt,
                                       ctx.entry_id, ctx.operation_id, task.entry_id if task else None))
                failing = self._fail.get(kind)
                error = failing.pop(0) if failing else None
                blocking = self._block.get(kind)
                block = blocking.pop(0) if blocking else None
            if block is not None:
                block(ctx)
            if error is not None:
                raise ActionFailed(error)
            return [{"kind": kind, "text": args.get("text", "")}]

        return run

    def registry(self, kinds: Sequence[str] = HOST_KINDS) -> ExecutorRegistry:
        reg = ExecutorRegistry()
        for kind in kinds:
            reg.register(kind, self.executor(kind))
        return reg


def runtime(store: Store, calls: Calls, *, sink: ListSink | None = None, lease: float = 60.0,
            executor_timeout: float | None = 10.0, heartbeat: bool = True,
            build: Callable[..., Runtime] = Runtime) -> Runtime:
    """A runtime of the workflow over `store`, its host kinds run by `calls` (`build`: what makes it, `Runtime` or
    tests/runtime's `build_runtime` fixture)."""
    calls.store = store
    return build(plan(), store, executors=calls.registry(), sinks=[sink] if sink is not None else [],
                 executor_timeout=executor_timeout, operation_lease=lease, heartbeat=heartbeat)


# ---- worker processes ------------------------------------------------------------------------------------------


def _signal(path: str, line: str) -> None:
    """A line in the handshake file (written whole, then flushed to disk: the test reads it as the signal)."""
    with open(path, "a", encoding="utf-8") as f:
        f.write(line + "\n")
        f.flush()
        os.fsync(f.fileno())


def hang_inside(url: str, clock_at: float, kind: str, signal_file: str, what: str) -> None:
    """A worker that is killed inside a host action: it opens the store on a test clock fixed at `clock_at`, makes
    the call `what` (`create`: create task T1; `tick`: one tick), and when `kind` runs it writes
    `<key> <attempt> <trigger>` to `signal_file` and hangs until it is killed."""
    from interlock.stores import open_store

    store = open_store(url, create=False, clock=lambda: clock_at)
    calls = Calls()

    def hang(ctx: ActionContext) -> None:
        _signal(signal_file, f"{ctx.idempotency_key} {ctx.attempt} {ctx.trigger}")
        threading.Event().wait()

    calls.block(kind, hang)
    rt = runtime(store, calls, lease=1.0, executor_timeout=None)
    if what == "create":
        rt.create_task("T1", "w", operation_id="create:T1")
    else:
        rt.tick()
    raise AssertionError(f"{what} returned: the worker should have hung inside `{kind}`")  # pragma: no cover


def redrive_worker(url: str, clock_at: float, incident_id: int, kind: str, inside: Any, release: Any, results: Any,
                   barrier: Any = None) -> None:
    """A worker that redrives an incident: `inside` is set while its `kind` runs, which returns once `release` is
    set (None: at once); with `barrier`, it waits there first (a race).  Puts (status, ran, calls as
    (kind, key, attempt)) on `results`."""
    from interlock.stores import open_store

    try:
        store = open_store(url, create=False, clock=lambda: clock_at)
        calls = Calls()

        def handshake(ctx: ActionContext) -> None:
            inside.set()
            if release is not None and not release.wait(timeout=60):
                raise AssertionError("never released")  # pragma: no cover

        calls.block(kind, handshake)
        rt = runtime(store, calls)
        try:
            if barrier is not None:
                barrier.wait(timeout=60)
            result = rt.redrive(incident_id)
            results.put((result.status, list(result.ran), [(c.kind, c.key, c.attempt) for c in calls.calls]))
        finally:
            rt.close()
            getattr(store, "close", lambda: None)()
    except BaseException as exc:  # pragma: no cover - reported to the test
        results.put(("error", [repr(exc)], []))
        raise


def tick_worker(url: str, clock_at: float, worker: int, barrier: Any, results: Any) -> None:
    """A worker that ticks until nothing is due on a clock fixed at `clock_at`: its host kinds write one row per call
    to `tick_effects` (key, worker); puts (worker, the items it took as (task, label, slot, result), its `timer`
    records as (task, timer, slot, result)) on `results`."""
    import sqlalchemy as sa

    from interlock.stores import open_store
    from interlock.stores.engine import normalise_url

    items: list[tuple[str, str, int, str]] = []
    sink = ListSink()
    try:
        store = open_store(url, create=False, clock=lambda: clock_at)
        engine = sa.create_engine(normalise_url(url))

        def effect(args: Mapping[str, Any], ctx: ActionContext) -> Any:
            with engine.begin() as conn:
                conn.execute(sa.text("INSERT INTO tick_effects (key, worker) VALUES (:key, :worker)"),
                             {"key": ctx.idempotency_key, "worker": worker})
            return []

        reg = ExecutorRegistry()
        for kind in HOST_KINDS:
            reg.register(kind, effect)
        rt = Runtime(plan(), store, executors=reg, sinks=[sink], executor_timeout=None)
        try:
            barrier.wait(timeout=60)
            for _ in range(200):  # bounded: each round fires or skips every due row
                result = rt.tick(limit=1000)
                items.extend((i.task_id, i.label, i.slot, i.result) for i in result.items)
                if not store.due(1):
                    break
            timers = [(r.fields["task"], r.fields["timer"], r.fields["slot"], r.fields["result"])
                      for r in sink.of("timer")]
            results.put((worker, items, timers))
        finally:
            rt.close()
            engine.dispose()
            getattr(store, "close", lambda: None)()
    except BaseException as exc:  # pragma: no cover - reported to the test
        results.put((worker, [("error", repr(exc), 0, "")], []))
        raise


def collect(results: Any, procs: Sequence[Any], wait: float) -> list[Any]:
    """One result from each of `procs` (spawned workers that put exactly one on `results`, errors included); fails at
    once when one of them died without putting its result (e.g. killed), and kills the others then."""
    import queue
    import time

    out: list[Any] = []
    deadline = time.monotonic() + wait
    try:
        while len(out) < len(procs):
            try:
                out.append(results.get(timeout=0.5))
            except queue.Empty:
                dead = [p.exitcode for p in procs if p.exitcode not in (None, 0)]
                if dead and results.empty():
                    raise AssertionError(f"a worker died without a result (exit codes {dead}); got {out}") from None
                if time.monotonic() > deadline:
                    raise AssertionError(f"the workers did not answer within {wait:g} s; got {out}") from None
    except BaseException:
        for p in procs:
            if p.is_alive():
                p.kill()
        raise
    return out


def read_signal(path: Path) -> list[str]:
    """The handshake file's complete lines."""
    if not path.exists():
        return []
    text = path.read_text(encoding="utf-8")
    return [line for line in text.split("\n")[:-1] if line]


def clocked_store(request: Any, clock: Clock) -> tuple[Store, str | None]:
    """A fresh, empty store of the backend `request.param` (`memory`, `sqlite`, `postgresql`) on `clock`, and its
    URL (None for memory).  The SQL ones use the suite's fixtures (a copied migrated SQLite file; the runtime tests'
    PostgreSQL schema, emptied)."""
    from interlock.stores import MemoryStore, open_store
    from interlock.stores.schema import metadata

    if request.param == "memory":
        return MemoryStore(clock=clock), None
    if request.param == "sqlite":
        url = str(request.getfixturevalue("sqlite_url"))
    else:
        url = str(request.getfixturevalue("runtime_pg_url"))
        engine = request.getfixturevalue("runtime_pg_engine")
        with engine.begin() as conn:
            for table in reversed(metadata.sorted_tables):
                conn.execute(table.delete())
    store = open_store(url, create=False, clock=clock)
    request.addfinalizer(getattr(store, "close", lambda: None))
    return store, url
