"""Property tests of `interlock fmt` (`interlock.dsl.format`): generated files in, the formatter's guarantees out.

- every comment survives exactly once and in order, wherever it stood (a uniquely numbered
  comment at every token boundary), and a comment that followed code still follows code;
- formatting is idempotent: `fmt(fmt(x)) == fmt(x)`;
- the formatted text has the same tokens (commas aside: the formatter adds and drops the
  optional ones) and, for files that compile, compiles to the same plan once source
  positions are ignored.

Wrapping at the width is pinned by the golden pairs (tests/golden/fmt/) and tests/dsl/test_format.py.

The generators are the grammar-aware ones of `support/wf_strategies.py`.
"""

from __future__ import annotations

import re
from typing import Any

from hypothesis import given, note
from hypothesis import strategies as st
from support.wf_strategies import decls, programs, valid_programs

from interlock.compiler import compile_source
from interlock.dsl import SourceFile
from interlock.dsl.format import format_source
from interlock.dsl.parser import parse_concrete
from interlock.runtime.plan import dump_plan

_NUMBERED = re.compile(r"# c(\d+)$")
_BLOCK = re.compile(r'"""[ \t]*\n(?:[^"]|"(?!""))*"""')
_COMMENT = re.compile(r'((?:[^"#]|"(?:[^"\\]|\\.)*")*)(#.*)?$')  # (code, comment): strings may hold a `#`


def formatted(text: str, name: str = "gen.wf") -> str:
    result = format_source(text, name)
    assert result.ok, f"{result.diagnostics}\n--- text ---\n{text}"
    return result.text


def tokens(text: str) -> list[str]:
    """The file's tokens as written, commas left out (the formatter owns the optional ones)."""
    from lark import Tree

    tree, _, refused = parse_concrete(SourceFile("t.wf", text))
    assert tree is not None, f"{refused}\n--- text ---\n{text}"
    return [str(t) for t in tree.scan_values(lambda v: not isinstance(v, Tree)) if str(t) != ","]


def numbered_comments(text: str) -> list[tuple[int, bool]]:
    """(number, follows code on its line) of every `# cN` comment, in the order they appear."""
    out = []
    text = _BLOCK.sub('""', text)  # a block string holds no comment; as `""` its lines do not confuse _COMMENT
    for line in text.split("\n"):  # not splitlines(): a string may hold U+001E, U+2028, …
        m = _COMMENT.match(line)
        assert m is not None
        if m.group(2) is not None:
            number = _NUMBERED.match(m.group(2))
            assert number is not None, f"a comment changed: {line!r}"
            out.append((int(number.group(1)), bool(m.group(1).strip())))
    return out


# A comment at every token boundary: at the end of the line (after code) or on lines of its own,
# with or without blank lines around it.
_PLACES = st.sampled_from(["trailing", "own", "own-blank", "trailing-blank"])


@st.composite
def commented_programs(draw: st.DrawFn) -> tuple[str, list[bool]]:
    """A syntactically valid file with a uniquely numbered comment before its first token, between
    every two tokens and after its last; returns the text and, per comment, whether it follows code."""
    toks = [tok for d in draw(st.lists(decls, min_size=1, max_size=4)) for tok in d]
    places = draw(st.lists(_PLACES, min_size=len(toks) + 1, max_size=len(toks) + 1))
    out: list[str] = []
    trailing: list[bool] = []
    for i in range(len(toks) + 1):
        place = places[i] if i else "own"
        n = len(trailing)
        if place.startswith("trailing"):
            out.append(f"  # c{n}\n" + ("\n" if place == "trailing-blank" else ""))
        else:
            out.append(("\n\n" if place == "own-blank" else "\n") + f"# c{n}\n")
        trailing.append(place.startswith("trailing"))
        if i < len(toks):
            out.append(toks[i])
    return "".join(out), trailing


@given(commented_programs())
def test_every_comment_survives_once_in_order(case: tuple[str, list[bool]]) -> None:
    text, trailing = case
    note(text)
    out = formatted(text)
    note(out)
    found = numbered_comments(out)
    assert [n for n, _ in found] == list(range(len(trailing)))
    for (n, follows_code), was_trailing in zip(found, trailing):
        if was_trailing:
            assert follows_code, f"comment c{n} followed code and now stands on a line of its own"
    assert tokens(out) == tokens(text)
    assert formatted(out) == out, "formatting is not idempotent"


@given(programs())
def test_formatting_is_idempotent_and_keeps_the_tokens(text: str) -> None:
    note(text)
    out = formatted(text)
    note(out)
    assert formatted(out) == out
    assert tokens(out) == tokens(text)


def plan_shape(text: str) -> dict[str, Any]:
    """The compiled plan's meaning as data: what its digest covers, source positions and digests left out."""
    import json

    from interlock.runtime.plan import plan_layout

    result = compile_source(SourceFile("gen.wf", text))
    assert result.plan is not None, [d.message for d in result.diagnostics]
    meaning: dict[str, Any] = plan_layout(json.loads(dump_plan(result.plan)))[0]
    return meaning


@given(valid_programs())
def test_formatted_file_compiles_to_the_same_plan(text: str) -> None:
    note(text)
    out = formatted(text)
    note(out)
    assert plan_shape(out) == plan_shape(text)
