"""Input limits: every count limit refuses the first item past it with IL009 (and accepts the
limit itself), chains and nesting are refused before parsing (IL003), and the defaults admit
the 20,000-line benchmark file."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from typing import Any

import pytest

from interlock.compiler import compile_source
from interlock.dsl import Limits, SourceFile, parse_source
from interlock.dsl.diagnostics import Diagnostic
from interlock.dsl.parser import DEFAULT_LIMITS

ROOT = Path(__file__).resolve().parents[2]


def _parse(text: str, **limits: int) -> tuple[Any, list[Diagnostic]]:
    return parse_source(SourceFile("limits.wf", text), Limits(**limits))


def _refused(text: str, **limits: int) -> Diagnostic:
    module, diagnostics = _parse(text, **limits)
    assert module is None
    assert [d.code for d in diagnostics] == ["IL009"], diagnostics
    return diagnostics[0]


def _at(d: Diagnostic) -> tuple[int, int, int, int]:
    return d.span.line, d.span.col, d.span.end_line, d.span.end_col


def _workflow(steps: int, actions: int = 1) -> str:
    body = " ".join(["clear_decisions"] * actions)
    return "workflow w {\n" + "".join(f"  step s{i} {{ on on_comment {{ {body} }} }}\n" for i in range(steps)) + "}\n"


def test_defaults_are_documented() -> None:
    assert DEFAULT_LIMITS._asdict() == {
        "max_bytes": 8 * 1024 * 1024, "max_depth": 64, "max_tokens": 500_000, "max_string_length": 100_000,
        "max_name_length": 256, "max_declarations": 10_000, "max_steps": 1_000, "max_actions": 1_000,
        "max_dispatch_items": 1_000, "max_items": 10_000}
    docs = (ROOT / "docs" / "diagnostics.md").read_text(encoding="utf-8")
    for name, default in Limits._field_defaults.items():
        if name not in ("max_bytes", "max_depth"):
            assert f"| `{name}` | {default:,} |" in docs, name


def test_steps() -> None:
    assert _parse(_workflow(3), max_steps=3)[0] is not None
    d = _refused(_workflow(4), max_steps=3)
    assert d.message == "workflow `w` has 4 steps; the limit is 3"
    assert _at(d) == (5, 8, 5, 10)  # `s3`, the first step past the limit


def test_actions() -> None:
    assert _parse(_workflow(1, actions=5), max_actions=5)[0] is not None
    text = _workflow(1, actions=6)
    d = _refused(text, max_actions=5)
    assert d.message == "handler `on on_comment` has 6 actions; the limit is 5"
    sixth = text.split("\n")[1].rindex("clear_decisions") + 1
    assert _at(d) == (2, sixth, 2, sixth + len("clear_decisions"))


def test_declarations() -> None:
    text = "".join(f"role r{i}\n" for i in range(6))
    assert _parse(text, max_declarations=6)[0] is not None
    d = _refused(text + "role r6\n", max_declarations=6)
    assert d.message == "the file has 7 declarations; the limit is 6"
    assert _at(d) == (7, 6, 7, 8)


def test_dispatch_items() -> None:
    items = " ".join(f"skip s{i} silent when true" for i in range(4))
    text = f"dispatch d on t {{ event e {items} }}"
    assert _parse(text.replace(" skip s3 silent when true", ""), max_dispatch_items=4)[0] is not None
    d = _refused(text, max_dispatch_items=4)
    assert d.message == "dispatch `d` has 5 items; the limit is 4"
    assert d.span.col == text.index("s3") + 1  # the span of `skip s3 …` starts at its name


@pytest.mark.parametrize("text, message", [
    ('workflow w { step s { on t { a(x: [1, 2, 3, 4]) } } }', "this list has 4 items; the limit is 3"),
    ('workflow w { step s { on t { a(x: {a: 1, b: 2, c: 3, d: 4}) } } }', "this map has 4 entries; the limit is 3"),
    ("workflow w { step s { on t { a(1, 2, 3, 4) } } }", "this argument list has 4 arguments; the limit is 3"),
    ("workflow w { step s { on t { a(x: f(1, 2, 3, 4)) } } }", "`f(…)` has 4 arguments; the limit is 3"),
    ("task k(a: str, b: str, c: str, d: str)", "this parameter list has 4 parameters; the limit is 3"),
    ("record r { a: str b: str c: str d: str }", "record `r` has 4 fields; the limit is 3"),
    ("role a, b, c, d", "this `role` line has 4 names; the limit is 3"),
    ("task k on a, b, c, d", "this `on` list has 4 triggers; the limit is 3"),
    ("entry { exclude a, b, c, d }", "this `exclude` list has 4 kinds; the limit is 3"),
    ("workflow w { step s { start manual_move terminal stage work } }",
     "step `s` has 4 attributes and handlers; the limit is 3"),
    ("dispatch d on t { payload { a = x b = x c = x d = x } }", "this payload has 4 assignments; the limit is 3"),
    ("dispatch d on t { skip s silent when a.b.c.d }", "this dotted name has 4 parts; the limit is 3"),
])
def test_items(text: str, message: str) -> None:
    d = _refused(text, max_items=3)
    assert d.message == message
    assert _parse(text, max_items=4)[0] is not None


def test_strings_and_names() -> None:
    d = _refused('workflow w "' + "x" * 12 + '" { }', max_string_length=10)
    assert d.message == "string is 12 characters long; the limit is 10"
    assert _at(d) == (1, 23, 1, 26)  # from the first character past the limit to the closing quote
    assert _parse('workflow w "' + "x" * 10 + '" { }', max_string_length=10)[0] is not None
    d = _refused("role " + "r" * 9, max_name_length=8)
    assert d.message == "name is 9 characters long; the limit is 8"
    assert _at(d) == (1, 14, 1, 15)
    # names inside strings and comments are not names
    assert _parse('# ' + "c" * 20 + '\nworkflow w "' + "s" * 20 + '" { }', max_name_length=8)[0] is not None


def test_tokens() -> None:
    text = "role " + ", ".join(f"r{i}" for i in range(10))  # 1 + 10 names + 9 commas = 20 tokens
    assert _parse(text + "  # comments are free", max_tokens=20)[0] is not None
    d = _refused(text + ", r10", max_tokens=20)
    assert d.message == "the file has 22 tokens; the limit is 20"
    assert _at(d) == (1, 44, 1, 45)  # the comma before `r10`, the 21st token


def test_tokens_of_a_long_single_line_are_counted_in_bounded_chunks(parser_forbidden: None) -> None:
    text = "role " + ", ".join(f"r{i}" for i in range(300_000))  # one line of 600,000 tokens
    d = _refused(text)
    assert d.message == "the file has 600,000 tokens; the limit is 500,000"


@pytest.mark.parametrize("expr", [
    " ?? ".join(["event.x"] * 100_000),
    " or ".join(["event.x"] * 100_000),
    " and ".join(["event.x"] * 100_000),
    " ?? ".join(["event . x"] * 100_000),
    " ?? ".join(["(event.x)"] * 100_000),
    " ?? ".join(["1"] * 100_000),
    " or ".join(['"a" == "b"'] * 100_000),
])
def test_giant_operator_chains_are_refused_before_parsing(expr: str, parser_forbidden: None) -> None:
    text = f"dispatch d on t {{ event agent_failure\n skip s silent when {expr} }}"
    result = compile_source(SourceFile("chain.wf", text))
    assert [d.code for d in result.diagnostics] == ["IL003"]
    assert "chain deeper than 64 levels" in result.diagnostics[0].message


def test_separate_expressions_do_not_add_up() -> None:
    # many short chains at one bracket level: each is its own expression
    guards = "\n".join(f'skip g{i} silent when event.session_id == "" or event.task_id == "" or not host.engine_ready'
                       for i in range(40))
    payload = " ".join(f"p{i} = event.session_id ?? event.task_id ?? \"\"" for i in range(40))
    params = ", ".join(f"p{i}: str" for i in range(40))
    text = (f"trigger t ({params})\ndispatch d on t {{\n event agent_failure\n{guards}\n"
            f" load s = session(event.session_id ?? event.task_id) {{ }}\n payload {{ {payload} }}\n}}\n")
    result = compile_source(SourceFile("many.wf", text))
    assert "IL003" not in {d.code for d in result.diagnostics}, result.diagnostics


def test_a_chain_of_exactly_the_limit_passes_the_prescan_and_one_more_does_not() -> None:
    for n, refused in ((64, False), (65, True)):
        chain = " or ".join(["host.engine_ready"] * (n + 1))
        result = compile_source(SourceFile("c.wf", f"dispatch d on on_agent_error {{ skip s silent when {chain} }}"))
        assert ("IL003" in {d.code for d in result.diagnostics}) == refused


def test_default_limits_admit_the_benchmark_file() -> None:
    spec = importlib.util.spec_from_file_location("bench_run", ROOT / "benchmarks" / "run.py")
    assert spec is not None and spec.loader is not None
    bench = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = bench  # dataclasses look their module up while the class is built
    try:
        spec.loader.exec_module(bench)
    finally:
        del sys.modules[spec.name]
    result = compile_source(SourceFile("bench_20k.wf", bench.generate_wf()))
    assert result.ok and result.plan is not None
