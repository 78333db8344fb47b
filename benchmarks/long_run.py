"""Checkouts in, the `fire` rate of each over a growing MemoryStore out: one figure per window of fires.

    python benchmarks/long_run.py [--windows 8] [--fires 50000] [CHECKOUT ...]

The `fire-vs-transitions` figure times a store that holds a few tens of thousands of ledger rows;
a host that runs for hours holds millions, and what the garbage collector does with them shows
only then.  Each checkout (default: this one) runs in a fresh interpreter that imports interlock
from that checkout alone, and drives the same ping-pong runtime as `fire-vs-transitions`
(`runtime_figures.PingPong`) for `--windows` windows of `--fires` fires each, the store growing by
a ledger row and an entry record a fire.  Checkouts run in turn, so pass each variant twice to
see the machine's drift (ADR 0035 measured the MemoryStore's plain-value rows this way).
"""

from __future__ import annotations

import argparse
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent

_CHILD = r'''
import sys, time
root, windows, fires = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
# the checkout alone: an editable install's finder would otherwise resolve interlock to its own tree
sys.meta_path[:] = [f for f in sys.meta_path if "editable" not in getattr(f, "__module__", "") + type(f).__module__]
sys.path[:0] = [root, root + "/benchmarks"]
import interlock.stores.memory as memory
if not memory.__file__.startswith(root):
    raise SystemExit(f"interlock was imported from {memory.__file__}, not from {root}")
import runtime_figures as rf
ping = rf.PingPong()
rates = []
for _ in range(windows):
    start = time.perf_counter()
    ping.fires(fires)
    rates.append(fires / (time.perf_counter() - start))
print(" ".join(f"{r:.0f}" for r in rates))
'''


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("checkouts", nargs="*", type=Path, default=[HERE.parent],
                   help="checkouts to measure, in turn (default: this one)")
    p.add_argument("--windows", type=int, default=8, help="windows of fires per checkout (default 8)")
    p.add_argument("--fires", type=int, default=50_000, help="fires per window (default 50,000)")
    args = p.parse_args(argv)
    if args.windows < 1 or args.fires < 1:
        p.error("--windows and --fires must be at least 1")
    for checkout in args.checkouts:
        root = checkout.resolve()
        if not (root / "runtime" / "__init__.py").is_file():
            p.error(f"{checkout}: not an interlock checkout (no runtime/__init__.py)")
        proc = subprocess.run([sys.executable, "-c", _CHILD, str(root), str(args.windows), str(args.fires)],
                              capture_output=True, text=True, check=False, cwd=root)
        if proc.returncode != 0:
            print(f"{checkout}: failed\n{proc.stderr}", file=sys.stderr)
            return 1
        rates = [float(r) for r in proc.stdout.split()]
        shown = " ".join(f"{r / 1000:.0f}k" for r in rates)
        print(f"{checkout}: fires/s by window of {args.fires:,}: {shown}  (mean {sum(rates) / len(rates) / 1000:.0f}k)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
