"""Literal checks: NUL and lone surrogates anywhere a string can be (IL010, and never in a plan),
duplicate map keys (IL210), reserved record field names (IL325), and the `requires_approval`
dead end (IL507)."""

from __future__ import annotations

import dataclasses
import io
import json
from contextlib import redirect_stderr, redirect_stdout
from pathlib import Path

import pytest

from interlock.cli import main
from interlock.compiler import CompileResult, compile_path, compile_source
from interlock.dsl import SourceFile, render

HEAD = "trigger on_deploy (environment: str)\nrecord ev { id: str }\n"
# one program per place a string can stand; `@` marks the string that is made unstorable
PLACES = {
    "workflow title": 'workflow w "@" { step s { start terminal } }',
    "step title": 'workflow w { step s "@" { start terminal } }',
    "prompt": 'workflow w { step s { start terminal prompt "@" on on_enter { auto_start_agent } } }',
    "argument": 'workflow w { step s { start terminal on on_comment { queue_run(reason: "@") } } }',
    "list item": 'task k(xs: list[str]) on on_comment\nentry { }\n'
                 'workflow w { step s { start terminal on on_comment { k(xs: ["a", "@"]) } } }',
    "map value": 'workflow w { step s { start terminal on on_comment { queue_run(payload: {a: ["@"]}) } } }',
    "map key": 'workflow w { step s { start terminal on on_comment { queue_run(payload: {"@": 1}) } } }',
    "default": 'task k(text: str = "@") on on_comment',
    "guard message": 'dispatch d on on_deploy { event ev skip g debug "@" when event.id == "" '
                     'payload { environment = "" } }',
    "load message": 'dispatch d on on_deploy { event ev load t = task(event.id) { missing -> skip g warning "@" } '
                    'payload { environment = "" } }',
    "operation": 'dispatch d on on_deploy { event ev operation "@" payload { environment = "" } }',
    "condition": 'dispatch d on on_deploy { event ev skip g silent when event.id == "@" '
                 'payload { environment = "" } }',
    "payload": 'dispatch d on on_deploy { event ev payload { environment = event.id ?? "@" } }',
}
ESCAPES = {"\\0": "a NUL character", "\\u0000": "a NUL character", "\\ud800": "a lone surrogate U+D800",
           "\\uDBFF": "a lone surrogate U+DBFF", "\\udc00": "a lone surrogate U+DC00",
           "\\ude00\\ud83d": "a lone surrogate U+DE00"}


def _compile(text: str, name: str = "t.wf") -> CompileResult:
    """The compile of `text`, less IL513: many snippets here declare no workflow, which is not what they are about
    (tests/golden/diagnostics/IL513-no-workflow is)."""
    result = compile_source(SourceFile(name, text))
    return dataclasses.replace(result, diagnostics=tuple(d for d in result.diagnostics if d.code != "IL513"))


def _errors(result: CompileResult) -> list[tuple[str, int, int]]:
    return [(d.code, d.span.line, d.span.col) for d in result.diagnostics]


def _at(text: str) -> tuple[int, int]:
    """1-based line and column of the string literal holding `@` (its opening quote)."""
    offset = text.index("@") - 1
    line = text.count("\n", 0, offset) + 1
    return line, offset - (text.rfind("\n", 0, offset) + 1) + 1


@pytest.mark.parametrize("place", PLACES)
def test_the_clean_programs_compile(place: str) -> None:
    result = _compile(HEAD + PLACES[place].replace("@", "fine \\ud83d\\ude00"))
    assert result.diagnostics == () and result.plan is not None
    assert "fine \U0001f600" in json.dumps(result.plan.model_dump(mode="json"), ensure_ascii=False)


@pytest.mark.parametrize("escape", ESCAPES)
@pytest.mark.parametrize("place", PLACES)
def test_an_unstorable_string_is_an_error_at_the_string_and_never_reaches_a_plan(place: str, escape: str) -> None:
    text = HEAD + PLACES[place].replace("@", f"x{escape}y")
    result = _compile(text)
    line, col = _at(HEAD + PLACES[place])
    assert _errors(result) == [("IL010", line, col)]
    what = "map key" if place == "map key" else "string"
    assert result.diagnostics[0].message == f"this {what} contains {ESCAPES[escape]}, which no store can keep"
    assert result.plan is None


@pytest.mark.parametrize("char", ["\0", "\ud800"])
def test_raw_characters_in_an_in_memory_source_are_caught_too(char: str) -> None:
    result = _compile(f'workflow w "a{char}b" {{ step s {{ start terminal }} }}')
    assert _errors(result) == [("IL010", 1, 12)] and result.plan is None
    render.render_json(list(result.diagnostics)).encode("utf-8")  # the report itself is printable


def test_a_raw_nul_in_a_file_is_refused_where_it_is(tmp_path: Path) -> None:
    path = tmp_path / "n.wf"
    path.write_bytes(b'workflow w {\n  step s "a\x00b" { start terminal }\n}\n')
    assert _errors(compile_path(path)) == [("IL005", 2, 12)]


def test_check_and_compile_agree_and_neither_raises(tmp_path: Path) -> None:
    path = tmp_path / "s.wf"
    path.write_text('workflow w "W" { step s "S\\ud800" { start terminal } }\n', encoding="utf-8")
    for command in ("check", "compile"):
        out, err = io.StringIO(), io.StringIO()
        with redirect_stdout(out), redirect_stderr(err):
            code = main([command, str(path)])
        assert code == 1, (command, out.getvalue(), err.getvalue())
        assert "IL010" in out.getvalue() + err.getvalue() and "internal error" not in err.getvalue()


def test_messages_quoting_the_users_text_stay_printable() -> None:
    result = _compile(HEAD + 'dispatch d on on_deploy { event ev operation "{\\ud800}" payload { environment = "" } }')
    assert [d.code for d in result.diagnostics] == ["IL010", "IL206"]
    assert result.diagnostics[1].message == "placeholder `{\\ud800}` is not a field path"
    for d in result.diagnostics:
        d.message.encode("utf-8")


# ---- duplicate map keys ---------------------------------------------------------------------------


def test_a_key_given_twice_is_reported_at_the_second_key() -> None:
    text = ('workflow w { step s { start terminal on on_comment {\n'
            '  queue_run(payload: {k: 1, other: 2, "k": 3})\n} } }')
    result = _compile(text)
    assert _errors(result) == [("IL210", 2, 39)]
    (d,) = result.diagnostics
    assert d.message == "key `k` is given twice in this map"
    assert [(lb.span.line, lb.span.col, lb.message) for lb in d.labels] == [(2, 23, "first given here")]
    assert result.plan is None


@pytest.mark.parametrize("value", ['{a: {b: 1, b: 2}}', '[{a: 1}, {c: 1, c: 1}]', '{a: 1, a: 1, a: 1}'])
def test_duplicate_keys_in_nested_maps_and_defaults(value: str) -> None:
    in_arg = _compile(f"task k(p: any) on on_comment\n"
                      f"workflow w {{ step s {{ start terminal on on_comment {{ k(p: {value}) }} }} }}")
    in_default = _compile(f"task k(p: any = {value}) on on_comment")
    expected = 2 if value.count("a: 1") == 3 else 1
    assert [d.code for d in in_arg.diagnostics] == ["IL210"] * expected
    assert [d.code for d in in_default.diagnostics] == ["IL210"] * expected


def test_distinct_keys_are_fine() -> None:
    result = _compile('workflow w { step s { start terminal on on_comment { queue_run(payload: {k: 1, K: 2, "k ": 3}) '
                      '} } }')
    assert result.diagnostics == () and result.plan is not None


# ---- reserved record field names ------------------------------------------------------------------


@pytest.mark.parametrize(("field", "help"), [("_attempt", "rename it, e.g. `attempt`"),
                                             ("__", "give it a name that does not start with `_`"),
                                             ("_1", "give it a name that does not start with `_`")])
def test_a_field_starting_with_an_underscore_is_an_error(field: str, help: str) -> None:
    result = _compile(f"record r {{ ok: str  {field}: int }}")
    assert _errors(result) == [("IL325", 1, 21)]
    assert result.diagnostics[0].help == help


def test_underscores_elsewhere_in_a_field_name_are_fine() -> None:
    assert _compile("record r { task_id: str  x_: int }").diagnostics == ()


# ---- requires_approval dead end -------------------------------------------------------------------


@pytest.mark.parametrize("move", ["move_to_step(done) requires_approval",
                                  "move_to_next requires_approval",
                                  "move_to_step(done) when quorum(reviewer, all_approve) requires_approval"])
def test_requires_approval_to_a_step_without_manual_move_is_a_warning(move: str) -> None:
    text = f'workflow w {{\n  step work {{ start on on_turn_complete {{ {move} }} }}\n  step done {{ terminal }}\n}}'
    result = _compile(text)
    assert [(d.code, d.severity.value) for d in result.diagnostics] == [("IL507", "warning")]
    assert result.diagnostics[0].span.line == 2
    assert result.diagnostics[0].labels[0].span.line == 3
    assert result.plan is not None


def test_requires_approval_to_a_manual_step_or_no_step_is_not_warned() -> None:
    fine = 'workflow w { step work { start on on_turn_complete { move_to_step(done) requires_approval } } ' \
           'step done { terminal manual_move } }'
    assert _compile(fine).diagnostics == ()
    unknown = 'workflow w { step work { start terminal on on_turn_complete { move_to_step(nowhere) requires_approval ' \
              '} } }'
    assert [d.code for d in _compile(unknown).diagnostics] == ["IL103"]
