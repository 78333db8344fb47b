"""The `Store` contract, run against every backend: MemoryStore, SqlStore on a SQLite file, SqlStore on PostgreSQL."""

from __future__ import annotations

import itertools

import pytest

from interlock.runtime.store import (
    Decision,
    EntryRecord,
    LedgerRow,
    Marker,
    Participant,
    QueuedRun,
    Store,
    StoreError,
    TaskState,
)
from interlock.stores import MemoryStore

WF = "office"
STEPS = ("todo", "work", "review", "done")


def make(store: Store, task_id: str = "T1", step: str | None = "todo", workflow: str | None = WF) -> LedgerRow:
    result = store.create_task(TaskState(task_id, workflow, step))
    assert result.status == "moved" and result.ledger is not None
    return result.ledger


# ---- protocol and flags ------------------------------------------------------------------------------


def test_implements_the_protocol(store: Store) -> None:
    assert isinstance(store, Store)
    assert store.durable is (not isinstance(store, MemoryStore))


# ---- tasks ---------------------------------------------------------------------------------------------


def test_put_task_is_pre_existing_state(store: Store) -> None:
    task = TaskState("T1", WF, "work", description="Fix it", is_from_office=True, is_ephemeral=True, archived=True)
    store.put_task(task)
    assert store.get_task("T1") == task
    assert store.ledger() == [] and store.unrecorded_arrivals() == []
    replaced = TaskState("T1", WF, "review", description="Fixed")
    store.put_task(replaced)
    assert store.get_task("T1") == replaced
    assert store.ledger() == []
    assert store.get_task("nope") is None


def test_empty_ids_mean_none(store: Store) -> None:
    store.put_task(TaskState("T1", "", ""))
    assert store.get_task("T1") == TaskState("T1", None, None)
    assert store.move_task("T1", "", "", route="manual_move").status == "same_step"


def test_create_task_writes_the_genesis_row(store: Store) -> None:
    result = store.create_task(TaskState("T1", WF, "todo", description="d"), actor_kind="human", actor_id="u1",
                               session_id="S1")
    assert result.status == "moved"
    row = result.ledger
    assert row is not None and row.id > 0
    assert result.task == TaskState("T1", WF, "todo", description="d", entry_id=row.id)  # its activation: the row
    assert row == LedgerRow(id=row.id, task_id="T1", from_workflow_id=None, from_step_id=None, to_workflow_id=WF,
                            to_step_id="todo", route="creation", actor_kind="human", actor_id="u1", session_id="S1")
    assert store.ledger_row(row.id) == row
    assert store.ledger("T1") == [row]
    assert store.get_task("T1") == result.task


def test_create_task_without_a_step_is_no_arrival(store: Store) -> None:
    result = store.create_task(TaskState("T1", None, None))
    assert result.status == "same_step" and result.ledger is None
    assert result.task == TaskState("T1", None, None)
    assert store.ledger() == []


def test_create_existing_task_raises_and_changes_nothing(store: Store) -> None:
    genesis = make(store)
    with pytest.raises(StoreError, match="exists"):
        store.create_task(TaskState("T1", WF, "work"))
    assert store.get_task("T1") == TaskState("T1", WF, "todo", entry_id=genesis.id)
    assert len(store.ledger()) == 1


# ---- moves and the ledger -------------------------------------------------------------------------------


def test_move_writes_the_row_and_returns_it(store: Store) -> None:
    genesis = make(store)
    result = store.move_task("T1", WF, "work", route="manual_move", actor_kind="agent", actor_id="S1",
                             session_id="S1")
    assert result.status == "moved"
    row = result.ledger
    assert row is not None and row.id > genesis.id
    assert result.task == TaskState("T1", WF, "work", entry_id=row.id)
    assert row == LedgerRow(id=row.id, task_id="T1", from_workflow_id=WF, from_step_id="todo", to_workflow_id=WF,
                            to_step_id="work", route="manual_move", actor_kind="agent", actor_id="S1",
                            session_id="S1")
    assert store.ledger_row(row.id) == row
    assert store.get_task("T1") == TaskState("T1", WF, "work", entry_id=row.id)


def test_move_to_the_same_step_writes_no_row(store: Store) -> None:
    genesis = make(store)
    result = store.move_task("T1", WF, "todo", route="manual_move")
    assert result.status == "same_step" and result.ledger is None
    assert result.task == TaskState("T1", WF, "todo", entry_id=genesis.id)
    assert len(store.ledger()) == 1


def test_same_step_name_in_another_workflow_is_an_arrival(store: Store) -> None:
    make(store, step="work")
    result = store.move_task("T1", "kanban", "work", route="workflow_switch")
    assert result.status == "moved" and result.ledger is not None
    assert (result.ledger.from_workflow_id, result.ledger.to_workflow_id) == (WF, "kanban")


def test_ledger_ids_strictly_increase_across_tasks(store: Store) -> None:
    ids = [make(store, "T1").id, make(store, "T2").id]
    for step in ("work", "review", "work", "review"):  # A→B→A→B is four rows
        for task in ("T1", "T2"):
            row = store.move_task(task, WF, step, route="engine_transition").ledger
            assert row is not None
            ids.append(row.id)
    assert ids == sorted(ids) and len(set(ids)) == len(ids)
    assert [r.id for r in store.ledger()] == ids
    assert [r.id for r in store.ledger("T1")] == ids[0::2][:1] + ids[2::2]


def test_ledger_chain_from_is_previous_to(store: Store) -> None:
    make(store)
    for step in ("work", "review", "work", "done"):
        store.move_task("T1", WF, step, route="manual_move")
    store.move_task("T1", WF, "done", route="manual_move")  # same step: no row
    rows = store.ledger("T1")
    assert len(rows) == 5
    for prev, row in itertools.pairwise(rows):
        assert (row.from_workflow_id, row.from_step_id) == (prev.to_workflow_id, prev.to_step_id)
    task = store.get_task("T1")
    assert task is not None and (task.workflow_id, task.step_id) == (rows[-1].to_workflow_id, rows[-1].to_step_id)


def test_cas_lost_changes_nothing(store: Store) -> None:
    genesis = make(store)
    result = store.move_task("T1", WF, "review", route="decision", expected_step_id="work", operation_id="op1")
    assert result.status == "cas_lost" and result.ledger is None
    assert result.task == TaskState("T1", WF, "todo", entry_id=genesis.id)
    assert store.get_task("T1") == TaskState("T1", WF, "todo", entry_id=genesis.id)
    assert len(store.ledger()) == 1
    assert not store.operation_applied("op1")


def test_a_compare_and_swap_on_the_activation_tells_a_return_from_a_stay(store: Store) -> None:
    # A → B → A: the step is the same as before, the activation is not (ADR 0037's fence).
    genesis = make(store)
    store.move_task("T1", WF, "work", route="manual_move")
    back = store.move_task("T1", WF, "todo", route="manual_move")
    assert back.ledger is not None
    lost = store.move_task("T1", WF, "review", route="decision", expected_step_id="todo",
                           expected_entry_id=genesis.id, operation_id="op1")
    assert lost.status == "cas_lost" and not store.operation_applied("op1")
    won = store.move_task("T1", WF, "review", route="decision", expected_entry_id=back.ledger.id)
    assert won.status == "moved" and won.task is not None and won.task.entry_id == won.ledger.id  # type: ignore[union-attr]


def test_cas_won_moves(store: Store) -> None:
    make(store)
    result = store.move_task("T1", WF, "review", route="decision", expected_step_id="todo")
    assert result.status == "moved"
    assert store.move_task("T1", WF, "done", route="decision", expected_step_id="todo").status == "cas_lost"


def test_move_unknown_task(store: Store) -> None:
    result = store.move_task("ghost", WF, "work", route="manual_move", operation_id="op1")
    assert result.status == "unknown_task" and result.ledger is None and result.task is None
    assert not store.operation_applied("op1")
    assert store.ledger() == []


def test_operation_is_marked_with_the_move(store: Store) -> None:
    make(store)
    moved = store.move_task("T1", WF, "work", route="engine_transition", operation_id="op1",
                            operation_trigger="on_turn_complete")
    assert moved.status == "moved" and store.operation_applied("op1")
    same = store.move_task("T1", WF, "work", route="engine_transition", operation_id="op2")
    assert same.status == "same_step" and store.operation_applied("op2")
    assert not store.mark_operation("op1") and not store.mark_operation("op2")


def test_operation_and_move_roll_back_together(store: Store) -> None:
    genesis = make(store)
    with pytest.raises(RuntimeError), store.unit() as unit:
        assert unit.move_task("T1", WF, "work", route="engine_transition", operation_id="op1").status == "moved"
        raise RuntimeError("crash before commit")
    assert not store.operation_applied("op1")
    assert store.get_task("T1") == TaskState("T1", WF, "todo", entry_id=genesis.id)
    assert len(store.ledger()) == 1


def test_a_move_in_a_unit_sees_the_task_as_the_unit_left_it(store: Store) -> None:
    # A task read in a unit and then changed in it: the move starts from the change, not from the read.
    genesis = make(store)
    with store.unit() as unit:
        assert unit.get_task("T1") == TaskState("T1", WF, "todo", entry_id=genesis.id)
        unit.put_task(TaskState("T1", WF, "work"))
        assert unit.move_task("T1", WF, "review", route="manual_move", expected_step_id="todo").status == "cas_lost"
        moved = unit.move_task("T1", WF, "review", route="manual_move", expected_step_id="work")
        assert moved.status == "moved" and moved.ledger is not None and moved.ledger.from_step_id == "work"
        assert unit.get_task("T1") == TaskState("T1", WF, "review", entry_id=moved.ledger.id)
        again = unit.move_task("T1", WF, "done", route="manual_move")
        assert again.ledger is not None and again.ledger.from_step_id == "review"
    assert store.get_task("T1") == TaskState("T1", WF, "done", entry_id=again.ledger.id)


def test_a_move_in_a_unit_sees_a_rolled_back_change_undone(store: Store) -> None:
    # Read inside a nested unit that is rolled back: the outer move starts from the step before it.
    make(store)
    with store.unit() as unit:
        with pytest.raises(RuntimeError), unit.unit() as inner:
            inner.put_task(TaskState("T1", WF, "work"))
            assert inner.get_task("T1") == TaskState("T1", WF, "work")
            raise RuntimeError("the nested unit fails")
        moved = unit.move_task("T1", WF, "review", route="manual_move", expected_step_id="todo")
        assert moved.status == "moved" and moved.ledger is not None and moved.ledger.from_step_id == "todo"
    assert [(r.from_step_id, r.to_step_id) for r in store.ledger("T1")] == [(None, "todo"), ("todo", "review")]


def test_a_task_read_in_one_unit_is_read_again_in_the_next(store: Store) -> None:
    genesis = make(store)
    with store.unit() as unit:
        assert unit.get_task("T1") == TaskState("T1", WF, "todo", entry_id=genesis.id)
    store.put_task(TaskState("T1", WF, "work"))  # between the units
    with store.unit() as unit:
        moved = unit.move_task("T1", WF, "review", route="manual_move")
        assert moved.ledger is not None and moved.ledger.from_step_id == "work"


def test_detach_row_enters_nothing(store: Store) -> None:
    genesis = make(store)
    result = store.move_task("T1", None, None, route="detach")
    assert result.status == "moved" and result.ledger is not None
    assert result.ledger.to_step_id is None and result.ledger.to_workflow_id is None
    detached = result.ledger.id
    assert store.get_task("T1") == TaskState("T1", None, None, entry_id=detached)
    assert [r.id for r in store.unrecorded_arrivals()] == [genesis.id]
    # A task without a step changing workflow is not a step change.
    assert store.move_task("T1", "kanban", None, route="workflow_switch").status == "same_step"
    assert store.get_task("T1") == TaskState("T1", "kanban", None, entry_id=detached)
    assert len(store.ledger()) == 2


def test_unrecorded_arrivals(store: Store) -> None:
    first = make(store, "T1")
    second = make(store, "T2")
    third = store.move_task("T1", WF, "work", route="manual_move").ledger
    store.move_task("T2", None, None, route="detach")
    assert third is not None
    assert [r.id for r in store.unrecorded_arrivals()] == [first.id, second.id, third.id]
    assert store.unrecorded_arrivals(limit=2) == [first, second]
    assert store.record_entry(EntryRecord(second.id, "T2", WF, "todo", ()))
    assert store.unrecorded_arrivals() == [first, third]
    store.record_entry(EntryRecord(first.id, "T1", WF, "todo", ("queue_run",)))
    store.record_entry(EntryRecord(third.id, "T1", WF, "work", ()))
    assert store.unrecorded_arrivals() == []


# ---- entry records and markers ---------------------------------------------------------------------------


def test_record_entry_is_insert_if_absent(store: Store) -> None:
    row = make(store)
    record = EntryRecord(row.id, "T1", WF, "todo", ("clear_decisions", "queue_run"),
                         (("queue_run", "no executor"),))
    assert store.entry_record(row.id) is None
    assert store.record_entry(record) is True
    assert store.entry_record(row.id) == record
    assert store.record_entry(EntryRecord(row.id, "T1", WF, "todo", ())) is False
    assert store.entry_record(row.id) == record  # the first record stays


def test_empty_entry_record(store: Store) -> None:
    row = make(store)
    assert store.record_entry(EntryRecord(row.id, "T1", WF, "todo", ()))
    assert store.entry_record(row.id) == EntryRecord(row.id, "T1", WF, "todo", (), ())


def test_entry_ids_are_ledger_ids(store: Store) -> None:
    with pytest.raises(StoreError, match="ledger row"):
        store.record_entry(EntryRecord(12345, "T1", WF, "todo", ()))
    with pytest.raises(StoreError, match="ledger row"):
        store.claim_marker(12345, 0, "queue_run")


def test_markers(store: Store) -> None:
    row = make(store)
    assert store.markers(row.id) == {}
    assert store.claim_marker(row.id, 1, "queue_run") is True
    assert store.claim_marker(row.id, 0, "clear_decisions") is True
    assert store.claim_marker(row.id, 1, "queue_run") is False
    assert store.markers(row.id) == {0: Marker(row.id, 0, "clear_decisions", "in_progress"),
                                     1: Marker(row.id, 1, "queue_run", "in_progress")}
    assert list(store.markers(row.id)) == [0, 1]
    store.finish_marker(row.id, 1, "failed", "runs queue down")
    store.finish_marker(row.id, 0, "done")
    store.finish_marker(row.id, 7, "done")  # no marker there: nothing happens
    assert store.markers(row.id) == {0: Marker(row.id, 0, "clear_decisions", "done"),
                                     1: Marker(row.id, 1, "queue_run", "failed", "runs queue down")}
    assert store.claim_marker(row.id, 1, "queue_run") is False  # a failed marker still holds the position
    with pytest.raises(ValueError, match="marker state"):
        store.finish_marker(row.id, 0, "skipped")  # type: ignore[arg-type]


# ---- operations and runs ----------------------------------------------------------------------------------


def test_mark_operation_is_insert_if_absent(store: Store) -> None:
    assert not store.operation_applied("task_comment:c1")
    assert store.mark_operation("task_comment:c1", task_id="T1", trigger="on_comment") is True
    assert store.operation_applied("task_comment:c1")
    assert store.mark_operation("task_comment:c1") is False


def test_enqueue_run_is_insert_if_absent(store: Store) -> None:
    run = QueuedRun("1:0:rev-a", "T1", "review", "rev-a", "review_started", {"n": 1, "tags": ["a"], "x": None},
                    entry_id=None, operation_id="op1")
    assert store.enqueue_run(run) is True
    assert store.enqueue_run(QueuedRun("1:0:rev-a", "T1", "review", "other", "other")) is False
    assert store.enqueue_run(QueuedRun("k2", "T2", None, "ceo", "on_agent_error")) is True
    assert store.enqueue_run(QueuedRun("k3", "T1", "work", "primary", "again")) is True
    assert store.runs() == [run, QueuedRun("k2", "T2", None, "ceo", "on_agent_error"),
                            QueuedRun("k3", "T1", "work", "primary", "again")]
    assert [r.key for r in store.runs("T1")] == ["1:0:rev-a", "k3"]
    assert store.runs("nobody") == []


def test_run_payload_must_be_json(store: Store) -> None:
    with pytest.raises(StoreError, match="JSON"):
        store.enqueue_run(QueuedRun("k", "T1", None, "a", "r", {"when": object()}))
    assert store.runs() == []


def test_run_entry_id_round_trips(store: Store) -> None:
    row = make(store)
    run = QueuedRun(f"{row.id}:1:rev-a", "T1", "todo", "rev-a", "review_started", entry_id=row.id)
    store.enqueue_run(run)
    assert store.runs() == [run]


# ---- units --------------------------------------------------------------------------------------------------


def test_unit_commits_together(store: Store) -> None:
    with store.unit() as unit:
        row = make(unit)
        assert unit.claim_marker(row.id, 0, "queue_run")
        assert unit.enqueue_run(QueuedRun("k", "T1", "todo", "a", "r", entry_id=row.id))
        unit.finish_marker(row.id, 0, "done")
        assert unit.record_entry(EntryRecord(row.id, "T1", WF, "todo", ("queue_run",)))
    assert store.markers(row.id)[0].state == "done"
    assert store.entry_record(row.id) is not None and len(store.runs()) == 1


def test_unit_rollback_leaves_nothing(store: Store) -> None:
    store.put_task(TaskState("T0", WF, "work"))
    store.add_participant(Participant("T0", "review", "reviewer", "rev-a"))
    store.record_decision(Decision("T0", "review", "agent", "rev-a", "reviewer", "approved"))
    before_task = store.get_task("T0")
    before_decisions = store.decisions("T0", "review")
    with pytest.raises(KeyError), store.unit() as unit:
        row = make(unit)
        unit.put_task(TaskState("T0", WF, "done"))
        unit.move_task("T0", WF, "review", route="manual_move")
        unit.claim_marker(row.id, 0, "queue_run")
        unit.record_entry(EntryRecord(row.id, "T1", WF, "todo", ()))
        unit.mark_operation("op")
        unit.enqueue_run(QueuedRun("k", "T1", None, "a", "r"))
        unit.add_participant(Participant("T1", "review", "reviewer", "rev-b"))
        unit.add_participant(Participant("T0", "review", "reviewer", "rev-a", decision_required=False))
        unit.ensure_seat("T1", "work", "approver", "ceo", STEPS)
        unit.record_decision(Decision("T0", "review", "agent", "rev-a", "reviewer", "rejected"))
        unit.record_decision(Decision("T1", "review", "user", "u1", "", "approved"))
        assert unit.clear_decisions("T1", "review") == 1
        raise KeyError("boom")
    assert store.get_task("T1") is None
    assert store.get_task("T0") == before_task
    assert store.ledger() == [] and store.unrecorded_arrivals() == []
    assert store.entry_record(row.id) is None and store.markers(row.id) == {}
    assert not store.operation_applied("op") and store.runs() == []
    assert store.participants("T1", STEPS) == []
    assert [(p.agent, p.decision_required) for p in store.participants("T0", STEPS)] == [("rev-a", True)]
    assert store.decisions("T0", "review") == before_decisions
    assert store.decisions("T1", "review") == []


def test_nested_unit_that_raises_is_undone_alone(store: Store) -> None:
    with store.unit() as outer:
        assert outer.mark_operation("kept")
        with pytest.raises(ValueError), outer.unit() as inner:
            assert inner.mark_operation("undone")
            raise ValueError("inner fails")
        assert not outer.operation_applied("undone")
        assert outer.mark_operation("kept-too")
    assert store.operation_applied("kept") and store.operation_applied("kept-too")
    assert not store.operation_applied("undone")


def test_calls_on_the_store_inside_its_unit_join_the_unit(store: Store) -> None:
    with pytest.raises(RuntimeError), store.unit() as unit:
        assert unit.mark_operation("a")
        assert store.mark_operation("b")  # the unbound store on the unit's thread
        assert store.operation_applied("a") and unit.operation_applied("b")
        raise RuntimeError("roll back")
    assert not store.operation_applied("a") and not store.operation_applied("b")


def test_store_error_inside_a_unit_leaves_it_usable(store: Store) -> None:
    with store.unit() as unit:
        make(unit)
        with pytest.raises(StoreError):
            unit.create_task(TaskState("T1", WF, "work"))
        with pytest.raises(StoreError):
            unit.claim_marker(999, 0, "queue_run")
        assert unit.mark_operation("after")
    assert store.operation_applied("after") and store.get_task("T1") is not None


# ---- participants and seats -----------------------------------------------------------------------------


def test_participants_are_per_task_rows_at_workflow_steps_plus_templates(store: Store) -> None:
    store.add_participant(Participant("", "review", "reviewer", "tpl-a", position=1, workflow_id=WF))
    store.add_participant(Participant("", "elsewhere", "reviewer", "tpl-x"))
    store.add_participant(Participant("T1", "review", "reviewer", "rev-a", workflow_id=WF))
    store.add_participant(Participant("T1", "work", "approver", "ceo", decision_required=False))
    store.add_participant(Participant("T1", "old-step", "reviewer", "gone"))
    store.add_participant(Participant("T2", "review", "reviewer", "other-task"))
    rows = store.participants("T1", STEPS)
    assert [(p.task_id, p.step_id, p.agent) for p in rows] == [
        ("", "review", "tpl-a"), ("T1", "review", "rev-a"), ("T1", "work", "ceo")]
    assert rows[0] == Participant("", "review", "reviewer", "tpl-a", True, 1, rows[0].id, WF)
    assert rows[2].decision_required is False
    assert [p.id for p in rows] == sorted(p.id for p in rows) and all(p.id > 0 for p in rows)
    assert [p.agent for p in store.participants("T1", iter(["review"]))] == ["tpl-a", "rev-a"]
    assert store.participants("T1", ()) == []


def test_add_participant_updates_the_same_seat(store: Store) -> None:
    store.add_participant(Participant("T1", "review", "reviewer", "rev-a"))
    first = store.participants("T1", STEPS)[0]
    store.add_participant(Participant("T1", "review", "reviewer", "rev-a", decision_required=False, position=3))
    (again,) = store.participants("T1", STEPS)
    assert again.id == first.id
    assert (again.decision_required, again.position) == (False, 3)


def test_ensure_seat_is_workflow_scoped(store: Store) -> None:
    assert store.ensure_seat("T1", "review", "reviewer", "ceo", STEPS) is True
    (seat,) = store.participants("T1", STEPS)
    assert (seat.task_id, seat.step_id, seat.role, seat.agent, seat.decision_required, seat.position) == (
        "T1", "review", "reviewer", "ceo", True, 0)
    # A seat in the role anywhere in the workflow: nothing written, whatever the agent or step.
    assert store.ensure_seat("T1", "review", "reviewer", "ceo", STEPS) is False
    assert store.ensure_seat("T1", "done", "reviewer", "someone-else", STEPS) is False
    # Another role, another task: written.
    assert store.ensure_seat("T1", "review", "approver", "ceo", STEPS) is True
    assert store.ensure_seat("T2", "review", "reviewer", "ceo", STEPS) is True
    assert len(store.participants("T1", STEPS)) == 2


def test_ensure_seat_ignores_seats_outside_the_workflow_and_templates(store: Store) -> None:
    store.add_participant(Participant("T1", "other-workflow-step", "reviewer", "old"))
    store.add_participant(Participant("", "review", "reviewer", "template"))
    assert store.ensure_seat("T1", "review", "reviewer", "ceo", STEPS) is True
    agents = sorted(p.agent for p in store.participants("T1", STEPS))
    assert agents == ["ceo", "template"]


def test_ensure_seat_counts_the_step_itself(store: Store) -> None:
    store.add_participant(Participant("T1", "review", "reviewer", "rev-a"))
    assert store.ensure_seat("T1", "review", "reviewer", "ceo", ("todo",)) is False


def test_ensure_seat_needs_a_task(store: Store) -> None:
    with pytest.raises(ValueError):
        store.ensure_seat("", "review", "reviewer", "ceo", STEPS)


# ---- decisions -----------------------------------------------------------------------------------------------


def test_decisions_supersede_the_same_decider_in_the_same_role(store: Store) -> None:
    a1 = store.record_decision(Decision("T1", "review", "agent", "rev-a", "reviewer", "changes_requested",
                                        session_id="S1"))
    b = store.record_decision(Decision("T1", "review", "agent", "rev-b", "reviewer", "approved"))
    a_other_role = store.record_decision(Decision("T1", "review", "agent", "rev-a", "approver", "approved"))
    user = store.record_decision(Decision("T1", "review", "user", "rev-a", "reviewer", "rejected"))
    other_step = store.record_decision(Decision("T1", "work", "agent", "rev-a", "reviewer", "approved"))
    assert 0 < a1.id < b.id < a_other_role.id < user.id < other_step.id
    assert a1 == Decision("T1", "review", "agent", "rev-a", "reviewer", "changes_requested", a1.id, "S1")
    a2 = store.record_decision(Decision("T1", "review", "agent", "rev-a", "reviewer", "approved"))
    assert a2.id > other_step.id
    assert store.decisions("T1", "review") == [b, a_other_role, user, a2]
    assert store.decisions("T1", "work") == [other_step]
    assert store.decisions("T2", "review") == []


def test_clear_decisions_counts_active_rows(store: Store) -> None:
    assert store.clear_decisions("T1", "review") == 0
    store.record_decision(Decision("T1", "review", "agent", "rev-a", "reviewer", "rejected"))
    store.record_decision(Decision("T1", "review", "agent", "rev-a", "reviewer", "approved"))
    store.record_decision(Decision("T1", "review", "user", "u1", "", "approved"))
    keep = store.record_decision(Decision("T1", "work", "agent", "rev-a", "reviewer", "approved"))
    assert store.clear_decisions("T1", "review") == 2
    assert store.decisions("T1", "review") == []
    assert store.clear_decisions("T1", "review") == 0
    assert store.decisions("T1", "work") == [keep]
    again = store.record_decision(Decision("T1", "review", "agent", "rev-a", "reviewer", "approved"))
    assert store.decisions("T1", "review") == [again]


def test_decisions_are_checked(store: Store) -> None:
    with pytest.raises(ValueError, match="decider_type"):
        store.record_decision(Decision("T1", "review", "robot", "x", "reviewer", "approved"))  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="verdict"):
        store.record_decision(Decision("T1", "review", "agent", "x", "reviewer", ""))
    assert store.decisions("T1", "review") == []


def test_an_entry_record_given_lists_is_stored_as_tuples(store: Store) -> None:
    row = make(store)
    assert store.record_entry(EntryRecord(row.id, "T1", WF, "todo", [], []))  # type: ignore[arg-type]
    assert store.entry_record(row.id) == EntryRecord(row.id, "T1", WF, "todo", (), ())
    other = make(store, "T2")
    assert store.record_entry(EntryRecord(other.id, "T2", WF, "todo", ["queue_run"],  # type: ignore[arg-type]
                                          [["queue_run", "boom"]]))
    assert store.entry_record(other.id) == EntryRecord(other.id, "T2", WF, "todo", ("queue_run",),
                                                       (("queue_run", "boom"),))


def test_an_entry_record_belongs_to_its_rows_task_and_destination(store: Store) -> None:
    row = make(store)  # T1 -> todo
    for task, workflow, step in [("T2", WF, "todo"), ("T1", "other", "todo"), ("T1", WF, "work")]:
        with pytest.raises(StoreError, match=f"entry {row.id} records"):
            store.record_entry(EntryRecord(row.id, task, workflow, step, ()))
    assert store.entry_record(row.id) is None and [r.id for r in store.unrecorded_arrivals()] == [row.id]
    assert store.record_entry(EntryRecord(row.id, "T1", WF, "todo", ()))
    assert not store.record_entry(EntryRecord(row.id, "T2", WF, "work", ()))  # recorded already: nothing changed


def test_a_row_without_a_destination_has_no_entry_to_record_and_is_never_unrecorded(store: Store) -> None:
    store.put_task(TaskState("T1", None, None))
    row = store.move_task("T1", None, "work", route="manual_move").ledger  # a step, but no workflow
    assert row is not None and row.to_workflow_id is None
    assert store.unrecorded_arrivals() == []
    with pytest.raises(StoreError, match="names no destination"):
        store.record_entry(EntryRecord(row.id, "T1", None, "work", ()))  # type: ignore[arg-type]
    assert store.entry_record(row.id) is None
