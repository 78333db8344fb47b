"""A seed and a count in, a tally of escaped exceptions and hangs out: the compiler fuzz campaign.

    python benchmarks/fuzz_campaign.py [--inputs 100000] [--seed N] [--timeout-per-input 5]
                                       [--jobs 2] [--out fuzz-findings] [--progress 5000]

Inputs come in fixed-size chunks, each a deterministic function of (seed, chunk number)
and the code under test (hypothesis mixes the project's own constants into its draws), so
a run is reproducible and any input can be regenerated from its index:

- grammar-aware text from the hypothesis strategies in `tests/support/wf_strategies.py`
  (`programs()`: any syntactically valid file; `valid_programs()`: files that pass every
  check and compile to a plan), drawn through `@given` with a fixed `@seed` per chunk;
- `valid_programs()` output after a few random byte edits, which reaches the later passes;
- byte-level mutations of `examples/*.wf` and `compiler/prelude/std.wf` (`mutate`:
  deletions, insertions, replacements, duplications, splices, token and line edits, bit
  flips, truncation, invalid UTF-8 and NUL bytes) driven by a seeded `random.Random`.

A tenth of the inputs are compiled with a few limits set very low (`tight_limits`), so the
limit diagnostics (IL003, IL009) see traffic too.  Each input goes through
`interlock.compiler.compile_bytes`, its result through
`check_result` (registered codes, sane spans, both renderers), and a plan, when there is
one, through `dump_plan`/`load_plan`.  Any exception is a bug; an input whose worker does
not answer within `--timeout-per-input` seconds is a hang (the worker is killed and
replaced).  Both are saved to `--out` with the traceback.  Workers (`--jobs`) generate
their own chunks, so the parent only supervises; `--jobs 0` runs everything in this
process (timeouts are then judged after the fact), which is what the CI profile
(`tests/property/test_fuzz_profile.py`) does.  Exit status: 0 clean, 1 exceptions or
hangs found, 2 the campaign itself failed.
"""

from __future__ import annotations

import argparse
import hashlib
import random
import sys
import time
import traceback
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
PROPERTY_TESTS = ROOT / "tests"  # holds the shared helpers: support.wf_strategies
CHUNK = 1000
# Shares of each chunk, in percent; the rest are mutated examples.  Drawing a valid program
# costs far more than compiling it, so each one is also mutated a few times.
PROGRAMS, VALID, VALID_MUTATED, HOSTILE = 15, 10, 30, 5
SOURCES = ("programs", "valid", "valid+mutation", "mutation", "hostile-wf", "hostile-fs", "hostile-yaml",
           "hostile-ids")
# A tenth of the inputs are compiled with small, random limits, so that the IL009 and IL003
# paths see as much traffic as the rest.
TIGHT_LIMITS = 10
_LIMIT_RANGES = {"max_depth": (1, 64), "max_tokens": (1, 3_000), "max_string_length": (0, 40),
                 "max_name_length": (1, 12), "max_declarations": (0, 20), "max_steps": (0, 8), "max_actions": (0, 6),
                 "max_dispatch_items": (0, 8), "max_items": (0, 8)}


def tight_limits(rng: random.Random) -> dict[str, int]:
    """Two to four limits set low (the rest keep their defaults)."""
    names = rng.sample(sorted(_LIMIT_RANGES), rng.randint(2, 4))
    return {name: rng.randint(*_LIMIT_RANGES[name]) for name in names}


def _strategies() -> Any:
    if str(PROPERTY_TESTS) not in sys.path:
        sys.path.insert(0, str(PROPERTY_TESTS))
    from support import wf_strategies

    _load_interlock()
    return wf_strategies


def _load_interlock() -> None:
    """Import every module a compile may import, before anything is generated.

    Hypothesis mixes string and number constants of the project's loaded modules into what
    it draws, so a module imported lazily half-way (the plan lowering on the first clean
    input) would change every later input; loading them all first keeps a chunk a function
    of the seed and the code alone, whatever ran before it in the process.
    """
    import importlib
    import pkgutil

    import interlock.compiler
    import interlock.dsl

    for package in (interlock.dsl, interlock.compiler):
        for info in pkgutil.walk_packages(package.__path__, package.__name__ + "."):
            importlib.import_module(info.name)
    importlib.import_module("interlock.runtime.plan")


# ---- inputs ----------------------------------------------------------------------------------------


def _draw(strategy: Any, count: int, seed: int) -> list[Any]:
    """`count` examples of a hypothesis strategy, the same ones for the same seed."""
    from hypothesis import HealthCheck, Phase, Verbosity, given, settings
    from hypothesis import seed as fixed_seed

    found: list[Any] = []
    if count <= 0:
        return found

    @fixed_seed(seed)
    @settings(max_examples=count, database=None, phases=[Phase.generate], deadline=None, derandomize=False,
              suppress_health_check=list(HealthCheck), verbosity=Verbosity.quiet, print_blob=False)
    @given(strategy)
    def collect(example: Any) -> None:
        found.append(example)

    collect()
    return found[:count]


Item = tuple[str, bytes, "dict[str, int] | None"]  # source, input, tight limits (None: the defaults)


def chunk_inputs(seed: int, chunk: int, size: int = CHUNK) -> list[Item]:
    """Chunk number `chunk` of the campaign for `seed`: (source, input bytes, limits), shuffled."""
    S = _strategies()
    rng = random.Random(seed * 1_000_003 + chunk)
    base = (seed * 7_919 + chunk) * 4
    programs = _draw(S.programs(), size * PROGRAMS // 100, base)
    valid = [text.encode() for text in _draw(S.valid_programs(), max(1, size * VALID // 100), base + 1)]
    items = [("programs", text.encode()) for text in programs]
    items += [("valid", data) for data in valid]
    items += [("valid+mutation", S.mutate(rng.choice(valid), rng, edits=rng.randint(1, 2)))
              for _ in range(size * VALID_MUTATED // 100)]
    items += _hostile().hostile_inputs(rng, size * HOSTILE // 100, valid)
    items = items[:size]
    while len(items) < size:
        items.append(("mutation", S.mutate(rng.choice(S.EXAMPLE_BYTES), rng)))
    rng.shuffle(items)
    return [(source, data, tight_limits(rng) if rng.randrange(100) < TIGHT_LIMITS else None)
            for source, data in items]


def _indices(total: int, worker: int, jobs: int, start: int) -> Iterator[int]:
    """Chunk numbers `worker` handles: every `jobs`-th, from the chunk holding input `start`."""
    chunks = -(-total // CHUNK)
    first = start // CHUNK
    for chunk in range(worker, chunks, jobs):
        if chunk >= first:
            yield chunk


def inputs_from(seed: int, total: int, worker: int = 0, jobs: int = 1,
                start: int = 0) -> Iterator[tuple[int, str, bytes, dict[str, int] | None]]:
    """(index, source, bytes, limits) of this worker's share, from input `start` on."""
    for chunk in _indices(total, worker, jobs, start):
        size = min(CHUNK, total - chunk * CHUNK)
        for offset, (source, data, limits) in enumerate(chunk_inputs(seed, chunk, size)):
            index = chunk * CHUNK + offset
            if index >= start:
                yield index, source, data, limits


# ---- one input -----------------------------------------------------------------------------------------


def _hostile() -> Any:
    """`fuzz_hostile.py` beside this script (the families that do not come in as `.wf` bytes)."""
    import importlib

    here = str(Path(__file__).resolve().parent)
    if here not in sys.path:
        sys.path.insert(0, here)
    return importlib.import_module("fuzz_hostile")


def run_one(data: bytes, limits: dict[str, int] | None = None,
            source: str = "") -> tuple[str, tuple[str, ...], str]:
    """('ok', diagnostic codes, '') or ('exception', (), traceback) for one input."""
    if source.startswith("hostile-"):
        return _hostile().run_hostile(source, data)  # its own door, its own check
    from interlock.compiler import compile_bytes
    from interlock.dsl import Limits
    from interlock.runtime.plan import dump_plan, load_plan

    try:
        result = compile_bytes("fuzz.wf", data, limits=Limits(**limits) if limits else Limits())
        _strategies().check_result(result)
        if result.plan is not None:
            assert load_plan(dump_plan(result.plan)) == result.plan, "plan JSON does not round-trip"
        return "ok", tuple(d.code for d in result.diagnostics), ""
    except Exception:  # any exception at all is a finding (RecursionError and MemoryError included)
        return "exception", (), traceback.format_exc()


# ---- bookkeeping ---------------------------------------------------------------------------------------


@dataclass
class Tally:
    """Running counts of one campaign."""

    inputs: int = 0
    exceptions: int = 0
    hangs: int = 0
    clean: int = 0
    codes: Counter[str] = field(default_factory=Counter)
    sources: Counter[str] = field(default_factory=Counter)
    findings: list[Path] = field(default_factory=list)
    started: float = field(default_factory=time.perf_counter)

    @property
    def rate(self) -> float:
        return self.inputs / max(time.perf_counter() - self.started, 1e-9)

    def summary(self) -> str:
        codes = ", ".join(f"{code} {n}" for code, n in sorted(self.codes.items()))
        return (f"inputs {self.inputs}, escaped exceptions {self.exceptions}, hangs {self.hangs}, "
                f"diagnostics by code {{{codes}}}, {self.rate:.1f} inputs/s")


class Campaign:
    """Records outcomes, saves findings, prints progress."""

    def __init__(self, total: int, seed: int, out: Path, progress: int, echo: Callable[[str], None]) -> None:
        self.total, self.seed, self.out, self.progress = total, seed, out, progress
        self.echo = echo
        self.tally = Tally()

    def record(self, index: int, source: str, data: bytes, kind: str, codes: tuple[str, ...] = (),
               detail: str = "", limits: dict[str, int] | None = None) -> None:
        t = self.tally
        t.inputs += 1
        t.sources[source] += 1
        if kind == "ok":
            t.codes.update(codes)
            t.clean += not codes
        else:
            if kind == "hang":
                t.hangs += 1
            else:
                t.exceptions += 1
            self._save(index, source, data, kind, detail, limits)
        if self.progress and t.inputs % self.progress == 0:
            self.echo(f"[{t.inputs:>7}/{self.total}] {t.exceptions} exceptions, {t.hangs} hangs, "
                      f"{t.rate:.1f} inputs/s")

    def _save(self, index: int, source: str, data: bytes, kind: str, detail: str,
              limits: dict[str, int] | None) -> None:
        self.out.mkdir(parents=True, exist_ok=True)
        stem = f"{kind}-{index:07d}-{hashlib.sha1(data).hexdigest()[:10]}"
        (self.out / f"{stem}.wf").write_bytes(data)
        (self.out / f"{stem}.txt").write_text(
            f"kind: {kind}\nindex: {index}\nseed: {self.seed}\nsource: {source}\nlimits: {limits or 'defaults'}\n"
            f"\n{detail}\n", encoding="utf-8")
        self.tally.findings.append(self.out / f"{stem}.wf")
        self.echo(f"finding: {kind} at input {index} ({source}), saved as {self.out / stem}.wf")


# ---- in-process run ------------------------------------------------------------------------------------


def run_inline(campaign: Campaign, timeout: float) -> None:
    """Every input in this process; an input slower than `timeout` counts as a hang."""
    for index, source, data, limits in inputs_from(campaign.seed, campaign.total):
        started = time.perf_counter()
        kind, codes, detail = run_one(data, limits, source)
        elapsed = time.perf_counter() - started
        if kind == "ok" and elapsed > timeout:
            kind, detail = "hang", f"took {elapsed:.1f} s (limit {timeout} s)"
        campaign.record(index, source, data, kind, codes, detail, limits)


# ---- worker processes ----------------------------------------------------------------------------------


def _worker(conn: Any, seed: int, total: int, worker: int, jobs: int, start: int, memory_mb: int) -> None:
    if memory_mb:
        try:
            import resource

            limit = memory_mb * 1024 * 1024
            resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
        except (ImportError, ValueError, OSError):  # pragma: no cover - not on this platform
            pass
    try:
        for index, source, data, limits in inputs_from(seed, total, worker, jobs, start):
            conn.send(("start", index, source, data, limits))
            kind, codes, detail = run_one(data, limits, source)
            conn.send(("done", index, kind, codes, detail))
    except BaseException:  # the generator itself failed: the campaign cannot go on
        conn.send(("broken", traceback.format_exc()))
        return
    conn.send(("finished",))


@dataclass
class _Slot:
    worker: int
    process: Any
    conn: Any
    current: tuple[int, str, bytes, dict[str, int] | None] | None = None
    since: float = 0.0


class CampaignError(Exception):
    """The campaign itself could not run (not a compiler finding)."""


def run_workers(campaign: Campaign, jobs: int, timeout: float, memory_mb: int) -> None:
    """Workers generate and compile their own chunks; this process watches the clock."""
    import multiprocessing
    from multiprocessing.connection import wait

    method = "fork" if "fork" in multiprocessing.get_all_start_methods() else "spawn"
    ctx = multiprocessing.get_context(method)

    def spawn(worker: int, start: int) -> _Slot:
        parent, child = ctx.Pipe()
        process = ctx.Process(target=_worker, args=(child, campaign.seed, campaign.total, worker, jobs, start,
                                                    memory_mb), daemon=True)
        process.start()
        child.close()
        return _Slot(worker, process, parent)

    def replace(slot: _Slot, index: int) -> None:
        slot.process.kill()
        slot.process.join()
        slot.conn.close()
        del slots[slot.worker]
        if index + 1 < campaign.total:
            slots[slot.worker] = spawn(slot.worker, index + 1)

    slots = {w: spawn(w, 0) for w in range(jobs)}
    try:
        while slots:
            now = time.monotonic()
            deadlines = [s.since + timeout for s in slots.values() if s.current is not None]
            wait_for = max(0.0, min(deadlines) - now) if deadlines else timeout
            ready = wait([s.conn for s in slots.values()], timeout=wait_for)
            for slot in [s for s in list(slots.values()) if s.conn in ready]:
                try:
                    message = slot.conn.recv()
                except EOFError:  # the worker died (a crash in C code, or killed from outside)
                    if slot.current is None:
                        raise CampaignError(f"worker {slot.worker} exited between inputs") from None
                    index, source, data, limits = slot.current
                    code = slot.process.exitcode
                    campaign.record(index, source, data, "crash", detail=f"worker exited with status {code}",
                                    limits=limits)
                    replace(slot, index)
                    continue
                if message[0] == "start":
                    _, index, source, data, limits = message
                    slot.current, slot.since = (index, source, data, limits), time.monotonic()
                elif message[0] == "done":
                    _, index, kind, codes, detail = message
                    assert slot.current is not None and slot.current[0] == index
                    _, source, data, limits = slot.current
                    campaign.record(index, source, data, kind, codes, detail, limits)
                    slot.current = None
                elif message[0] == "finished":
                    slot.process.join()
                    slot.conn.close()
                    del slots[slot.worker]
                else:
                    raise CampaignError(f"worker {slot.worker} failed to generate inputs:\n{message[1]}")
            now = time.monotonic()
            for slot in list(slots.values()):
                if slot.current is not None and now - slot.since > timeout:
                    index, source, data, limits = slot.current
                    campaign.record(index, source, data, "hang", detail=f"no answer within {timeout} s",
                                    limits=limits)
                    replace(slot, index)
    finally:
        for slot in slots.values():
            slot.process.kill()
            slot.process.join()


# ---- command line ----------------------------------------------------------------------------------------


def run_campaign(inputs: int, seed: int = 0, *, jobs: int = 2, timeout: float = 5.0, out: Path | None = None,
                 progress: int = 0, memory_mb: int = 2048, echo: Callable[[str], None] = print) -> Tally:
    """Run a campaign and return its tally (the command line and the CI profile share this)."""
    campaign = Campaign(inputs, seed, out or Path("fuzz-findings"), progress, echo)
    from interlock.compiler import compile_bytes

    compile_bytes("warm.wf", _strategies().EXAMPLE_BYTES[0])  # workers fork warm: parser and prelude loaded
    if jobs <= 0:
        run_inline(campaign, timeout)
    else:
        run_workers(campaign, jobs, timeout, memory_mb)
    return campaign.tally


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    p.add_argument("--inputs", type=int, default=100_000, help="how many inputs (default 100000)")
    p.add_argument("--seed", type=int, default=0, help="campaign seed (default 0)")
    p.add_argument("--timeout-per-input", type=float, default=5.0, metavar="S",
                   help="seconds before an input counts as a hang (default 5)")
    p.add_argument("--jobs", type=int, default=2, help="worker processes; 0 runs in this process (default 2)")
    p.add_argument("--out", type=Path, default=Path("fuzz-findings"), help="where findings are saved")
    p.add_argument("--progress", type=int, default=5000, metavar="N", help="print progress every N inputs")
    p.add_argument("--memory-mb", type=int, default=2048, help="address-space limit per worker (0: none)")
    args = p.parse_args(argv)
    if args.inputs < 1:
        p.error("--inputs must be at least 1")
    print(f"fuzz campaign: {args.inputs} inputs, seed {args.seed}, {args.jobs} jobs, "
          f"timeout {args.timeout_per_input} s per input", flush=True)
    try:
        tally = run_campaign(args.inputs, args.seed, jobs=args.jobs, timeout=args.timeout_per_input, out=args.out,
                             progress=args.progress, memory_mb=args.memory_mb,
                             echo=lambda line: print(line, flush=True))
    except CampaignError as exc:
        print(f"campaign error: {exc}", file=sys.stderr)
        return 2
    print("sources: " + ", ".join(f"{s} {tally.sources[s]}" for s in SOURCES) + f"; clean inputs {tally.clean}")
    print(tally.summary(), flush=True)
    return 1 if tally.exceptions or tally.hangs else 0


if __name__ == "__main__":
    raise SystemExit(main())
