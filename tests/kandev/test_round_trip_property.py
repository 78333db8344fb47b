"""Property: for any workflow the template format can carry, `import(export(x))` compiles to the plan of `x` —
kandev today's forms included: `run_script` with its timeout and `continue_on_failure`, seats on entry, entry
options on moves, session targets, agent tags, folded descriptions, and `every` timers of `queue_run` actions (kandev's
`on_heartbeat` with `cadence_seconds`; a duration written in its largest exact unit, as the import writes it).

A `cadence_seconds` on an `on on_heartbeat` handler is not generated: its export is kandev's timed heartbeat, which
the import writes as an `every` timer (tests/kandev/test_timers.py)."""

from __future__ import annotations

import json

from hypothesis import given
from hypothesis import strategies as st
from support.kandev import comparable, compiled, export, import_clean

from interlock.dsl import blockstr
from interlock.kandev import formats as F
from interlock.runtime.durations import seconds_duration

ROLES = ["reviewer", "approver", "qa-lead"]
TITLES = ["Backlog", "Work", "Review", "Done", "QA", "approved", "Ship it", "no"]
text = st.text(st.characters(codec="utf-8", exclude_categories=["Cs"], exclude_characters="\x00\r"), max_size=20)


def q(value: str) -> str:
    return json.dumps(value, ensure_ascii=False).replace("\\b", "\\u0008").replace("\\f", "\\u000c")


@st.composite
def _action(draw: st.DrawFn, trigger: str, steps: list[str]) -> str:
    kind = F.KIND_OF_TYPE[draw(st.sampled_from(F.TEMPLATE_ALLOWED[trigger]))]
    if kind in ("move_to_next", "move_to_previous", "move_to_step"):
        args = [draw(st.sampled_from(steps))] if kind == "move_to_step" else []
        options = draw(st.sampled_from(["", f"instructions: {q(draw(text))}", "skip_step_prompt: false",
                                        f"instructions: {q(draw(text))}, skip_step_prompt: true"]))
        if options:
            args.append(f"options: {{{options}}}")
        out = f"{kind}({', '.join(args)})" if args else kind
        if trigger != "on_turn_start" and draw(st.booleans()):
            th = draw(st.sampled_from([*F.THRESHOLDS, "n_approve(2)"]))
            out += f" when quorum({draw(st.sampled_from(ROLES))}, {th})"
        return out
    if kind == "run_script":
        out = f"run_script(command: {q(draw(text.filter(lambda t: bool(t.strip()))))}"
        out += f", timeout_seconds: {draw(st.integers(1, 86_400))})" if draw(st.booleans()) else ")"
        return out + draw(st.sampled_from(["", " continue_on_failure"]))
    if kind == "ensure_seats":
        return f"ensure_seats(role: {draw(st.sampled_from(ROLES))})"
    if kind == "set_session_mode":
        return f"set_session_mode(mode: {q(draw(text.filter(bool)))})"
    if kind in ("queue_run", "queue_run_for_each_participant"):
        args = []
        if kind == "queue_run_for_each_participant":
            args.append(f"role: {draw(st.sampled_from(ROLES))}")
        else:
            target = draw(st.sampled_from([None, "primary", "workspace.ceo_agent", '"participant_role:reviewer"',
                                           '"agent_profile_id:p-1"']))
            if target:
                args.append(f"target: {target}")
            if draw(st.booleans()):
                args.append(f"task: {draw(st.sampled_from(['this', q('task-9')]))}")
        if draw(st.booleans()):
            args.append(f"reason: {q(draw(text))}")
        if draw(st.booleans()):
            args.append(f"payload: {{k: {q(draw(text))}, n: {draw(st.integers(-5, 5))}, b: true}}")
        return f"{kind}({', '.join(args)})" if args else kind
    return kind


@st.composite
def _heartbeat_run(draw: st.DrawFn) -> str:
    """A `queue_run` of an `every` timer: its reason omitted (the timer's label), kandev's default or another."""
    args = []
    target = draw(st.sampled_from([None, "workspace.ceo_agent", '"agent_profile_id:p-1"']))
    if target:
        args.append(f"target: {target}")
    reason = draw(st.sampled_from([None, "on_heartbeat", "nudge"]))
    if reason:
        args.append(f"reason: {q(reason)}")
    return f"queue_run({', '.join(args)})" if args else "queue_run"


@st.composite
def workflows(draw: st.DrawFn) -> str:
    n = draw(st.integers(1, 4))
    ids = [f"s{i}" if draw(st.booleans()) else f"step-{i}" for i in range(n)]
    titles = [draw(st.sampled_from(TITLES)) for _ in ids]
    start = draw(st.integers(0, n - 1))
    positions = draw(st.permutations(range(n)))
    done = [i for i, t in enumerate(titles) if t.lower() in ("done", "complete", "completed", "approved")]
    terminal = max(done, key=lambda i: positions[i], default=-1)  # the seed's: the last one on the board
    lines = [f"workflow wf-{draw(st.integers(0, 9))} {q(draw(text))} {{"]
    if draw(st.booleans()):
        lines.append("  hidden")
    if draw(st.booleans()):
        words = draw(st.lists(st.from_regex(r"[A-Za-z0-9.,'-]{1,10}", fullmatch=True), min_size=1, max_size=25))
        lines.append(f"  description {q(draw(text))}" if draw(st.booleans())
                     else "  description " + blockstr.fold(" ".join(words), "    ", draw(st.integers(30, 90))))
    tagged = draw(st.integers(-1, n - 1))  # a tag-configured step (ADR 0043): no profile, never a session target
    for i, sid in enumerate(ids):
        items = [f"position {positions[i]}"]
        if i == start:
            items.append("start")
        if i == terminal:
            items.append("terminal")
        for flag in ("manual_move", "show_in_command_panel", "auto_advance_requires_signal",
                     "cancel_triggers_turn_complete"):
            items.append(draw(st.sampled_from(["", flag, f"{flag} false", f"{flag} true"])))
        if draw(st.booleans()):
            items.append(f"stage {draw(st.sampled_from(F.STAGES))}")
        if draw(st.booleans()):
            items.append(f"color {q(draw(text))}")
        if draw(st.booleans()):
            items.append(f"prompt {q(draw(text))}")
        if draw(st.booleans()):
            items.append(f"auto_archive_after_hours {draw(st.integers(0, 500))}")
        if i == tagged:
            items.append(f"agent_tag {q(draw(text.filter(lambda t: bool(t.strip()))))}")
        elif draw(st.booleans()):
            items.append(f"agent_profile {q(draw(text.filter(bool)))}")
        targets = ["initial", *(f"step({other})" for j, other in enumerate(ids) if j != tagged)]
        if draw(st.booleans()):
            items.append(f"session_target {draw(st.sampled_from(targets))}")
        beat = draw(st.one_of(st.none(), st.integers(1, 7 * 86_400)))  # an `every` timer: kandev's heartbeat
        triggers = [t for t in F.TRIGGERS if beat is None or t != "on_heartbeat"]  # one heartbeat list a step
        for trigger in draw(st.lists(st.sampled_from(triggers), max_size=3, unique=True)):
            acts = draw(st.lists(_action(trigger, ids), min_size=1, max_size=3))
            items.append(f"on {trigger} {{\n      " + "\n      ".join(acts) + "\n    }")
        if beat is not None:
            runs = draw(st.lists(_heartbeat_run(), min_size=1, max_size=2))
            items.append(f"every {seconds_duration(beat)} {{\n      " + "\n      ".join(runs) + "\n    }")
        lines.append(f"  step {sid} {q(titles[i])} {{\n    " + "\n    ".join(x for x in items if x) + "\n  }")
    body = "\n".join(lines) + "\n}\n"
    return ("role qa-lead\n" if "qa-lead" in body else "") + body  # the import declares the roles it uses


@given(workflows())
def test_import_of_the_export_has_the_plan_of_the_original(wf: str) -> None:
    plan = compiled("x.wf", wf)
    yaml_text, _ = export(wf, "template")
    imported = import_clean(yaml_text)
    again = compiled("y.wf", imported.workflows[0][1])
    assert comparable(again) == comparable(plan)
