"""Property: the plan's digest is its meaning (ADR 0040).  For generated sources,
`digest(compile(src)) == digest(compile(fmt(src)))`, and the same after blank lines and comments are inserted
between its lines and after them: the meaning part of the plan is equal, only the layout moved.
"""

from __future__ import annotations

import json
from typing import Any

from hypothesis import given, note
from hypothesis import strategies as st
from support.wf_strategies import valid_programs

from interlock.compiler import compile_source
from interlock.dsl import SourceFile
from interlock.dsl.format import format_source
from interlock.runtime.plan import dump_plan, plan_layout


def compiled(text: str, name: str = "gen.wf") -> dict[str, Any]:
    result = compile_source(SourceFile(name, text))
    assert result.plan is not None, [d.message for d in result.diagnostics]
    data: dict[str, Any] = json.loads(dump_plan(result.plan))
    return data


def formatted(text: str) -> str:
    result = format_source(text, "gen.wf")
    assert result.ok, result.diagnostics
    return result.text


@st.composite
def relaid(draw: st.DrawFn, text: str) -> str:
    """`text` with blank lines and comment lines inserted between its lines and comments after some of them — never
    inside a block string (its lines are its text), nor after a line that opens or closes one."""
    out: list[str] = []
    inside = False
    for line in text.split("\n"):
        toggles = line.count('"""') % 2 == 1
        touches = inside or toggles
        if not inside:
            for _ in range(draw(st.integers(0, 2))):
                out.append(draw(st.sampled_from(["", "   ", "# a comment", "  # indented { } ( ) comment"])))
        out.append(line + (draw(st.sampled_from(["", "", "  # trailing"])) if line.strip() and not touches else ""))
        inside ^= toggles
    return "\n".join(out)


@given(st.data())
def test_reformatting_and_relaying_never_change_the_digest(data: st.DataObject) -> None:
    text = data.draw(valid_programs())
    note(text)
    plan = compiled(text)
    fmt = compiled(formatted(text))
    assert fmt["digest"] == plan["digest"]
    moved = data.draw(relaid(text))
    note(moved)
    again = compiled(moved)
    assert again["digest"] == plan["digest"]
    assert plan_layout(again)[0] == plan_layout(plan)[0]
