"""The crash campaign's deployment modes keep working (`benchmarks/crash_campaign.py --mode mixed-revision|clock-skew`
runs a thousand trials; here a few of each, on SQLite and PostgreSQL): real processes of two plan revisions, and of
hosts whose clocks are hours off, on one store, with the invariants of tests/support/fleet_campaign.py.  Each check
was seen to fail once against a mutation of the runtime (entries run under the runtime's own plan; leases judged by
the host's clock).
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from support import conc_pg as pg
from support import fleet_campaign as fc

from interlock.stores import upgrade


@pytest.fixture(params=["sqlite", pytest.param("postgresql", marks=pytest.mark.postgres)])
def fleet(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[fc.Fleet]:
    if request.param == "sqlite":
        url = f"sqlite:///{tmp_path / 'fleet.db'}"
        upgrade(url)
        with fc.fleet(url, tmp_path) as f:
            yield f
        return
    with pg.private_schema() as schema, fc.fleet(pg.url_for(schema), tmp_path) as f:
        yield f


def test_mixed_revision_trials_keep_every_entry_under_its_own_revision(fleet: fc.Fleet) -> None:
    # seeds 0-7 cover v1 and v2 killed inside `notify` and `page`, the owner stopped and its lease run out
    trials = [fleet.run("mixed-revision", seed) for seed in range(8)]
    assert {t.kind.split(",")[0] for t in trials} == {"v1 killed inside notify", "v2 killed inside notify",
                                                       "v2 killed inside page"}
    assert [t.describe() + f" {t.problems}" for t in trials if t.problems] == []


def test_clock_skew_trials_take_nothing_from_a_live_owner_and_keep_nothing_of_a_dead_one(fleet: fc.Fleet) -> None:
    trials = [fleet.run("clock-skew", seed) for seed in (0, 1, 2)]  # a fire and an entry released; an entry whose holder died
    assert sorted(t.kind for t in trials) == ["entry, holder killed (lease ran out)", "entry, holder released",
                                              "fire, holder released"]
    assert [t.describe() + f" {t.problems}" for t in trials if t.problems] == []
