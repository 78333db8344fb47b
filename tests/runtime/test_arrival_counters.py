"""An arrival that committed is counted whatever happens after its commit (docs/runtime.md §1).

The counters of an arrival (`arrivals`; a fire's `dispatches` and `transitions` with it) are added
together with its entry's when the destination has nothing to dispatch.  Whatever fails after the
commit — the host's `session_live` callback, the store writing the entry record — the step change is
in the store, so it is in the counters too.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from interlock.compiler import compile_source
from interlock.dsl import SourceFile
from interlock.runtime import Runtime
from interlock.stores import MemoryStore

SOURCE = """
task notify on on_turn_complete
workflow w "W" {
  step a "A" { start manual_move on on_turn_complete { notify move_to_step(b) } }
  step b "B" { manual_move }
  step c "C" { manual_move on on_enter { queue_run(target: primary, reason: "x") } }
}
"""
NAMES = ("arrivals", "dispatches", "transitions", "entries_dispatched")


class HostFailed(Exception):
    pass


def _runtime(session_live: Callable[[str], bool]) -> tuple[Runtime, MemoryStore]:
    plan = compile_source(SourceFile("w.wf", SOURCE)).plan
    assert plan is not None
    store = MemoryStore()
    rt = Runtime(plan, store, sinks=[], executor_timeout=None, session_live=session_live)
    rt.executors.register("notify", lambda args, ctx: None)
    return rt, store


def _counts(rt: Runtime) -> dict[str, int]:
    snap: dict[str, Any] = rt.counters.snapshot()
    return {name: int(snap[name]) for name in NAMES}


def _failing_after(calls: int) -> Callable[[str], bool]:
    seen = [0]

    def session_live(task_id: str) -> bool:
        seen[0] += 1
        if seen[0] > calls:
            raise HostFailed(task_id)
        return False

    return session_live


@pytest.mark.parametrize(("event", "step", "added"), [
    (lambda rt: rt.fire("on_turn_complete", "T"), "b", {"arrivals": 1, "dispatches": 1, "transitions": 1}),
    (lambda rt: rt.move("T", "b"), "b", {"arrivals": 1}),
    (lambda rt: rt.move("T", "c"), "c", {"arrivals": 1}),
], ids=["fire-into-an-empty-entry", "move-into-an-empty-entry", "move-into-an-entry-with-actions"])
def test_an_arrival_is_counted_when_the_hosts_session_callback_fails(event: Callable[[Runtime], Any], step: str,
                                                                      added: dict[str, int]) -> None:
    rt, store = _runtime(_failing_after(1))  # the creation's call passes, the next one raises
    rt.create_task("T", "w")
    before = _counts(rt)
    with pytest.raises(HostFailed):
        event(rt)
    task = store.get_task("T")
    assert task is not None and task.step_id == step  # the step change committed
    after = _counts(rt)
    assert {n: after[n] - before[n] for n in NAMES} == {n: added.get(n, 0) for n in NAMES}


@pytest.mark.parametrize("fail", [True, False], ids=["record-write-fails", "record-written"])
def test_a_fires_arrival_is_counted_once_whether_or_not_its_entry_record_is_written(fail: bool) -> None:
    rt, store = _runtime(lambda task_id: False)
    rt.create_task("T", "w")
    before = _counts(rt)
    if fail:
        def refuse(record: Any) -> bool:
            raise HostFailed("the store refused the entry record")

        store.record_entry = refuse  # type: ignore[method-assign]
        with pytest.raises(HostFailed):
            rt.fire("on_turn_complete", "T")
    else:
        rt.fire("on_turn_complete", "T")
    after = _counts(rt)
    assert {n: after[n] - before[n] for n in NAMES} == {"arrivals": 1, "dispatches": 1, "transitions": 1,
                                                        "entries_dispatched": 0 if fail else 1}
