"""The fuzz campaign (`benchmarks/fuzz_campaign.py`) in a short CI profile: 300 inputs, in process.

The full campaign (100,000 inputs, worker processes with per-input timeouts) is run by hand;
this runs the same input generation and the same per-input checks, so the campaign code
itself stays working, and any input that once escaped is pinned in `REGRESSIONS` below.
"""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

import pytest

ROOT = Path(__file__).resolve().parents[2]

# Inputs the campaign once failed on (minimised by hand), with the limits it used.
REGRESSIONS: list[tuple[str, bytes, dict[str, int] | None]] = [
    # an empty list or map had no position of its own (line 1, column 1), so a diagnostic
    # spanning `zz: []` ended before it started
    ("empty-list-in-a-map-default", b"record r { a: str }\ntask k(p: r = {zz: []}) on on_comment\n", None),
    ("empty-map-argument", b'workflow w { step s { start on on_comment { set_session_mode(mode: {}) } } }\n', None),
]


def _campaign() -> ModuleType:
    name = "fuzz_campaign"
    if name not in sys.modules:
        spec = importlib.util.spec_from_file_location(name, ROOT / "benchmarks" / "fuzz_campaign.py")
        assert spec is not None and spec.loader is not None
        module = importlib.util.module_from_spec(spec)
        sys.modules[name] = module  # dataclasses look their module up while the class is built
        spec.loader.exec_module(module)
    return sys.modules[name]


def test_short_profile_finds_nothing(tmp_path: Path) -> None:
    fuzz = _campaign()
    lines: list[str] = []
    tally = fuzz.run_campaign(300, seed=20_261_130, jobs=0, timeout=5.0, out=tmp_path, echo=lines.append)
    assert (tally.exceptions, tally.hangs) == (0, 0), "\n".join(lines)
    assert tally.inputs == 300
    assert set(tally.sources) == set(fuzz.SOURCES)
    # the mix reaches every stage: limits, syntax errors, name and type errors, warnings, clean plans
    assert {"IL001", "IL005", "IL009", "IL101"} <= set(tally.codes)
    assert any(code.startswith("IL5") for code in tally.codes)
    assert tally.clean > 0
    assert "escaped exceptions 0, hangs 0" in tally.summary()


def _hostile() -> ModuleType:
    _campaign()._hostile()
    return sys.modules["fuzz_hostile"]


def _hostile_cases() -> list[tuple[str, bytes]]:
    import json

    h = _hostile()

    cases = [("hostile-fs", json.dumps({"case": c, "n": 1100}).encode()) for c in h._FS_CASES]
    cases += [("hostile-yaml", json.dumps({"case": c, "n": 5000}).encode()) for c in h._YAML_CASES]
    cases += [("hostile-ids", json.dumps({"shape": s, "call": c, "n": 10_000}).encode())
              for s in h._ID_SHAPES for c in range(6)]
    program = b'workflow w "W" { step a "A" { start prompt "hi" on on_comment { queue_run(reason: "r") } } }'
    cases += [("hostile-wf", program.replace(b'"hi"', b'"' + bad.encode("utf-8", "surrogatepass") + b'"'))
              for bad in h._BAD_TEXT]
    return cases


HOSTILE = _hostile_cases()


@pytest.mark.parametrize("source, data", HOSTILE, ids=[f"{s}-{i}" for i, (s, _) in enumerate(HOSTILE)])
def test_every_hostile_case_gets_a_documented_answer(source: str, data: bytes) -> None:
    """Every case of the hostile families, once: NUL and lone surrogates in strings, `use` of a symlink out of its
    folder, FIFOs, devices, folders, `use` cycles and long chains, YAML alias bombs and deep nesting, ids of any
    length and content at the runtime's boundary."""
    kind, _, detail = _hostile().run_hostile(source, data)
    assert kind == "ok", detail


def test_inputs_are_reproducible() -> None:
    fuzz = _campaign()
    first = list(fuzz.inputs_from(7, 40))
    assert first == list(fuzz.inputs_from(7, 40))
    assert [i for i, _, _, _ in first] == list(range(40))
    # a worker resuming after a hang regenerates the same inputs from the next index on
    assert list(fuzz.inputs_from(7, 40, start=25)) == first[25:]
    assert first != list(fuzz.inputs_from(8, 40))


def test_a_chunk_does_not_depend_on_what_ran_before_it() -> None:
    # hypothesis draws constants from the project's loaded modules: the campaign loads them
    # all first, so compiling (which imports more lazily) cannot change later inputs
    fuzz = _campaign()
    before = fuzz.chunk_inputs(11, 3, size=60)
    for _, data, limits in fuzz.chunk_inputs(11, 2, size=60):
        fuzz.run_one(data, limits)
    assert fuzz.chunk_inputs(11, 3, size=60) == before


def test_workers_split_the_inputs_between_them() -> None:
    fuzz = _campaign()
    shares = [list(fuzz._indices(2_500, worker, 2, 0)) for worker in range(2)]
    assert shares == [[0, 2], [1]]
    assert list(fuzz._indices(2_500, 0, 2, 1_500)) == [2]


@pytest.mark.parametrize("name, data, limits", REGRESSIONS, ids=[r[0] for r in REGRESSIONS])
def test_regressions(name: str, data: bytes, limits: dict[str, int] | None) -> None:
    kind, codes, detail = _campaign().run_one(data, limits)
    assert kind == "ok", detail
    assert codes  # each of these files is wrong on purpose


def test_empty_list_and_map_spans_cover_their_brackets() -> None:
    from interlock.compiler import compile_bytes

    result = compile_bytes("r.wf", REGRESSIONS[0][1])
    (d,) = [d for d in result.diagnostics if d.code == "IL209"]
    assert (d.span.line, d.span.col, d.span.end_line, d.span.end_col) == (2, 16, 2, 22)  # `zz: []`
    result = compile_bytes("m.wf", REGRESSIONS[1][1])
    (d,) = [d for d in result.diagnostics if d.code == "IL202"]
    assert (d.span.col, d.span.end_col) == (68, 70)  # `{}`


@pytest.mark.parametrize("kind", ["exception", "hang"])
def test_findings_are_counted_and_saved(tmp_path: Path, kind: str) -> None:
    fuzz = _campaign()
    lines: list[str] = []
    campaign = fuzz.Campaign(1, 0, tmp_path, 0, lines.append)
    campaign.record(0, "mutation", b"workflow {", kind, detail="Traceback ...")
    assert (campaign.tally.exceptions, campaign.tally.hangs) == ((1, 0) if kind == "exception" else (0, 1))
    saved = sorted(tmp_path.iterdir())
    assert [p.suffix for p in saved] == [".txt", ".wf"]
    assert saved[1].read_bytes() == b"workflow {"
    assert "Traceback ..." in saved[0].read_text(encoding="utf-8")
