"""Shared helpers of the kandev import/export tests: the seed's nine templates (read from the reference folder, never
copied into the repository), importing and compiling in memory, and plans compared without source positions."""

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


def reference(name: str) -> Path:
    """A reference template; skips when the reference folder is absent, fails under CI=true (CI has it)."""
    path = REFERENCE / f"{name}.yml"
    if not path.is_file():
        if os.environ.get("CI") == "true":
            pytest.fail(f"{path} is missing: CI must have the reference templates")
        pytest.skip(f"{path} is absent (the seed's reference templates are not beside the repository)")
    return path


def compiled(name: str, text: str) -> Plan:
    result = compile_bytes(name, text.encode())
    assert result.plan is not None and not result.errors, [d.message for d in result.diagnostics]
    return result.plan


def comparable(plan: Plan) -> Any:
    """The plan as data without what depends on the file's layout (source positions, file names, digest)."""
    def strip(node: Any) -> Any:
        if isinstance(node, dict):
            return {k: strip(v) for k, v in node.items() if k not in ("source", "sources", "digest", "compiler")}
        if isinstance(node, list):
            return [strip(v) for v in node]
        return node
    return strip(plan.model_dump(mode="json"))


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
