"""The store contract of due rows (timers, retries), incidents and `rerun_marker`, run against every backend (memory,
SQLite, PostgreSQL), each on a test clock the test moves (runtime/store_due.py, docs/runtime.md §7)."""

from __future__ import annotations

import dataclasses

import pytest

from interlock.runtime.store import EntryRecord, Marker, Store, StoreError, TaskState
from interlock.runtime.store_due import NO_POSITION, DueRow, Incident, TimerArm

WF = "office"
T0 = 1_800_000_000.0  # the test clock's start (epoch seconds)
BACKENDS = ["memory", "sqlite", pytest.param("postgresql", marks=pytest.mark.postgres)]


class Clock:
    """A test clock: the time it was set to, moved only by `advance`."""

    def __init__(self, now: float = T0) -> None:
        self.now = now

    def __call__(self) -> float:
        return self.now

    def advance(self, seconds: float) -> None:
        self.now += seconds


@pytest.fixture()
def clock() -> Clock:
    return Clock()


@pytest.fixture()
def store(clocked_store: Store) -> Store:
    """A fresh, empty store of each backend on this module's clock (tests/stores/conftest.py)."""
    return clocked_store


def entry(store: Store, task_id: str = "T1", step: str = "work") -> int:
    """A task entered into `step`: its activation's ledger id."""
    result = store.create_task(TaskState(task_id, WF, step))
    assert result.ledger is not None
    return result.ledger.id


def move(store: Store, task_id: str, step: str) -> int:
    result = store.move_task(task_id, WF, step, route="manual_move")
    assert result.ledger is not None
    return result.ledger.id


TIMERS = (TimerArm(0, "after", "after 48h", 48 * 3600), TimerArm(1, "every", "every 30m", 1800))


def retry(entry_id: int, position: int = 0, *, due_at: float = T0 + 60, task_id: str = "T1",
          operation_id: str | None = None, slot: int = 2) -> DueRow:
    return DueRow(0, task_id, entry_id, WF, "work", "retry", "notify", position, 0, 0.0, slot, due_at, "rev1",
                  operation_id, "fire" if operation_id else None, '{"n":1}' if operation_id else None, "S1")


def incident(key: str = "entry:1", *, task_id: str = "T1", error: str = "boom", attempts: int = 1,
             failures: tuple[tuple[int, str, str], ...] = ((0, "notify", "boom"),)) -> Incident:
    return Incident(0, key, task_id, "entry", failures, error, attempts, "open", 0.0, 0.0, entry_id=1,
                    workflow_id=WF, step_id="work", plan="rev1", session_id="S1")


def owner(store: Store, owner_id: str, lease: float = 30.0) -> str:
    store.register_owner(owner_id, host="h", pid=1, plan=None, lease=lease)
    return owner_id


# ---- timers ------------------------------------------------------------------------------------------------


def test_arming_twice_is_one_row_per_timer(store: Store, clock: Clock) -> None:
    e = entry(store)
    store.arm_timers("T1", e, WF, "work", "rev1", TIMERS)
    clock.advance(5)
    store.arm_timers("T1", e, WF, "work", "rev1", TIMERS)  # a redelivered arrival arms nothing new
    rows = store.due_rows("T1")
    assert [(r.kind, r.label, r.position, r.period, r.slot, r.armed_at, r.due_at) for r in rows] == [
        ("every", "every 30m", 1, 1800, 1, T0, T0 + 1800),
        ("after", "after 48h", 0, 48 * 3600, 1, T0, T0 + 48 * 3600)]
    assert {(r.task_id, r.entry_id, r.workflow_id, r.step_id, r.plan) for r in rows} == {("T1", e, WF, "work",
                                                                                         "rev1")}
    assert rows[0].operation_id is rows[0].payload is rows[0].session_id is None
    assert rows[0].id != rows[1].id


def test_due_rows_come_earliest_first_then_by_id_and_only_once_due(store: Store, clock: Clock) -> None:
    e1, e2 = entry(store, "T1"), entry(store, "T2")
    assert store.next_due() is None and store.due() == []
    store.arm_timers("T1", e1, WF, "work", None, [TimerArm(0, "after", "after 10s", 10)])
    store.arm_timers("T2", e2, WF, "work", None, [TimerArm(0, "after", "after 10s", 10),
                                                  TimerArm(1, "every", "every 5s", 5)])
    assert store.next_due() == T0 + 5
    assert store.due() == []  # nothing is due before its time
    clock.advance(5)
    assert [(r.task_id, r.position) for r in store.due()] == [("T2", 1)]  # due at the instant it is due
    clock.advance(5)
    due = store.due()
    assert [(r.task_id, r.due_at) for r in due] == [("T2", T0 + 5), ("T1", T0 + 10), ("T2", T0 + 10)]
    assert due[1].id < due[2].id  # equal times: by id
    assert store.due(limit=2) == due[:2]
    assert store.due() == due  # reading moves nothing


def test_due_rows_are_plain_dataclass_rows_with_the_columns_types(store: Store, clock: Clock) -> None:
    """The SQL stores build their rows without `DueRow.__init__` (`due_row`, ADR 0058) and convert nothing: each row
    is equal to the one `__init__` builds, field for field and type for type, on every backend."""
    e = entry(store)
    store.arm_timers("T1", e, WF, "work", "rev1", TIMERS)
    assert store.schedule_retry(retry(e, 2, due_at=T0 + 0.5, operation_id="op-1"))
    clock.advance(48 * 3600)
    rows = store.due()
    assert [r.kind for r in rows] == ["retry", "every", "after"]
    for row in rows:
        rebuilt = DueRow(*(getattr(row, f.name) for f in dataclasses.fields(DueRow)))
        assert row == rebuilt and vars(row) == vars(rebuilt) and hash(row) == hash(rebuilt)
        assert dataclasses.replace(row, slot=9).slot == 9
        for name in ("id", "entry_id", "position", "period", "slot"):
            assert type(getattr(row, name)) is int, name
        for name in ("armed_at", "due_at"):
            assert type(getattr(row, name)) is float, name
    with pytest.raises(dataclasses.FrozenInstanceError):
        rows[0].slot = 3  # type: ignore[misc]
    assert store.due_rows("T1") == rows


def test_advance_and_drop_are_a_compare_and_swap_on_the_slot(store: Store, clock: Clock) -> None:
    e = entry(store)
    store.arm_timers("T1", e, WF, "work", None, TIMERS)
    every, after = store.due_rows("T1")
    assert store.advance_due(every.id, 1, 2, T0 + 3600)
    assert not store.advance_due(every.id, 1, 2, T0 + 3600)  # the second of two ticks loses
    assert not store.drop_due(every.id, 1)
    (moved,) = [r for r in store.due_rows("T1") if r.id == every.id]
    assert (moved.slot, moved.due_at) == (2, T0 + 3600)
    assert store.drop_due(after.id, 1)
    assert not store.drop_due(after.id, 1)
    assert not store.advance_due(after.id, 1, 2, T0)  # a dropped row is gone for good
    assert [r.id for r in store.due_rows("T1")] == [every.id]
    assert store.next_due() == T0 + 3600
    assert store.drop_due(every.id, 2) and store.next_due() is None


def test_disarm_keeps_only_the_current_entrys_rows_and_returns_the_rest(store: Store, clock: Clock) -> None:
    e1 = entry(store)
    store.arm_timers("T1", e1, WF, "work", None, TIMERS)
    assert store.schedule_retry(retry(e1, 3))
    e2 = move(store, "T1", "review")
    store.arm_timers("T1", e2, WF, "review", None, [TimerArm(0, "every", "every 1h", 3600)])
    other = entry(store, "T2")
    store.arm_timers("T2", other, WF, "work", None, TIMERS)
    gone = store.disarm("T1", e2)
    assert sorted((r.entry_id, r.kind, r.position) for r in gone) == [(e1, "after", 0), (e1, "every", 1),
                                                                       (e1, "retry", 3)]
    assert [(r.entry_id, r.position) for r in store.due_rows("T1")] == [(e2, 0)]
    assert len(store.due_rows("T2")) == 2  # another task's rows are its own
    assert store.disarm("T1", e2) == []
    assert [r.entry_id for r in store.disarm("T1", None)] == [e2]  # the task left every step
    assert store.due_rows("T1") == []
    store.arm_timers("T1", e1, WF, "work", None, TIMERS)  # a disarmed timer may be armed again (a new row)
    assert {r.id for r in store.due_rows("T1")}.isdisjoint(r.id for r in gone)


def test_schedule_retry_writes_one_row_per_position_or_operation(store: Store, clock: Clock) -> None:
    e = entry(store)
    assert store.schedule_retry(retry(e, 0, due_at=T0 + 60))
    assert not store.schedule_retry(retry(e, 0, due_at=T0 + 1))  # scheduled already: nothing changes
    assert store.schedule_retry(retry(e, 2))
    long_id = "comment:" + "x" * 5000  # a host's operation id of any length
    assert store.schedule_retry(retry(e, NO_POSITION, operation_id=long_id))
    assert not store.schedule_retry(retry(e, NO_POSITION, operation_id=long_id, slot=3))
    assert store.schedule_retry(retry(e, NO_POSITION, operation_id=long_id + "y"))
    rows = store.due_rows("T1")
    assert [(r.position, r.due_at) for r in rows][:2] == [(0, T0 + 60), (2, T0 + 60)]
    op_row = next(r for r in rows if r.operation_id == long_id)
    assert dataclasses.replace(op_row, id=0) == dataclasses.replace(retry(e, NO_POSITION, operation_id=long_id),
                                                                    armed_at=T0)  # as given; armed now
    assert store.drop_due(op_row.id, 2)
    assert store.schedule_retry(retry(e, NO_POSITION, operation_id=long_id, slot=3))  # the next attempt's row


def test_retry_and_timer_rows_of_one_position_are_distinct(store: Store, clock: Clock) -> None:
    e = entry(store)
    store.arm_timers("T1", e, WF, "work", None, [TimerArm(0, "after", "after 1m", 60)])
    assert store.schedule_retry(retry(e, 0))
    assert sorted(r.kind for r in store.due_rows("T1")) == ["after", "retry"]


def test_due_row_arguments_are_checked(store: Store, clock: Clock) -> None:
    e = entry(store)
    with pytest.raises(ValueError, match="seconds"):
        store.arm_timers("T1", e, WF, "work", None, [TimerArm(0, "every", "every 0s", 0)])
    with pytest.raises(ValueError, match="kind"):
        store.schedule_retry(dataclasses.replace(retry(e), kind="after"))
    with pytest.raises(ValueError, match="operation_id"):
        store.schedule_retry(retry(e, NO_POSITION))
    with pytest.raises(ValueError, match="payload"):
        store.schedule_retry(dataclasses.replace(retry(e), payload="[1]"))
    assert store.due_rows("T1") == []


def test_a_unit_that_raises_undoes_due_rows(store: Store, clock: Clock) -> None:
    e = entry(store)
    store.arm_timers("T1", e, WF, "work", None, TIMERS)
    every, after = store.due_rows("T1")
    clock.advance(48 * 3600)
    with pytest.raises(KeyError), store.unit() as unit:
        assert unit.advance_due(every.id, 1, 2, T0 + 10**6)
        assert unit.drop_due(after.id, 1)
        assert [r.id for r in unit.due()] == []  # inside the unit: both moved on
        e2 = move(unit, "T1", "review")
        unit.arm_timers("T1", e2, WF, "review", None, TIMERS)
        assert unit.schedule_retry(retry(e2))
        unit.disarm("T1", e2)
        raise KeyError("roll back")
    assert store.due_rows("T1") == [every, after]
    assert [r.id for r in store.due()] == [every.id, after.id]  # due again, as before the unit
    assert store.next_due() == every.due_at
    assert store.schedule_retry(retry(e))  # the undone retry's key is free again


# ---- incidents ----------------------------------------------------------------------------------------------


def test_open_incident_is_an_upsert_by_key(store: Store, clock: Clock) -> None:
    first = store.open_incident(incident())
    assert (first.state, first.opened_at, first.updated_at, first.owner_id) == ("open", T0, T0, None)
    assert first.failures == ((0, "notify", "boom"),) and first.id > 0
    assert store.incident(first.id) == first
    clock.advance(10)
    again = store.open_incident(incident(error="boom 2", attempts=3,
                                         failures=((0, "notify", "boom"), (2, "page", "boom 2"))))
    assert again.id == first.id and again.state == "open"
    assert (again.error, again.attempts, again.failures) == ("boom 2", 3, ((0, "notify", "boom"),
                                                                          (2, "page", "boom 2")))
    assert (again.opened_at, again.updated_at) == (T0, T0 + 10)
    assert store.incidents() == [again]


def test_a_resolved_incident_is_opened_again_when_it_fails_again(store: Store, clock: Clock) -> None:
    first = store.open_incident(incident())
    assert store.settle_incident(first.id, owner_id=None, state="resolved", resolution="resolved", note="by hand")
    closed = store.incident(first.id)
    assert closed is not None and (closed.state, closed.resolution, closed.note) == ("resolved", "resolved",
                                                                                    "by hand")
    clock.advance(60)
    reopened = store.open_incident(incident(error="again", attempts=2))
    assert reopened.id == first.id
    assert (reopened.state, reopened.resolution, reopened.note, reopened.error) == ("open", None, None, "again")
    assert reopened.opened_at == T0 + 60  # a new failure: opened now


def test_incidents_are_listed_by_state_and_task_oldest_first(store: Store, clock: Clock) -> None:
    a = store.open_incident(incident("entry:1"))
    b = store.open_incident(dataclasses.replace(incident("op:x", task_id="T2"), kind="operation",
                                                failures=((NO_POSITION, "notify", "boom"),), operation_id="x",
                                                trigger="fire", payload='{"a":1}'))
    c = store.open_incident(incident("entry:3"))
    assert store.settle_incident(c.id, owner_id=None, state="resolved", resolution="superseded")
    assert [i.id for i in store.incidents()] == [a.id, b.id]
    assert [i.id for i in store.incidents("T1")] == [a.id]
    assert [i.id for i in store.incidents(state="resolved")] == [c.id]
    assert [i.id for i in store.incidents("T1", state=None)] == [a.id, c.id]
    assert [i.id for i in store.incidents(state=None, limit=2)] == [a.id, b.id]
    assert store.incidents(state="redriving") == []
    (op,) = store.incidents("T2")
    assert (op.kind, op.operation_id, op.trigger, op.payload, op.failures) == (
        "operation", "x", "fire", '{"a":1}', ((NO_POSITION, "notify", "boom"),))
    with pytest.raises(ValueError, match="state"):
        store.incidents(state="closed")  # type: ignore[arg-type]


def test_one_of_two_owners_claims_an_incident(store: Store, clock: Clock) -> None:
    a, b = owner(store, "owner-a"), owner(store, "owner-b")
    opened = store.open_incident(incident())
    clock.advance(1)
    claimed = store.claim_incident(opened.id, a)
    assert claimed is not None and (claimed.state, claimed.owner_id, claimed.updated_at) == ("redriving", a, T0 + 1)
    assert store.claim_incident(opened.id, b) is None  # a live owner redrives it
    assert store.claim_incident(opened.id, a) is None  # one redrive at a time, also within one owner
    assert store.incident(opened.id) == claimed
    assert store.incidents() == [] and store.incidents(state="redriving") == [claimed]
    assert store.claim_incident(12345, a) is None


def test_a_dead_owners_redrive_is_taken_over(store: Store, clock: Clock) -> None:
    a, b = owner(store, "owner-a"), owner(store, "owner-b")
    opened = store.open_incident(incident())
    assert store.claim_incident(opened.id, a) is not None
    store.stop_owner(a)
    taken = store.claim_incident(opened.id, b)
    assert taken is not None and (taken.state, taken.owner_id) == ("redriving", b)
    assert not store.settle_incident(opened.id, owner_id=a, state="open")  # the old redriver lost it
    assert store.settle_incident(opened.id, owner_id=b, state="resolved", resolution="redriven")
    assert store.claim_incident(opened.id, a) is None  # resolved: nothing to redrive


def test_settle_only_from_the_state_it_names(store: Store, clock: Clock) -> None:
    a, b = owner(store, "owner-a"), owner(store, "owner-b")
    opened = store.open_incident(incident())
    assert not store.settle_incident(opened.id, owner_id=a, state="resolved")  # nobody redrives it
    assert store.claim_incident(opened.id, a) is not None
    assert not store.settle_incident(opened.id, owner_id=None, state="resolved")  # not open: a redrive runs
    assert not store.settle_incident(opened.id, owner_id=b, state="open")  # not b's
    clock.advance(7)
    assert store.settle_incident(opened.id, owner_id=a, state="open", error="still", attempts=2,
                                 failures=((1, "page", "still"),))
    back = store.incident(opened.id)
    assert back is not None
    assert (back.state, back.owner_id, back.error, back.attempts, back.failures, back.updated_at) == (
        "open", None, "still", 2, ((1, "page", "still"),), T0 + 7)
    assert store.settle_incident(opened.id, owner_id=None, state="resolved", resolution="resolved", note="n")
    assert not store.settle_incident(opened.id, owner_id=None, state="resolved")  # closed already
    assert not store.settle_incident(999, owner_id=None, state="resolved")
    with pytest.raises(ValueError, match="settle_incident"):
        store.settle_incident(opened.id, owner_id=None, state="redriving")
    with pytest.raises(ValueError, match="resolution"):
        store.settle_incident(opened.id, owner_id=None, state="resolved", resolution="fixed")


def test_a_unit_that_raises_undoes_incidents(store: Store, clock: Clock) -> None:
    a = owner(store, "owner-a")
    kept = store.open_incident(incident("entry:1"))
    with pytest.raises(KeyError), store.unit() as unit:
        unit.open_incident(incident("entry:2"))
        unit.open_incident(incident("entry:1", error="changed", attempts=9))
        assert unit.claim_incident(kept.id, a) is not None
        raise KeyError("roll back")
    assert store.incidents(state=None) == [kept]
    assert store.claim_incident(kept.id, a) is not None


def test_incident_arguments_are_checked(store: Store, clock: Clock) -> None:
    with pytest.raises(ValueError, match="kind"):
        store.open_incident(dataclasses.replace(incident(), kind="task"))  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="key"):
        store.open_incident(incident(""))
    with pytest.raises(ValueError, match="failures"):
        store.open_incident(incident(failures=(("0", "notify", "boom"),)))  # type: ignore[arg-type]
    assert store.incidents(state=None) == []


# ---- rerun_marker and the clock --------------------------------------------------------------------------------


def test_rerun_marker_starts_the_next_attempt_of_what_did_not_finish(store: Store, clock: Clock) -> None:
    e = entry(store)
    assert store.start_marker(e, 0, "notify").attempt == 1
    store.finish_marker(e, 0, "failed", "boom")
    assert store.start_marker(e, 1, "page").attempt == 1  # in progress (its owner died)
    assert store.start_marker(e, 2, "note").attempt == 1
    store.finish_marker(e, 2, "done")
    store.record_entry(EntryRecord(e, "T1", WF, "work", ("notify", "page", "note", "queue_run"),
                                   (("notify", "boom"),)))
    assert store.rerun_marker(e, 0, "notify") == Marker(e, 0, "notify", "in_progress", None, 2)
    assert store.rerun_marker(e, 0, "notify") == Marker(e, 0, "notify", "in_progress", None, 3)
    assert store.rerun_marker(e, 1, "page") == Marker(e, 1, "page", "in_progress", None, 2)
    assert store.rerun_marker(e, 2, "note") is None  # done: never again
    assert store.rerun_marker(e, 3, "queue_run") == Marker(e, 3, "queue_run", "in_progress", None, 2)
    assert store.markers(e)[2] == Marker(e, 2, "note", "done")
    assert store.markers(e)[0].attempt == 3
    with pytest.raises(StoreError):
        store.rerun_marker(999, 0, "notify")


def test_rerun_marker_is_undone_with_its_unit(store: Store, clock: Clock) -> None:
    e = entry(store)
    store.start_marker(e, 0, "notify")
    store.finish_marker(e, 0, "failed", "boom")
    with pytest.raises(KeyError), store.unit() as unit:
        assert unit.rerun_marker(e, 0, "notify") is not None
        assert unit.rerun_marker(e, 1, "page") is not None
        raise KeyError("roll back")
    assert store.markers(e) == {0: Marker(e, 0, "notify", "failed", "boom", 1)}


def test_now_is_the_test_clock(store: Store, clock: Clock) -> None:
    assert store.now() == T0
    clock.advance(3600.5)
    assert store.now() == T0 + 3600.5
