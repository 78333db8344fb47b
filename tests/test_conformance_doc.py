"""docs/conformance.md stays true: every acceptance criterion of both seeds has exactly one
row, every row names a test or says why it does not apply, and every named test exists
(checked against `pytest --collect-only`, parameter ids included)."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DOC = ROOT / "docs" / "conformance.md"

STEP_ENTRY = [f"AC-OFFICE-STEP-ENTRY-001.{n}" for n in (1, 3, 4, 5, 6, 7, 8, 10)]
SEATS = ["AC-OFFICE-REVIEW-SEATS-001.3", "AC-OFFICE-REVIEW-SEATS-001.4", "AC-OFFICE-REVIEW-SEATS-003.2",
         "AC-OFFICE-REVIEW-SEATS-003.6", "AC-OFFICE-REVIEW-SEATS-004.7"]
AGENT_ERROR = ([f"AC-A{n}" for n in range(1, 12)] + [f"AC-B{n}" for n in range(1, 6)]
               + [f"AC-C{n}" for n in range(1, 9)] + [f"AC-D{n}" for n in range(1, 4)]
               + [f"AC-E{n}" for n in range(1, 15)] + [f"AC-F{n}" for n in range(1, 10)])

CONTRACT = ["C-EXIT-1", "C-EXIT-2", "C-EXIT-3", "C-DECIDE-1", "C-DECIDE-2", "C-OP-1", "C-OP-2", "C-OP-3",
            "C-STORE-1", "C-FAULT-1", "C-BOUNDARY-1", "C-LANG-1", "C-LANG-2", "C-LANG-3", "C-LANG-4", "C-LANG-5",
            "C-LANG-6", "C-SIM-1", "C-SIM-2"]
"""This round's contract sentences (the page's `C-` rows)."""

REF = re.compile(r"`(tests/[\w/]+\.py)::(\w+)(?:\[([^\]`]*)\])?`")


def rows() -> dict[str, tuple[str, str]]:
    """criterion -> (our model, test cell), from every table of the page."""
    found: dict[str, tuple[str, str]] = {}
    for line in DOC.read_text(encoding="utf-8").splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) != 3 or not cells[0].startswith(("AC-", "C-")):
            continue
        assert cells[0] not in found, f"{cells[0]} is listed twice"
        found[cells[0]] = (cells[1], cells[2])
    return found


def test_every_criterion_has_exactly_one_row() -> None:
    listed = rows()
    want = [*STEP_ENTRY, *SEATS, *AGENT_ERROR, *CONTRACT]
    assert sorted(listed) == sorted(want), (
        f"missing: {sorted(set(want) - set(listed))}; unexpected: {sorted(set(listed) - set(want))}")


def test_every_row_names_a_test_or_says_why_not() -> None:
    for criterion, (model, tests) in rows().items():
        assert model, f"{criterion}: no description of our model"
        if not REF.search(tests):
            assert tests == "n/a" and model.startswith("n/a — "), (
                f"{criterion}: neither a test nor a one-line reason (`n/a — why`)")


def _collected(files: list[str]) -> set[str]:
    out = subprocess.run([sys.executable, "-m", "pytest", "--collect-only", "-q", "-p", "no:cacheprovider", *files],
                         cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stdout + out.stderr
    return {line.strip() for line in out.stdout.splitlines() if "::" in line}


def _matches(ref_params: str | None, node: str, name: str) -> bool:
    base, _, params = node.partition("[")
    if base != name:
        return False
    if ref_params is None:
        return True
    params = params.removesuffix("]")
    return (params == ref_params or params.startswith(ref_params + "-") or params.endswith("-" + ref_params)
            or f"-{ref_params}-" in params)


def test_every_referenced_test_exists() -> None:
    refs = [m.groups() for _, tests in rows().values() for m in REF.finditer(tests)]
    assert refs
    files = sorted({f for f, _, _ in refs})
    for f in files:
        assert (ROOT / f).is_file(), f"{f} does not exist"
    nodes = _collected(files)
    by_file: dict[str, list[str]] = {}
    for node in nodes:
        path, _, rest = node.partition("::")
        by_file.setdefault(path, []).append(rest)
    missing = [f"{f}::{name}" + (f"[{params}]" if params is not None else "")
               for f, name, params in refs
               if not any(_matches(params, node, name) for node in by_file.get(f, []))]
    assert not missing, f"docs/conformance.md names tests that do not exist: {missing}"
