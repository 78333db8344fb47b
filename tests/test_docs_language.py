"""docs/language.md's examples are true: every ```wf block is checked as `interlock check` checks a file.

A block that is a file is checked as written (§3's entry policy together with §2's vocabulary, whose kinds it
places).  A block that shows a step's items or a handler alone (a prompt, a handler) is checked inside a step of a
small workflow with the steps the examples move to.  A block without a workflow may get IL513 (its plan runs
nothing), as README snippets may.  The blocks that cannot stand alone say why below; every other one must check
without a diagnostic.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from interlock.compiler import compile_source
from interlock.dsl import SourceFile

ROOT = Path(__file__).resolve().parents[1]
DOC = ROOT / "docs" / "language.md"
TOP_LEVEL = ("workflow", "trigger", "role", "record", "session", "task", "transition", "entry", "dispatch", "use", "#")
CONTEXT = """workflow doc "Doc" {{
  step here "Here" {{
    start
    manual_move
    on on_enter {{ auto_start_agent }}
{fragment}
  }}
  step work "Work" {{ manual_move }}
  step review "Review" {{ manual_move }}
  step approval "Approval" {{ manual_move }}
  step done "Done" {{ manual_move  terminal }}
}}
"""
NOT_ALONE = {
    "use helpers": "IL006: it names a module `helpers.wf` beside the file, which the docs do not ship",
    "trigger on_deploy (environment: str, version: str)": "IL306: its kinds are placed by §3's entry policy, and "
                                                          "checked with it there",
    "dispatch agent_error on on_agent_error {": "IL309: the prelude's own dispatch block, shown as std.wf declares it",
}
WITH = {"  exclude  pin_model": "trigger on_deploy (environment: str, version: str)"}
"""A block holding the key is checked after the block whose first line is the value."""


def _blocks() -> list[tuple[str, int, str]]:
    """(section heading, line, text) of every ```wf block, its indentation taken off."""
    text = DOC.read_text(encoding="utf-8")
    out = []
    for m in re.finditer(r"^( *)```wf\n(.*?)^\1```", text, re.S | re.M):
        line = text.count("\n", 0, m.start()) + 1
        heading = re.findall(r"^## .*$", text[:m.start()], re.M)[-1]
        body = "\n".join(row[len(m.group(1)):] for row in m.group(2).splitlines()) + "\n"
        out.append((heading, line, body))
    return out


BLOCKS = _blocks()


def _source(index: int) -> str:
    _, _, body = BLOCKS[index]
    if body.lstrip().startswith(TOP_LEVEL):
        before = [b for _, _, b in BLOCKS for key, first in WITH.items() if key in body and b.startswith(first)]
        return "".join(before) + body
    return CONTEXT.format(fragment="".join(f"    {row}\n" if row else "\n" for row in body.splitlines()))


@pytest.mark.parametrize("index", range(len(BLOCKS)), ids=[f"line{line}" for _, line, _ in BLOCKS])
def test_each_example_checks(index: int) -> None:
    _, line, body = BLOCKS[index]
    first = body.split("\n", 1)[0]
    result = compile_source(SourceFile(f"language.md:{line}", _source(index)))
    codes = [d.code for d in result.diagnostics]
    if first in NOT_ALONE:
        assert set(codes) == {NOT_ALONE[first][:5]}, codes
        return
    allowed = [] if "workflow " in _source(index) else ["IL513"]
    assert codes == allowed, [str(d) for d in result.diagnostics]


def test_the_timer_and_retry_forms_each_have_a_checked_example() -> None:
    checked = [body for body in (b for _, _, b in BLOCKS) if body.split("\n", 1)[0] not in NOT_ALONE]
    for form in (r"\bafter \d+[smhd] \{", r"\bevery \d+[smhd] \{", r"\bretry \d+ backoff \d+[smhd]\.\.\d+[smhd]",
                 r"\bretry \d+ backoff \d+[smhd]\n"):
        assert any(re.search(form, body) for body in checked), form
    assert len(BLOCKS) >= 12
