"""Property tests: `.wf` text round-trips through parse and `format_module`, no input makes the
compiler raise, deep nesting is refused quickly, and plan JSON round-trips and refuses tampering.

The generators (`programs()`, `valid_programs()`, `mutated_examples()`) live in
`support/wf_strategies.py`, shared with the fuzz campaign
(`benchmarks/fuzz_campaign.py`).  Profiles (`ci`, `campaign`) live in this folder's conftest.py.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, note, settings
from hypothesis import strategies as st
from support.wf_strategies import (
    ALL_FILES,
    EXAMPLE_FILES,
    KEYWORDS,
    STD_FILE,
    Toks,
    check_result,
    exprs,
    mutated_examples,
    programs,
    valid_programs,
    values,
)

from interlock.compiler import compile_bytes, compile_source
from interlock.dsl import SourceFile, ir, parse_source
from interlock.dsl.format import format_source
from interlock.dsl.printer import format_module
from interlock.dsl.render import render_concise
from interlock.dsl.source import Span
from interlock.runtime.plan import PLAN_VERSION, Plan, PlanError, dump_plan, load_plan, seal_digests

# ---- helpers -------------------------------------------------------------------------------------

_SPAN_KEYS = frozenset(Span.model_fields)


def strip_spans(obj: Any) -> Any:
    """A dumped IR tree without positions: `span` keys dropped, bare span values (such as
    `ActionCall.requires_approval`) replaced by a marker, tuples turned into lists."""
    if isinstance(obj, dict):
        if obj.keys() == _SPAN_KEYS:
            return "<span>"
        # `block`, `folded`: how a string was written, layout the printer may change (ADR 0033, ADR 0043)
        return {k: strip_spans(v) for k, v in obj.items() if k not in ("span", "block", "folded")}
    if isinstance(obj, (list, tuple)):
        return [strip_spans(v) for v in obj]
    return obj


def shape(module: ir.Module) -> Any:
    return strip_spans(module.model_dump())


def parse_clean(text: str, name: str = "gen.wf") -> ir.Module:
    module, diagnostics = parse_source(SourceFile(name, text))
    assert not diagnostics, render_concise(diagnostics) + "\n--- text ---\n" + text
    assert module is not None
    return module


# ---- 1. parse / format round trip ------------------------------------------------------------------------


def assert_round_trip(text: str) -> str:
    first = parse_clean(text)
    printed = format_module(first)
    second = parse_clean(printed)
    assert shape(second) == shape(first), printed
    assert format_module(second) == printed, printed
    assert printed == "" or printed.endswith("\n")
    assert "\t" not in printed and "\r" not in printed
    for line in printed.splitlines():
        assert line == line.rstrip(), repr(line)
    # the one canonical layout: `interlock fmt`'s (two-space blocks; a wrapped name list hangs under its first name)
    assert format_source(printed, "gen.wf").text == printed, printed
    return printed


def test_keywords_come_from_the_grammar() -> None:
    assert {"use", "entry", "true", "when", "quorum", "requires_approval", "not", "missing", "payload"} <= KEYWORDS


@given(programs())
def test_generated_programs_round_trip(text: str) -> None:
    assert_round_trip(text)


@pytest.mark.parametrize("path", ALL_FILES, ids=lambda p: p.name)
def test_shipped_files_round_trip(path: Path) -> None:
    printed = assert_round_trip(path.read_text(encoding="utf-8"))
    # formatting does not change what the file compiles to
    original = compile_source(SourceFile(path.name, path.read_text(encoding="utf-8")))
    if path != STD_FILE:
        again = compile_source(SourceFile(path.name, printed))
        assert original.plan is not None and again.plan is not None
        assert _plan_body(again.plan) == _plan_body(original.plan)


def _plan_body(plan: Plan) -> Any:
    """A plan without source positions (formatting moves lines) or the layout digest over them."""
    def strip(obj: Any) -> Any:
        if isinstance(obj, dict):
            return {k: strip(v) for k, v in obj.items() if k not in ("source", "digest", "layout_digest")}
        if isinstance(obj, list):
            return [strip(v) for v in obj]
        return obj
    return strip(plan.model_dump(mode="json"))


@given(valid_programs())
def test_valid_programs_round_trip(text: str) -> None:
    assert_round_trip(text)


@given(st.lists(exprs, min_size=1, max_size=4))
@settings(suppress_health_check=[*settings().suppress_health_check, HealthCheck.filter_too_much])
# up to four recursive expressions overrun Hypothesis's buffer on many draws (discarded, which its health check counts
# as filtered): after other properties ran in the same worker, the first draws of a fresh clone's run were 50 of 59
def test_expressions_round_trip(conditions: list[Toks]) -> None:
    items = [f"skip s{i} silent when {' '.join(c)}" for i, c in enumerate(conditions)]
    items.append(f"operation \"o\" when {' '.join(conditions[0])}")
    items.append("payload { " + " ".join(f"p{i} = {' '.join(c)}" for i, c in enumerate(conditions)) + " }")
    assert_round_trip("dispatch d on t {\n" + "\n".join(items) + "\n}")


@given(st.lists(values, min_size=1, max_size=4))
def test_values_round_trip(vals: list[Toks]) -> None:
    positional = ", ".join(" ".join(v) for v in vals)
    named = ", ".join(f"p{i}: {' '.join(v)}" for i, v in enumerate(vals))
    assert_round_trip(f"task k(p: any = {' '.join(vals[0])})\n"
                      f"workflow w {{ step s {{ on t {{ a({positional}) b({named}) }} }} }}")


@pytest.mark.parametrize("keyword", sorted(KEYWORDS))
def test_keyword_map_keys_are_quoted(keyword: str) -> None:
    text = f'workflow w {{ step s {{ on t {{ a(x: {{"{keyword}": 1, plain: 2}}) }} }} }}'
    printed = assert_round_trip(text)
    assert f'{{"{keyword}": 1, plain: 2}}' in printed


@pytest.mark.parametrize("source, expected", [
    ("a ?? b ?? c", "a ?? b ?? c"),
    ("a ?? (b ?? c)", "a ?? (b ?? c)"),
    ("(a == b) == c", "(a == b) == c"),
    ("a == (b == c)", "a == (b == c)"),
    ("not not a == b", "not not a == b"),
    ("(not a) == b", "(not a) == b"),
    ("a ?? (not b)", "a ?? (not b)"),
    ("(a or b) and c", "(a or b) and c"),
    ("a or (b and c)", "a or b and c"),
    ("(a or b) or c", "a or b or c"),
    ("a or (b or c)", "a or (b or c)"),
    ("not (a and b)", "not (a and b)"),
    ("((((x))))", "x"),
    ('"\\u0001\\0\\/\\"é\\u2028"', '"\\u0001\\u0000/\\"é\\u2028"'),
])
def test_expression_layout(source: str, expected: str) -> None:
    printed = assert_round_trip(f"dispatch d on t {{ skip s silent when {source} }}")
    assert printed.splitlines()[1] == f"  skip s silent when {expected}"


def test_long_operator_chain_prints_without_recursion() -> None:
    chain = " ?? ".join(["e.x"] * 60) + " or " + " and ".join(["a"] * 60)
    assert_round_trip(f"dispatch d on t {{ skip s silent when {chain} }}")


# ---- 2. no exception escapes -------------------------------------------------------------------------------


@given(st.text(max_size=400))
def test_arbitrary_text_never_raises(text: str) -> None:
    check_result(compile_source(SourceFile("fuzz.wf", text)))


@given(st.binary(max_size=400))
def test_arbitrary_bytes_never_raise(data: bytes) -> None:
    check_result(compile_bytes("fuzz.wf", data))


@given(mutated_examples())
def test_mutated_examples_never_raise(data: bytes) -> None:
    check_result(compile_bytes("mutant.wf", data))


@given(programs())
def test_generated_programs_compile_without_raising(text: str) -> None:
    check_result(compile_source(SourceFile("gen.wf", text)))


def _nested(n: int) -> Iterator[tuple[str, str]]:
    yield "parens", "(" * n
    yield "parens in a guard", "dispatch d on t { skip s silent when " + "(" * n + "x" + ")" * n + " }"
    yield "not chain", "dispatch d on t { skip s silent when " + "not " * n + "x }"
    yield "lists in an argument", "workflow w { step s { on t { a(x: " + "[" * n + "]" * n + ") } } }"
    yield "maps in an argument", "workflow w { step s { on t { a(x: " + "{k: " * n + "1" + "}" * n + ") } } }"
    yield "calls in an argument", "workflow w { step s { on t { a(" + "f(" * n + ")" * n + ") } } }"
    yield "list types", "trigger t (p: " + "list[" * n + "str" + "]" * n + ")"


@pytest.mark.parametrize("n", [65, 1000, 100_000])
def test_deep_nesting_is_refused_before_parsing(n: int, parser_forbidden: None) -> None:
    for what, text in _nested(n):
        result = compile_source(SourceFile("deep.wf", text))
        check_result(result)
        assert [d.code for d in result.diagnostics] == ["IL003"], what


@pytest.mark.parametrize("op", ["??", "or", "and"])
@pytest.mark.parametrize("n", [66, 2000])
def test_long_operator_chains_are_refused(op: str, n: int, parser_forbidden: None) -> None:
    # a left-associative chain is flat in the parse tree but n deep in the IR: the prescan counts it
    chain = f" {op} ".join(["event.user_initiated"] * n)
    text = f"trigger t\ndispatch d on t {{ event agent_failure\n skip s silent when {chain} }}"
    result = compile_source(SourceFile("chain.wf", text))
    check_result(result)
    assert [d.code for d in result.diagnostics] == ["IL003"]


def test_chain_at_the_limit_compiles() -> None:
    chain = " ?? ".join(['""'] * 65)  # 64 operators: exactly the limit
    text = f"trigger t (p: str)\ndispatch d on t {{ event agent_failure\n payload {{ p = {chain} }} }}"
    result = compile_source(SourceFile("chain.wf", text))
    assert result.ok, render_concise(result.diagnostics)


@pytest.mark.parametrize("literal", ["9" * 5000, "-" + "9" * 5000, "9223372036854775808", "-9223372036854775809",
                                     "0" * 5000 + "1"])
def test_integer_literals_out_of_range_are_diagnosed(literal: str) -> None:
    for text in (f"workflow w {{ step s {{ start position {literal} }} }}",
                 f"workflow w {{ step s {{ start on on_comment {{ set_workflow_data(key: \"k\", value: {literal}) }} }} }}",
                 f"workflow w {{ step s {{ start on on_comment {{ move_to_next when quorum(reviewer, n_approve({literal})) }} }} }}"):
        result = compile_source(SourceFile("int.wf", text))
        check_result(result)
        codes = [d.code for d in result.diagnostics]
        if literal.lstrip("0") == "1":
            assert "IL002" not in codes
        else:
            assert "IL002" in codes and result.plan is None


# ---- 3. plan JSON ------------------------------------------------------------------------------------------


def _compile_plan(name: str, text: str) -> Plan:
    result = compile_source(SourceFile(name, text))
    assert result.plan is not None, render_concise(result.diagnostics) + "\n--- text ---\n" + text
    return result.plan


def assert_plan_round_trip(name: str, text: str) -> str:
    plan = _compile_plan(name, text)
    dumped = dump_plan(plan)
    assert load_plan(dumped) == plan
    assert load_plan(dumped.encode()) == plan
    assert dump_plan(_compile_plan(name, text)) == dumped
    assert dump_plan(load_plan(dumped)) == dumped
    return dumped


@pytest.mark.parametrize("path", EXAMPLE_FILES, ids=lambda p: p.name)
def test_example_plans_round_trip(path: Path) -> None:
    assert_plan_round_trip(path.name, path.read_text(encoding="utf-8"))


@given(valid_programs())
def test_valid_programs_compile_and_their_plans_round_trip(text: str) -> None:
    assert_plan_round_trip("gen.wf", text)


_DUMP_SCRIPT = """
import sys
from pathlib import Path
from interlock.compiler import compile_path
from interlock.runtime.plan import dump_plan
for arg in sys.argv[1:]:
    sys.stdout.write(dump_plan(compile_path(Path(arg), display=Path(arg).name).plan))
"""


def test_plan_json_is_identical_across_processes() -> None:
    # set and dict orders must not leak into the plan: compare against other hash seeds
    here = "".join(dump_plan(_compile_plan(p.name, p.read_text(encoding="utf-8"))) for p in EXAMPLE_FILES)
    for seed in ("1", "4242"):
        env = {**os.environ, "PYTHONHASHSEED": seed}
        out = subprocess.run([sys.executable, "-c", _DUMP_SCRIPT, *map(str, EXAMPLE_FILES)], env=env,
                             capture_output=True, text=True, check=True, timeout=120, encoding="utf-8")
        assert out.stdout == here


def _paths(obj: Any, prefix: tuple[Any, ...] = ()) -> Iterator[tuple[Any, ...]]:
    yield prefix
    if isinstance(obj, dict):
        for k, v in obj.items():
            yield from _paths(v, (*prefix, k))
    elif isinstance(obj, list):
        for i, v in enumerate(obj):
            yield from _paths(v, (*prefix, i))


def _get(obj: Any, path: tuple[Any, ...]) -> Any:
    for p in path:
        obj = obj[p]
    return obj


_ODD_VALUES: list[Any] = [None, 0, -1, 2**70, 1.5, "", "x", True, False, [], {}, [None], {"op": "lit"}]
_EXAMPLE_PLANS = [dump_plan(_compile_plan(p.name, p.read_text(encoding="utf-8"))) for p in EXAMPLE_FILES]


@st.composite
def tampered_plans(draw: st.DrawFn) -> tuple[str, str]:
    """(how, plan JSON text changed after compilation)."""
    text = draw(st.sampled_from(_EXAMPLE_PLANS))
    how = draw(st.sampled_from(["value", "remove", "truncate", "version", "digest", "append"]))
    if how == "truncate":
        return how, text[:draw(st.integers(0, len(text.rstrip()) - 1))]
    data = json.loads(text)
    if how == "version":
        data["plan_version"] = draw(st.sampled_from([PLAN_VERSION + 1, PLAN_VERSION - 1, str(PLAN_VERSION), None]))
    elif how == "digest":
        data["digest"] = draw(st.sampled_from(["", "sha256:" + "0" * 64, None, 7]))
    elif how == "append":
        data[draw(st.sampled_from(["extra", "notes"]))] = draw(st.sampled_from(_ODD_VALUES))
    else:
        candidates = [p for p in _paths(data) if p and (how == "value" or isinstance(_get(data, p[:-1]), dict))]
        path = draw(st.sampled_from(candidates))
        parent = _get(data, path[:-1])
        if how == "remove":
            del parent[path[-1]]
        else:
            old = parent[path[-1]]
            new = draw(st.sampled_from(_ODD_VALUES).filter(lambda v: json.dumps(v) != json.dumps(old)))
            parent[path[-1]] = new
    return how, json.dumps(data, indent=2, ensure_ascii=False) + "\n"


def _load_or_plan_error(text: str | bytes, **kwargs: Any) -> Plan | None:
    try:
        return load_plan(text, **kwargs)
    except PlanError as exc:
        assert str(exc).strip()
        return None


@given(tampered_plans())
def test_tampered_plans_raise_plan_error(case: tuple[str, str]) -> None:
    how, text = case
    note(how)
    with pytest.raises(PlanError):
        load_plan(text)
    # without the digest check, or with a digest recomputed by the tamperer, loading either
    # validates or raises PlanError: never another exception
    _load_or_plan_error(text, verify_digest=False)
    try:
        data = json.loads(text)
    except ValueError:
        return
    if isinstance(data, dict):
        data.update(seal_digests(data))
        _load_or_plan_error(json.dumps(data))


@given(st.one_of(st.binary(max_size=200), st.text(max_size=200),
                 st.recursive(st.none() | st.booleans() | st.integers() | st.text(max_size=5),
                              lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=5), inner,
                                                                                          max_size=3),
                              max_leaves=10).map(json.dumps)))
def test_load_plan_of_garbage_raises_plan_error(text: str | bytes) -> None:
    with pytest.raises(PlanError):
        load_plan(text)
    _load_or_plan_error(text, verify_digest=False)


@pytest.mark.parametrize("text", ["[" * 100_000, '{"a": ' * 100_000, '{"plan_version": 1, "x": ' + "[" * 5000,
                                  '{"plan_version": 1, "x": ' + "[" * 995 + "]" * 995 + "}"])
def test_deeply_nested_json_raises_plan_error(text: str) -> None:
    for verify in (True, False):
        with pytest.raises(PlanError):
            load_plan(text, verify_digest=verify)


def test_load_plan_rejects_every_single_key_removal() -> None:
    data = json.loads(_EXAMPLE_PLANS[0])
    for key in list(data):
        smaller = {k: v for k, v in data.items() if k != key}
        with pytest.raises(PlanError):
            load_plan(json.dumps(smaller))

