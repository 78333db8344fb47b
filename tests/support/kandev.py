"""Shared helpers of the kandev import/export tests: the nine templates kandev shipped at cd9fa0e6 (read from the
reference folder, never copied into the repository) and the two templates in kandev's current shape written for
these tests (fixtures), importing and compiling in memory, and plans compared without source positions."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest

from interlock.compiler import compile_bytes
from interlock.dsl import parse_bytes
from interlock.kandev.exporter import dump_yaml, export_program
from interlock.kandev.importer import Imported, import_text
from interlock.kandev.yamlread import read_yaml
from interlock.runtime.plan import Plan

ROOT = Path(__file__).resolve().parents[2]  # tests/support -> the repository
REFERENCE = ROOT.parent / "shared" / "reference" / "kandev-workflows"
FIXTURES = ROOT / "tests" / "kandev" / "fixtures"
TEMPLATE_NAMES = ("architecture", "feature-dev", "improve-kandev", "kanban", "office-default", "plan-and-build",
                  "pr-review", "report-kandev-issue", "routine")
CURRENT_NAMES = ("office-default-current", "scripted-release")
"""Templates in kandev's current shape, written for these tests from the facts about it (tests/kandev/fixtures)."""
CORPUS = TEMPLATE_NAMES + CURRENT_NAMES
"""The round-trip corpus: the nine reference templates and the two current ones."""


def template(name: str) -> Path:
    """A template of the corpus: a current-shape fixture, or a reference template (see `reference`)."""
    return FIXTURES / f"{name}.yml" if name in CURRENT_NAMES else reference(name)


def reference(name: str) -> Path:
    """A reference template; skips when it is absent, fails under CI=true (CI has it)."""
    path = reference_folder() / f"{name}.yml"
    if not path.is_file():
        _missing(path)
    return path


def reference_folder() -> Path:
    """The folder of kandev's nine workflow templates beside this checkout; skips when it is absent and says what
    to put where, fails under CI=true (CI lays the folder out beside the clone, so a skip there would hide it)."""
    if not REFERENCE.is_dir():
        _missing(REFERENCE)
    return REFERENCE


def _missing(path: Path) -> None:
    what = (f"{path} is missing: put kandev's workflow templates ({', '.join(f'{n}.yml' for n in TEMPLATE_NAMES)}) "
            f"in {REFERENCE} (a folder beside this checkout, {ROOT})")
    if os.environ.get("CI", "").lower() in ("1", "true", "yes"):
        pytest.fail(f"{what}; CI=true: CI has the folder, so these tests fail instead of skipping")
    pytest.skip(what)


def compiled(name: str, text: str) -> Plan:
    result = compile_bytes(name, text.encode())
    assert result.plan is not None and not result.errors, [d.message for d in result.diagnostics]
    return result.plan


def comparable(plan: Plan) -> Any:
    """The plan's meaning as data: what its digest covers (no source positions, file names, compiler version or
    digests; ADR 0040)."""
    from interlock.runtime.plan import plan_layout

    return plan_layout(plan.model_dump(mode="json"))[0]


def import_clean(text: str, name: str = "in.yml") -> Imported:
    result = import_text(text, name)
    assert not result.errors, [(d.code, d.span.line, d.message) for d in result.diagnostics]
    return result


def export(wf_text: str, fmt: str, name: str = "x.wf") -> tuple[str, list[Any]]:
    """The YAML text `interlock export` writes for `wf_text`, and the export's diagnostics."""
    plan = compiled(name, wf_text)
    module, _ = parse_bytes(name, wf_text.encode())
    assert module is not None
    result = export_program(module, plan, fmt)
    assert not result.errors, [(d.code, d.message) for d in result.diagnostics]
    return dump_yaml(result.data), result.diagnostics


def data(yaml_text: str) -> Any:
    return read_yaml(yaml_text).data()
