"""The runtime's speed devices, each switched off in turn, in: the `fire` and SQLite-arrival ratios of each
configuration out (ADR 0027's ablation table).

    python benchmarks/ablation.py [--repeat 7] [--rounds 3] [--only fire|sqlite]

A device stays in the runtime only where this table shows it pays.  Each configuration runs in
a fresh interpreter, which switches its device off before the runtime is imported (the library
has no switches of its own: the device is replaced from outside, behind the same interface):

- `fast_init`: the frozen records' `__init__` as dataclasses generates it (and so no builder either);
- `builder`: the hot paths build their records with the class itself instead of its plain twin;
- `counter shards`: `Counters` as one `collections.Counter` behind a lock;
- `run-key digests`: the digest of a queueing action's configuration computed on every call
  instead of once per plan.

Rounds alternate the configurations, so a machine that gets busier affects them alike; the
medians of the rounds are printed as ratios against the same run's peers (`runtime_figures`).
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
CONFIGS = ("all devices on", "fast_init off", "builder off", "counter shards off", "run-key digests off")

_CHILD = r'''
import collections, json, sys, threading
config, figure, repeat = sys.argv[1], sys.argv[2], int(sys.argv[3])
sys.path.insert(0, sys.argv[4])
import interlock.runtime.frozen as frozen
if config == "fast_init off":  # the builder's twin classes come from fast_init: both go
    frozen.fast_init = lambda cls: cls
    frozen.builder = lambda cls: cls
if config == "builder off":
    frozen.builder = lambda cls: cls
import interlock.runtime.records as records
if config == "counter shards off":
    class LockedCounters(records.Counters):
        def __init__(self):
            super().__init__()
            self._c, self._s, self._l = collections.Counter(), collections.Counter(), threading.Lock()
        def add(self, name, n=1):
            with self._l:
                self._c[name] += n
        def add_each(self, names):
            with self._l:
                for name in names:
                    self._c[name] += 1
        def count(self, *names):
            self.add_each(names)
        def skip(self, guard):
            with self._l:
                self._s[guard] += 1
        def _sums(self):
            with self._l:
                return collections.Counter(self._c), collections.Counter(self._s)
    records.Counters = LockedCounters
import interlock.runtime.invoker as invoker
if config == "run-key digests off":
    invoker.index_digests = lambda index: {}
import interlock.runtime.api as api
if config == "counter shards off":
    api.Counters = records.Counters
import runtime_figures as rf
result = (rf.fire_vs_transitions if figure == "fire" else rf.sqlite_arrivals)(repeat)
print(json.dumps({"ratio": result.ratio, "measured": result.measured}))
'''


def measure(config: str, figure: str, repeat: int) -> float:
    proc = subprocess.run([sys.executable, "-c", _CHILD, config, figure, str(repeat), str(HERE)],
                          capture_output=True, text=True, check=False, cwd=HERE.parent)
    if proc.returncode != 0:
        raise SystemExit(f"{config} / {figure} failed:\n{proc.stderr}")
    return float(json.loads(proc.stdout.strip().splitlines()[-1])["ratio"])


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--repeat", type=int, default=7, help="interleaved samples per figure (default 7)")
    p.add_argument("--rounds", type=int, default=3, help="rounds over every configuration (default 3)")
    p.add_argument("--only", choices=("fire", "sqlite"), nargs="+", default=["fire", "sqlite"],
                   help="the figures to measure (default both)")
    args = p.parse_args(argv)
    ratios: dict[tuple[str, str], list[float]] = {}
    for round_ in range(args.rounds):
        order = CONFIGS if round_ % 2 == 0 else tuple(reversed(CONFIGS))
        for config in order:
            for figure in args.only:
                ratios.setdefault((config, figure), []).append(measure(config, figure, args.repeat))
                print(f"round {round_ + 1}: {config:<20} {figure:<6} {ratios[(config, figure)][-1]:.3f}",
                      file=sys.stderr)
    names = {"fire": "fire / transitions", "sqlite": "sqlite arrivals / raw"}
    print("| configuration | " + " | ".join(names[f] for f in args.only) + " |")
    print("|---|" + "---|" * len(args.only))
    for config in CONFIGS:
        cells = [f"{statistics.median(ratios[(config, f)]):.3f}x (" +
                 ", ".join(f"{r:.2f}" for r in ratios[(config, f)]) + ")" for f in args.only]
        print(f"| {config} | " + " | ".join(cells) + " |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
