"""Hostile files that stay inside every limit still compile in linear time: the work (counted in Python calls,
which no busy machine changes) at most doubles when every dimension of the input doubles.

Each case (`support/scale_cases.py`) crosses two large dimensions (a big vocabulary and many references to it,
a long `pull_from` chain, a kind with many required parameters and many calls to it).  Before the fixes these
took 20 seconds to several minutes (suggestions compared every misspelling with every name, `pull_from` cycles
were searched in cubic time, each action rebuilt its kind's parameter tables and got one diagnostic per missing
parameter): the work then grew four- to eightfold when the input doubled.  Their wall-clock times, at ten times
these sizes, are a benchmark (`benchmarks/scale.py`), never a test.
"""

from __future__ import annotations

from collections import Counter

import pytest
from support.scale_cases import CASES, count_calls

from interlock.compiler import CompileResult, compile_source
from interlock.dsl import SourceFile

SIZES = (1, 2)
"""The two sizes each case is compiled at (`k = 10` is the size of the former wall-clock tests)."""
LINEAR = 2.5
"""The most the work may grow when the input doubles: 2 is linear, 4 quadratic (fixed costs subtracted)."""


def _compile(text: str) -> CompileResult:
    return compile_source(SourceFile("scale.wf", text))


@pytest.fixture(scope="module")
def fixed_cost() -> int:
    """The calls of a compile of an almost empty file (the prelude, the passes' set-up), after a warm-up."""
    _compile("role warm_up\n")
    return count_calls(lambda: _compile("role r\n"))


@pytest.mark.parametrize("name", list(CASES))
def test_crossed_dimensions_compile_in_linear_time(name: str, fixed_cost: int) -> None:
    work = []
    for k in SIZES:
        text, expected = CASES[name](k)
        found: list[CompileResult] = []
        work.append(count_calls(lambda text=text, found=found: found.append(_compile(text))) - fixed_cost)
        codes = Counter(d.code for d in found[0].diagnostics if d.is_error)
        assert dict(codes) == expected, k
    growth = work[1] / work[0]
    assert growth <= LINEAR, (f"{name}: the work grew {growth:.2f} times when the input doubled "
                              f"({work[0]:,} -> {work[1]:,} calls)")


def test_a_call_missing_many_parameters_gets_one_short_diagnostic() -> None:
    text = "task big(" + ", ".join(f"p{i}: str" for i in range(1000)) + ") on on_comment\n" \
           "workflow w { step s { start on on_comment { big(p1: \"x\") } } }\n"
    (d,) = compile_source(SourceFile("m.wf", text)).diagnostics
    assert d.message == "`big` needs `p0: str`, `p2: str`, `p3: str` and 996 more required parameters"
    assert d.help == "write `big(p0: …, p2: …, p3: …, …)`"


def test_long_lists_in_messages_are_cut_short() -> None:
    text = "\n".join(f"trigger t{i}" for i in range(100)) + "\ntask k on " + ", ".join(f"t{i}" for i in range(100)) \
        + "\nworkflow w { step s { start on on_comment { k } } }\n"
    (d,) = [d for d in compile_source(SourceFile("n.wf", text)).diagnostics if d.code == "IL301"]
    assert d.notes == ("`k` may be declared on `t0`, `t1`, `t2`, `t3`, `t4`, `t5`, `t6`, `t7` and 92 more",)


def test_suggestions_stop_when_the_budget_is_spent() -> None:
    # near misses against a large vocabulary: the first ones get a suggestion, the rest none
    kinds = "\n".join(f"task kind_{i} on on_comment" for i in range(2000))
    text = kinds + "\nworkflow w { step s { start on on_comment { " + " ".join(f"kindd_{i}" for i in range(100)) + " } } }"
    result = _compile(text)
    helps = [d.help for d in result.diagnostics if d.code == "IL101"]
    assert len(helps) == 100 and helps[0] == "did you mean `kind_0`?"
    assert helps[-1] is None
