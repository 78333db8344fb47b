"""examples/host/host.py, the example host, as a newcomer runs it: it finishes its demo tasks, and when it is
SIGKILLed in the middle of a notification — after the notification's row was written, before the executor
returned — the next run takes the entry over and runs the notification again with the same key and the next
attempt, and the host's own table holds every notification exactly once (docs/runtime.md §7).  Handshakes, never
sleeps: the host writes a line to a file when it is inside the action, and the test kills it then.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
import sqlalchemy as sa
from support import conc_pg as pg

from interlock.stores import open_store

HOST = Path(__file__).resolve().parents[1] / "examples" / "host" / "host.py"
WAIT = 90.0


@pytest.fixture(params=["sqlite", pytest.param("postgresql", marks=pytest.mark.postgres)])
def store_url(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[str]:
    if request.param == "sqlite":
        yield f"sqlite:///{tmp_path / 'host.db'}"
        return
    with pg.private_schema() as schema:
        yield pg.url_for(schema)


def _host(url: str, *extra: str, env: dict[str, str] | None = None) -> subprocess.Popen[str]:
    return subprocess.Popen([sys.executable, str(HOST), "--store", url, "--tasks", "2", "--lease", "2", *extra],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            env={**os.environ, **(env or {})})


def _notifications(url: str) -> list[tuple[str, str, int]]:
    engine = sa.create_engine(url)
    try:
        with engine.connect() as conn:
            return [tuple(r) for r in conn.execute(sa.text(  # type: ignore[misc]
                "SELECT key, channel, attempt FROM host_notifications ORDER BY key"))]
    finally:
        engine.dispose()


def test_the_example_host_finishes_its_tasks(store_url: str) -> None:
    proc = _host(store_url, "--until-done")
    out, err = proc.communicate(timeout=WAIT)
    assert proc.returncode == 0, err
    assert out.splitlines()[-1].startswith("steps done done |")
    if store_url.startswith("sqlite:///"):  # it closed its store: no write-ahead log left beside the file for git
        db = Path(store_url.removeprefix("sqlite:///"))  # (looked at before anything here opens the file)
        assert sorted(p.name for p in db.parent.glob(db.name + "*")) == [db.name]
    notes = _notifications(store_url)
    assert sorted(c for _, c, _ in notes) == ["agents", "agents", "reviewers", "reviewers"]
    assert len({k for k, _, _ in notes}) == 4


def test_killed_inside_a_notification_the_next_run_sends_it_again_and_the_table_holds_it_once(
        store_url: str, tmp_path: Path) -> None:
    signal_file = tmp_path / "inside.txt"
    killed = _host(store_url, env={"INTERLOCK_HOST_HANG_AFTER_NOTIFY": str(signal_file)})
    deadline = time.monotonic() + WAIT
    while not (signal_file.exists() and signal_file.read_text().strip()):
        assert killed.poll() is None, killed.communicate()[1]
        assert time.monotonic() < deadline, "the host never reached its first notification"
        time.sleep(0.05)
    (key, attempt) = signal_file.read_text().split()
    assert attempt == "1"  # the first run of the action: the one the kill interrupts
    killed.send_signal(signal.SIGKILL)
    killed.communicate(timeout=WAIT)
    assert _notifications(store_url) == [(key, "agents", 1)]  # written, then killed before it returned

    again = _host(store_url, "--until-done")  # takes the entry over once the killed owner's lease runs out
    _out, err = again.communicate(timeout=WAIT)
    assert again.returncode == 0, err
    notes = _notifications(store_url)
    assert len(notes) == 4 and len({k for k, _, _ in notes}) == 4  # each notification exactly once
    assert (key, "agents", 1) in notes
    entry_id = int(key.split(":")[1])
    store = open_store(store_url, create=False)
    try:
        marker = store.markers(entry_id)[0]
        assert (marker.state, marker.attempt) == ("done", 2)  # it ran again, with the same key, as attempt 2
    finally:
        close = getattr(store, "close", None)
        if close is not None:
            close()
