"""benchmarks/prune_throughput.py measures `prune` on the bulk stores (ADR 0047); what is not a time is checked here,
on a small bulk store: the dry run counts what the prune then deletes (five rows and one fingerprint per bulk task,
the tasks written through the runtime kept), a rerun deletes nothing, and every statement of a batch reads through
an index (no SQLite `SCAN` of a table)."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

ROOT = Path(__file__).resolve().parents[1]


def _module(name: str) -> ModuleType:
    if name in sys.modules:
        return sys.modules[name]
    spec = importlib.util.spec_from_file_location(name, ROOT / "benchmarks" / f"{name}.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


def test_prune_throughput_on_a_small_bulk_store(tmp_path: Path) -> None:
    bulk = _module("bulk_store")
    bench = _module("prune_throughput")
    url = bulk.build(f"sqlite:///{tmp_path / 'bulk.db'}", 150, seed=10)
    fig = bench.measure(url, 40, 90 * 86_400.0)
    real, dry = fig["real"], fig["dry"]
    assert (real.tasks_seen, real.tasks_pruned, real.fingerprints) == (150, 140, 140)
    assert dry.deleted == real.deleted
    assert {t: n for t, n in real.deleted.items() if n} == {
        "interlock_step_transitions": 280, "interlock_entry_markers": 140, "interlock_operations": 140,
        "interlock_runs": 140}
    assert fig["again"].rows == 0
    assert fig["plans"] and all("SEARCH" in plan for _, plan in fig["plans"])
    scans = [(sql, plan) for sql, plan in fig["plans"] for step in plan.split(" | ")
             if step.startswith("SCAN ") and "USING" not in step]
    assert scans == []
    assert fig["fingerprint_bytes"] > 0
