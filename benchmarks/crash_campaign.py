"""A longer crash-injection campaign than the test suite's: N SIGKILL trials per backend, a summary out.

Each trial is the one of `tests/runtime/test_crash_injection.py` (see `tests/support/crash_worker.py`):
a worker running the Office script is killed with SIGKILL (after a seeded random delay, or at a seeded
point of its store traffic), a fresh runtime calls `recover()`, the invariants are checked, the
in-flight call is redelivered, the rest of the script made, and the final state compared with a run
that was never killed.

    python benchmarks/crash_campaign.py                         # 500 trials on SQLite and on PostgreSQL
    python benchmarks/crash_campaign.py --trials 2000 --backend sqlite
    python benchmarks/crash_campaign.py --seed 1234 --trials 1 -v   # replay one seed
    python benchmarks/crash_campaign.py --json > crash.json
    python benchmarks/crash_campaign.py --mode mixed-revision --trials 1000   # two plan revisions on one store
    python benchmarks/crash_campaign.py --mode clock-skew --trials 1000       # host clocks hours off

`--mode mixed-revision` and `--mode clock-skew` are the deployment trials of `tests/support/fleet_campaign.py`
(docs/runtime.md §6): a worker of one revision SIGKILLed inside an entry's host action and recovered by a worker
of the other; a host whose clock is hours ahead or behind beside a live owner, and after it died.

PostgreSQL comes from `INTERLOCK_TEST_PG_URL` (default: the local `test` database); the campaign
works in a private schema it drops at the end.  Exit status: 0 no invariant broken, 1 some trial
broke one (the seeds are listed), 2 the campaign could not run (e.g. PostgreSQL unreachable).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
import uuid
from collections import Counter
from contextlib import ExitStack
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))

from support import crash_worker as crash  # noqa: E402
from support import fleet_campaign as fleet  # noqa: E402

DEFAULT_PG_URL = "postgresql+psycopg://postgres@127.0.0.1:5432/test"


def _pg_schema(stack: ExitStack) -> str:
    import sqlalchemy as sa

    from interlock.stores import upgrade
    from interlock.stores.engine import normalise_url

    base = normalise_url(os.environ.get("INTERLOCK_TEST_PG_URL", DEFAULT_PG_URL))
    admin = sa.create_engine(base, poolclass=sa.pool.NullPool)
    name = f"il_crash_{uuid.uuid4().hex[:12]}"
    with admin.begin() as conn:
        conn.exec_driver_sql(f'CREATE SCHEMA "{name}"')

    def drop() -> None:
        with admin.begin() as conn:
            conn.exec_driver_sql(f'DROP SCHEMA IF EXISTS "{name}" CASCADE')
        admin.dispose()

    stack.callback(drop)
    url = base.update_query_dict({"options": f"-csearch_path={name} -csynchronous_commit=off"})
    text = url.render_as_string(hide_password=False)
    upgrade(text)
    return text


def campaign(backend: str, trials: int, seed: int, *, targeted: bool, fsync: bool, verbose: bool) -> dict[str, Any]:
    started = time.perf_counter()
    with ExitStack() as stack:
        workdir = Path(stack.enter_context(tempfile.TemporaryDirectory(prefix=f"crash-{backend}-")))
        if backend == "sqlite":
            from interlock.stores import upgrade

            url = f"sqlite:///{workdir / 'crash.db'}"
            upgrade(url)
        else:
            url = _pg_schema(stack)
        c = crash.Campaign(url, backend, workdir, fsync=fsync)
        stack.callback(c.close)
        c.calibrate("tx")
        c.calibrate("split")
        c.calibrate("host")
        c.calibrate("retry")
        runs = [c.trial(s) for s in range(seed, seed + trials)]
        if targeted:
            runs += [c.run(t) for t in c.targeted()]
        for t in runs:
            if verbose or t.problems:
                print(f"{'FAIL' if t.problems else 'ok  '} {t.describe()}", file=sys.stderr)
                for p in t.problems:
                    print(f"       {p}", file=sys.stderr)
        killed = [t for t in runs if t.code == -9]
        return {
            "backend": backend,
            "trials": len(runs),
            "killed": len(killed),
            "recover_killed_too": sum(t.double for t in runs),
            "variants": dict(Counter(t.variant for t in runs)),
            "unknown_outcomes": sum("[unknown outcome]" in t.phase for t in runs),
            "seconds": round(time.perf_counter() - started, 1),
            "script_ms": {v: round(e * 1000, 1) for v, e in c.elapsed.items()},
            "points": c.points,
            "calls_killed": dict(Counter(t.phase.split(" at ")[0].split(" [")[0] for t in killed).most_common()),
            "kill_points": dict(Counter(t.phase.split(" at ", 1)[1].split(" [")[0] for t in killed
                                        if " at " in t.phase).most_common()),
            "failures": [{"seed": t.seed, "trial": t.describe(), "problems": t.problems} for t in runs if t.problems],
        }


def fleet_campaign(backend: str, mode: str, trials: int, seed: int, *, verbose: bool) -> dict[str, Any]:
    """`trials` trials of a deployment mode (`mixed-revision`, `clock-skew`) on a fresh store of `backend`."""
    started = time.perf_counter()
    with ExitStack() as stack:
        workdir = Path(stack.enter_context(tempfile.TemporaryDirectory(prefix=f"fleet-{backend}-")))
        if backend == "sqlite":
            from interlock.stores import upgrade

            url = f"sqlite:///{workdir / 'fleet.db'}"
            upgrade(url)
        else:
            url = _pg_schema(stack)
        f = stack.enter_context(fleet.fleet(url, workdir))
        runs = []
        for s in range(seed, seed + trials):
            t = f.run(mode, s)
            runs.append(t)
            if verbose or t.problems:
                print(f"{'FAIL' if t.problems else 'ok  '} {t.describe()}", file=sys.stderr)
                for p in t.problems:
                    print(f"       {p}", file=sys.stderr)
        return {
            "backend": backend,
            "mode": mode,
            "trials": len(runs),
            "shapes": dict(Counter(t.kind for t in runs).most_common()),
            "skews_h": dict(Counter(round(float(part.split()[-2]), 2) for t in runs for part in t.shape.split(", ")
                                    if part.startswith("contender")).most_common()),
            "killed_before_first_action": sum("[killed before" in t.shape for t in runs),
            "retried_unreachable": sum(t.retries for t in runs),
            "seconds": round(time.perf_counter() - started, 1),
            "failures": [{"seed": t.seed, "trial": t.describe(), "problems": t.problems} for t in runs if t.problems],
        }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--backend", choices=("sqlite", "postgresql", "both"), default="both")
    parser.add_argument("--mode", choices=("crash", "mixed-revision", "clock-skew"), default="crash",
                        help="crash: the Office script SIGKILLed at random points (default); mixed-revision, "
                             "clock-skew: the deployment trials")
    parser.add_argument("--trials", type=int, default=500, help="random trials per backend (default 500)")
    parser.add_argument("--seed", type=int, default=0, help="first seed (default 0)")
    parser.add_argument("--no-targeted", action="store_true",
                        help="skip the kills between each arrival's commit and its entry dispatch")
    parser.add_argument("--no-fsync", action="store_true", help="do not fsync the worker journals")
    parser.add_argument("--json", action="store_true", help="JSON summary on stdout")
    parser.add_argument("-v", "--verbose", action="store_true", help="one line per trial on stderr")
    args = parser.parse_args(argv)
    backends = ("sqlite", "postgresql") if args.backend == "both" else (args.backend,)
    summaries = []
    for backend in backends:
        try:
            if args.mode != "crash":
                summaries.append(fleet_campaign(backend, args.mode, args.trials, args.seed, verbose=args.verbose))
                continue
            summaries.append(campaign(backend, args.trials, args.seed, targeted=not args.no_targeted,
                                      fsync=not args.no_fsync, verbose=args.verbose))
        except Exception as exc:
            print(f"crash_campaign: {backend}: could not run: {type(exc).__name__}: {exc}", file=sys.stderr)
            return 2
    if args.json:
        print(json.dumps(summaries, indent=2))
    else:
        for s in summaries:
            if "mode" in s:
                print(f"{s['backend']} {s['mode']}: {s['trials']} trials in {s['seconds']} s "
                      f"({s['killed_before_first_action']} killed before their first action, "
                      f"{s['retried_unreachable']} attempts run again: the store unreachable); "
                      f"{len(s['failures'])} broke an invariant")
                for shape, count in s["shapes"].items():
                    print(f"  {count:5d}  {shape}")
                if s["skews_h"]:
                    print(f"  contender clock offsets (h): {s['skews_h']}")
                for f in s["failures"]:
                    print(f"  FAIL {f['trial']}")
                    for p in f["problems"][:10]:
                        print(f"       {p}")
                continue
            print(f"{s['backend']}: {s['trials']} trials ({s['killed']} killed, {s['recover_killed_too']} with a "
                  f"killed recover too, {s['unknown_outcomes']} unknown host outcomes) in {s['seconds']} s; "
                  f"{len(s['failures'])} broke an invariant")
            print(f"  calls killed: {s['calls_killed']}")
            print(f"  kill points:  {s['kill_points']}")
            for f in s["failures"]:
                print(f"  FAIL {f['trial']}")
                for p in f["problems"][:10]:
                    print(f"       {p}")
    return 1 if any(s["failures"] for s in summaries) else 0


if __name__ == "__main__":
    raise SystemExit(main())
