"""Golden diagnostics: every code in `CODES` has a failing and a fixed `.wf` example, and a docs section.

Each `tests/golden/diagnostics/<CODE>-<name>/` holds `fail.wf` (reports the code;
its diagnostics are pinned in `fail.expected.json`) and `pass.wf` (the fixed file: no
diagnostic with that code).  `pytest --update-golden` rewrites the expected files.
Special cases (a missing `fail.wf`, `limits.json`, sibling modules) are described in
the folder's README.md.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

from interlock.compiler import CompileResult, compile_path
from interlock.dsl import Limits
from interlock.dsl.diagnostics import CODES
from interlock.dsl.parser import DEFAULT_LIMITS

GOLDEN = Path(__file__).parent / "golden" / "diagnostics"
DOCS = Path(__file__).parent.parent / "docs" / "diagnostics.md"
CASES = sorted(p for p in GOLDEN.iterdir() if p.is_dir())
# IL008 file-unreadable: fail.wf is deliberately absent (reading a missing path is the failure).
NO_FAIL_FILE = frozenset({"IL008"})
# fixtures that cannot be shown verbatim in the docs (invalid UTF-8, no fail.wf)
NOT_VERBATIM_IN_DOCS = frozenset({"IL005", "IL008"})


def _code(case: Path) -> str:
    return case.name.split("-", 1)[0]


def _limits(case: Path) -> Limits:
    spec = case / "limits.json"
    if not spec.is_file():
        return DEFAULT_LIMITS
    return Limits(**json.loads(spec.read_text(encoding="utf-8")))


def _compile(case: Path, name: str) -> CompileResult:
    path = case / name
    return compile_path(path, display=path.relative_to(GOLDEN).as_posix(), limits=_limits(case), want_plan=False)


SNIPPET_WARNINGS = frozenset({"IL513"})
"""Warnings about a whole file that the other codes' fixtures, snippets showing one mistake, are not about: a
file with no workflow (IL513) is pinned only by its own fixture."""


def _compact(result: CompileResult, code: str) -> list[dict[str, Any]]:
    return [
        {"code": d.code, "line": d.span.line, "col": d.span.col, "end_line": d.span.end_line,
         "end_col": d.span.end_col, "severity": d.severity.value, "message": d.message}
        for d in result.diagnostics if d.code == code or d.code not in SNIPPET_WARNINGS
    ]


def _dump(items: list[dict[str, Any]]) -> str:
    """One diagnostic per line, so a changed message is a one-line diff."""
    if not items:
        return "[]\n"
    return "[\n" + ",\n".join("  " + json.dumps(item, ensure_ascii=False) for item in items) + "\n]\n"


def test_every_code_has_fixtures() -> None:
    expected = {f"{info.code}-{info.name}" for info in CODES.values()}
    found = {case.name for case in CASES}
    assert found - expected == set(), "fixture folders for codes that are not in CODES (or misnamed)"
    assert expected - found == set(), "codes without a golden fixture folder"


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_fail(case: Path, request: pytest.FixtureRequest) -> None:
    code = _code(case)
    assert (case / "fail.wf").exists() == (code not in NO_FAIL_FILE)
    actual = _compact(_compile(case, "fail.wf"), code)
    expected_file = case / "fail.expected.json"
    if request.config.getoption("--update-golden"):
        expected_file.write_text(_dump(actual), encoding="utf-8")
    else:
        assert expected_file.is_file(), f"{expected_file} is missing: run pytest --update-golden"
        assert actual == json.loads(expected_file.read_text(encoding="utf-8"))
    assert code in {d["code"] for d in actual}, f"fail.wf does not report {code}"


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_pass(case: Path) -> None:
    result = _compile(case, "pass.wf")
    code = _code(case)
    assert [d for d in result.diagnostics if d.code == code] == []
    # the fixed file is clean: no other error or warning either
    assert _compact(result, code) == []


# ---- docs/diagnostics.md --------------------------------------------------------------

_HEADING = re.compile(r"^## (IL\d{3}) ([a-z0-9-]+)\s*$", re.MULTILINE)


def _doc_sections() -> dict[str, tuple[str, str]]:
    """code -> (name in the heading, the section's text)."""
    text = DOCS.read_text(encoding="utf-8")
    heads = list(_HEADING.finditer(text))
    sections: dict[str, tuple[str, str]] = {}
    for i, m in enumerate(heads):
        end = heads[i + 1].start() if i + 1 < len(heads) else len(text)
        assert m.group(1) not in sections, f"two sections for {m.group(1)}"
        sections[m.group(1)] = (m.group(2), text[m.end():end])
    return sections


def test_docs_cover_every_code() -> None:
    sections = _doc_sections()
    assert sorted(set(sections) - set(CODES)) == [], "docs name codes that are not in CODES"
    assert sorted(set(CODES) - set(sections)) == [], "codes without a `## CODE name` section in docs/diagnostics.md"
    for code, (name, _) in sections.items():
        assert name == CODES[code].name, f"{code}: the heading says {name}, CODES says {CODES[code].name}"
    assert list(sections) == sorted(sections), "sections are not in code order"
    stray = re.findall(r"^##\s+IL.*$", DOCS.read_text(encoding="utf-8"), re.MULTILINE)
    assert len(stray) == len(sections), f"malformed code headings: {stray}"


@pytest.mark.parametrize("case", [c for c in CASES if _code(c) not in NOT_VERBATIM_IN_DOCS],
                         ids=[c.name for c in CASES if _code(c) not in NOT_VERBATIM_IN_DOCS])
def test_docs_show_the_fixtures(case: Path) -> None:
    sections = _doc_sections()
    code = _code(case)
    assert code in sections
    body = sections[code][1]
    for name in ("fail.wf", "pass.wf"):
        text = (case / name).read_text(encoding="utf-8")
        assert f"```wf\n{text}```" in body, f"docs section {code} does not show {case.name}/{name} verbatim"
