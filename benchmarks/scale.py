"""Hostile inputs at two sizes in, how much longer the larger one takes out: the compiler's scaling as a ratio,
measured in one process (the wall-clock half of `tests/property/test_scale.py`, which counts calls instead).

Every case of `tests/support/scale_cases.py` is compiled at size `k` and `2k` (`k = 5`: `2k` is the most the
input limits allow, 1,000 steps or actions; the median of `--repeat` runs of each); doubling the input of a linear compiler doubles the time (ratio 2.0), a quadratic pass makes it
4.0.  The refusals (inputs past the token or nesting limits) are timed the same way: refusing twice as much text
must cost about twice as much.  Absolute times are printed for context only; `--check` judges the ratios
(at most `TARGET`) and exits 1 on a miss.

    python benchmarks/scale.py                 # the table
    python benchmarks/scale.py --check         # exit 1 if a ratio is over the target
"""

from __future__ import annotations

import argparse
import gc
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
TARGET = 3.0
"""The largest ratio accepted: 2.0 is linear, 4.0 quadratic; the margin absorbs noise."""


def _median_seconds(run: Callable[[], object], repeat: int) -> float:
    """The median time of `run()`, the cyclic collector paused as `interlock check` pauses it (its passes over
    the IR, a graph that grows with the input, would otherwise be timed with the compiler)."""
    samples = []
    for _ in range(repeat):
        gc.collect()
        gc.disable()
        try:
            started = time.perf_counter()
            run()
            samples.append(time.perf_counter() - started)
        finally:
            gc.enable()
    return statistics.median(samples)


def _figures(repeat: int) -> list[tuple[str, int, float, float]]:
    sys.path.insert(0, str(ROOT / "tests"))
    from support.scale_cases import CASES, REFUSALS

    from interlock.compiler import compile_source
    from interlock.dsl import SourceFile

    def compiler(text: str) -> Callable[[], object]:
        return lambda: compile_source(SourceFile("scale.wf", text))

    compile_source(SourceFile("warm.wf", "role warm_up\n"))  # imports and the prelude, outside the timing
    out = []
    inputs: list[tuple[str, int, Callable[[int], str]]] = [
        *((name, 5, lambda k, case=case: case(k)[0]) for name, case in CASES.items()),
        *((f"refused: {name}", 10, make) for name, make in REFUSALS.items())]
    for name, k, make in inputs:
        small, large = compiler(make(k)), compiler(make(2 * k))
        small()
        large()
        out.append((name, k, _median_seconds(small, repeat), _median_seconds(large, repeat)))
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeat", type=int, default=3, metavar="N", help="timed runs per size (default 3)")
    parser.add_argument("--check", action="store_true", help=f"exit 1 if a ratio is over {TARGET}")
    args = parser.parse_args(argv)
    missed = 0
    print(f"{'case':52} {'k':>3} {'size k':>8} {'size 2k':>8} {'ratio':>6}")
    for name, k, small, large in _figures(args.repeat):
        ratio = large / small
        missed += ratio > TARGET
        flag = "" if ratio <= TARGET else f"  over {TARGET}"
        print(f"{name:52} {k:>3} {small:>7.2f}s {large:>7.2f}s {ratio:>5.2f}x{flag}")
    print(f"target: ratio ≤ {TARGET} (2.0 is linear); {missed} missed")
    return 1 if args.check and missed else 0


if __name__ == "__main__":
    raise SystemExit(main())
