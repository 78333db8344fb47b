"""Code-point columns <-> client columns under each position encoding (astral, CJK, ASCII)."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest
from hypothesis import given
from hypothesis import strategies as st

from interlock.lsp.positions import UTF8, UTF16, UTF32, from_units, to_units

LINE = "a😀漢b"


@pytest.mark.parametrize(("encoding", "units"), [(UTF16, [0, 1, 3, 4, 5]), (UTF8, [0, 1, 5, 8, 9]),
                                                 (UTF32, [0, 1, 2, 3, 4])])
def test_each_column(encoding: str, units: list[int]) -> None:
    assert [to_units(LINE, col, encoding) for col in range(len(LINE) + 1)] == units
    assert [from_units(LINE, u, encoding) for u in units] == list(range(len(LINE) + 1))


def test_inside_a_character_is_its_start_and_past_the_end_clamps() -> None:
    assert from_units(LINE, 2, UTF16) == 1  # the second half of the surrogate pair
    assert from_units(LINE, 7, UTF8) == 2
    assert from_units(LINE, 99, UTF16) == len(LINE)


@given(st.text(st.characters(exclude_categories=["Cs"]), max_size=30), st.sampled_from([UTF8, UTF16, UTF32]))
def test_round_trip(line: str, encoding: str) -> None:
    for col in range(len(line) + 1):
        assert from_units(line, to_units(line, col, encoding), encoding) == col
    assert to_units(line, len(line), UTF16) == len(line.encode("utf-16-le")) // 2
    assert to_units(line, len(line), UTF8) == len(line.encode("utf-8"))


def test_the_server_module_does_not_load_the_compiler() -> None:
    """`initialize` is answered before the prelude (and the compiler) loads."""
    code = ("import sys, json, interlock.lsp.server; "
            "print(json.dumps([m for m in sys.modules if m.startswith('interlock.compiler')]))")
    proc = subprocess.run([sys.executable, "-I", "-c", code], capture_output=True, text=True, timeout=60, check=True)
    assert json.loads(proc.stdout) == []
