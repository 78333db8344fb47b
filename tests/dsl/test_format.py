"""The formatter (`interlock.dsl.format`): golden pairs in, the canonical layout out, and the guarantees
docs/fmt.md states, each pinned on a small input.

`tests/golden/fmt/<case>/in.wf` is formatted and compared with `out.wf` next to it;
`pytest --update-golden` rewrites the `out.wf` files.  Every `out.wf` is a fixed point of the
formatter, and so is every shipped example (`examples/*.wf` is kept formatted).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from interlock.dsl.format import WIDTH, FormatResult, format_source

ROOT = Path(__file__).resolve().parents[2]
GOLDEN = ROOT / "tests" / "golden" / "fmt"
CASES = sorted(p for p in GOLDEN.iterdir() if p.is_dir())
EXAMPLES = sorted((ROOT / "examples").rglob("*.wf"))  # examples/host/flow.wf too


def fmt(text: str) -> str:
    result = format_source(text, "t.wf")
    assert result.ok, result.diagnostics
    return result.text


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_golden_pair(case: Path, request: pytest.FixtureRequest) -> None:
    out = fmt((case / "in.wf").read_text(encoding="utf-8"))
    expected = case / "out.wf"
    if request.config.getoption("--update-golden"):
        expected.write_text(out, encoding="utf-8")
    assert expected.is_file(), f"{expected} is missing: run pytest --update-golden"
    assert out == expected.read_text(encoding="utf-8")
    assert fmt(out) == out, "the expected output is not a fixed point"


def test_there_are_golden_pairs() -> None:
    assert len(CASES) >= 8


@pytest.mark.parametrize("path", EXAMPLES, ids=[p.relative_to(ROOT / "examples").as_posix() for p in EXAMPLES])
def test_examples_are_formatted(path: Path) -> None:
    text = path.read_text(encoding="utf-8")
    assert fmt(text) == text, f"run `interlock fmt {path.relative_to(ROOT)}`"


def test_syntax_error_leaves_the_text_and_reports_where() -> None:
    text = "workflow w {\n  step a {\n    start\n"
    result = format_source(text, "broken.wf")
    assert not result.ok and not result.changed
    assert result.text == text
    (d,) = result.diagnostics
    assert (d.code, d.span.file, d.span.line) == ("IL001", "broken.wf", 3)


def test_result_says_whether_the_text_changed() -> None:
    assert format_source("role a\n", "x.wf") == FormatResult("x.wf", "role a\n", "role a\n")
    changed = format_source("role   a ,b", "x.wf")
    assert changed.changed and changed.text == "role a, b\n"


def test_step_items_keep_their_order() -> None:
    text = "workflow w { step a {\n on on_enter { auto_start_agent }\n terminal\n start\n position 2\n } }\n"
    assert fmt(text) == ("workflow w {\n  step a {\n    on on_enter { auto_start_agent }\n    terminal\n"
                         "    start\n    position 2\n  }\n}\n")


def test_runs_of_blank_lines_collapse_to_one() -> None:
    assert fmt("role a\n\n\n\nrole b\n\n\n") == "role a\n\nrole b\n"


def test_trailing_comments_stay_on_their_line_and_align() -> None:
    text = "role a # one\nrole bbbb   # two\n\nrole c # three\n"
    assert fmt(text) == "role a     # one\nrole bbbb  # two\n\nrole c  # three\n"


def test_comment_inside_entry_open_is_kept() -> None:
    # `entry # …\n{` used to be one token, the comment swallowed into it
    assert fmt("entry # why\n{ dispatch x }\n") == "entry {  # why\n  dispatch x\n}\n"


def test_long_argument_lists_wrap_one_per_line_with_a_trailing_comma() -> None:
    reason = "r" * 80
    text = f'workflow w {{ step a {{ on on_comment {{ queue_run(target: primary, reason: "{reason}") }} }} }}\n'
    out = fmt(text)
    assert "      queue_run(\n        target: primary,\n" in out
    assert f'        reason: "{reason}",\n      )\n' in out
    assert all(len(line) <= WIDTH for line in out.splitlines())


def test_a_list_that_fits_is_joined_and_loses_its_trailing_comma() -> None:
    assert fmt("task k (\n  a: str,\n  b: int,\n)\n") == "task k (a: str, b: int)\n"


def test_an_empty_file_stays_empty_and_comments_alone_survive() -> None:
    assert fmt("") == ""
    assert fmt("\n\n# only a comment  \n\n") == "# only a comment\n"


def test_crlf_line_ends_become_lf() -> None:
    assert fmt("role a # c\r\nrole b\r\n") == "role a  # c\nrole b\n"
