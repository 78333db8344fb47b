"""The benchmark command keeps working: one quick run of two figures, its JSON and its table.

The figures themselves are judged by `python benchmarks/run.py` (never here: no absolute time is
asserted in tests); this only checks that the command a reader is told to run still runs and reports
every field the README's table is built from.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


@pytest.mark.slow
def test_run_py_measures_figures_and_reports_json_and_a_table() -> None:
    proc = subprocess.run([sys.executable, str(ROOT / "benchmarks" / "run.py"), "--only", "check-memory",
                           "sqlite-arrivals", "--repeat", "1", "--json"], cwd=ROOT, capture_output=True, text=True,
                          timeout=600)
    assert proc.returncode == 0, proc.stderr[-3000:]
    report = json.loads(proc.stdout)
    assert report["repeat"] == 1 and isinstance(report["passed"], bool)
    figures = {f["name"]: f for f in report["figures"]}
    assert set(figures) == {"check-memory", "sqlite-arrivals"}
    memory = figures["check-memory"]
    assert memory["unit"] == "MB" and 5 < memory["measured"] < 1000 and memory["ratio"] is None
    assert [(t["op"], t["value"], t["met"]) for t in memory["targets"]] == [("<=", 80.0, memory["measured"] <= 80)]
    arrivals = figures["sqlite-arrivals"]
    assert arrivals["unit"] == "arrivals/s" and arrivals["measured"] > 0 and arrivals["reference"] > 0
    assert arrivals["ratio"] == pytest.approx(arrivals["measured"] / arrivals["reference"])
    details = arrivals["details"]
    assert details["journal_mode"] == "wal" and details["synchronous"] == "NORMAL"
    # one queued run per arrival (warm-up + the sample), and the WAL frames a commit writes on each side
    assert details["queued_runs"] >= details["arrivals_per_sample"]
    assert details["wal_frames_per_arrival"] > details["wal_frames_per_raw_row"] >= 1
    table = proc.stderr
    assert "figure" in table and "sqlite-arrivals" in table and "≥0.25\N{MULTIPLICATION SIGN}" in table and "≤80 MB" in table


def test_run_py_refuses_an_unknown_figure() -> None:
    proc = subprocess.run([sys.executable, str(ROOT / "benchmarks" / "run.py"), "--only", "nope"], cwd=ROOT,
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 2 and "nope" in proc.stderr


def test_long_run_py_measures_a_checkout_window_by_window() -> None:
    proc = subprocess.run([sys.executable, str(ROOT / "benchmarks" / "long_run.py"), "--windows", "2", "--fires",
                           "300", str(ROOT)], cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    line = proc.stdout.strip()
    prefix = f"{ROOT}: fires/s by window of 300: "
    assert line.startswith(prefix), line
    assert re.fullmatch(r"[1-9]\d*k [1-9]\d*k  \(mean [1-9]\d*k\)", line[len(prefix):]), line


def test_long_run_py_refuses_a_folder_that_is_not_a_checkout(tmp_path: Path) -> None:
    proc = subprocess.run([sys.executable, str(ROOT / "benchmarks" / "long_run.py"), str(tmp_path)], cwd=ROOT,
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 2 and "not an interlock checkout" in proc.stderr


def test_scale_py_states_its_target() -> None:
    proc = subprocess.run([sys.executable, str(ROOT / "benchmarks" / "scale.py"), "--help"], cwd=ROOT,
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert "--check" in proc.stdout and "3.0" in proc.stdout


def test_ticks_py_reads_the_due_rows_through_their_index() -> None:
    """benchmarks/ticks.py runs (a small store: the figures are its own), and SQLite's plan of the due query searches
    `ix_interlock_timers_due` instead of scanning the table: a tick's cost does not grow with the pending timers."""
    proc = subprocess.run([sys.executable, str(ROOT / "benchmarks" / "ticks.py"), "--backend", "sqlite", "--pending",
                           "2000", "--due", "20", "--repeat", "1"], cwd=ROOT, capture_output=True, text=True,
                          timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "SEARCH interlock_timers USING INDEX ix_interlock_timers_due (due_at<?)" in proc.stdout
    assert "SCAN interlock_timers" not in proc.stdout
    (row,) = [line for line in proc.stdout.splitlines() if line.startswith("sqlite ")]
    assert "(20 fired;" in row
