"""The runtime's cheap building blocks keep their contracts: `fast_init` records behave as the frozen
dataclasses they are, and per-thread `Counters` lose no count and keep no shard of a dead thread."""

from __future__ import annotations

import dataclasses
import inspect
import threading
from dataclasses import dataclass, field

import pytest
from hypothesis import given
from hypothesis import strategies as st

from interlock.runtime.frozen import fast_init
from interlock.runtime.recorder import Recorder
from interlock.runtime.records import Counters
from interlock.runtime.store import EntryRecord, LedgerRow, TaskState


@fast_init
@dataclass(frozen=True)
class Fast:
    a: int
    b: str = "b"
    c: list[int] = field(default_factory=list)
    d: int = field(default=4, kw_only=True)


@dataclass(frozen=True)
class Slow:
    a: int
    b: str = "b"
    c: list[int] = field(default_factory=list)
    d: int = field(default=4, kw_only=True)


def test_fast_init_keeps_the_signature_defaults_and_factories() -> None:
    assert str(inspect.signature(Fast)) == str(inspect.signature(Slow))
    one, two = Fast(1), Fast(1)
    assert (one.a, one.b, one.c, one.d) == (1, "b", [], 4)
    assert one.c is not two.c  # a fresh default per instance, as the factory promises
    assert Fast(1, "x", [2], d=5) == Fast(a=1, b="x", c=[2], d=5)
    with pytest.raises(TypeError):
        Fast(1, "x", [2], 5)  # type: ignore[misc]  # keyword-only stays keyword-only
    with pytest.raises(TypeError):
        Fast()  # type: ignore[call-arg]


def test_fast_init_keeps_immutability_equality_hash_repr_and_replace() -> None:
    row = LedgerRow(1, "T", "w", "a", "w", "b", "manual_move", "human")
    with pytest.raises(dataclasses.FrozenInstanceError):
        row.route = "x"  # type: ignore[misc]
    same = LedgerRow(1, "T", "w", "a", "w", "b", "manual_move", "human", None, None)
    assert row == same and hash(row) == hash(same) and {row, same} == {row}
    assert repr(row) == ("LedgerRow(id=1, task_id='T', from_workflow_id='w', from_step_id='a', to_workflow_id='w', "
                         "to_step_id='b', route='manual_move', actor_kind='human', actor_id=None, session_id=None, "
                         "plan=None, arrival_options=None)")
    moved = dataclasses.replace(row, to_step_id="c")
    assert moved.to_step_id == "c" and row.to_step_id == "b" and moved != row
    assert dataclasses.asdict(EntryRecord(3, "T", "w", "b", ("queue_run",)))["failed"] == ()


def test_fast_init_refuses_classes_it_cannot_speed_up() -> None:
    @dataclass
    class Mutable:
        a: int

    @dataclass(frozen=True)
    class Checked:
        a: int

        def __post_init__(self) -> None:
            pass

    @dataclass(frozen=True, init=False)
    class OwnInit:
        x: int

        def __init__(self, x: int) -> None:
            object.__setattr__(self, "x", x * 2)

    @dataclass(frozen=True)
    class WithInitVar:
        x: int
        scale: dataclasses.InitVar[int] = 1

    @dataclass(frozen=True)
    class Clashing:
        _NO_DEFAULT: int = 0
        c: list[int] = field(default_factory=list)

    @dataclass(frozen=True)
    class Prefixed:
        _f_c: int = 0

    for cls in (Mutable, Checked, OwnInit, WithInitVar, Clashing, Prefixed):
        with pytest.raises(TypeError, match="fast_init"):
            fast_init(cls)
    assert OwnInit(3).x == 6  # a refused class keeps its own __init__


@given(st.integers(), st.text(), st.lists(st.integers()), st.integers())
def test_fast_init_builds_what_the_generated_init_builds(a: int, b: str, c: list[int], d: int) -> None:
    fast, slow = Fast(a, b, c, d=d), Slow(a, b, c, d=d)
    assert dataclasses.astuple(fast) == dataclasses.astuple(slow)
    assert repr(fast).replace("Fast", "Slow") == repr(slow)


def test_counters_sum_every_thread_without_losing_a_count() -> None:
    counters = Counters()
    threads, per_thread = 8, 5_000

    def work() -> None:
        for _ in range(per_thread):
            counters.add("arrivals")
            counters.skip("quorum:pending")

    pool = [threading.Thread(target=work) for _ in range(threads)]
    for t in pool:
        t.start()
    for t in pool:
        t.join()
    counters.add("arrivals", 2)
    snap = counters.snapshot()
    assert snap["arrivals"] == threads * per_thread + 2
    assert snap["guard_skips"] == {"quorum:pending": threads * per_thread}
    assert snap["dispatches"] == 0  # every named counter is present


def test_counters_fold_the_shards_of_dead_threads() -> None:
    """Executors that call back into the runtime run on short-lived threads: their counts stay, their shards go."""
    counters = Counters()
    for _ in range(200):
        t = threading.Thread(target=counters.add, args=("effects",))
        t.start()
        t.join()
    counters.add("effects")  # this thread registers: the dead threads' shards are folded
    assert counters.snapshot()["effects"] == 201
    assert len(counters._shards) <= 2  # this thread's, and at most one not yet seen dead


def test_fast_init_records_pickle_copy_and_subclass() -> None:
    import copy
    import pickle

    row = LedgerRow(7, "T", "w", "a", "w", "b", "engine_transition", "agent", "S1", "S1")
    assert pickle.loads(pickle.dumps(row)) == row and copy.deepcopy(row) == row and copy.copy(row) == row

    @dataclass(frozen=True)
    class Moved(TaskState):
        reason: str = ""

    moved = Moved("T", "w", "b", reason="approved")  # a subclass gets the dataclass __init__ of its own
    assert (moved.step_id, moved.reason) == ("b", "approved") and moved != TaskState("T", "w", "b")


def test_counters_add_each_adds_one_to_each_name() -> None:
    counters = Counters()
    counters.add_each(("transitions", "arrivals"))
    counters.add_each(("arrivals",))
    snap = counters.snapshot()
    assert (snap["transitions"], snap["arrivals"], snap["dispatches"]) == (1, 2, 0)


def test_a_recorders_count_adds_to_its_counters_and_its_views() -> None:
    counters = Counters()
    recorder = Recorder([], counters)
    recorder.count("transitions", "arrivals")
    recorder.naming("rev").count("arrivals")  # a view counts into the same counters
    snap = counters.snapshot()
    assert (snap["transitions"], snap["arrivals"], snap["dispatches"]) == (1, 2, 0)
