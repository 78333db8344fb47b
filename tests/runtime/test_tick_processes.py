"""`tick()` from four processes at once over 1,000 due timers on PostgreSQL (docs/runtime.md §7, issue 20): each
timer's action runs exactly once, each `timer` record is written once, and nothing is left due.

Each worker (support/timer_host.py `tick_worker`, a spawned process) ticks on a clock fixed past the
timers' due time until nothing is due; its executor writes one row per call to `tick_effects`, a table
without a unique key, so a doubled action would show as a doubled row.  The workers start together from a
barrier and read the due rows in the same order: they contend for every row.
"""

from __future__ import annotations

import multiprocessing
from collections import Counter
from typing import Any

import pytest
import sqlalchemy as sa
from support import conc_pg as pg
from support.timer_host import T0, Calls, Clock, collect, runtime, tick_worker

from interlock.stores import open_store
from interlock.stores.engine import normalise_url

pytestmark = pytest.mark.postgres
TIMERS = 1000
WORKERS = 4
WAIT = 180.0


def test_four_processes_ticking_fire_each_of_1000_due_timers_exactly_once() -> None:
    with pg.private_schema() as schema:
        url = pg.url_for(schema)
        engine = sa.create_engine(normalise_url(url))
        with engine.begin() as conn:
            conn.execute(sa.text("CREATE TABLE tick_effects (key TEXT NOT NULL, worker INTEGER NOT NULL)"))
        store = open_store(url, create=False, clock=Clock())
        rt = runtime(store, Calls())
        try:
            tasks = [f"T{i:04d}" for i in range(TIMERS)]
            for task in tasks:  # into `review`: no entry actions, one `after 30m` timer each
                rt.create_task(task, "w", "review")
            assert len(store.due_rows(tasks[0])) == 1
            ctx = multiprocessing.get_context("spawn")
            barrier, results = ctx.Barrier(WORKERS), ctx.Queue()
            procs = [ctx.Process(target=tick_worker, args=(url, T0 + 1800, w, barrier, results))
                     for w in range(WORKERS)]
            for p in procs:
                p.start()
            outcomes: list[Any] = collect(results, procs, WAIT)
            for p in procs:
                p.join(timeout=WAIT)
            assert [p.exitcode for p in procs] == [0] * WORKERS, outcomes
            with engine.connect() as conn:
                effects = Counter(k for (k,) in conn.execute(sa.text("SELECT key FROM tick_effects")))
            assert len(effects) == TIMERS and set(effects.values()) == {1}, "an action ran twice, or never"
            records = Counter((task, timer, slot) for _, _, timers in outcomes for task, timer, slot, result in timers
                              if result == "fired")
            assert sorted(records) == [(t, "after 30m", 1) for t in tasks] and set(records.values()) == {1}
            fired = Counter((task, slot) for _, items, _ in outcomes for task, _, slot, result in items
                            if result == "fired")
            assert sorted(fired) == [(t, 1) for t in tasks] and set(fired.values()) == {1}
            assert store.due(10) == [] and store.next_due() is None
        finally:
            rt.close()
            getattr(store, "close", lambda: None)()
            engine.dispose()
