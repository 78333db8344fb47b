"""The OpenTelemetry adapter (`interlock[otel]`, issue 21 finding 1), against the SDK's in-memory exporters: a span per
delivery with the plan revision, task, step, trigger and outcome; counters for arrivals, actions, failures,
redeliveries and superseded deliveries; the time a task spent on a step."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import pytest

pytest.importorskip("opentelemetry.sdk", reason="the `otel` extra is not installed")

from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import InMemoryMetricReader
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import StatusCode

from interlock.runtime import ActionFailed, ExecutorRegistry, Record, Runtime, StaticDirectory
from interlock.runtime.otel import OtelSink, instrument
from interlock.runtime.store import Participant
from interlock.stores import MemoryStore

WF = """
task notify(channel: str) on on_enter, on_comment
entry { dispatch notify }
workflow w "W" {
  step a "A" {
    start manual_move
    on on_comment { notify(channel: "#a")  page }
    on on_turn_complete { move_to_step(b) }
  }
  step b "B" {
    manual_move
    on on_enter { notify(channel: "#b")  ensure_seats(role: reviewer) }
    on on_turn_complete { move_to_step(c) when quorum(reviewer, all_approve) }
  }
  step c "C" { manual_move terminal }
}
task page on on_comment
"""
COMMENT = {"comment_id": "c1", "author_id": "u1", "body": "hi"}


@dataclass
class Otel:
    spans: InMemorySpanExporter
    metrics: InMemoryMetricReader
    tracer_provider: TracerProvider
    meter_provider: MeterProvider

    def finished(self, name: str | None = None) -> list[Any]:
        return [s for s in self.spans.get_finished_spans() if name is None or s.name == name]

    def points(self, metric: str) -> list[tuple[dict[str, Any], Any]]:
        """(attributes, value) of every data point of a metric: the sum of a counter, the histogram point itself."""
        data = self.metrics.get_metrics_data()
        out = []
        for resource in data.resource_metrics if data else ():
            for scope in resource.scope_metrics:
                for m in scope.metrics:
                    if m.name == metric:
                        for p in m.data.data_points:
                            out.append((dict(p.attributes), getattr(p, "value", p)))
        return out

    def total(self, metric: str, **where: Any) -> int:
        return sum(v for attrs, v in self.points(metric)
                   if all(attrs.get(f"interlock.{k}") == x for k, x in where.items()))


@pytest.fixture()
def otel() -> Iterator[Otel]:
    spans = InMemorySpanExporter()
    tracer_provider = TracerProvider()
    tracer_provider.add_span_processor(SimpleSpanProcessor(spans))
    reader = InMemoryMetricReader()
    meter_provider = MeterProvider(metric_readers=[reader])
    yield Otel(spans, reader, tracer_provider, meter_provider)
    tracer_provider.shutdown()
    meter_provider.shutdown()


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def build(compile_text: Any, *, fail: set[str] | None = None) -> Runtime:
    registry = ExecutorRegistry()

    def notify(args: Any, ctx: Any) -> None:
        if fail and args["channel"] in fail:
            raise ActionFailed(f"{args['channel']} is down")

    registry.register("notify", notify)  # `page` has no executor
    return Runtime(compile_text(WF), MemoryStore(), executors=registry, sinks=[],
                   directory=StaticDirectory(primary="p", ceo="rev"), executor_timeout=None)


@pytest.fixture()
def compile_text() -> Any:
    from interlock.compiler import compile_source
    from interlock.dsl import SourceFile

    def compile_(text: str) -> Any:
        result = compile_source(SourceFile("w.wf", text))
        assert result.plan is not None, result.diagnostics
        return result.plan

    return compile_


def test_a_span_per_delivery_with_plan_task_step_trigger_and_outcome(compile_text: Any, otel: Otel) -> None:
    rt = build(compile_text)
    instrument(rt, tracer_provider=otel.tracer_provider, meter_provider=otel.meter_provider)
    digest = rt.plan.digest
    rt.create_task("T", "w")
    rt.fire("on_comment", "T", payload=COMMENT, operation_id="comment:c1")
    rt.fire("on_comment", "T", payload=COMMENT, operation_id="comment:c1")  # a redelivery: idempotent
    rt.fire("on_turn_complete", "T", session_id="S1", operation_id="turn:1")  # a -> b, entry of b
    rt.record_decision("T", agent="rev", role="reviewer", verdict="approved")  # b -> c
    rt.dispatch("agent_error", {"task_id": "T", "session_id": "", "execution_id": "E", "agent_profile_id": "",
                                "error_message": "x", "user_initiated": False})  # skipped: no session
    names = [s.name for s in otel.finished()]
    # causes first: a decision's record comes before the arrival and entry it caused (docs/scenarios.md)
    assert names == ["interlock.arrival", "interlock.entry", "interlock.fire", "interlock.fire", "interlock.arrival",
                     "interlock.entry", "interlock.fire", "interlock.decision", "interlock.arrival",
                     "interlock.entry", "interlock.dispatch"]
    for span in otel.finished():
        assert span.attributes["interlock.plan"] == digest and span.attributes["interlock.task"] == "T"
    fires = otel.finished("interlock.fire")
    assert [(s.attributes["interlock.trigger"], s.attributes["interlock.outcome"]) for s in fires] == [
        ("on_comment", "dispatched"), ("on_comment", "idempotent"), ("on_turn_complete", "dispatched")]
    assert fires[0].attributes["interlock.step"] == "a" and fires[0].attributes["interlock.operation_id"] == "comment:c1"
    entries = otel.finished("interlock.entry")
    assert [(s.attributes["interlock.step"], s.attributes["interlock.trigger"], s.attributes["interlock.outcome"])
            for s in entries] == [("a", "on_enter", "ok"), ("b", "on_enter", "ok"), ("c", "on_enter", "ok")]
    assert entries[1].attributes["interlock.attempted"] == ("notify", "ensure_seats")
    arrivals = otel.finished("interlock.arrival")
    assert [(s.attributes.get("interlock.from_step"), s.attributes["interlock.step"], s.attributes["interlock.route"])
            for s in arrivals] == [(None, "a", "creation"), ("a", "b", "engine_transition"), ("b", "c", "decision")]
    (decision,) = otel.finished("interlock.decision")
    assert (decision.attributes["interlock.step"], decision.attributes["interlock.outcome"],
            decision.attributes["interlock.verdict"]) == ("b", "moved", "approved")
    (dispatch,) = otel.finished("interlock.dispatch")
    assert (dispatch.attributes["interlock.sequence"], dispatch.attributes["interlock.trigger"],
            dispatch.attributes["interlock.outcome"], dispatch.attributes["interlock.guard"]) == (
        "agent_error", "on_agent_error", "skipped", "no_session")


def test_counters_for_arrivals_actions_failures_and_redeliveries(compile_text: Any, otel: Otel) -> None:
    rt = build(compile_text, fail={"#b"})
    instrument(rt, tracer_provider=otel.tracer_provider, meter_provider=otel.meter_provider)
    rt.create_task("T", "w")
    rt.fire("on_comment", "T", payload=COMMENT, operation_id="comment:c1")  # notify ok, page: no executor
    rt.fire("on_comment", "T", payload=COMMENT, operation_id="comment:c1")  # redelivery
    moved = rt.fire("on_turn_complete", "T", operation_id="turn:1")  # entry of b: notify fails, ensure_seats ok
    assert moved.arrival is not None and moved.arrival.ledger_id is not None
    rt.dispatch_entry(moved.arrival.ledger_id)  # an entry redelivered
    assert otel.total("interlock.arrivals") == 2
    assert otel.total("interlock.arrivals", step="b", route="engine_transition") == 1
    assert otel.total("interlock.actions", kind="notify", trigger="on_comment", outcome="ok") == 1
    assert otel.total("interlock.actions", kind="page", trigger="on_comment", outcome="no_executor") == 1
    assert otel.total("interlock.actions", kind="notify", trigger="on_enter", outcome="failed") == 1
    assert otel.total("interlock.actions", kind="ensure_seats", trigger="on_enter", outcome="ok") == 1
    assert otel.total("interlock.actions", kind="move_to_step") == 0  # a transition is no executor's action
    assert otel.total("interlock.failures") == 1 and otel.total("interlock.failures", kind="notify") == 1
    assert otel.total("interlock.redeliveries", what="operation") == 1
    assert otel.total("interlock.redeliveries", what="entry") == 1
    entry_b = otel.finished("interlock.entry")[1]
    assert entry_b.status.status_code == StatusCode.ERROR and entry_b.attributes["interlock.failed"] == ("notify",)


def test_an_aborted_fire_is_an_error_span_and_a_failure(compile_text: Any, otel: Otel) -> None:
    rt = build(compile_text, fail={"#a"})
    instrument(rt, tracer_provider=otel.tracer_provider, meter_provider=otel.meter_provider)
    rt.create_task("T", "w")
    assert rt.fire("on_comment", "T", payload=COMMENT, operation_id="op").result == "error"
    (fire,) = otel.finished("interlock.fire")
    assert fire.attributes["interlock.outcome"] == "error" and fire.status.status_code == StatusCode.ERROR
    assert fire.status.description == "#a is down"
    assert otel.total("interlock.failures", kind="notify", trigger="on_comment") == 1


def test_time_in_step_is_the_time_since_the_tasks_previous_arrival(compile_text: Any, otel: Otel) -> None:
    clock = Clock()
    rt = build(compile_text)
    sink = OtelSink(rt.plan, tracer_provider=otel.tracer_provider, meter_provider=otel.meter_provider, clock=clock)
    rt.add_sink(sink)
    rt.store.add_participant(Participant("T", "b", "reviewer", "rev"))
    rt.create_task("T", "w")  # enters a at 100
    clock.now = 130.0
    rt.fire("on_turn_complete", "T")  # leaves a after 30 s
    clock.now = 137.5
    rt.record_decision("T", agent="rev", role="reviewer", verdict="approved")  # leaves b after 7.5 s
    points = {attrs["interlock.step"]: p for attrs, p in otel.points("interlock.time_in_step")}
    assert set(points) == {"a", "b"}
    assert (points["a"].count, points["a"].sum) == (1, 30.0) and (points["b"].count, points["b"].sum) == (1, 7.5)
    assert all(attrs["interlock.plan"] == rt.plan.digest and attrs["interlock.workflow"] == "w"
               for attrs, _ in otel.points("interlock.time_in_step"))


def test_time_in_step_forgets_the_oldest_task_beyond_its_bound(otel: Otel) -> None:
    clock = Clock()
    sink = OtelSink("sha256:x", tracer_provider=otel.tracer_provider, meter_provider=otel.meter_provider, clock=clock,
                    remember_tasks=2)

    def arrival(task: str, frm: str | None, to: str) -> Record:
        return Record("arrival", "info", "task arrived at step", {"task": task, "from": frm, "to": to,
                                                                  "workflow": "w", "route": "manual_move"})

    for task in ("T1", "T2", "T3"):
        sink(arrival(task, None, "a"))
    clock.now = 110.0
    for task in ("T3", "T2", "T1"):
        sink(arrival(task, "a", "b"))
    ((_, point),) = otel.points("interlock.time_in_step")
    assert (point.count, point.sum) == (2, 20.0)  # T1 was forgotten when T3 arrived: its time on `a` is not measured


def test_a_records_own_plan_revision_wins_and_superseded_deliveries_are_counted(otel: Otel) -> None:
    sink = OtelSink("sha256:mine", tracer_provider=otel.tracer_provider, meter_provider=otel.meter_provider)
    sink(Record("superseded_discarded", "info", "superseded", {"task": "T", "entry_id": 3, "current": 4,
                                                               "plan": "sha256:theirs"}))
    sink(Record("superseded_discarded", "info", "superseded", {"task": "T", "entry_id": 5, "current": 6}))
    assert otel.total("interlock.superseded_discarded", plan="sha256:theirs") == 1
    assert otel.total("interlock.superseded_discarded", plan="sha256:mine") == 1


def test_spans_are_children_of_the_hosts_current_span(compile_text: Any, otel: Otel) -> None:
    rt = build(compile_text)
    instrument(rt, tracer_provider=otel.tracer_provider, meter_provider=otel.meter_provider)
    rt.create_task("T", "w")
    tracer = otel.tracer_provider.get_tracer("host")
    with tracer.start_as_current_span("host.handle_comment") as host_span:
        rt.fire("on_comment", "T", payload=COMMENT, operation_id="comment:c1")
    (fire,) = otel.finished("interlock.fire")
    assert fire.parent is not None and fire.parent.span_id == host_span.get_span_context().span_id
