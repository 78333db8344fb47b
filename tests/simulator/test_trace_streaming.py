"""`interlock simulate` streams its trace: each record is written and flushed as it happens, so Ctrl-C (exit 130)
or a long scenario leaves what happened so far; piped, the table is plain lines with no padding."""

from __future__ import annotations

import io
import json
import os
import select
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from interlock.traces import TraceWriter

ROOT = Path(__file__).resolve().parents[2]
INTERLOCK = str(Path(sys.executable).with_name("interlock"))
ANSWER = 60.0
"""Seconds to wait for a record: without streaming none comes before the scenario ends (an hour later)."""

HANGING = """\
workflow: {wf}
tasks:
  T1: {{workflow: office_default, step: work}}
sessions:
  S1: {{task: T1, agent_profile: primary, state: running}}
participants:
  - {{step: review, role: reviewer, agent: rev-a}}
agents: {{primary: primary, ceo: ceo-1}}
executor_timeout: 3600
executors:
  queue_run_for_each_participant: {{hang: 1, seconds: 3600}}   # blocks the run after the first records
events:
  - turn_complete: {{task: T1, session: S1}}
"""


@pytest.mark.skipif(os.name != "posix", reason="sends SIGINT")
def test_ctrl_c_leaves_the_records_so_far_and_exits_130(tmp_path: Path) -> None:
    scenario = tmp_path / "hang.yaml"
    scenario.write_text(HANGING.format(wf=ROOT / "examples" / "office_default.wf"))
    proc = subprocess.Popen([INTERLOCK, "simulate", str(scenario), "--format", "jsonl"], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    try:
        assert proc.stdout is not None
        ready, _, _ = select.select([proc.stdout], [], [], ANSWER)  # the handshake: a record is out
        assert ready, "no record was written while the scenario ran: the trace is not streamed"
        first = json.loads(proc.stdout.readline())
        assert (first["seq"], first["record"]) == (1, "dispatch")
        proc.send_signal(signal.SIGINT)
        rest, err = proc.communicate(timeout=ANSWER)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()
    assert proc.returncode == 130, err
    assert "interrupted" in err
    seqs = [first["seq"], *(json.loads(line)["seq"] for line in rest.splitlines())]
    assert seqs == list(range(1, len(seqs) + 1))  # every record written whole, in order


def test_a_piped_table_is_not_padded() -> None:
    proc = subprocess.run([INTERLOCK, "simulate", str(ROOT / "examples" / "scenarios" / "office_review_round_trip.yaml"),
                           "--format", "table"], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.splitlines()
    assert lines[0].split() == ["seq", "event", "record", "details"]
    assert not [line for line in lines if line != line.rstrip()]  # no trailing spaces
    assert len({len(line) for line in lines}) > len(lines) // 2  # each line as wide as it needs, no wider
    assert lines[1].split()[:3] == ["1", "1", "dispatch"]


class _Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_on_a_terminal_rows_wrap_and_each_record_is_written_at_once() -> None:
    out = _Terminal()
    write = TraceWriter(out, "table")
    write({"seq": 1, "event": 1, "record": "arrival", "task": "T1", "detail": "x" * 300})
    first = out.getvalue()
    assert "seq" in first and "arrival" in first and "x" * 40 in first
    write({"seq": 2, "event": 1, "record": "entry", "task": "T1"})
    assert out.getvalue().startswith(first) and out.getvalue().count("seq") == 1  # the header once
