"""Every example compiles to the plan pinned under `tests/golden/plans/` (`--update-golden` rewrites them).

A change to the compiler that changes a plan shows here as a diff of the plan JSON an example
compiles to, to be read and accepted deliberately; `load_plan` takes each pinned plan back.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from interlock.compiler import compile_path
from interlock.runtime.plan import dump_plan, load_plan

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = sorted((ROOT / "examples").glob("*.wf"))
GOLDEN = ROOT / "tests" / "golden" / "plans"


@pytest.mark.parametrize("example", EXAMPLES, ids=[p.stem for p in EXAMPLES])
def test_each_example_compiles_to_its_pinned_plan(example: Path, request: pytest.FixtureRequest) -> None:
    result = compile_path(example, display=example.name)
    assert result.plan is not None, [str(d) for d in result.diagnostics]
    text = dump_plan(result.plan)
    pinned = GOLDEN / f"{example.stem}.json"
    if request.config.getoption("--update-golden"):
        pinned.write_text(text, encoding="utf-8")
    assert pinned.exists(), f"no pinned plan for {example.name}: run pytest with --update-golden"
    assert text == pinned.read_text(encoding="utf-8"), f"{example.name} compiles to another plan than the pinned one"
    assert load_plan(pinned.read_text(encoding="utf-8")) == result.plan


def test_no_pinned_plan_is_left_without_its_example() -> None:
    assert {p.stem for p in GOLDEN.glob("*.json")} == {p.stem for p in EXAMPLES}
