"""A scenario's `expect:` block and its trace in, every way the trace misses it out: located, with the nearest record.

Each `Failure` names the expectation's place in the scenario file (`file:line:col`, from the YAML
reader's positions), says what was expected and what came instead, and carries the actual record
nearest to what was expected (for a `records:` item, the record of the same kind, after the previous
match, that agrees on the most fields), so a test runner can show it.  Pure: no I/O.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import yaml

from .scenario import Scenario

__all__ = ["Failure", "expectation_failures", "subset"]


@dataclass(frozen=True)
class Failure:
    """One expectation the trace misses: which part of `expect:` (`tasks`, `runs`, `counters`, `records`), where it
    is written, the message, the expected value, and the nearest actual record (None when there is none)."""

    part: str
    where: str
    message: str
    expected: Any
    nearest: dict[str, Any] | None = None


def subset(want: Mapping[str, Any], got: Mapping[str, Any]) -> bool:
    """Whether every field of `want` is in `got` with the same value (nested mappings compared as subsets)."""
    for key, value in want.items():
        if key not in got:
            return False
        if isinstance(value, Mapping) and isinstance(got[key], Mapping):
            if not subset(value, got[key]):
                return False
        elif got[key] != value:
            return False
    return True


def _text(value: Any) -> str:
    """A value as the scenario would write it: YAML's flow style on one line (`{record: arrival, task: T1}`)."""
    plain = json.loads(json.dumps(value, default=str))
    return str(yaml.safe_dump(plain, default_flow_style=True, sort_keys=False, allow_unicode=True,
                               width=1 << 30)).strip().removesuffix("...").strip()


def _agreement(want: Mapping[str, Any], record: Mapping[str, Any]) -> int:
    return sum(1 for k, v in want.items() if k in record and (
        subset(v, record[k]) if isinstance(v, Mapping) and isinstance(record[k], Mapping) else record[k] == v))


def nearest_record(want: Mapping[str, Any], records: Sequence[dict[str, Any]], start: int = 0) -> dict[str, Any] | None:
    """The record after `start` (any, if none is) of the kind `want` names (any kind, if it names none or none is of
    it) that agrees with `want` on the most fields; the earliest on a tie."""
    pool = [r for r in records[start:] if r.get("record") != "summary" or want.get("record") == "summary"]
    if not pool:
        pool = [r for r in records if r.get("record") != "summary"]
    same = [r for r in pool if "record" in want and r.get("record") == want["record"]]
    candidates = same or pool
    if not candidates:
        return None
    best = max(range(len(candidates)), key=lambda i: (_agreement(want, candidates[i]), -i))
    return candidates[best]


def _tasks(scenario: Scenario, records: Sequence[dict[str, Any]], summary: Mapping[str, Any]) -> list[Failure]:
    expect = scenario.expect
    assert expect is not None
    out: list[Failure] = []
    for task_id, want in expect.tasks.items():
        where = scenario.at("expect", "tasks", task_id)
        got = summary.get("tasks", {}).get(task_id)
        arrivals = [r for r in records if r.get("record") == "arrival" and r.get("task") == task_id]
        if got is None:
            out.append(Failure("tasks", where, f"task {task_id}: not in the trace", {"step": want.step}))
        elif got["step"] != want.step:
            out.append(Failure("tasks", where, f"task {task_id}: at step `{got['step']}`, expected `{want.step}`",
                               {"step": want.step}, arrivals[-1] if arrivals else None))
    return out


def _run_effect(run: tuple[str, str, str], records: Sequence[dict[str, Any]]) -> dict[str, Any] | None:
    want = {"task": run[0], "agent": run[1], "reason": run[2]}
    queued = [r for r in records if r.get("record") == "effect" and str(r.get("kind", "")).startswith("queue_run")
              and r.get("task") == run[0]]
    return nearest_record({"record": "effect", **want}, queued) if queued else None


def _runs(scenario: Scenario, records: Sequence[dict[str, Any]], summary: Mapping[str, Any]) -> list[Failure]:
    expect = scenario.expect
    assert expect is not None and expect.runs is not None
    wanted = [(r.task, r.agent, r.reason) for r in expect.runs]
    got_runs = Counter((r["task"], r["agent"], r["reason"]) for r in summary.get("runs", []))
    want_runs = Counter(wanted)
    out: list[Failure] = []
    for run, n in (want_runs - got_runs).items():
        text = f"{{task: {run[0]}, agent: {run[1]}, reason: {run[2]}}}"
        out.append(Failure("runs", scenario.at("expect", "runs", wanted.index(run)), f"runs: missing {n} x {text}",
                           {"task": run[0], "agent": run[1], "reason": run[2]}, _run_effect(run, records)))
    for run, n in (got_runs - want_runs).items():
        text = f"{{task: {run[0]}, agent: {run[1]}, reason: {run[2]}}}"
        out.append(Failure("runs", scenario.at("expect", "runs"), f"runs: unexpected {n} x {text}", None,
                           _run_effect(run, records)))
    return out


def _counters(scenario: Scenario, summary: Mapping[str, Any]) -> list[Failure]:
    expect = scenario.expect
    assert expect is not None
    got = summary.get("counters", {})
    out: list[Failure] = []
    for name, want in expect.counters.items():
        have = got.get(name)
        same = subset(want, have) if isinstance(want, Mapping) and isinstance(have, Mapping) else have == want
        if not same:
            shown = {"record": "summary", "counters": {name: have}} if summary else None
            out.append(Failure("counters", scenario.at("expect", "counters", name),
                               f"counters: `{name}` is {_text(have)}, expected {_text(want)}", {name: want}, shown))
    return out


def _records(scenario: Scenario, records: Sequence[dict[str, Any]]) -> list[Failure]:
    expect = scenario.expect
    assert expect is not None
    pos = 0
    for i, want in enumerate(expect.records):
        start = pos
        while pos < len(records) and not subset(want, records[pos]):
            pos += 1
        if pos == len(records):
            after = f" after seq {records[start - 1].get('seq')}" if start else ""
            return [Failure("records", scenario.at("expect", "records", i),
                            f"records: no record matching {_text(want)}{after} (in order)", dict(want),
                            nearest_record(want, records, start))]
        pos += 1
    return []


def expectation_failures(scenario: Scenario, records: Sequence[dict[str, Any]]) -> list[Failure]:
    """Every way `records` (a trace, its summary last) misses the scenario's `expect:` block; empty: it passes."""
    expect = scenario.expect
    if expect is None:
        return []
    summary = records[-1] if records and records[-1].get("record") == "summary" else {}
    out = _tasks(scenario, records, summary)
    if expect.runs is not None:
        out += _runs(scenario, records, summary)
    out += _counters(scenario, summary)
    return out + _records(scenario, records)
