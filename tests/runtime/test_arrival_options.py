"""One-shot entry options (ADR 0043, docs/runtime.md §1): `move(…, options=…)`, `create_task(…, options=…)`, a
transition's `options` argument (picked by `fire` or by a decision) and `LedgerWriter.write_arrival(…, options=…)`
store a JSON object with the arrival, in its ledger row's transaction; the destination's entry executors read it as
`ctx.arrival_options`; a redelivery, a restart and `recover` see the same object; the next arrival starts without
any; bad input is a `PayloadError` with nothing written.  Over the memory, SQLite and PostgreSQL stores.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest
import sqlalchemy as sa

from interlock.cli import main
from interlock.runtime import ActionContext, TaskState
from interlock.runtime.errors import PayloadError
from interlock.runtime.options import MAX_OPTIONS_BYTES, MAX_OPTIONS_DEPTH
from interlock.stores import LedgerWriter
from interlock.stores.engine import normalise_url

HOST = ("run_script", "run_code_review", "set_workflow_data")

FLOW = """
workflow ci "CI" {
  step todo "Todo" {
    start
    manual_move
    on on_turn_complete { move_to_step(build, options: {instructions: "Lint first", skip_step_prompt: true}) }
    on on_comment { move_to_next }
  }
  step build "Build" {
    manual_move
    on on_enter { run_script(command: "make") }
    on on_turn_complete {
      move_to_step(review, options: {instructions: "Both approve"}) when quorum(reviewer, all_approve)
    }
  }
  step review "Review" {
    manual_move
    on on_enter { run_code_review  queue_run(target: primary, reason: "review") }
  }
  step queued "Queued" {
    manual_move
    on on_enter { queue_run(target: primary, reason: "queued") }
  }
}
"""

KANDEV = {"instructions": "Look at the failing test first", "skip_step_prompt": True}


class Seen:
    """What each entry executor call read from `ctx.arrival_options` (copied: the mapping is read-only)."""

    def __init__(self, h: Any, *kinds: str) -> None:
        self.calls: list[tuple[str, int | None, dict[str, Any]]] = []
        for kind in kinds:
            h.recorder.hook(kind, self.capture(kind))

    def capture(self, kind: str) -> Any:
        def hook(ctx: ActionContext) -> None:
            self.calls.append((kind, ctx.entry_id, json.loads(json.dumps(dict(ctx.arrival_options)))))
        return hook

    def options(self, kind: str) -> list[dict[str, Any]]:
        return [o for k, _, o in self.calls if k == kind]


def start(h: Any, step: str = "todo") -> Any:
    rt = h.start(FLOW, host=HOST)
    h.store.put_task(TaskState("T1", "ci", step))
    return rt


def stored(h: Any, ledger_id: int | None) -> Any:
    assert ledger_id is not None
    row = h.store.ledger_row(ledger_id)
    return None if row.arrival_options is None else json.loads(row.arrival_options)


def test_a_move_s_options_reach_the_destination_s_entry_and_stay_with_the_row(harness: Any) -> None:
    h = harness
    rt = start(h)
    seen = Seen(h, "run_script")
    moved = rt.move("T1", "build", options=KANDEV)
    assert moved.status == "moved"
    assert seen.options("run_script") == [KANDEV]
    assert stored(h, moved.ledger_id) == KANDEV
    # one-shot: the next arrival carries none
    rt.move("T1", "todo")
    again = rt.move("T1", "build")
    assert seen.options("run_script") == [KANDEV, {}]
    assert stored(h, again.ledger_id) is None


def test_create_task_options(harness: Any) -> None:
    h = harness
    rt = h.start(FLOW, host=HOST)
    seen = Seen(h, "run_script")
    created = rt.create_task("T9", "ci", "build", options={"instructions": "Start from the spec"})
    assert created.status == "moved"
    assert seen.options("run_script") == [{"instructions": "Start from the spec"}]
    assert stored(h, created.ledger_id) == {"instructions": "Start from the spec"}


def test_a_transition_names_its_arrival_s_options(harness: Any) -> None:
    h = harness
    rt = start(h)
    seen = Seen(h, "run_script")
    fired = rt.fire("on_turn_complete", "T1", operation_id="op-1")
    assert fired.arrival is not None and fired.arrival.to_step == "build"
    want = {"instructions": "Lint first", "skip_step_prompt": True}
    assert seen.options("run_script") == [want]
    assert stored(h, fired.arrival.ledger_id) == want


def test_a_transition_without_options_gives_none(harness: Any) -> None:
    h = harness
    rt = start(h)
    moved = rt.fire("on_comment", "T1", payload={"comment_id": "c", "author_id": "u", "body": "b"})
    assert moved.arrival is not None and stored(h, moved.arrival.ledger_id) is None


def test_a_guarded_transition_s_options_travel_with_the_decision_s_arrival(harness: Any) -> None:
    h = harness
    rt = start(h, "build")
    seen = Seen(h, "run_code_review")
    h.seat("build", "reviewer", "rev-a")
    decided = rt.record_decision("T1", verdict="approved", agent="rev-a", role="reviewer")
    assert decided.transitioned and decided.arrival is not None
    assert seen.options("run_code_review") == [{"instructions": "Both approve"}]
    assert stored(h, decided.arrival.ledger_id) == {"instructions": "Both approve"}


def test_an_entry_run_in_the_arrival_s_transaction_reads_them_too(harness: Any) -> None:
    h = harness
    rt = start(h)
    seen = Seen(h, "queue_run")  # a store-backed entry: on a durable store it runs inside the arrival's transaction
    moved = rt.move("T1", "queued", options={"note": "from the board"})
    assert seen.options("queue_run") == [{"note": "from the board"}]
    assert stored(h, moved.ledger_id) == {"note": "from the board"}


def test_redelivery_recover_and_a_restart_see_the_same_object(harness: Any) -> None:
    h = harness
    rt = start(h)
    seen = Seen(h, "run_script")
    moved = rt.move("T1", "build", options=KANDEV, dispatch=False)  # committed; the entry's dispatch was lost
    assert seen.calls == []
    rt = h.restart()
    recovered = rt.recover()
    assert recovered.dispatched == 1
    assert seen.options("run_script") == [KANDEV]
    assert moved.ledger_id is not None
    assert rt.dispatch_entry(moved.ledger_id).status == "redelivery"  # recorded: nothing runs again
    assert len(seen.calls) == 1
    assert stored(h, moved.ledger_id) == KANDEV


def test_executors_cannot_change_the_options(memory_harness: Any) -> None:
    h = memory_harness
    rt = start(h)
    tried: list[str] = []

    def hook(ctx: ActionContext) -> None:
        try:
            ctx.arrival_options["instructions"] = "changed"  # type: ignore[index]
        except TypeError as exc:
            tried.append(type(exc).__name__)

    h.recorder.hook("run_script", hook)
    moved = rt.move("T1", "build", options=KANDEV)
    assert tried == ["TypeError"]
    assert stored(h, moved.ledger_id) == KANDEV


def test_empty_options_are_no_options(harness: Any) -> None:
    h = harness
    rt = start(h)
    moved = rt.move("T1", "build", options={})
    assert stored(h, moved.ledger_id) is None


BAD: list[tuple[Any, str]] = [
    ("skip", "must be a mapping of option name to value, not str"),
    ({1: "x"}, "a int key 1 (keys are strings)"),
    ({"when": math.nan}, "the number nan is not JSON"),
    ({"x": object()}, "a value of type object"),
    ({"text": "a\x00b"}, "contains a NUL character"),
    ({"text": "\ud800"}, "lone surrogate"),
    ({"big": "x" * MAX_OPTIONS_BYTES}, f"entry options are at most {MAX_OPTIONS_BYTES:,}"),
    (json.loads("[" * 0 + "{\"a\":" * (MAX_OPTIONS_DEPTH + 2) + "1" + "}" * (MAX_OPTIONS_DEPTH + 2)),
     f"nested deeper than {MAX_OPTIONS_DEPTH} levels"),
]


@pytest.mark.parametrize(("options", "message"), BAD, ids=[m.split(" ")[0] + str(i) for i, (_, m) in enumerate(BAD)])
def test_bad_options_are_refused_before_anything_is_written(harness: Any, options: Any, message: str) -> None:
    h = harness
    rt = start(h)
    before = h.store.ledger("T1")
    with pytest.raises(PayloadError, match="options") as info:
        rt.move("T1", "build", options=options)
    assert message in str(info.value)
    with pytest.raises(PayloadError, match="options"):
        rt.create_task("T2", "ci", "build", options=options)
    assert h.store.ledger("T1") == before and h.store.get_task("T2") is None
    assert h.store.get_task("T1").step_id == "todo"  # type: ignore[union-attr]
    assert h.recorder.calls == []


@pytest.mark.durable  # LedgerWriter writes on a host's SQL connection
def test_a_host_s_ledger_writer_row_carries_options_to_its_entry(harness: Any) -> None:
    h = harness
    rt = h.start(FLOW, host=HOST)
    seen = Seen(h, "run_script")
    engine = sa.create_engine(normalise_url(h.backend.url))
    try:
        with engine.begin() as conn:
            ledger_id = LedgerWriter().write_arrival(conn, task_id="H1", from_workflow_id="ci", from_step_id="todo",
                                                     to_workflow_id="ci", to_step_id="build", route="manual_move",
                                                     options=KANDEV)
        with engine.begin() as conn, pytest.raises(PayloadError, match="options"):
            LedgerWriter().write_arrival(conn, task_id="H1", from_workflow_id="ci", from_step_id="build",
                                         to_workflow_id="ci", to_step_id="review", route="manual_move",
                                         options={"x": {1, 2}})
    finally:
        engine.dispose()
    assert ledger_id is not None
    rt.dispatch_entry(ledger_id)
    assert seen.options("run_script") == [KANDEV]


def test_a_store_refuses_options_that_are_not_a_json_object(harness: Any) -> None:
    h = harness
    h.store.put_task(TaskState("T1", "ci", "todo"))
    with pytest.raises(ValueError, match="arrival_options"):
        h.store.move_task("T1", "ci", "build", route="manual_move", arrival_options="[1, 2]")
    assert h.store.get_task("T1").step_id == "todo"  # type: ignore[union-attr]


# ---- the scenario format's `options:` ----------------------------------------------------------------------

SCENARIO = """\
source: |
  workflow w {
    step a { start manual_move }
    step b { manual_move on on_enter { run_script(command: "make") } }
  }
tasks:
  T1: {workflow: w, step: a}
events:
  - move: {task: T1, to: b, options: {instructions: "Check the logs", skip_step_prompt: true}}
"""


def _simulate(tmp_path: Path, capsys: pytest.CaptureFixture[str], text: str) -> tuple[int, list[Mapping[str, Any]],
                                                                                         str]:
    path = tmp_path / "s.yaml"
    path.write_text(text)
    code = main(["simulate", str(path), "--format", "jsonl"])
    out, err = capsys.readouterr()
    assert "Traceback" not in err
    return code, [json.loads(line) for line in out.splitlines()], err


def test_a_scenario_move_carries_options_to_the_entry(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, records, err = _simulate(tmp_path, capsys, SCENARIO)
    assert code == 0, err
    (effect,) = [r for r in records if r["record"] == "effect" and r["kind"] == "run_script"]
    assert effect["arrival_options"] == {"instructions": "Check the logs", "skip_step_prompt": True}


def test_a_scenario_with_bad_options_is_a_located_error(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    text = SCENARIO.replace("{instructions: \"Check the logs\", skip_step_prompt: true}", "[1, 2]")
    code, _, err = _simulate(tmp_path, capsys, text)
    assert code == 1
    assert "s.yaml:9:29: event 1 (`move`): options: expected a mapping" in err
    code, _, err = _simulate(tmp_path, capsys, SCENARIO.replace('"Check the logs"', ".nan"))
    assert code == 1
    assert "s.yaml:9:5: event 1 (`move`): `options` is not plain JSON data: `instructions`: the number nan" in err
