"""A size in, hostile `.wf` text of that size and the errors it must get out: the inputs that once took the
compiler quadratic or cubic time, shared by `tests/property/test_scale.py` (which counts the work at two sizes)
and `benchmarks/scale.py` (which times it at two sizes, in one process).

Each case crosses two large dimensions (a big vocabulary and many references to it, a long `pull_from`
chain, a kind with many required parameters and many calls to it), and both grow with the size `k`: the work
of a linear compiler doubles when `k` doubles, a quadratic one's quadruples.  `k = 10` is the size the cases
had when they were wall-clock tests (about a second each on a laptop); the input limits (1,000 steps or actions)
allow sizes up to 10.
"""

from __future__ import annotations

import sys
from collections import Counter
from collections.abc import Callable

__all__ = ["CASES", "REFUSALS", "count_calls"]


def _steps(count: int, handler: str) -> str:
    return "\n".join(f"  step s{j} {{ manual_move {'start' if j == 0 else ''} {handler} }}" for j in range(count))


def _roles(k: int) -> tuple[str, dict[str, int]]:
    return ("\n".join("role " + ", ".join(f"r{i}_{j}" for j in range(100)) for i in range(30 * k))
            + "\nworkflow w { step s { start on on_enter { "
            + " ".join(f"ensure_seats(role: zz{i})" for i in range(100 * k)) + " } } }\n", {"IL104": 100 * k})


def _kinds(k: int) -> tuple[str, dict[str, int]]:
    return ("\n".join(f"task kind_{i} on on_comment" for i in range(300 * k))
            + "\nworkflow w { step s { start on on_comment { " + " ".join(f"kindd_{i}" for i in range(100 * k))
            + " } } }\n", {"IL101": 100 * k})


def _triggers(k: int) -> tuple[str, dict[str, int]]:
    return ("\n".join(f"trigger trig_{i}" for i in range(300 * k))
            + "\nworkflow w { step s { start " + " ".join(f"on trg_{i} {{ }}" for i in range(500 * k)) + " } }\n",
            {"IL107": 500 * k})


def _pull_chains(k: int) -> tuple[str, dict[str, int]]:
    one = ("workflow w {\n" + "\n".join(f"  step s{j} {{ manual_move {'start' if j == 0 else f'pull_from s{j - 1}'} }}"
                                        for j in range(100 * k)) + "\n}\n")
    return one * 10, {"IL110": 9}


def _required(k: int) -> tuple[str, dict[str, int]]:
    return ("task big(" + ", ".join(f"p{i}: str" for i in range(100 * k)) + ") on on_comment\nworkflow w {\n"
            + _steps(10, "on on_comment { " + " ".join(["big"] * (100 * k)) + " }") + "\n}\n",
            {"IL201": 1000 * k})


def _unknown_args(k: int) -> tuple[str, dict[str, int]]:
    return ("task big(" + ", ".join(f'p{i}: str = ""' for i in range(500 * k)) + ") on on_comment\nworkflow w {\n"
            + _steps(10, "on on_comment { " + " ".join(["big(zz: 1)"] * (100 * k)) + " }") + "\n}\n",
            {"IL102": 1000 * k})


def _wide_record(k: int) -> tuple[str, dict[str, int]]:
    return ("record big { " + " ".join(f"f{i}: str" for i in range(1000 * k)) + " }\ntrigger tb\ndispatch d on tb "
            "{ event big\n" + "\n".join(f'skip g{i} silent when event.f{i} == ""' for i in range(100 * k)) + "\n}\n",
            {})


def _kinds_everywhere(k: int) -> tuple[str, dict[str, int]]:
    return ("\n".join(f"trigger t{i}" for i in range(300 * k)) + "\n" + "\n".join(f"task k{i}" for i in range(50))
            + "\nentry { dispatch " + ", ".join(f"k{i}" for i in range(50)) + " }\nworkflow w {\n"
            + _steps(20 * k, "on t0 { " + " ".join(f"k{i}" for i in range(50)) + " }") + "\n}\n", {})


CASES: dict[str, Callable[[int], tuple[str, dict[str, int]]]] = {
    "many roles, many unknown role references": _roles,
    "many kinds, many unknown actions": _kinds,
    "many triggers, many unknown handlers": _triggers,
    "long pull_from chains": _pull_chains,
    "many required parameters, many calls": _required,
    "many parameters, unknown arguments": _unknown_args,
    "a wide record, many field paths": _wide_record,
    "many triggers, kinds allowed everywhere": _kinds_everywhere,
}
"""Name -> size -> (text, the error codes it must get and how many of each)."""


REFUSALS: dict[str, Callable[[int], str]] = {
    "tokens of one long line": lambda k: "role " + ", ".join(f"r{i}" for i in range(30_000 * k)),  # IL009 at 10
    "a giant `??` chain": lambda k: f"dispatch d on t {{ event agent_failure\n skip s silent when "
                                    f"{' ?? '.join(['event.x'] * (10_000 * k))} }}",
    "deep brackets": lambda k: "(" * (10_000 * k),
    "a deep `not` chain": lambda k: "dispatch d on on_agent_error { skip g silent when " + "not " * (10_000 * k) + "x }",
}
"""Name -> size -> text refused before it is parsed in full (past the token limit from `k = 9` on, past the nesting
limit at any size; within the 8 MB size limit up to `k = 20`): refusing it must cost time linear in its length."""


def count_calls(run: Callable[[], object]) -> int:
    """How many Python function calls `run()` makes: a measure of work that does not depend on the machine's speed
    (`sys.setprofile` counts every call the interpreter makes, the same on a busy machine as on an idle one)."""
    calls = Counter[str]()

    def profile(frame: object, event: str, arg: object) -> None:
        if event == "call":
            calls["call"] += 1

    sys.setprofile(profile)
    try:
        run()
    finally:
        sys.setprofile(None)
    return calls["call"]
