"""A deployment of real processes on one store (docs/runtime.md §6): two plan revisions side by side, a worker
SIGKILLed inside an entry's host action and its entry finished by a runtime of the other revision; and `recover` run
in another PID namespace beside a live worker on the same hostname.  Each worker is `tests/support/fleet_worker.py`;
every executor call is a journal line, counted here per (entry, action) across processes.  Handshakes, never
sleeps: a worker says `blocked` when it is inside the action, and the parent acts on that.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from support import conc_pg as pg
from support.fleet_campaign import V1, V2  # the two revisions the fleet campaign runs (one text for both)

from interlock.compiler import compile_source
from interlock.dsl import SourceFile
from interlock.runtime import ExecutorRegistry, Runtime, dump_plan
from interlock.stores import open_store, upgrade

WORKER = Path(__file__).resolve().parents[1] / "support" / "fleet_worker.py"
WAIT = 60.0



def _plan_file(tmp: Path, name: str, text: str) -> Path:
    result = compile_source(SourceFile(f"{name}.wf", text))
    assert result.plan is not None, result.diagnostics
    path = tmp / f"{name}.json"
    path.write_text(dump_plan(result.plan))
    return path


@pytest.fixture(params=["sqlite", pytest.param("postgresql", marks=pytest.mark.postgres)])
def store_url(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[str]:
    if request.param == "sqlite":
        url = f"sqlite:///{tmp_path / 'fleet.db'}"
        upgrade(url)
        yield url
        return
    with pg.private_schema() as schema:
        yield pg.url_for(schema)


class Journal:
    def __init__(self, path: Path) -> None:
        self.path = path

    def lines(self) -> list[str]:
        return self.path.read_text().splitlines() if self.path.exists() else []

    def calls(self) -> list[tuple[str, str, int, str]]:
        out = []
        for line in self.lines():
            if line.startswith("X "):
                kind, key, attempt, plan = line[2:].split(" ")
                out.append((kind, key, int(attempt), plan))
        return out

    def owners(self) -> list[str]:
        return [line[2:] for line in self.lines() if line.startswith("O ")]

    def result(self) -> dict[str, Any]:
        (line,) = [x for x in self.lines() if x.startswith("R ")]
        return dict(json.loads(line[2:]))

    def wait_for(self, text: str, proc: subprocess.Popen[bytes]) -> None:
        deadline = time.monotonic() + WAIT
        while text not in self.lines():
            if proc.poll() is not None:
                raise AssertionError(f"the worker ended ({proc.returncode}) before `{text}`: {self.lines()}")
            assert time.monotonic() < deadline, f"no `{text}` from the worker: {self.lines()}"
            time.sleep(0.01)


def _start(tmp: Path, name: str, spec: dict[str, Any], prefix: list[str] | None = None) -> subprocess.Popen[bytes]:
    path = tmp / f"{name}.spec.json"
    path.write_text(json.dumps(spec))
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    return subprocess.Popen([*(prefix or []), sys.executable, str(WORKER), str(path)], env=env)


def _wait_owner_dead(url: str, owner: str) -> None:
    """Until the store's clock says the killed worker's owner is dead (its heartbeat stopped with it)."""
    store = open_store(url, create=False)
    try:
        deadline = time.monotonic() + WAIT
        while any(o.owner_id == owner and o.alive for o in store.owners()):
            assert time.monotonic() < deadline, "the killed worker's owner never died"
            time.sleep(0.05)
    finally:
        store.close()  # type: ignore[attr-defined]


def test_a_mixed_fleet_finishes_a_killed_workers_entry_under_its_own_revision(store_url: str, tmp_path: Path) -> None:
    """v1 worker SIGKILLed inside `notify` of review's entry; a v2 process (v2 puts `page` in front) recovers:
    `notify` runs again with v1's key and the next attempt, `page` never runs and is never recorded done; no action
    runs twice under different keys, none is recorded done that did not run."""
    v1, v2 = _plan_file(tmp_path, "v1", V1), _plan_file(tmp_path, "v2", V2)
    setup = open_store(store_url, create=False)
    rt = Runtime(compile_source(SourceFile("v1.wf", V1)).plan, setup, executors=ExecutorRegistry(), sinks=[])
    rt.create_task("T", "flow")
    rt.close()
    journal = Journal(tmp_path / "fleet.journal")
    worker = _start(tmp_path, "v1", {"url": store_url, "plan": str(v1), "journal": str(journal.path), "do": "move",
                                     "task": "T", "to": "review", "block_on": "notify", "lease": 1.0})
    try:
        journal.wait_for("blocked", worker)
        worker.send_signal(signal.SIGKILL)
        worker.wait(WAIT)
    finally:
        if worker.poll() is None:
            worker.kill()
    (killed_owner,) = journal.owners()
    _wait_owner_dead(store_url, killed_owner)  # its lease (1 s) runs out on the store's clock
    recover = _start(tmp_path, "v2", {"url": store_url, "plan": str(v2), "journal": str(journal.path),
                                      "do": "recover"})
    assert recover.wait(WAIT) == 0
    assert journal.result() == {"dispatched": 1, "released": [], "entries": ["dispatched"]}
    (row,) = [r for r in setup.ledger("T") if r.to_step_id == "review"]
    v1_digest = json.loads(v1.read_text())["digest"]
    key = f"entry:{row.id}:1:notify"
    assert journal.calls() == [("notify", key, 1, v1_digest), ("notify", key, 2, v1_digest)]
    record = setup.entry_record(row.id)
    assert record is not None and record.attempted == ("clear_decisions", "notify") and record.failed == ()
    assert {p: (m.kind, m.state, m.attempt) for p, m in setup.markers(row.id).items()} == {
        0: ("clear_decisions", "done", 1), 1: ("notify", "done", 2)}
    setup.close()  # type: ignore[attr-defined]


def _unshare() -> list[str]:
    ci = os.environ.get("CI", "").lower() in ("1", "true", "yes")
    found = shutil.which("unshare")
    problem = None
    if found is None:
        problem = "`unshare` (util-linux) is not installed"
    elif os.geteuid() != 0:
        problem = "a PID namespace needs root here"
    else:
        probe = subprocess.run([found, "--pid", "--fork", "--mount-proc", "true"], capture_output=True)
        if probe.returncode != 0:
            problem = f"`unshare --pid` is refused: {probe.stderr.decode().strip()}"
    if problem is not None:
        if ci:
            pytest.fail(problem)
        pytest.skip(problem)
    assert found is not None
    return [found, "--pid", "--fork", "--mount-proc"]


def test_recover_in_another_pid_namespace_leaves_a_live_workers_claim_alone(store_url: str, tmp_path: Path) -> None:
    """Two containers with one hostname: `recover` in the second (another PID namespace, where the first's PID does not
    exist) used to release the live worker's claim, and the redelivery ran the operation again."""
    prefix = _unshare()
    plan = _plan_file(tmp_path, "v1", V1)
    setup = open_store(store_url, create=False)
    rt = Runtime(compile_source(SourceFile("v1.wf", V1)).plan, setup, executors=ExecutorRegistry(), sinks=[])
    rt.create_task("T", "flow")
    rt.close()
    journal = Journal(tmp_path / "ns.journal")
    release = tmp_path / "release"
    worker = _start(tmp_path, "worker", {"url": store_url, "plan": str(plan), "journal": str(journal.path),
                                         "do": "fire", "task": "T", "operation": "comment:1", "block_on": "notify",
                                         "release": str(release)})
    try:
        journal.wait_for("blocked", worker)
        other = _start(tmp_path, "other", {"url": store_url, "plan": str(plan),
                                           "journal": str(tmp_path / "other.journal"), "do": "recover", "task": "T",
                                           "operation": "comment:1"}, prefix=prefix)
        assert other.wait(WAIT) == 0
        other_result = Journal(tmp_path / "other.journal").result()
        assert other_result["released"] == [] and other_result["fire"] == "in_progress"
        release.write_text("go")
        assert worker.wait(WAIT) == 0
    finally:
        if worker.poll() is None:
            worker.kill()
    assert journal.result() == {"result": "dispatched"}
    assert [c[:3] for c in journal.calls() + Journal(tmp_path / "other.journal").calls()] == [
        ("notify", "op:comment%3A1:0:notify", 1)]
    assert setup.operation_applied("comment:1") and setup.claimed_operations() == []
    setup.close()  # type: ignore[attr-defined]
