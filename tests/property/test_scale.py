"""Hostile files that stay inside every limit still compile in about linear time.

Each case crosses two large dimensions (a big vocabulary and many references to it, a long
`pull_from` chain, a kind with a thousand required parameters and many calls to it).
Before the fixes these took 20 seconds to several minutes (suggestions compared every
misspelling with every name, `pull_from` cycles were searched in cubic time, each action
rebuilt its kind's parameter tables and got one diagnostic per missing parameter); the
bound below is an order of magnitude above what they take now.
"""

from __future__ import annotations

import time
from collections import Counter

import pytest

from interlock.compiler import CompileResult, compile_source
from interlock.dsl import SourceFile

BOUND = 5.0  # seconds; each case takes well under one on a laptop


def _steps(count: int, handler: str) -> str:
    return "\n".join(f"  step s{j} {{ manual_move {'start' if j == 0 else ''} {handler} }}" for j in range(count))


CASES = {
    "many roles, many unknown role references": (
        "\n".join("role " + ", ".join(f"r{i}_{j}" for j in range(100)) for i in range(300))
        + "\nworkflow w { step s { start on on_enter { "
        + " ".join(f"ensure_seats(role: zz{i})" for i in range(999)) + " } } }\n",
        {"IL104": 999}),
    "many kinds, many unknown actions": (
        "\n".join(f"task kind_{i} on on_comment" for i in range(3000))
        + "\nworkflow w { step s { start on on_comment { " + " ".join(f"kindd_{i}" for i in range(999)) + " } } }\n",
        {"IL101": 999}),
    "many triggers, many unknown handlers": (
        "\n".join(f"trigger trig_{i}" for i in range(3000))
        + "\nworkflow w { step s { start " + " ".join(f"on trg_{i} {{ }}" for i in range(5000)) + " } }\n",
        {"IL107": 5000}),
    "long pull_from chains": (
        ("workflow w {\n" + "\n".join(f"  step s{j} {{ manual_move {'start' if j == 0 else f'pull_from s{j - 1}'} }}"
                                      for j in range(999)) + "\n}\n") * 10,
        {"IL110": 9}),
    "a thousand required parameters, ten thousand calls": (
        "task big(" + ", ".join(f"p{i}: str" for i in range(1000)) + ") on on_comment\nworkflow w {\n"
        + _steps(10, "on on_comment { " + " ".join(["big"] * 999) + " }") + "\n}\n",
        {"IL201": 9990}),
    "five thousand parameters, unknown arguments": (
        "task big(" + ", ".join(f'p{i}: str = ""' for i in range(5000)) + ") on on_comment\nworkflow w {\n"
        + _steps(10, "on on_comment { " + " ".join(["big(zz: 1)"] * 999) + " }") + "\n}\n",
        {"IL102": 9990}),
    "a wide record, many field paths": (
        "record big { " + " ".join(f"f{i}: str" for i in range(9999)) + " }\ntrigger tb\ndispatch d on tb { event big\n"
        + "\n".join(f'skip g{i} silent when event.f{i} == ""' for i in range(999)) + "\n}\n",
        {}),
    "many triggers, kinds allowed everywhere": (
        "\n".join(f"trigger t{i}" for i in range(3000)) + "\n" + "\n".join(f"task k{i}" for i in range(50))
        + "\nentry { dispatch " + ", ".join(f"k{i}" for i in range(50)) + " }\nworkflow w {\n"
        + _steps(200, "on t0 { " + " ".join(f"k{i}" for i in range(50)) + " }") + "\n}\n",
        {}),
}


def _compile(text: str) -> tuple[CompileResult, float]:
    started = time.perf_counter()
    result = compile_source(SourceFile("scale.wf", text))
    return result, time.perf_counter() - started


@pytest.mark.parametrize("name", list(CASES))
def test_crossed_dimensions_compile_in_linear_time(name: str) -> None:
    text, expected = CASES[name]
    result, elapsed = _compile(text)
    codes = Counter(d.code for d in result.diagnostics if d.is_error)
    assert dict(codes) == expected
    assert elapsed < BOUND, f"{name}: {elapsed:.1f} s"


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
    result, elapsed = _compile(text)
    helps = [d.help for d in result.diagnostics if d.code == "IL101"]
    assert len(helps) == 100 and helps[0] == "did you mean `kind_0`?"
    assert helps[-1] is None
    assert elapsed < BOUND
