"""Generators of `.wf` input for the property tests and the fuzz campaign (`benchmarks/fuzz_campaign.py`).

Two grammar-aware hypothesis strategies build `.wf` text token by token from the grammar:
`programs()` writes any syntactically valid file (every declaration form, escapes,
comments, odd spacing) and `valid_programs()` writes files that also pass every static
check, so that they compile to a plan.  `mutate(data, rng)` edits bytes (of the shipped
examples, or anything else) at random: deletions, insertions, splices, token and line
edits, bit flips, truncation, invalid UTF-8 and NUL bytes; driven by a seeded
`random.Random` it is reproducible, and `mutated_examples()` wraps it as a strategy.
`check_result` is the well-formedness check every compile result must pass.
"""

from __future__ import annotations

import json
import random
import re
from collections.abc import Sequence
from pathlib import Path

from hypothesis import strategies as st

from interlock.compiler import CompileResult
from interlock.dsl import blockstr
from interlock.dsl.diagnostics import CODES
from interlock.dsl.parser import grammar_text
from interlock.dsl.render import render_concise, render_full

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE_FILES = sorted((ROOT / "examples").glob("*.wf"))
STD_FILE = ROOT / "compiler" / "prelude" / "std.wf"
ALL_FILES = [*EXAMPLE_FILES, STD_FILE]
EXAMPLE_BYTES = [p.read_bytes() for p in ALL_FILES]

# Every word the grammar spells as a literal (`"use"`, `TRUE: "true"`, …): never a generated name.
KEYWORDS = frozenset(re.findall(r'"([A-Za-z_][A-Za-z0-9_]*)"', grammar_text()))
INT_MIN, INT_MAX = -(2**63), 2**63 - 1

Toks = list[str]


def check_result(result: CompileResult) -> None:
    """A compile result is well formed: every diagnostic is registered and points into the file."""
    assert isinstance(result, CompileResult)
    for d in result.diagnostics:
        assert d.code in CODES, d
        assert CODES[d.code].name == d.name, d
        assert d.message.strip(), d
        for span in (d.span, *(lab.span for lab in d.labels)):
            assert span.line >= 1 and span.col >= 1, d
            assert (span.end_line, span.end_col) >= (span.line, span.col), d
    assert (result.plan is not None) <= result.ok
    # the renderers must cope with whatever the passes produced
    render_concise(result.diagnostics)
    render_full(result.diagnostics, result.sources)


# ---- token strategies ------------------------------------------------------------------------------

_name_re = st.from_regex(r"[A-Za-z_][A-Za-z0-9_-]{0,8}", fullmatch=True)
names = st.one_of(st.sampled_from(["a", "b", "x1", "in-progress", "_z", "review", "on_x", "entry_", "n0t"]),
                  _name_re).filter(lambda s: s not in KEYWORDS)

_escapes = st.one_of(
    st.sampled_from(['\\"', "\\\\", "\\n", "\\t", "\\r", "\\0", "\\/"]),
    st.integers(0, 0xFFFF).flatmap(lambda c: st.sampled_from([f"\\u{c:04x}", f"\\u{c:04X}"])),
)
# a raw `\r` is a line end, as `\n` is (ADR 0044), so a string on one line holds neither
_raw_chars = st.characters(exclude_characters='"\\\n\r', exclude_categories=["Cs"])
strings = st.lists(st.one_of(_raw_chars, _escapes), max_size=8).map(lambda parts: '"' + "".join(parts) + '"')
ints = st.one_of(
    st.integers(-20, 20).map(str),
    st.integers(INT_MIN, INT_MAX).map(str),
    st.tuples(st.sampled_from(["", "-"]), st.integers(1, 3), st.integers(0, 10**6)).map(
        lambda t: f"{t[0]}{'0' * t[1]}{t[2]}"),
)


def commas(items: list[Toks], trailing: bool = False) -> Toks:
    out: Toks = []
    for i, item in enumerate(items):
        if i:
            out.append(",")
        out += item
    if trailing and items:
        out.append(",")
    return out


def comma_list(elem: st.SearchStrategy[Toks], *, min_size: int = 0, max_size: int = 3,
               trailing: bool = False) -> st.SearchStrategy[Toks]:
    """`a, b, c` (with an optional trailing comma where the grammar allows one)."""
    lists = st.lists(elem, min_size=min_size, max_size=max_size)
    if not trailing:
        return lists.map(commas)
    return st.tuples(lists, st.booleans()).map(lambda t: commas(t[0], t[1]))


def many(elem: st.SearchStrategy[Toks], max_size: int) -> st.SearchStrategy[Toks]:
    """Zero or more of `elem`, one after another."""
    return st.lists(elem, max_size=max_size).map(lambda items: [tok for item in items for tok in item])


def opt(s: st.SearchStrategy[Toks]) -> st.SearchStrategy[Toks]:
    return st.one_of(st.just([]), s)


def seq(*parts: st.SearchStrategy[Toks] | Toks) -> st.SearchStrategy[Toks]:
    """Concatenate token lists; plain lists are fixed tokens."""
    strategies = [st.just(p) if isinstance(p, list) else p for p in parts]
    return st.tuples(*strategies).map(lambda ts: [tok for t in ts for tok in t])


one = st.builds(lambda n: [n], names)
paths = st.lists(names, min_size=1, max_size=3).map(
    lambda ns: [tok for i, n in enumerate(ns) for tok in ([".", n] if i else [n])])
str_tok = strings.map(lambda s: [s])
int_tok = ints.map(lambda s: [s])
bool_tok = st.sampled_from([["true"], ["false"]])

values: st.SearchStrategy[Toks] = st.recursive(
    st.one_of(str_tok, int_tok, bool_tok, paths),
    lambda inner: st.one_of(
        seq(paths, ["("], comma_list(inner), [")"]),
        seq(["["], comma_list(inner, trailing=True), ["]"]),
        seq(["{"], comma_list(seq(st.one_of(one, str_tok), [":"], inner), trailing=True), ["}"]),
    ),
    max_leaves=8,
)

types: st.SearchStrategy[Toks] = st.recursive(
    seq(one, opt(st.just(["?"]))),
    lambda inner: seq(one, ["["], inner, ["]"], opt(st.just(["?"]))),
    max_leaves=3,
)
params = seq(["("], comma_list(seq(one, [":"], types, opt(seq(["="], values))), trailing=True), [")"])


def _chain(elem: st.SearchStrategy[Toks], op: str, max_size: int = 2) -> st.SearchStrategy[Toks]:
    return st.lists(elem, min_size=1, max_size=max_size).map(
        lambda items: [tok for i, item in enumerate(items) for tok in ([op, *item] if i else item)])


def _levels(atom: st.SearchStrategy[Toks]) -> st.SearchStrategy[Toks]:
    """or < and < not < ==/!= < ?? < atom, exactly as the grammar layers them."""
    coalesce = _chain(atom, "??")
    cmp = seq(coalesce, opt(seq(st.sampled_from([["=="], ["!="]]), coalesce)))
    negated = st.tuples(st.integers(0, 2), cmp).map(lambda t: ["not"] * t[0] + t[1])
    return _chain(_chain(negated, "and"), "or")


thresholds = seq(one, opt(seq(["("], int_tok, [")"])))
quorums = seq(["quorum", "("], one, [","], thresholds, [")"])  # an atom of transition guards (the grammar's too)
atoms: st.SearchStrategy[Toks] = st.recursive(
    st.one_of(paths, str_tok, int_tok, bool_tok, quorums),
    lambda inner: seq(["("], _levels(inner), [")"]),
    max_leaves=4,
)
exprs = _levels(atoms)

levels = st.sampled_from([["silent"], ["debug"], ["info"], ["warning"], ["error"]])

# ---- declarations ----------------------------------------------------------------------------------

use_decls = seq(["use"], one)
trigger_decls = seq(["trigger"], one, opt(params), opt(st.just(["entry"])))
role_decls = seq(["role"], comma_list(one, min_size=1))
# A duration (docs/language.md §6): an integer and a unit, or anything else the parser reads there to report it.
durations = st.one_of(
    st.tuples(st.integers(0, 400), st.sampled_from(["s", "m", "h", "d"]), st.sampled_from(["", "0"])).map(
        lambda t: [f"{t[2]}{t[0]}{t[1]}"]),
    st.sampled_from([["48"], ["2w"], ["1.5h"], ["-5m"], ["soon"], ["10min"]]),
)
retry_clauses = seq(["retry"], int_tok, ["backoff"], durations, opt(seq([".."], durations)))
action_decls = seq(st.sampled_from([["session"], ["task"], ["transition"]]), one, opt(params),
                   opt(seq(["on"], comma_list(one, min_size=1))), opt(retry_clauses))
record_decls = seq(["record"], one, ["{"],
                   many(seq(one, [":"], types, opt(st.just([","]))), 4),
                   ["}"])
entry_decls = seq(["entry", "{"],
                  many(seq(st.sampled_from([["exclude"], ["dispatch"]]), comma_list(one, min_size=1)), 3),
                  ["}"])

guards = seq(["when"], st.one_of(quorums, exprs))  # docs/language.md §6: any expression, quorums included
args = seq(["("], comma_list(st.one_of(seq(one, [":"], values), values), trailing=True), [")"])
actions = seq(one, opt(args), opt(guards), opt(st.just(["requires_approval"])), opt(st.just(["continue_on_failure"])))
handlers = seq(["on"], one, ["{"], many(actions, 3), ["}"])
timers = seq(st.sampled_from([["after"], ["every"]]), durations, ["{"], many(actions, 3), ["}"])
_block_lines = st.lists(st.text(st.characters(codec="utf-8", exclude_categories=["Cs", "Cc"],
                                               exclude_characters='"'), max_size=10), max_size=3)
block_tok = st.tuples(_block_lines, st.sampled_from(["", "  ", "\t"])).map(
    lambda p: ['"""\n' + "".join((p[1] + line if line else "") + "\n" for line in p[0]) + p[1] + '"""'])
# A block string (ADR 0033): every line indented like the closing triple quote, on a line of its own.
folded_tok = block_tok.map(lambda t: [">" + t[0]])
# A folded block string (ADR 0043): `>` and a block string; its lines are joined with single spaces.
text_tok = st.one_of(str_tok, block_tok, folded_tok)
flag_names = st.sampled_from([["start"], ["manual_move"], ["terminal"], ["show_in_command_panel"],
                              ["auto_advance_requires_signal"], ["cancel_triggers_turn_complete"]])
step_items = st.one_of(
    seq(flag_names, opt(st.sampled_from([["true"], ["false"]]))),
    seq(st.sampled_from([["position"], ["wip_limit"], ["auto_archive_after_hours"]]), int_tok),
    seq(st.sampled_from([["stage"], ["pull_from"]]), one),
    seq(st.sampled_from([["prompt"], ["description"], ["color"]]), text_tok),
    seq(["agent_profile"], values),
    seq(["session_target"], values),
    seq(["agent_tag"], str_tok),
    handlers,
    timers,
)
steps = seq(["step"], one, opt(str_tok), ["{"], many(step_items, 5), ["}"])
workflow_settings = st.one_of(seq(st.sampled_from([["description"], ["prompt"]]), text_tok),
                              seq(["agent_profile"], values))
workflow_decls = seq(["workflow"], one, opt(str_tok), ["{"],
                     many(st.one_of(st.just(["hidden"]), workflow_settings, steps), 3), ["}"])

skip_tail = seq(["skip"], one, levels, opt(str_tok))
load_cases = seq(comma_list(st.sampled_from([["missing"], ["error"]]), min_size=1, max_size=2), ["->"], skip_tail)
dispatch_items = st.one_of(
    seq(["event"], one),
    seq(skip_tail, ["when"], exprs),
    seq(["load"], one, ["="], one, ["("], comma_list(exprs, max_size=2), [")", "{"],
        many(load_cases, 2), ["}"]),
    seq(["operation"], str_tok, opt(seq(["when"], exprs))),
    seq(["payload", "{"], many(seq(one, ["="], exprs), 3), ["}"]),
)
dispatch_decls = seq(["dispatch"], one, ["on"], one, ["{"],
                     many(dispatch_items, 5), ["}"])

decls = st.one_of(use_decls, trigger_decls, role_decls, action_decls, record_decls, entry_decls,
                  workflow_decls, dispatch_decls)

# Whitespace and comments between tokens; `entry {` keeps only these between its two halves.
separators = st.sampled_from([" ", " ", " ", "\n", "\n    ", "\t", "  # a comment\n", "\r\n", "#\n"])


@st.composite
def programs(draw: st.DrawFn) -> str:
    """Syntactically valid `.wf` text covering every grammar form."""
    tokens = [tok for d in draw(st.lists(decls, max_size=6)) for tok in d]
    seps = draw(st.lists(separators, min_size=1, max_size=6))
    out: list[str] = []
    for i, tok in enumerate(tokens):
        if i:
            out.append(seps[i % len(seps)])
        out.append(tok)
    if draw(st.booleans()):
        out.insert(0, "# leading comment\n")
    return "".join(out)


# ---- programs that also pass every static check -------------------------------------------------------

PRELUDE_ROLES = ["reviewer", "approver", "watcher", "collaborator", "runner"]
GENERIC = ["on_comment", "on_blocker_resolved", "on_children_completed", "on_approval_resolved",
           "on_heartbeat", "on_budget_alert", "on_agent_error"]
THRESHOLDS = ["all_approve", "all_decide", "majority_approve", "any_reject"]
STR_FIELDS = ["task_id", "session_id", "execution_id", "agent_profile_id", "error_message"]
plain_text = st.text(st.characters(codec="utf-8", exclude_categories=["Cs"], exclude_characters="\x00"), max_size=12)
"""Text a store can keep: no lone surrogate (`Cs`), no NUL (both are compile errors, IL010)."""


def q(text: str) -> str:
    """A `.wf` string literal written the way JSON would write it (`\\b`, `\\f` are not `.wf` escapes)."""
    return json.dumps(text, ensure_ascii=False).replace("\\b", "\\u0008").replace("\\f", "\\u000c")


text_lit = plain_text.map(q)


def _key(written: str) -> str:
    """The key a map entry names: a name as written, a string literal by its value (a key given twice, however
    written, is an error: valid programs never repeat one)."""
    return str(json.loads(written)) if written.startswith('"') else written
literal_values: st.SearchStrategy[str] = st.recursive(
    st.one_of(text_lit, st.integers(INT_MIN, INT_MAX).map(str), st.sampled_from(["true", "false"])),
    lambda inner: st.one_of(
        st.lists(inner, max_size=3).map(lambda xs: "[" + ", ".join(xs) + "]"),
        st.lists(st.tuples(st.one_of(names.filter(lambda n: n not in KEYWORDS), text_lit), inner), max_size=3,
                 unique_by=lambda e: _key(e[0])).map(
            lambda es: "{" + ", ".join(f"{k}: {v}" for k, v in es) + "}"),
        # nested names and calls are fine inside an `any` value
        st.lists(st.one_of(inner, st.sampled_from(["primary", "n_approve(2)", "a.b"])), max_size=2).map(
            lambda xs: "[" + ", ".join(xs) + "]"),
    ),
    max_leaves=6,
)
map_lits = st.lists(st.tuples(text_lit, literal_values), max_size=3, unique_by=lambda e: _key(e[0])).map(
    lambda es: "{" + ", ".join(f"{k}: {v}" for k, v in es) + "}")


_UNIT_SECONDS = {"s": 1, "m": 60, "h": 3600, "d": 86_400}
valid_durations = st.tuples(st.integers(1, 999), st.sampled_from(sorted(_UNIT_SECONDS)), st.sampled_from(["", "0"])
                            ).filter(lambda t: t[0] * _UNIT_SECONDS[t[1]] <= 365 * 86_400)
"""(number, unit, leading zeros) of a duration the checker accepts: 1s to 365d."""


def _seconds(d: tuple[int, str, str]) -> int:
    return d[0] * _UNIT_SECONDS[d[1]]


def _written(d: tuple[int, str, str]) -> str:
    return f"{d[2]}{d[0]}{d[1]}"


@st.composite
def _retry_text(draw: st.DrawFn) -> str:
    """` retry N backoff D[..MAX]` that checks: N of 1 to 100, MAX not below D."""
    first, most = draw(valid_durations), draw(st.one_of(st.none(), valid_durations))
    if most is not None and _seconds(most) < _seconds(first):
        first, most = most, first
    return f" retry {draw(st.integers(1, 100))} backoff {_written(first)}" + ("" if most is None else
                                                                             f"..{_written(most)}")


def _threshold() -> st.SearchStrategy[str]:
    return st.one_of(st.sampled_from(THRESHOLDS), st.integers(1, 9).map(lambda n: f"n_approve({n})"))


def _suffixes(prefix: str, max_size: int) -> st.SearchStrategy[list[str]]:
    return st.lists(st.from_regex(r"[a-z0-9_]{1,5}", fullmatch=True), max_size=max_size, unique=True).map(
        lambda xs: [prefix + x for x in xs])


@st.composite
def _action_text(draw: st.DrawFn, trigger: str, steps: list[str], roles: list[str],
                 user_kinds: dict[str, list[str]], payload: Sequence[str] = (),
                 inline: tuple[str, ...] = ()) -> str:
    """One action that checks on `trigger`; `payload`: the trigger's `str` parameters (a guard may read them);
    `inline`: the step's entry-excluded kinds."""
    role = st.sampled_from(roles)
    target = st.one_of(st.sampled_from(["primary", "workspace.ceo_agent", '"agent_profile_id:abc"']),
                       role.map(lambda r: q(f"participant_role:{r}")))
    step = st.sampled_from(steps)
    menu: list[st.SearchStrategy[str]] = []
    transitions = [
        st.just("move_to_next"), st.just("move_to_previous"),
        step.flatmap(lambda s: st.sampled_from([f"move_to_step({s})", f"move_to_step(step: {s})",
                                                f"move_to_step({q(s)})"])),
    ]
    data = st.tuples(text_lit, literal_values).map(lambda t: f"set_workflow_data(key: {t[0]}, value: {t[1]})")
    child = st.tuples(text_lit, st.lists(st.sampled_from(["description", "workflow", "step", "agent_profile"]),
                                         unique=True, max_size=2), text_lit).map(
        lambda t: "create_child_task(" + ", ".join([f"title: {t[0]}", *(f"{k}: {t[2]}" for k in t[1])]) + ")")
    switch = st.tuples(text_lit, st.booleans()).map(
        lambda t: f"switch_workflow(workflow: {t[0]}" + (f", step: {t[0]})" if t[1] else ")"))
    start_agent = st.one_of(st.just("auto_start_agent"), text_lit.map(lambda s: f"auto_start_agent(prompt: {s})"),
                            st.just("auto_start_agent(queue_if_busy: false)"))
    queue = st.one_of(
        st.just("queue_run"), st.just("queue_run()"),
        st.tuples(target, text_lit).map(lambda t: f"queue_run(target: {t[0]}, reason: {t[1]})"),
        st.tuples(st.sampled_from(["this", '"task-1"']), map_lits).map(lambda t: f"queue_run(task: {t[0]}, payload: {t[1]})"),
    )
    fan_out = st.one_of(role.map(lambda r: f"queue_run_for_each_participant(role: {r})"),
                        st.tuples(role, text_lit, map_lits).map(
                            lambda t: f"queue_run_for_each_participant({t[0]}, {t[1]}, {t[2]})"))
    script = st.tuples(text_lit.filter(lambda t: bool(json.loads(t).strip())), st.integers(1, 86_400),
                       st.booleans()).map(lambda t: f"run_script(command: {t[0]}" +
                                          (f", timeout_seconds: {t[1]})" if t[2] else ")"))
    if trigger in ("on_enter", "on_turn_complete", "on_exit"):
        menu.append(script)
    if trigger == "on_enter":
        menu += [start_agent, queue, fan_out,
                 st.sampled_from(["enable_plan_mode", "reset_agent_context", "clear_decisions", "run_code_review"]),
                 text_lit.map(lambda s: st.sampled_from([f"set_session_mode({s})", f"set_session_mode(mode: {s})"])
                              ).flatmap(lambda x: x),
                 text_lit.map(lambda s: f"run_code_review(agent_profile: {s})"),
                 role.map(lambda r: st.sampled_from([f"ensure_seats(role: {r})", f"ensure_seats({r})"])
                          ).flatmap(lambda x: x)]
    elif trigger == "on_exit":
        menu.append(st.just("disable_plan_mode"))
    elif trigger == "on_turn_start":
        menu += [data, *transitions]
    elif trigger == "on_turn_complete":
        menu += [st.just("disable_plan_mode"), data, child, switch, *transitions]
    elif trigger in GENERIC:
        menu += [start_agent, queue, fan_out, st.just("clear_decisions"), data, child, switch, *transitions]
    menu += [st.just(k) for k, allowed in user_kinds.items() if trigger in allowed]
    if not menu:
        return ""
    text: str = draw(st.one_of(*menu))
    if text.startswith("move_to") and draw(st.booleans()):
        text = _with_options(text, draw(map_lits))
    kind = re.split(r"[( ]", text, maxsplit=1)[0]
    if not text.startswith(("move_to", "t_")) and not (trigger == "on_enter" and kind in (*INLINE_ON_ENTRY, *inline)) \
            and draw(st.booleans()):
        return text + " continue_on_failure"  # ADR 0042: any action the runtime runs (IL326 elsewhere)
    if text.startswith(("move_to", "t_")):
        if draw(st.booleans()):
            text += f" when {draw(_transition_guard(trigger, role, payload))}"
        if draw(st.booleans()):
            text += " requires_approval"
    return text


PRELUDE_STR_PARAMS = {"on_comment": ["comment_id", "author_id", "body"],
                      "on_approval_resolved": ["approval_id", "status", "note"], "on_budget_alert": ["scope"]}
"""The prelude triggers' `str` parameters (std.wf), which a generated guard compares."""


@st.composite
def _transition_guard(draw: st.DrawFn, trigger: str, role: st.SearchStrategy[str], payload: Sequence[str],
                      depth: int = 0) -> str:
    """A guard that type-checks on a transition under `trigger` (docs/language.md §6): quorums, the payload's
    `str` parameters, `task.` and `host.` fields, joined with `not`, `and`, `or`."""
    quorum = st.tuples(role, _threshold()).map(lambda t: f"quorum({t[0]}, {t[1]})")
    strs = [f"payload.{p}" for p in payload] + ["task.description", "task.workflow_step_id"]
    str_expr = st.one_of(st.sampled_from(strs), text_lit)
    base = st.one_of(
        quorum, st.sampled_from(["task.is_from_office", "task.archived", "host.engine_ready"]),
        st.tuples(str_expr, st.sampled_from(["==", "!="]), str_expr).map(" ".join))
    if depth >= 2:
        return draw(base)
    sub = _transition_guard(trigger, role, payload, depth + 1)
    return draw(st.one_of(
        base, sub.map(lambda e: f"not ({e})"),
        st.tuples(sub, st.sampled_from(["and", "or"]), sub).map(lambda t: f"({t[0]}) {t[1]} ({t[2]})")))


INLINE_ON_ENTRY = ("enable_plan_mode", "set_session_mode", "auto_start_agent", "reset_agent_context")
"""The prelude's entry-excluded kinds: `continue_on_failure` on them under `on_enter` is IL326."""


def _with_options(move: str, options: str) -> str:
    """A prelude transition with its arrival's `options` (ADR 0043), as a named argument."""
    if move.endswith(")"):
        return f"{move[:-1]}, options: {options})"
    return f"{move}(options: {options})"


@st.composite
def _bool_expr(draw: st.DrawFn, depth: int = 0) -> str:
    str_expr = st.one_of(st.sampled_from([f"event.{f}" for f in STR_FIELDS]), text_lit)
    base = st.one_of(
        st.sampled_from(["event.user_initiated", "host.engine_ready", "true", "false"]),
        st.tuples(str_expr, st.sampled_from(["==", "!="]), str_expr).map(" ".join),
    )
    if depth >= 2:
        return draw(base)
    sub = _bool_expr(depth + 1)
    return draw(st.one_of(
        base,
        sub.map(lambda e: f"not ({e})"),
        st.tuples(sub, st.sampled_from(["and", "or"]), sub).map(lambda t: f"({t[0]}) {t[1]} ({t[2]})"),
    ))


@st.composite
def _dispatch_text(draw: st.DrawFn, name: str, trigger: str, params: list[str], events: list[str]) -> str:
    items = [f"event {draw(st.sampled_from(events))}"]
    guard = iter(range(10_000))

    def skip_tail() -> str:
        level = draw(st.sampled_from(["silent", "debug", "info", "warning", "error"]))
        g = next(guard)
        message = "" if level == "silent" else " " + q(f"{name} guard {g}: " + draw(plain_text))
        return f"skip g{g} {level}{message}"

    for _ in range(draw(st.integers(0, 3))):
        items.append(f"{skip_tail()} when {draw(_bool_expr())}")
    loaded: list[tuple[str, str]] = []
    if draw(st.booleans()):
        cases = draw(st.sampled_from([[], ["missing"], ["error"], ["missing", "error"], ["missing, error"]]))
        body = " ".join(f"{c} -> {skip_tail()}" for c in cases)
        items.append(f"load s = session(event.session_id) {{ {body} }}")
        loaded.append(("s", "agent_profile_id"))
    for _ in range(draw(st.integers(0, 2))):
        field = draw(st.sampled_from(STR_FIELDS))
        when = f" when {draw(_bool_expr())}" if draw(st.booleans()) else ""
        items.append(f"operation {q(f'{name}:{{event.{field}}}')}{when}")
    sources = [f"event.{f}" for f in STR_FIELDS] + [f"{n}.{f}" for n, f in loaded]
    str_expr = st.lists(st.one_of(st.sampled_from(sources), text_lit), min_size=1, max_size=3).map(" ?? ".join)
    items.append("payload { " + " ".join(f"{p} = {draw(str_expr)}" for p in params) + " }")
    return f"dispatch {name} on {trigger} {{\n  " + "\n  ".join(items) + "\n}"


@st.composite
def valid_programs(draw: st.DrawFn) -> str:
    """`.wf` text that compiles without errors (warnings allowed)."""
    out: list[str] = []
    new_roles = draw(_suffixes("r_", 2))
    if new_roles:
        out.append("role " + ", ".join(new_roles))
    roles = PRELUDE_ROLES + new_roles
    triggers = draw(_suffixes("on_u", 2))
    trigger_params: dict[str, list[str]] = {}
    for t in triggers:
        trigger_params[t] = draw(_suffixes("p_", 3))
        ps = ", ".join(f"{p}: str" for p in trigger_params[t])
        out.append(f"trigger {t} ({ps})" if ps or draw(st.booleans()) else f"trigger {t}")
    all_triggers = ["on_enter", "on_exit", "on_turn_start", "on_turn_complete", *GENERIC, *triggers]
    user_kinds: dict[str, list[str]] = {}
    placed: dict[str, list[str]] = {"exclude": [], "dispatch": []}
    events = ["agent_failure"]
    if draw(st.booleans()):
        # a user record shaped like agent_failure, so the same expressions type-check over it
        fields = [*(f"{f}: str" for f in STR_FIELDS), "user_initiated: bool"]
        order = draw(st.permutations(fields))
        out.append("record rec_ev { " + draw(st.sampled_from([" ", ", "])).join(order) + " }")
        events.append("rec_ev")
    for k in draw(_suffixes("t_", 2)):
        on = draw(st.lists(st.sampled_from(all_triggers[1:]), min_size=1, max_size=4, unique=True))
        param_text = draw(st.sampled_from(["", "(note: str?)"]))
        out.append(f"transition {k}{param_text} on {', '.join(on)}")
        user_kinds[k] = on
    for k in draw(_suffixes("k_", 3)):
        cls = draw(st.sampled_from(["session", "task"]))
        everywhere = draw(st.booleans())
        on = all_triggers if everywhere else draw(
            st.lists(st.sampled_from(all_triggers), min_size=1, max_size=4, unique=True))
        param_text = draw(st.sampled_from(["", "()", "(note: str = \"\", level: int = 1, tags: list[str] = [])",
                                           "(th: threshold = n_approve(2), extra: map = {}, opt: str?)"]))
        retry = draw(_retry_text()) if cls == "task" and draw(st.booleans()) else ""
        out.append(f"{cls} {k}{param_text}" + ("" if everywhere else " on " + ", ".join(on)) + retry)
        user_kinds[k] = on
        if "on_enter" in on:
            placed[draw(st.sampled_from(["exclude", "dispatch"]))].append(k)
    if placed["exclude"] or placed["dispatch"]:
        out.append("entry { " + " ".join(f"{m} {', '.join(ks)}" for m, ks in placed.items() if ks) + " }")
    for t in triggers:
        if draw(st.booleans()):
            out.append(draw(_dispatch_text(f"d_{t}", t, trigger_params[t], events)))
    for wf in draw(_suffixes("wf_", 2).filter(bool)):
        step_ids = draw(_suffixes("s_", 4).filter(bool))
        start = draw(st.integers(0, len(step_ids) - 1))
        positions = draw(st.one_of(st.none(), st.lists(st.integers(0, 99), min_size=len(step_ids),
                                                        max_size=len(step_ids), unique=True)))
        body = ["hidden"] if draw(st.booleans()) else []
        if draw(st.booleans()):
            words = draw(st.lists(st.from_regex(r"[A-Za-z0-9.,-]{1,12}", fullmatch=True), min_size=1, max_size=30))
            body.append(f"description {draw(text_lit)}" if draw(st.booleans())
                        else "description " + blockstr.fold(" ".join(words), "    ", draw(st.integers(20, 100))))
        if draw(st.booleans()):
            body.append(f'agent_profile {{agent_name: {draw(text_lit)}, model: {draw(text_lit)}}}')
        for i, sid in enumerate(step_ids):
            items: list[str] = []
            if i == start:
                items.append("start")
            items += [f for f in ("manual_move", "terminal") if draw(st.booleans())]
            if positions is not None:
                items.append(f"position {positions[i]}")
            if draw(st.booleans()):
                items.append(f"stage {draw(st.sampled_from(['work', 'review', 'approval', 'custom']))}")
            if draw(st.booleans()):
                items.append(f"prompt {draw(text_lit)}")
            if draw(st.booleans()):
                items.append(f"wip_limit {draw(st.integers(0, 50))}")
            for flag in ("show_in_command_panel", "auto_advance_requires_signal", "cancel_triggers_turn_complete"):
                written = draw(st.sampled_from(["", " true", " false", None]))
                if written is not None:
                    items.append(flag + written)
            if draw(st.booleans()):
                items.append(f"color {draw(text_lit)}")
            if draw(st.booleans()):
                items.append(f"auto_archive_after_hours {draw(st.integers(0, 1000))}")
            if draw(st.booleans()):
                items.append(f"agent_profile {q(draw(plain_text.filter(bool)))}")
            if i and draw(st.booleans()):
                items.append(f"pull_from {draw(st.sampled_from(step_ids[:i]))}")
            if draw(st.booleans()):  # ADR 0043: tag-configured steps never carry a profile nor are targeted
                items.append(f"agent_tag {q(draw(plain_text.filter(lambda t: bool(t.strip()))))}"
                             if i == len(step_ids) - 1 and not any(x.startswith("agent_profile") for x in items)
                             else "session_target " + draw(st.sampled_from(
                                 ["initial", *(f"step({other})" for other in step_ids[:-1])])))
            for trig in draw(st.lists(st.sampled_from(all_triggers), max_size=3, unique=True)):
                payload = PRELUDE_STR_PARAMS.get(trig) or trigger_params.get(trig, [])
                acts = [a for a in (draw(_action_text(trig, step_ids, roles, user_kinds, payload,
                                                      tuple(placed["exclude"])))
                                    for _ in range(draw(st.integers(0, 3)))) if a]
                items.append(f"on {trig} {{ " + "\n      ".join(acts) + " }")
            # timers (docs/language.md §6): never two of one kind and duration; actions of a generic trigger
            timers = draw(st.lists(st.tuples(st.sampled_from(["after", "every"]), valid_durations), max_size=2,
                                   unique_by=lambda t: (t[0], _seconds(t[1]))))
            for mode, duration in timers:
                acts = [a for a in (draw(_action_text("on_heartbeat", step_ids, roles, user_kinds))
                                    for _ in range(draw(st.integers(0, 3)))) if a]
                items.append(f"{mode} {_written(duration)} {{ " + "\n      ".join(acts) + " }")
            title = f" {draw(text_lit)}" if draw(st.booleans()) else ""
            body.append(f"step {sid}{title} {{\n    " + "\n    ".join(items) + "\n  }")
        title = f" {draw(text_lit)}" if draw(st.booleans()) else ""
        out.append(f"workflow {wf}{title} {{\n  " + "\n  ".join(body) + "\n}")
    return "\n".join(out) + "\n"


# ---- byte-level mutation ----------------------------------------------------------------------------

FRAGMENTS = [b"{", b"}", b"(", b")", b"[", b"]", b'"', b"\\", b"#", b"\n", b"when", b"not ", b"??", b"==",
             b" or ", b"entry {", b"-", b"9" * 30, b"\xff", b"\x00", b"\xc3", b"\xe2\x80\xa8", b"\r",
             "\ufeff".encode(), b"\\u12", b"step x { start }", b"on on_enter { ", b"move_to_step(", b",", b":",
             b"load x = task(event.task_id) {", b"skip z debug", b"payload {", b"use std", b"use nothing"]
# Byte sequences that are not UTF-8: a lone continuation byte, truncated sequences, an
# encoded surrogate, an overlong `/`, a five-byte form, bytes that never occur.
INVALID_UTF8 = [b"\x80", b"\xbf", b"\xc3", b"\xe2\x82", b"\xf0\x9f\x98", b"\xed\xa0\x80", b"\xc0\xaf",
                b"\xf8\x88\x80\x80\x80", b"\xfe", b"\xff"]
_WORD = re.compile(rb"[A-Za-z_][A-Za-z0-9_-]*")
_NUMBER = re.compile(rb"-?[0-9]+")
WORDS = sorted({m.group() for data in EXAMPLE_BYTES for m in _WORD.finditer(data)} | {b"zz", b"on_nothing", b"x-y"})
NUMBERS = [b"0", b"-1", b"1", b"65", b"9223372036854775807", b"9223372036854775808", b"-9223372036854775809", b"00"]
# Runs that sit around the nesting limit (64): brackets, `not` chains, operator chains.
DEEP = [b"(", b"[", b"{", b"not ", b" ?? x", b" or x", b" and x", b"x == (", b"list["]
# Weighted: token and line edits keep a file parseable more often, so the later passes see it;
# invalid UTF-8 and NUL bytes end at the decoder, so they are rare.
MUTATIONS = (("delete",) * 4 + ("insert",) * 4 + ("replace",) * 4 + ("duplicate",) * 3 + ("splice",) * 3
             + ("word",) * 10 + ("number",) * 3 + ("line",) * 6 + ("bitflip",) * 2 + ("truncate",) * 2
             + ("deep",) * 2 + ("utf8", "nul"))


def _fragment(rng: random.Random) -> bytes:
    if rng.random() < 0.7:
        return rng.choice(FRAGMENTS)
    top = 256 if rng.random() < 0.2 else 128  # mostly ASCII: most of the file should still decode
    return bytes(rng.randrange(top) for _ in range(rng.randint(0, 8)))


def _number(rng: random.Random) -> bytes:
    if rng.random() < 0.6:
        return rng.choice(NUMBERS)
    return str(rng.randint(-(2**70), 2**70) >> rng.randint(0, 70)).encode()


def mutate(data: bytes, rng: random.Random, pool: Sequence[bytes] = (), edits: int | None = None) -> bytes:
    """`data` after 1-4 random edits (or `edits`); `pool` gives splice partners (default: the examples)."""
    out = bytearray(data)
    partners = pool or EXAMPLE_BYTES
    for _ in range(rng.randint(1, 4) if edits is None else edits):
        op = rng.choice(MUTATIONS)
        i = rng.randint(0, len(out))
        j = rng.randint(i, min(len(out), i + 80))
        if op in ("word", "number"):
            spans = [m.span() for m in (_WORD if op == "word" else _NUMBER).finditer(out)]
            if spans:
                a, b = rng.choice(spans)
                out[a:b] = rng.choice(WORDS) if op == "word" else _number(rng)
        elif op == "line":
            lines = bytes(out).split(b"\n")
            k = rng.randrange(len(lines))
            how = rng.choice(("delete", "duplicate", "swap"))
            if how == "delete":
                del lines[k]
            elif how == "duplicate":
                lines.insert(k, lines[k])
            else:
                m = rng.randrange(len(lines))
                lines[k], lines[m] = lines[m], lines[k]
            out = bytearray(b"\n".join(lines))
        elif op == "delete":
            del out[i:j]
        elif op == "insert":
            out[i:i] = _fragment(rng)
        elif op == "replace":
            out[i:j] = _fragment(rng)
        elif op == "duplicate":
            out[j:j] = out[i:j]
        elif op == "splice":
            other = rng.choice(partners)
            out = out[:i] + other[rng.randint(0, len(other)):]
        elif op == "bitflip":
            for _ in range(rng.randint(1, 3)):
                if out:
                    k = rng.randrange(len(out))
                    out[k] ^= 1 << (7 if rng.random() < 0.2 else rng.randrange(7))  # the top bit breaks UTF-8
        elif op == "deep":
            out[i:i] = rng.choice(DEEP) * rng.randint(55, 75)
        elif op == "truncate":
            del out[i:]
        elif op == "utf8":
            out[i:i] = rng.choice(INVALID_UTF8)
        else:
            out[i:i] = b"\x00"
    return bytes(out)


@st.composite
def mutated_examples(draw: st.DrawFn) -> bytes:
    """A shipped example or the prelude after random byte edits (hypothesis drives the randomness)."""
    data = draw(st.sampled_from(EXAMPLE_BYTES))
    return mutate(data, draw(st.randoms(use_true_random=False)))
