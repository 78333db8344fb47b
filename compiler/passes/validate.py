"""Declarations in, structural diagnostics out: steps, handlers, the entry policy and dispatch blocks.

Covers: duplicate steps, positions, attributes and handlers; exactly one start step;
`pull_from` cycles; kinds declared on a trigger they do not allow; guards on
non-transitions; the entry policy's exactly-one-list rule; one entry trigger; dispatch
block shape (one event, unique guards and messages, one block per trigger, exact payload);
record field names the runtime reserves (a leading `_`).
"""

from __future__ import annotations

from interlock.dsl import Diagnostic, Span, ir
from interlock.dsl.diagnostics import label, make
from interlock.runtime.vocabulary import GENERIC_TRIGGERS

from ..context import Context
from ..steps import StepOrder, step_position, transition_target
from ..symbols import listing

__all__ = ["validate"]


def validate(ctx: Context) -> list[Diagnostic]:
    out: list[Diagnostic] = []
    for wf in ctx.workflows():
        _workflow(wf, ctx, out)
    _entry_policy(ctx, out)
    _dispatch_blocks(ctx, out)
    _record_fields(ctx, out)
    return out


def _record_fields(ctx: Context, out: list[Diagnostic]) -> None:
    # the runtime stores its own bookkeeping beside a record's fields under names starting with `_`
    for decl in ctx.user_decls():
        if isinstance(decl, ir.RecordDecl):
            for f in decl.fields:
                if f.name.name.startswith("_"):
                    plain = f.name.name.lstrip("_")
                    fix = (f"rename it, e.g. `{plain}`" if plain and plain[0].isalpha()
                           else "give it a name that does not start with `_`")
                    out.append(make("reserved-field-name", f.name.span,
                                    f"field `{f.name.name}` of record `{decl.name.name}` starts with `_`; names "
                                    "starting with `_` are reserved for the runtime",
                                    help=fix))


def _workflow(wf: ir.WorkflowDecl, ctx: Context, out: list[Diagnostic]) -> None:
    _workflow_settings(wf, out)
    if not wf.steps:
        out.append(make("empty-workflow", wf.name.span, f"workflow `{wf.name.name}` has no steps",
                        help='declare at least one step: `step work "Work" { start }`'))
        return
    seen: dict[str, ir.StepDecl] = {}
    positions: dict[int, ir.StepDecl] = {}
    starts: list[ir.StepDecl] = []
    for index, step in enumerate(wf.steps):
        sid = step.name.name
        if sid in seen:
            out.append(make("duplicate-step", step.name.span, f"step `{sid}` is declared twice in `{wf.name.name}`",
                            labels=(label(seen[sid].name.span, "first declared here"),)))
        else:
            seen[sid] = step
        pos = step_position(step, index)
        if pos in positions:
            explicit = _setting_span(step, "position")
            implicit = () if explicit is not None else (
                f"`{sid}` has no `position`, so it takes its declaration index {pos} (counted from 0)",)
            out.append(make("duplicate-position", explicit or step.name.span,
                            f"steps `{positions[pos].name.name}` and `{sid}` both have position {pos}",
                            labels=(label(positions[pos].name.span, "position taken here"),), notes=implicit))
        else:
            positions[pos] = step
        if step.has("start"):
            starts.append(step)
        _attributes(step, out)
        _handlers(wf, step, ctx, out)
    if not starts:
        out.append(make("start-step-count", wf.name.span, f"workflow `{wf.name.name}` has no start step",
                        help="mark the step new tasks begin in with `start`"))
    for extra in starts[1:]:
        flag = next(f for f in extra.flags if f.name == "start" and f.value)
        out.append(make("start-step-count", flag.span, f"workflow `{wf.name.name}` has more than one start step",
                        labels=(label(starts[0].name.span, "first start step"),)))
    _pull_cycles(wf, out)


PROFILE_KEYS = ("agent_name", "model", "mode")


def _agent_profile(value: ir.Node, out: list[Diagnostic]) -> None:
    """`agent_profile` is a non-empty profile id or a map `{agent_name: "…", model: "…", mode: "…"}`."""
    help_ = 'write `agent_profile "PROFILE_ID"` or `agent_profile {agent_name: "…", model: "…", mode: "…"}`'
    match value:
        case ir.StrLit(value=text) if text:
            return
        case ir.MapValue(entries=entries):
            for e in entries:
                if e.key not in PROFILE_KEYS:
                    out.append(make("invalid-step-setting", e.key_span or e.span, f"`agent_profile` has no key "
                                    f"`{e.key}`", help="its keys are " + ", ".join(f"`{k}`" for k in PROFILE_KEYS)))
                elif not isinstance(e.value, ir.StrLit):
                    out.append(make("invalid-step-setting", e.value.span, f"`agent_profile` key `{e.key}` must be "
                                    "a string", help=help_))
            if not any(e.key == "agent_name" for e in entries):
                out.append(make("invalid-step-setting", value.span, "`agent_profile` needs an `agent_name`",
                                help=help_))
            return
    out.append(make("invalid-step-setting", value.span, "`agent_profile` must be a profile id or a profile map",
                    help=help_))


def _workflow_settings(wf: ir.WorkflowDecl, out: list[Diagnostic]) -> None:
    seen: dict[str, ir.WorkflowSetting] = {}
    for s in wf.settings:
        if s.name in seen:
            out.append(make("duplicate-step-attribute", s.span, f"`{s.name}` is given twice on workflow "
                            f"`{wf.name.name}`", labels=(label(seen[s.name].span, "first given here"),)))
        else:
            seen[s.name] = s
        if s.name == "agent_profile":
            _agent_profile(s.value, out)


def _setting_span(step: ir.StepDecl, name: str) -> Span | None:
    for s in step.settings:
        if s.name == name:
            return s.span
    return None


def _attributes(step: ir.StepDecl, out: list[Diagnostic]) -> None:
    seen: dict[str, ir.StepFlag | ir.StepSetting] = {}
    attrs: tuple[ir.StepFlag | ir.StepSetting, ...] = (*step.flags, *step.settings)
    for attr in attrs:
        if attr.name in seen:
            out.append(make("duplicate-step-attribute", attr.span, f"`{attr.name}` is given twice on step "
                            f"`{step.name.name}`", labels=(label(seen[attr.name].span, "first given here"),)))
        else:
            seen[attr.name] = attr
        if isinstance(attr, ir.StepSetting) and attr.name == "agent_profile":
            _agent_profile(attr.value, out)
        if isinstance(attr, ir.StepSetting) and attr.name in ("position", "wip_limit", "auto_archive_after_hours") \
                and isinstance(attr.value, ir.IntLit) and attr.value.value < 0:
            out.append(make("invalid-step-setting", attr.value.span, f"`{attr.name}` must be 0 or more"))
        if isinstance(attr, ir.StepSetting) and attr.name == "pull_from" and isinstance(attr.value, ir.Ident) \
                and attr.value.name == step.name.name:
            out.append(make("pull-from-cycle", attr.value.span, f"step `{step.name.name}` pulls from itself"))


def _handlers(wf: ir.WorkflowDecl, step: ir.StepDecl, ctx: Context, out: list[Diagnostic]) -> None:
    sym = ctx.symbols
    seen: dict[str, ir.Handler] = {}
    for handler in step.handlers:
        trig = handler.trigger.name
        if trig in seen:
            out.append(make("duplicate-handler", handler.trigger.span,
                            f"step `{step.name.name}` has two `on {trig}` handlers",
                            labels=(label(seen[trig].trigger.span, "first handler"),),
                            help="merge the two action lists into one handler"))
        else:
            seen[trig] = handler
        if trig not in sym.triggers:
            continue
        for action in handler.actions:
            _action(wf, step, action, trig, ctx, out)
    for timer in step.timers:
        for action in timer.actions:
            _action(wf, step, action, None, ctx, out)


def _action(wf: ir.WorkflowDecl, step: ir.StepDecl, action: ir.ActionCall, trig: str | None, ctx: Context,
            out: list[Diagnostic]) -> None:
    """An action's kind may be declared on its handler's trigger (`trig` None: a timer, whose actions are those
    of generic triggers), and only a transition takes a guard or `requires_approval`."""
    sym = ctx.symbols
    kind = sym.kinds.get(action.name.name)
    if kind is None:
        return
    if trig is None:
        if not any(sym.kind_allows(kind, t) for t in GENERIC_TRIGGERS):
            allowed = listing(sym.kind_triggers(kind)) or "no trigger"
            out.append(make("kind-not-allowed-on-trigger", action.name.span,
                            f"`{kind.name.name}` may not be used in a timer: a timer's actions are those allowed on "
                            "a generic trigger",
                            labels=(label(kind.name.span, "kind declared here"),),
                            notes=(f"`{kind.name.name}` may be declared on {allowed}; the generic triggers are "
                                   + listing(GENERIC_TRIGGERS),),
                            help=("run it from a handler of a trigger it allows, or declare it on a generic "
                                  "trigger too") if ctx.is_user(kind) else "run it from a handler of a trigger it "
                                                                           "allows"))
    elif kind.action_class == "transition" and trig == sym.entry_trigger:
        out.append(make("transition-on-entry", action.name.span,
                        f"transition `{kind.name.name}` cannot run on the entry trigger `{trig}`",
                        help="an arrival cannot move the task again; move it from `on_turn_complete` "
                             "or another trigger"))
    elif not sym.kind_allows(kind, trig):
        allowed = listing(sym.kind_triggers(kind)) or "no trigger"
        out.append(make("kind-not-allowed-on-trigger", action.name.span,
                        f"`{kind.name.name}` may not be declared on `{trig}`",
                        labels=(label(kind.name.span, "kind declared here"),),
                        notes=(f"`{kind.name.name}` may be declared on {allowed}",),
                        help=_own_transition_help(wf, step, action, kind, sym.triggers[trig], ctx)))
    if kind.action_class != "transition":
        if action.guard is not None:
            out.append(make("guard-on-non-transition", action.guard.span,
                            f"`when …` on `{kind.name.name}`, which is not a transition",
                            help="only transitions (move_to_next, move_to_previous, move_to_step) take guards"))
        if action.requires_approval is not None:
            out.append(make("guard-on-non-transition", action.requires_approval,
                            f"`requires_approval` on `{kind.name.name}`, which is not a transition"))


def _own_transition_help(wf: ir.WorkflowDecl, step: ir.StepDecl, action: ir.ActionCall, kind: ir.ActionKindDecl,
                         trigger: ir.TriggerDecl, ctx: Context) -> str | None:
    """For a prelude transition on a trigger of the user's own: how to declare a transition for it."""
    if kind.action_class != "transition" or ctx.is_user(kind) or not ctx.is_user(trigger):
        return None
    target = transition_target(StepOrder(wf), step, action) or "STEP"
    name = f"move_on_{trigger.name.name.removeprefix('on_')}"
    return (f"the prelude's transitions are not declared on your trigger `{trigger.name.name}`; declare one that is: "
            f"`transition {name}(step: step) on {trigger.name.name}`, and write `{name}({target})`")


def _pull_cycles(wf: ir.WorkflowDecl, out: list[Diagnostic]) -> None:
    pulls: dict[str, ir.Ident] = {}
    for step in wf.steps:
        for s in step.settings:
            if s.name == "pull_from" and isinstance(s.value, ir.Ident) and s.value.name != step.name.name:
                pulls.setdefault(step.name.name, s.value)
    # Each step is walked once: a walk stops at a step an earlier walk already followed,
    # since every cycle past that point has been found (and reported) by that walk.
    done: set[str] = set()
    for start in pulls:
        if start in done:
            continue
        path = [start]
        index = {start: 0}
        current = start
        while current in pulls:
            current = pulls[current].name
            if current in index:
                cycle = path[index[current]:]
                out.append(make("pull-from-cycle", pulls[cycle[-1]].span,
                                "`pull_from` forms a cycle: " + " -> ".join([*cycle, current])))
                break
            if current in done:
                break
            index[current] = len(path)
            path.append(current)
        done.update(path)


def _entry_policy(ctx: Context, out: list[Diagnostic]) -> None:
    sym = ctx.symbols
    entries = [t for t in sym.triggers.values() if t.entry]
    for extra in entries[1:]:
        if ctx.is_user(extra):
            out.append(make("entry-trigger-count", extra.name.span,
                            f"trigger `{extra.name.name}` is a second entry trigger",
                            labels=(label(entries[0].name.span, "the entry trigger"),)))
    if not entries:
        main = ctx.program.main
        out.append(make("entry-trigger-count", main.span.model_copy(update={"end_line": 1, "end_col": 1}),
                        "no trigger is marked `entry`"))
        return
    entry = entries[0].name.name
    for kind in sym.kinds.values():
        if kind.action_class == "transition" and ctx.is_user(kind):
            for t in kind.triggers or ():
                if t.name == entry:
                    out.append(make("transition-on-entry", t.span,
                                    f"transition `{kind.name.name}` may not be declared on the entry trigger `{entry}`",
                                    help=f"remove `{entry}` from the `on` list"))
    listed: dict[str, tuple[str, ir.Ident]] = {}
    for clause in sym.entry_clauses:
        for k in clause.kinds:
            listed_kind = sym.kinds.get(k.name)
            if listed_kind is None:
                continue
            user = ctx.is_user(k)
            if listed_kind.action_class == "transition":
                if user:
                    out.append(make("transition-on-entry", k.span,
                                    f"`{k.name}` is a transition; transitions never run on entry"))
                continue
            if not sym.kind_allows(listed_kind, entry):
                if user:
                    out.append(make("entry-list-not-a-kind", k.span,
                                    f"`{k.name}` may not be declared on `{entry}`, so it has no place in an entry list"))
                continue
            prev = listed.get(k.name)
            if prev is None:
                listed[k.name] = (clause.mode, k)
            elif prev[0] != clause.mode and user:
                out.append(make("entry-kind-in-both-lists", k.span,
                                f"`{k.name}` is in both `exclude` and `dispatch`",
                                labels=(label(prev[1].span, f"already listed under `{prev[0]}` here"),),
                                help="a kind runs inline (exclude) or is dispatched (dispatch), never both"))
    for kind in sym.kinds.values():
        if kind.action_class == "transition" or not ctx.is_user(kind):
            continue
        if sym.kind_allows(kind, entry) and kind.name.name not in listed:
            out.append(make("entry-kind-unplaced", kind.name.span,
                            f"`{kind.name.name}` may be declared on `{entry}` but is in neither entry list",
                            help=f"add `entry {{ dispatch {kind.name.name} }}` (the runtime runs it once per "
                                 f"arrival) or `entry {{ exclude {kind.name.name} }}` (the host runs it inline)"))


def _dispatch_blocks(ctx: Context, out: list[Diagnostic]) -> None:
    """One dispatch block per trigger; each block's event line, guards, loads and payload."""
    sym = ctx.symbols
    by_trigger: dict[str, ir.DispatchDecl] = {}
    for block in sym.dispatches:
        trig = block.trigger.name
        first = by_trigger.get(trig)
        if first is None:
            by_trigger[trig] = block
        elif ctx.is_user(block):
            out.append(make("duplicate-dispatch", block.trigger.span,
                            f"trigger `{trig}` already has a dispatch block (`{first.name.name}`)",
                            labels=(label(first.trigger.span, "first dispatch block"),)))
    messages: dict[str, ir.StrLit] = {}  # guard messages are unique within the file
    for block in ctx.dispatches():
        _dispatch_items(block, messages, out)
        trigger = sym.triggers.get(block.trigger.name)
        if trigger is not None:
            _dispatch_payload(block, trigger, out)


def _dispatch_items(block: ir.DispatchDecl, messages: dict[str, ir.StrLit], out: list[Diagnostic]) -> None:
    """A dispatch block's one `event` line, its guards (names, levels, messages) and its loads."""
    events = [i for i in block.items if isinstance(i, ir.EventItem)]
    if not events:
        out.append(make("dispatch-without-event", block.name.span,
                        f"dispatch `{block.name.name}` has no `event` line", help="add `event RECORD`"))
    for extra in events[1:]:
        out.append(make("dispatch-without-event", extra.span, f"dispatch `{block.name.name}` has two `event` lines",
                        labels=(label(events[0].span, "first event line"),)))
    guards: dict[str, ir.Ident] = {}
    loads: dict[str, ir.Ident] = {}
    for item in block.items:
        if isinstance(item, ir.SkipItem):
            _guard(item.name, item.level, item.message, guards, messages, out)
        elif isinstance(item, ir.LoadItem):
            if item.name.name in loads or item.name.name in ("event", "host"):
                out.append(make("duplicate-load", item.name.span, f"`{item.name.name}` is already defined "
                                "in this dispatch block"))
            loads[item.name.name] = item.name
            seen_outcomes: set[str] = set()
            for case in item.cases:
                for outcome in case.outcomes:
                    if outcome in seen_outcomes:
                        out.append(make("duplicate-guard-name", case.guard.span,
                                        f"the `{outcome}` outcome of `{item.name.name}` is handled twice"))
                    seen_outcomes.add(outcome)
                _guard(case.guard, case.level, case.message, guards, messages, out)


def _guard(name: ir.Ident, level: str, message: ir.StrLit | None, guards: dict[str, ir.Ident],
           messages: dict[str, ir.StrLit], out: list[Diagnostic]) -> None:
    """One guard of a dispatch block (a `skip` line or a load's case): its name once in the block, a message when it
    records, none when silent, and a message used once in the file."""
    if name.name in guards:
        out.append(make("duplicate-guard-name", name.span, f"guard `{name.name}` is declared twice",
                        labels=(label(guards[name.name].span, "first declared here"),)))
    else:
        guards[name.name] = name
    if level != "silent" and message is None:
        out.append(make("guard-message-missing", name.span,
                        f"guard `{name.name}` records at `{level}` but has no message",
                        help=f'add a stable message: `skip {name.name} {level} "…"`'))
    if level == "silent" and message is not None:
        out.append(make("silent-guard-with-message", message.span,
                        f"guard `{name.name}` is silent, so its message is never recorded",
                        help="drop the message or give the guard a level"))
    if message is not None and level != "silent":
        if message.value in messages:
            out.append(make("duplicate-guard-message", message.span,
                            "this guard message is already used; messages must be unique within the file",
                            labels=(label(messages[message.value].span, "first used here"),)))
        else:
            messages[message.value] = message


def _dispatch_payload(block: ir.DispatchDecl, trigger: ir.TriggerDecl, out: list[Diagnostic]) -> None:
    """A dispatch block's one `payload`, assigning each parameter of its trigger once."""
    params = {p.name.name: p for p in trigger.params}
    payloads = [i for i in block.items if isinstance(i, ir.PayloadItem)]
    if not payloads and params:
        out.append(make("payload-mismatch", block.name.span,
                        f"dispatch `{block.name.name}` has no payload, but `{trigger.name.name}` takes "
                        + listing(params)))
    for extra_payload in payloads[1:]:
        out.append(make("payload-mismatch", extra_payload.span, "a dispatch block has one `payload`"))
    if payloads:
        payload = payloads[0]
        assigned: dict[str, ir.Assignment] = {}
        for a in payload.assignments:
            if a.name.name not in params:
                out.append(make("payload-mismatch", a.name.span,
                                f"`{trigger.name.name}` has no parameter `{a.name.name}`",
                                labels=(label(trigger.name.span, "trigger declared here"),)))
            elif a.name.name in assigned:
                out.append(make("payload-mismatch", a.name.span, f"`{a.name.name}` is assigned twice"))
            assigned.setdefault(a.name.name, a)
        missing = [p for p in params if p not in assigned]
        if missing:
            out.append(make("payload-mismatch", payload.span,
                            "payload misses " + listing(missing) +
                            f" of `{trigger.name.name}`"))
