"""What each racer of the operation-claim race does (spawned processes import this by name).

Every racer fires the same operation ids, in its own shuffled order, at one store; the host
executor appends the operation id to a file of the racer's own for every call, and sleeps a
little so deliveries of one id overlap.  The test then counts the calls of each id over all
racers: exactly one each (docs/runtime.md §2 and §4).
"""

from __future__ import annotations

import random
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from interlock.runtime.api import Runtime
from interlock.runtime.executors import ActionContext, ExecutorRegistry
from interlock.runtime.plan import Plan, dump_plan, load_plan
from interlock.runtime.store import Store, TaskState

SOURCE = """
trigger on_ping (n: int)
task notify(channel: str) on on_ping
workflow w "W" {
  step a "A" { start  on on_ping { notify(channel: "ops") } }
}
"""


def plan_text() -> str:
    from interlock.compiler import compile_source
    from interlock.dsl import SourceFile

    result = compile_source(SourceFile("race.wf", SOURCE))
    assert result.plan is not None, result.diagnostics
    return dump_plan(result.plan)


def prepare(store: Store) -> None:
    store.put_task(TaskState("T", "w", "a"))


def runtime(plan: Plan, store: Store, calls: Path) -> Runtime:
    registry = ExecutorRegistry()

    def notify(args: Mapping[str, Any], ctx: ActionContext) -> None:
        with calls.open("a", encoding="utf-8") as fh:
            fh.write(f"{ctx.operation_id}\n")
        time.sleep(0.002)  # so that deliveries of one id overlap

    registry.register("notify", notify)
    return Runtime(plan, store, executors=registry, sinks=[], executor_timeout=30.0)


def fire_all(rt: Runtime, ids: list[str], seed: int) -> dict[str, int]:
    order = list(ids)
    random.Random(seed).shuffle(order)
    results: dict[str, int] = {}
    for op in order:
        result = rt.fire("on_ping", "T", payload={"n": 1}, operation_id=op)
        results[result.result] = results.get(result.result, 0) + 1
    return results


def process_main(url: str, text: str, ids: list[str], calls: str, barrier: Any, out: Any, worker: int) -> None:
    from interlock.stores import open_store

    store = open_store(url, create=False)
    try:
        rt = runtime(load_plan(text), store, Path(calls))
        barrier.wait(timeout=60)
        out.put((worker, fire_all(rt, ids, worker)))
    finally:
        store.close()  # type: ignore[attr-defined]
