"""Records a host can read and ship (issue 21, finding 1): the default loguru line names the record's fields, the
stdlib `logging` sink and the JSON-lines sink carry them too, and none of it changes what the runtime does."""

from __future__ import annotations

import io
import json
import logging
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st
from loguru import logger

from interlock.runtime import ListSink, Record, Runtime, StaticDirectory
from interlock.runtime.sinks import JsonLinesSink, LoggingSink, record_text
from interlock.stores import MemoryStore

WF = """
task notify(channel: str) on on_enter, on_comment
entry { dispatch notify }
workflow w "W" {
  step a "A" { start manual_move  on on_comment { notify(channel: "#a") } }
  step b "B" { manual_move  on on_enter { notify(channel: "#b") } }
}
"""


def build(compile_text: Any, sinks: list[Any], fail: bool = False) -> Runtime:
    from interlock.runtime import ActionFailed, ExecutorRegistry

    registry = ExecutorRegistry()

    def notify(args: Any, ctx: Any) -> None:
        if fail:
            raise ActionFailed("channel {0} is down")  # braces: never read as a format

    registry.register("notify", notify)
    return Runtime(compile_text(WF), MemoryStore(), executors=registry, sinks=sinks,
                   directory=StaticDirectory(primary="p"), executor_timeout=None)


@pytest.fixture()
def compile_text() -> Any:
    from interlock.compiler import compile_source
    from interlock.dsl import SourceFile

    def compile_(text: str) -> Any:
        result = compile_source(SourceFile("w.wf", text))
        assert result.plan is not None, result.diagnostics
        return result.plan

    return compile_


@pytest.fixture()
def loguru_lines() -> Iterator[list[str]]:
    lines: list[str] = []
    handler = logger.add(lambda m: lines.append(m.record["message"]), level="DEBUG", format="{message}")
    yield lines
    logger.remove(handler)


def test_the_default_sink_prints_the_records_fields_on_the_line(compile_text: Any, loguru_lines: list[str]) -> None:
    """The issue's example: `step entry dispatched` alone said nothing; the line now names task, step, entry."""
    rt = build(compile_text, sinks=None)  # type: ignore[arg-type]  # None: the default (loguru)
    rt.create_task("T1", "w")
    moved = rt.move("T1", "b", session_id="S1")
    entry = [line for line in loguru_lines if line.startswith("step entry dispatched")][-1]
    short = rt.digest[:len("sha256:") + 12]  # every record names its plan revision (docs/runtime.md §6), shortened
    assert entry == (f'step entry dispatched task=T1 workflow=w step=b entry_id={moved.ledger_id} session=S1 '
                     f'attempted=["notify"] failed=[] plan={short}')


def test_failures_name_kind_and_error_on_the_line(compile_text: Any, loguru_lines: list[str]) -> None:
    rt = build(compile_text, sinks=None, fail=True)  # type: ignore[arg-type]
    rt.create_task("T1", "w")
    rt.fire("on_comment", "T1", payload={"comment_id": "c1", "author_id": "u", "body": "x"}, operation_id="op-1")
    aborted = next(line for line in loguru_lines if line.startswith("trigger dispatch aborted"))
    short = rt.digest[:len("sha256:") + 12]
    assert aborted == ('trigger dispatch aborted task=T1 step=a trigger=on_comment operation_id=op-1 '
                       f'error="channel {{0}} is down" actions=[] failed_kind=notify guards=[] plan={short}')


def test_record_text_orders_naming_fields_first_and_leaves_out_none() -> None:
    record = Record("warning", "warning", "runtime warning",
                    {"extra": 1, "session": None, "kind": "k", "code": "no_executor", "task": "T", "step": "s p"})
    assert record_text(record) == 'runtime warning task=T step="s p" kind=k code=no_executor extra=1'


def test_record_text_shows_a_plan_revision_short() -> None:
    digest = "sha256:" + "0123456789abcdef" * 4
    text = record_text(Record("arrival", "info", "task arrived at step", {"task": "T", "plan": digest}))
    assert text == "task arrived at step task=T plan=sha256:0123456789ab"
    stream = io.StringIO()
    JsonLinesSink(stream)(Record("arrival", "info", "task arrived at step", {"task": "T", "plan": digest}))
    assert json.loads(stream.getvalue())["plan"] == digest


def test_record_text_keeps_a_long_value_to_a_line() -> None:
    text = record_text(Record("error", "error", "boom", {"message": "x" * 1000}))
    assert text == "boom message=" + "x" * 300 + "…(+700 chars)"


# ---- stdlib logging ------------------------------------------------------------------------------------------------

class Capture(logging.Handler):
    def __init__(self) -> None:
        super().__init__(logging.DEBUG)
        self.records: list[logging.LogRecord] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.records.append(record)


@pytest.fixture()
def captured() -> Iterator[Capture]:
    handler = Capture()
    log = logging.getLogger("interlock.runtime")
    log.addHandler(handler)
    old = log.level
    log.setLevel(logging.DEBUG)
    yield handler
    log.removeHandler(handler)
    log.setLevel(old)


def test_logging_sink_puts_the_fields_on_the_message_and_in_extra(compile_text: Any, captured: Capture) -> None:
    rt = build(compile_text, sinks=[LoggingSink()])
    rt.create_task("T1", "w")
    moved = rt.move("T1", "b")
    entry = [r for r in captured.records if getattr(r, "record", None) == "entry"][-1]
    assert entry.name == "interlock.runtime" and entry.levelno == logging.INFO
    assert entry.getMessage().startswith(f"step entry dispatched task=T1 workflow=w step=b entry_id={moved.ledger_id}")
    assert (entry.task, entry.step, entry.entry_id, entry.attempted) == ("T1", "b", moved.ledger_id,  # type: ignore[attr-defined]
                                                                         ["notify"])
    assert entry.interlock["record"] == "entry" and entry.interlock["entry_id"] == moved.ledger_id  # type: ignore[attr-defined]
    assert all(r.levelno > 0 for r in captured.records)
    assert "outcome" not in {getattr(r, "record", None) for r in captured.records}  # silent: trace-only


def test_logging_sink_keeps_a_field_named_like_a_logrecord_attribute(captured: Capture) -> None:
    """An `error` record's `message` field would clash with LogRecord.message: it is kept under `interlock`."""
    LoggingSink()(Record("error", "error", "executor raised an unexpected exception",
                         {"task": "T", "kind": "k", "message": "RuntimeError: boom", "name": "n"}))
    (record,) = captured.records
    assert record.levelno == logging.ERROR and record.task == "T"  # type: ignore[attr-defined]
    assert record.interlock["message"] == "RuntimeError: boom" and record.name == "interlock.runtime"  # type: ignore[attr-defined]
    assert 'message="RuntimeError: boom"' in record.getMessage()


def test_logging_sink_skips_levels_the_logger_does_not_want(captured: Capture) -> None:
    logging.getLogger("interlock.runtime").setLevel(logging.WARNING)
    sink = LoggingSink(logging.getLogger("interlock.runtime"))
    sink(Record("entry", "info", "step entry dispatched", {"task": "T"}))
    sink(Record("warning", "warning", "runtime warning", {"code": "no_executor"}))
    assert [r.levelname for r in captured.records] == ["WARNING"]


# ---- JSON lines ----------------------------------------------------------------------------------------------------

def test_json_lines_sink_writes_one_object_per_record_with_the_trace_names(compile_text: Any) -> None:
    stream = io.StringIO()
    kept = ListSink()
    rt = build(compile_text, sinks=[JsonLinesSink(stream), kept])
    rt.create_task("T1", "w")
    rt.move("T1", "b")
    objects = [json.loads(line) for line in stream.getvalue().splitlines()]
    shown = [r for r in kept.records if r.level != "silent"]
    assert [o["record"] for o in objects] == [r.kind for r in shown]
    for obj, record in zip(objects, shown):
        assert {k: obj[k] for k in record.fields} == json.loads(json.dumps(dict(record.fields)))
        assert obj["level"] == record.level and obj["message"] == record.message and obj["time"].endswith("+00:00")
    arrival = objects[-2]
    assert (arrival["record"], arrival["task"], arrival["from"], arrival["to"]) == ("arrival", "T1", "a", "b")


def test_json_lines_sink_appends_to_a_file_and_writes_silent_records_when_asked(tmp_path: Path) -> None:
    path = tmp_path / "records.jsonl"
    path.write_text('{"earlier": true}\n', encoding="utf-8")
    sink = JsonLinesSink(path, silent=True)
    sink(Record("outcome", "silent", "dispatch outcome", {"trigger": "on_comment", "result": "idempotent"}))
    sink.close()
    lines = path.read_text(encoding="utf-8").splitlines()
    assert json.loads(lines[0]) == {"earlier": True}
    assert json.loads(lines[1])["result"] == "idempotent" and len(lines) == 2
    quiet = io.StringIO()
    JsonLinesSink(quiet)(Record("outcome", "silent", "dispatch outcome", {}))
    assert quiet.getvalue() == ""


_JSON = st.recursive(st.none() | st.booleans() | st.integers() | st.text(),
                     lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(), inner, max_size=3),
                     max_leaves=8)


@given(fields=st.dictionaries(st.text(min_size=1).filter(lambda k: k not in ("time", "record")), _JSON, max_size=6),
       level=st.sampled_from(["debug", "info", "warning", "error"]))
def test_json_lines_round_trip_every_field(fields: dict[str, Any], level: str) -> None:
    """Whatever plain data a record carries comes back from its line unchanged, one line per record."""
    stream = io.StringIO()
    JsonLinesSink(stream)(Record("effect", level, "action took effect", fields))  # type: ignore[arg-type]
    (line,) = stream.getvalue().splitlines()
    obj = json.loads(line)
    assert {k: obj[k] for k in fields} == fields and obj["record"] == "effect"


@given(fields=st.dictionaries(st.sampled_from(["task", "step", "x", "kind", "error", "zz"]),
                              st.text() | st.integers() | st.none(), max_size=6))
def test_record_text_names_every_field_that_is_not_none_once(fields: dict[str, Any]) -> None:
    text = record_text(Record("warning", "warning", "runtime warning", fields))
    named = [name for name, value in fields.items() if value is not None]
    for name in named:
        assert f" {name}=" in text
    assert "\n" not in text  # one line, whatever the values hold (quoted as JSON)
