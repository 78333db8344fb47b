"""The facade `interlock` exports what a host and a tool author need, each name the very object of its home module,
and loads none of it until it is used: `import interlock` stays cheap (`interlock check` must start fast)."""

from __future__ import annotations

import importlib
import json
import subprocess
import sys
from pathlib import Path

import pytest

import interlock

HOMES = {
    "compile_path": "interlock.compiler", "compile_source": "interlock.compiler", "Runtime": "interlock.runtime",
    "AsyncRuntime": "interlock.runtime", "open_store": "interlock.stores", "Plan": "interlock.runtime",
    "PlanError": "interlock.runtime", "InterlockError": "interlock.errors", "SourceFile": "interlock.dsl",
}


@pytest.mark.parametrize("name", sorted(set(interlock.__all__) - {"__version__"}))
def test_every_exported_name_resolves(name: str) -> None:
    value = getattr(interlock, name)
    assert value is not None
    assert name in dir(interlock)


@pytest.mark.parametrize(("name", "home"), sorted(HOMES.items()))
def test_a_host_needs_these_names_and_gets_the_same_objects(name: str, home: str) -> None:
    assert name in interlock.__all__
    assert getattr(interlock, name) is getattr(importlib.import_module(home), name)


def test_an_unknown_name_is_an_attribute_error() -> None:
    with pytest.raises(AttributeError, match="no attribute 'compile_everything'"):
        _ = interlock.compile_everything  # type: ignore[attr-defined]


def test_importing_the_facade_loads_none_of_the_layers(tmp_path: Path) -> None:
    code = ("import json, sys, interlock\n"
            "heavy = ('interlock.runtime', 'interlock.compiler', 'interlock.dsl', 'interlock.stores', 'pydantic', "
            "'sqlalchemy', 'lark')\n"
            "print(json.dumps(sorted(m for m in sys.modules if m.split('.')[0] in heavy or m.startswith(heavy))))\n")
    proc = subprocess.run([sys.executable, "-I", "-c", code], cwd=tmp_path, capture_output=True, text=True,
                          timeout=120, check=False)
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout) == []


def test_compile_path_takes_a_str_as_well_as_a_path(tmp_path: Path) -> None:
    """A newcomer writes `compile_path("board.wf")`: that is the same compile as `compile_path(Path("board.wf"))`,
    never an AttributeError from inside the compiler."""
    wf = tmp_path / "board.wf"
    wf.write_text('workflow w "W" {\n  step a "A" {\n    start\n    terminal\n  }\n}\n', encoding="utf-8")
    by_str = interlock.compile_path(str(wf))
    by_path = interlock.compile_path(wf)
    assert by_str.plan is not None and by_path.plan is not None
    assert by_str.plan.digest == by_path.plan.digest
    assert by_str.diagnostics == by_path.diagnostics
