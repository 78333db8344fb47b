"""One canonical layout: what the IR printer writes is what `interlock fmt` writes (the formatter leaves it as it
is), for every shipped example (the kandev bridge writes its `.wf` through the formatter itself)."""

from __future__ import annotations

from pathlib import Path

import pytest

from interlock.dsl import SourceFile, parse_source
from interlock.dsl.format import format_source
from interlock.dsl.printer import format_module

EXAMPLES = sorted((Path(__file__).resolve().parents[2] / "examples").glob("*.wf"))


@pytest.mark.parametrize("path", EXAMPLES, ids=lambda p: p.name)
def test_the_ir_printer_writes_the_formatters_layout(path: Path) -> None:
    module, diagnostics = parse_source(SourceFile(path.name, path.read_text(encoding="utf-8")))
    assert module is not None and diagnostics == []
    printed = format_module(module)
    assert format_source(printed, path.name).text == printed
