"""A small, real host program for interlock: a worker loop that embeds the runtime.

    python examples/host/host.py                       # SQLite file ./interlock-host.db
    python examples/host/host.py --store postgresql+psycopg://postgres@127.0.0.1:5432/test

What it shows (docs/runtime.md §6, §7):

- the runtime over a durable store, `recover()` at start-up (and on every turn of the loop: it only
  takes up what dead processes left, so running it often is cheap and safe beside other workers);
- tasks created idempotently (`operation_id`), agent turns delivered with the activation they belong to
  (`entry_id`), so a late or repeated turn changes nothing;
- `tick()` on a schedule, sleeping until `next_due`: the review step's `every 2s` nudges and its
  `after 5s` escalation;
- a host executor (`notify`) that **deduplicates on `ctx.idempotency_key`** in the host's own table,
  `host_notifications`: interlock runs host actions at least once with a stable key, so with the key as
  the table's primary key every notification exists exactly once — even when this process is killed in
  the middle of one and another process runs it again.

Run two of them at once on one store: they share the work and nothing runs twice.  Ctrl-C stops it
cleanly (its owner is stopped, so another process takes over at once).
"""

from __future__ import annotations

import argparse
import os
import signal
import sys
import threading
from pathlib import Path
from typing import Any

import sqlalchemy as sa

from interlock.compiler import compile_path
from interlock.runtime import ActionContext, ExecutorRegistry, Runtime
from interlock.stores import open_store

FLOW = Path(__file__).with_name("flow.wf")
NOTIFICATIONS = sa.table("host_notifications", sa.column("key"), sa.column("task_id"), sa.column("channel"),
                         sa.column("text"), sa.column("attempt"))


class Notifier:
    """The host's `notify` executor: one row per idempotency key in the host's own table."""

    def __init__(self, engine: sa.Engine) -> None:
        self.engine = engine
        with engine.begin() as conn:
            conn.execute(sa.text("CREATE TABLE IF NOT EXISTS host_notifications (key TEXT PRIMARY KEY, "
                                 "task_id TEXT NOT NULL, channel TEXT NOT NULL, text TEXT NOT NULL, "
                                 "attempt INTEGER NOT NULL)"))
        # For the test that kills this process in the middle of a notification (tests/examples/test_host.py):
        # after its row is written, tell the test (a line in this file) and hang until killed.
        self.hang_after = os.environ.get("INTERLOCK_HOST_HANG_AFTER_NOTIFY")

    def __call__(self, args: Any, ctx: ActionContext) -> list[dict[str, Any]]:
        key = ctx.idempotency_key or f"{ctx.task.id}:{ctx.position}"
        with self.engine.begin() as conn:
            conn.execute(sa.text("INSERT INTO host_notifications (key, task_id, channel, text, attempt) VALUES "
                                 "(:key, :task, :channel, :text, :attempt) ON CONFLICT (key) DO NOTHING"),
                         {"key": key, "task": ctx.task.id, "channel": args["channel"], "text": args.get("text", ""),
                          "attempt": ctx.attempt})
        if self.hang_after:
            with open(self.hang_after, "a", encoding="utf-8") as signal_file:
                signal_file.write(f"{key} {ctx.attempt}\n")
            threading.Event().wait()
        return [{"channel": args["channel"]}]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="An example interlock host: a worker loop on a durable store.")
    parser.add_argument("--store", default="sqlite:///interlock-host.db",
                        help="the store's URL (default: %(default)s; PostgreSQL: postgresql+psycopg://…)")
    parser.add_argument("--tasks", type=int, default=3, help="demo tasks to create (default: %(default)s)")
    parser.add_argument("--lease", type=float, default=10.0,
                        help="seconds this process counts as alive after its last heartbeat (default: %(default)s)")
    parser.add_argument("--until-done", action="store_true", help="exit once every demo task is done")
    args = parser.parse_args(argv)

    result = compile_path(FLOW)
    if result.plan is None:
        for diagnostic in result.diagnostics:
            print(diagnostic, file=sys.stderr)
        return 1
    store = open_store(args.store)
    engine = sa.create_engine(args.store.replace("postgresql://", "postgresql+psycopg://", 1))
    executors = ExecutorRegistry()
    executors.register("notify", Notifier(engine))
    rt = Runtime(result.plan, store, executors=executors, sinks=[], operation_lease=args.lease,
                 executor_timeout=args.lease / 2)
    stop = threading.Event()
    for sig in (signal.SIGINT, signal.SIGTERM):
        signal.signal(sig, lambda *_: stop.set())
    tasks = [f"task-{i}" for i in range(args.tasks)]
    try:
        for task_id in tasks:
            if store.get_task(task_id) is None:
                rt.create_task(task_id, "demo", operation_id=f"create:{task_id}")
        while not stop.is_set():
            rt.recover()
            for task_id in tasks:  # the "agent": a task in Work completes its turn once per activation
                task = store.get_task(task_id)
                if task is not None and task.step_id == "work" and task.entry_id is not None:
                    rt.fire("on_turn_complete", task_id, operation_id=f"turn:{task_id}:{task.entry_id}",
                            entry_id=task.entry_id)
            ticked = rt.tick()
            steps = [getattr(store.get_task(t), "step_id", "?") for t in tasks]
            with engine.connect() as conn:
                sent = conn.execute(sa.select(sa.func.count()).select_from(NOTIFICATIONS)).scalar_one()
            print(f"steps {' '.join(str(s) for s in steps)} | notifications {sent} | timers fired "
                  f"{ticked.timers_fired} | incidents {len(rt.incidents())}", flush=True)
            if args.until_done and all(s == "done" for s in steps):
                break
            wait = 1.0 if ticked.next_due is None else ticked.next_due - ticked.now
            stop.wait(min(1.0, max(0.05, wait)))
    finally:
        rt.close()
        store.close()  # its connections closed: SQLite folds its write-ahead log back into the file
        engine.dispose()
    return 0


if __name__ == "__main__":
    sys.exit(main())
