"""Property tests: `.wf` text round-trips through parse and `format_module`, no input makes the
compiler raise, deep nesting is refused quickly, and plan JSON round-trips and refuses tampering.

Two generators build `.wf` text token by token from the grammar: `programs()` writes any
syntactically valid file (every declaration form, escapes, comments, odd spacing) and
`valid_programs()` writes files that also pass every static check, so that they compile to
a plan.  Profiles (`ci`, `campaign`) live in this folder's conftest.py.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, note
from hypothesis import strategies as st

from interlock.compiler import CompileResult, compile_bytes, compile_source
from interlock.dsl import SourceFile, ir, parse_source
from interlock.dsl.diagnostics import CODES
from interlock.dsl.parser import grammar_text
from interlock.dsl.printer import format_module
from interlock.dsl.render import render_concise, render_full
from interlock.dsl.source import Span
from interlock.runtime.plan import PLAN_VERSION, Plan, PlanError, dump_plan, load_plan, plan_digest

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE_FILES = sorted((ROOT / "examples").glob("*.wf"))
STD_FILE = ROOT / "compiler" / "prelude" / "std.wf"
ALL_FILES = [*EXAMPLE_FILES, STD_FILE]
EXAMPLE_BYTES = [p.read_bytes() for p in ALL_FILES]

# Every word the grammar spells as a literal (`"use"`, `TRUE: "true"`, …): never a generated name.
KEYWORDS = frozenset(re.findall(r'"([A-Za-z_][A-Za-z0-9_]*)"', grammar_text()))
INT_MIN, INT_MAX = -(2**63), 2**63 - 1

Toks = list[str]

# ---- helpers -------------------------------------------------------------------------------------

_SPAN_KEYS = frozenset(Span.model_fields)


def strip_spans(obj: Any) -> Any:
    """A dumped IR tree without positions: `span` keys dropped, bare span values (such as
    `ActionCall.requires_approval`) replaced by a marker, tuples turned into lists."""
    if isinstance(obj, dict):
        if obj.keys() == _SPAN_KEYS:
            return "<span>"
        return {k: strip_spans(v) for k, v in obj.items() if k != "span"}
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
_raw_chars = st.characters(exclude_characters='"\\\n', exclude_categories=["Cs"])
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


atoms: st.SearchStrategy[Toks] = st.recursive(
    st.one_of(paths, str_tok, int_tok, bool_tok),
    lambda inner: seq(["("], _levels(inner), [")"]),
    max_leaves=4,
)
exprs = _levels(atoms)

levels = st.sampled_from([["silent"], ["debug"], ["info"], ["warning"], ["error"]])

# ---- declarations ----------------------------------------------------------------------------------

use_decls = seq(["use"], one)
trigger_decls = seq(["trigger"], one, opt(params), opt(st.just(["entry"])))
role_decls = seq(["role"], comma_list(one, min_size=1))
action_decls = seq(st.sampled_from([["session"], ["task"], ["transition"]]), one, opt(params),
                   opt(seq(["on"], comma_list(one, min_size=1))))
record_decls = seq(["record"], one, ["{"],
                   many(seq(one, [":"], types, opt(st.just([","]))), 4),
                   ["}"])
entry_decls = seq(["entry", "{"],
                  many(seq(st.sampled_from([["exclude"], ["dispatch"]]), comma_list(one, min_size=1)), 3),
                  ["}"])

thresholds = seq(one, opt(seq(["("], int_tok, [")"])))
guards = seq(["when", "quorum", "("], one, [","], thresholds, [")"])
args = seq(["("], comma_list(st.one_of(seq(one, [":"], values), values), trailing=True), [")"])
actions = seq(one, opt(args), opt(guards), opt(st.just(["requires_approval"])))
handlers = seq(["on"], one, ["{"], many(actions, 3), ["}"])
step_items = st.one_of(
    st.sampled_from([["start"], ["manual_move"], ["terminal"]]),
    seq(st.sampled_from([["position"], ["wip_limit"]]), int_tok),
    seq(st.sampled_from([["stage"], ["pull_from"]]), one),
    seq(["prompt"], str_tok),
    handlers,
)
steps = seq(["step"], one, opt(str_tok), ["{"], many(step_items, 5), ["}"])
workflow_decls = seq(["workflow"], one, opt(str_tok), ["{"],
                     many(st.one_of(st.just(["hidden"]), steps), 3), ["}"])

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
plain_text = st.text(st.characters(codec="utf-8", exclude_categories=["Cs"]), max_size=12)


def q(text: str) -> str:
    """A `.wf` string literal written the way JSON would write it (`\\b`, `\\f` are not `.wf` escapes)."""
    return json.dumps(text, ensure_ascii=False).replace("\\b", "\\u0008").replace("\\f", "\\u000c")


text_lit = plain_text.map(q)
literal_values: st.SearchStrategy[str] = st.recursive(
    st.one_of(text_lit, st.integers(INT_MIN, INT_MAX).map(str), st.sampled_from(["true", "false"])),
    lambda inner: st.one_of(
        st.lists(inner, max_size=3).map(lambda xs: "[" + ", ".join(xs) + "]"),
        st.lists(st.tuples(st.one_of(names.filter(lambda n: n not in KEYWORDS), text_lit), inner), max_size=3).map(
            lambda es: "{" + ", ".join(f"{k}: {v}" for k, v in es) + "}"),
        # nested names and calls are fine inside an `any` value
        st.lists(st.one_of(inner, st.sampled_from(["primary", "n_approve(2)", "a.b"])), max_size=2).map(
            lambda xs: "[" + ", ".join(xs) + "]"),
    ),
    max_leaves=6,
)
map_lits = st.lists(st.tuples(text_lit, literal_values), max_size=3).map(
    lambda es: "{" + ", ".join(f"{k}: {v}" for k, v in es) + "}")


def _threshold() -> st.SearchStrategy[str]:
    return st.one_of(st.sampled_from(THRESHOLDS), st.integers(1, 9).map(lambda n: f"n_approve({n})"))


def _suffixes(prefix: str, max_size: int) -> st.SearchStrategy[list[str]]:
    return st.lists(st.from_regex(r"[a-z0-9_]{1,5}", fullmatch=True), max_size=max_size, unique=True).map(
        lambda xs: [prefix + x for x in xs])


@st.composite
def _action_text(draw: st.DrawFn, trigger: str, steps: list[str], roles: list[str],
                 user_kinds: dict[str, list[str]]) -> str:
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
    if text.startswith(("move_to", "t_")):
        if draw(st.booleans()):
            text += f" when quorum({draw(role)}, {draw(_threshold())})"
        if draw(st.booleans()):
            text += " requires_approval"
    return text


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
        out.append(f"{cls} {k}{param_text}" + ("" if everywhere else " on " + ", ".join(on)))
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
            if i and draw(st.booleans()):
                items.append(f"pull_from {draw(st.sampled_from(step_ids[:i]))}")
            for trig in draw(st.lists(st.sampled_from(all_triggers), max_size=3, unique=True)):
                acts = [a for a in (draw(_action_text(trig, step_ids, roles, user_kinds))
                                    for _ in range(draw(st.integers(0, 3)))) if a]
                items.append(f"on {trig} {{ " + "\n      ".join(acts) + " }")
            title = f" {draw(text_lit)}" if draw(st.booleans()) else ""
            body.append(f"step {sid}{title} {{\n    " + "\n    ".join(items) + "\n  }")
        title = f" {draw(text_lit)}" if draw(st.booleans()) else ""
        out.append(f"workflow {wf}{title} {{\n  " + "\n  ".join(body) + "\n}")
    return "\n".join(out) + "\n"


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
        indent = len(line) - len(line.lstrip(" "))
        assert indent % 2 == 0, repr(line)
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
    """A plan without source positions (formatting moves lines) or the digest over them."""
    def strip(obj: Any) -> Any:
        if isinstance(obj, dict):
            return {k: strip(v) for k, v in obj.items() if k not in ("source", "digest")}
        if isinstance(obj, list):
            return [strip(v) for v in obj]
        return obj
    return strip(plan.model_dump(mode="json"))


@given(valid_programs())
def test_valid_programs_round_trip(text: str) -> None:
    assert_round_trip(text)


@given(st.lists(exprs, min_size=1, max_size=4))
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


_FRAGMENTS = [b"{", b"}", b"(", b")", b"[", b"]", b'"', b"\\", b"#", b"\n", b"when", b"not ", b"??", b"==",
              b" or ", b"entry {", b"-", b"9" * 30, b"\xff", b"\x00", b"\xc3", b"\xe2\x80\xa8", b"\r",
              "\ufeff".encode(), b"\\u12", b"step x { start }", b"on on_enter { ", b"move_to_step(", b",", b":",
              b"load x = task(event.task_id) {", b"skip z debug", b"payload {", b"use std", b"use nothing"]
fragments = st.one_of(st.sampled_from(_FRAGMENTS), st.binary(max_size=8))


_WORD = re.compile(rb"[A-Za-z_][A-Za-z0-9_-]*")
_NUMBER = re.compile(rb"-?[0-9]+")
_WORDS = sorted({m.group() for data in EXAMPLE_BYTES for m in _WORD.finditer(data)} | {b"zz", b"on_nothing", b"x-y"})
_numbers = st.sampled_from([b"0", b"-1", b"1", b"65", b"9223372036854775808", b"00"]) | st.integers().map(
    lambda n: str(n).encode())


@st.composite
def mutated_examples(draw: st.DrawFn) -> bytes:
    data = bytearray(draw(st.sampled_from(EXAMPLE_BYTES)))
    for _ in range(draw(st.integers(1, 4))):
        op = draw(st.sampled_from(["delete", "insert", "replace", "duplicate", "splice", "word", "word", "number",
                                   "line"]))
        i = draw(st.integers(0, len(data)))
        j = draw(st.integers(i, min(len(data), i + 80)))
        if op in ("word", "number"):
            # token-level edits keep the file parseable more often, so the later passes see it
            spans = [m.span() for m in (_WORD if op == "word" else _NUMBER).finditer(data)]
            if spans:
                a, b = draw(st.sampled_from(spans))
                data[a:b] = draw(st.sampled_from(_WORDS) if op == "word" else _numbers)
        elif op == "line":
            lines = bytes(data).split(b"\n")
            k = draw(st.integers(0, len(lines) - 1))
            how = draw(st.sampled_from(["delete", "duplicate", "swap"]))
            if how == "delete":
                del lines[k]
            elif how == "duplicate":
                lines.insert(k, lines[k])
            else:
                m = draw(st.integers(0, len(lines) - 1))
                lines[k], lines[m] = lines[m], lines[k]
            data = bytearray(b"\n".join(lines))
        elif op == "delete":
            del data[i:j]
        elif op == "insert":
            data[i:i] = draw(fragments)
        elif op == "replace":
            data[i:j] = draw(fragments)
        elif op == "duplicate":
            data[j:j] = data[i:j]
        else:
            other = draw(st.sampled_from(EXAMPLE_BYTES))
            data = data[:i] + other[draw(st.integers(0, len(other))):]
    return bytes(data)


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
def test_deep_nesting_is_refused_quickly(n: int) -> None:
    for what, text in _nested(n):
        started = time.perf_counter()
        result = compile_source(SourceFile("deep.wf", text))
        elapsed = time.perf_counter() - started
        check_result(result)
        assert [d.code for d in result.diagnostics] == ["IL003"], what
        assert elapsed < 2.0, (what, elapsed)


@pytest.mark.parametrize("op", ["??", "or", "and"])
@pytest.mark.parametrize("n", [66, 2000])
def test_long_operator_chains_are_refused(op: str, n: int) -> None:
    # a left-associative chain is flat in the parse tree but n deep in the IR
    chain = f" {op} ".join(["event.user_initiated"] * n)
    text = f"trigger t\ndispatch d on t {{ event agent_failure\n skip s silent when {chain} }}"
    started = time.perf_counter()
    result = compile_source(SourceFile("chain.wf", text))
    check_result(result)
    assert [d.code for d in result.diagnostics] == ["IL003"]
    assert time.perf_counter() - started < 5.0


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
        data["digest"] = plan_digest(data)
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

