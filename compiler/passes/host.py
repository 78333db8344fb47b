"""Host actions and host settings in, diagnostics out: `continue_on_failure` where a failure can be continued from,
`run_script`'s arguments in the ranges kandev accepts, and the `session_target` / `agent_tag` step settings
checked as kandev checks them (ADR 0042, ADR 0043).
"""

from __future__ import annotations

import json

from interlock.dsl import Diagnostic, ir
from interlock.dsl.diagnostics import label, make
from interlock.runtime.options import MAX_OPTIONS_BYTES

from ..binding import bind_args
from ..context import Context, block_trigger, step_blocks
from ..values import plan_value

__all__ = ["host", "TIMEOUT_RANGE"]

TIMEOUT_RANGE = (1, 86_400)
"""`run_script`'s `timeout_seconds`: one second to a day (kandev refuses anything else)."""


def host(ctx: Context) -> list[Diagnostic]:
    out: list[Diagnostic] = []
    inline = _inline_kinds(ctx)
    for wf in ctx.workflows():
        _session_targets(wf, out)
        for step in wf.steps:
            for block in step_blocks(step):
                for action in block.actions:
                    _action(ctx, block_trigger(block), action, inline, out)
    return out


def _inline_kinds(ctx: Context) -> frozenset[str]:
    """The kinds the entry policy excludes (the host's arriving session runs them inline on entry)."""
    return frozenset(k.name for clause in ctx.symbols.entry_clauses if clause.mode == "exclude" for k in clause.kinds)


def _action(ctx: Context, trigger: str | None, action: ir.ActionCall, inline: frozenset[str],
            out: list[Diagnostic]) -> None:
    """`trigger`: the handler's (None: a timer's action, abort-on-first like a generic trigger's)."""
    kind = ctx.symbols.kinds.get(action.name.name)
    if kind is None:
        return
    flag = action.continue_on_failure
    if flag is not None:
        if kind.action_class == "transition":
            out.append(make("continue-on-failure-misplaced", flag, f"`continue_on_failure` on `{kind.name.name}`, a "
                            "transition: a transition runs no executor, so it has no failure to continue from",
                            help="write it on the session or task action whose failure should not stop the "
                                 "handler"))
        elif trigger == ctx.symbols.entry_trigger and kind.name.name in inline:
            out.append(make("continue-on-failure-misplaced", flag, f"`continue_on_failure` on `{kind.name.name}` on "
                            f"`{trigger}`: the host's arriving session runs it inline, never the "
                            "runtime, so the flag would mean nothing",
                            help="drop it (entry actions the runtime dispatches are record-and-continue anyway)"))
    if kind.name.name == "run_script" and not ctx.is_user(kind):
        _run_script(ctx, action, kind, out)
    if kind.action_class == "transition":
        _options(ctx, action, kind, out)


def _options(ctx: Context, action: ir.ActionCall, kind: ir.ActionKindDecl, out: list[Diagnostic]) -> None:
    """A transition's arrival `options` fit what the runtime stores with a ledger row (ADR 0043)."""
    bound, _ = bind_args(action, kind, ctx.symbols.signatures)
    options = bound.get("options")
    if options is None or not isinstance(options.value, ir.MapValue):
        return
    size = len(json.dumps(plan_value(options.value, None), ensure_ascii=False, separators=(",", ":")).encode())
    if size > MAX_OPTIONS_BYTES:
        out.append(make("argument-out-of-range", options.value.span, f"these `options` are {size:,} bytes as JSON: "
                        f"an arrival's entry options are at most {MAX_OPTIONS_BYTES:,}",
                        help="keep long texts in the step's `prompt`, and pass only what changes per move"))


def _run_script(ctx: Context, action: ir.ActionCall, kind: ir.ActionKindDecl, out: list[Diagnostic]) -> None:
    """kandev refuses an empty command and a timeout outside one second to a day (the types are typecheck's)."""
    bound, _ = bind_args(action, kind, ctx.symbols.signatures)
    command = bound.get("command")
    if command is not None and isinstance(command.value, ir.StrLit) and not command.value.value.strip():
        out.append(make("argument-out-of-range", command.value.span, "`run_script` needs a command: this one is "
                        "empty", help='write the shell command to run, e.g. `run_script(command: "make test")`'))
    timeout = bound.get("timeout_seconds")
    low, high = TIMEOUT_RANGE
    if timeout is not None and isinstance(timeout.value, ir.IntLit) and not low <= timeout.value.value <= high:
        out.append(make("argument-out-of-range", timeout.value.span, f"`timeout_seconds` {timeout.value.value} is "
                        f"out of range: {low} to {high:,} seconds (a day)",
                        help="leave it out for the default, 600 seconds"))


def _session_targets(wf: ir.WorkflowDecl, out: list[Diagnostic]) -> None:
    """`session_target initial` or `session_target step(STEP)`: STEP a step of this workflow that is not
    tag-configured (ADR 0043)."""
    steps = {s.name.name: s for s in wf.steps}
    tagged: dict[str, ir.StepSetting] = {}
    for step in wf.steps:
        tag = _setting(step, "agent_tag")
        if tag is not None:
            tagged[step.name.name] = tag
            _agent_tag(step, tag, out)
    for step in wf.steps:
        target = _setting(step, "session_target")
        if target is None:
            continue
        value = target.value
        match value:
            case ir.NameValue(parts=("initial",)):
                continue
            case ir.CallValue(name=ir.NameValue(parts=("step",)), args=(ir.NameValue(parts=(sid,)) as ref,)):
                if sid not in steps:
                    out.append(make("unknown-step", ref.span, f"`session_target` names no step `{sid}` of workflow "
                                    f"`{wf.name.name}`", help="name a step of the same workflow"))
                elif sid in tagged:
                    out.append(make("invalid-step-setting", ref.span, f"`session_target` names `{sid}`, a "
                                    "tag-configured step (`agent_tag`): its conversation's agent is picked at each "
                                    "entry, so it cannot be continued",
                                    labels=(label(tagged[sid].span, "tag-configured here"),)))
                continue
        out.append(make("invalid-step-setting", value.span, "`session_target` is `initial` (the task's first "
                        "conversation) or `step(STEP)` (the conversation of another step of this workflow)",
                        help="write `session_target initial` or `session_target step(review)`"))


def _agent_tag(step: ir.StepDecl, tag: ir.StepSetting, out: list[Diagnostic]) -> None:
    if isinstance(tag.value, ir.StrLit) and not tag.value.value.strip():
        out.append(make("invalid-step-setting", tag.value.span, "`agent_tag` names no tag: it is empty",
                        help='write the agent tag the host picks a profile from, e.g. `agent_tag "reviewers"`'))
    profile = _setting(step, "agent_profile")
    if profile is not None:
        out.append(make("invalid-step-setting", tag.span, f"step `{step.name.name}` names both an agent tag and an "
                        "agent profile: a tag-configured step has its profile picked by the host at entry",
                        labels=(label(profile.span, "agent profile given here"),),
                        help="keep one of `agent_tag` and `agent_profile`"))


def _setting(step: ir.StepDecl, name: str) -> ir.StepSetting | None:
    return next((s for s in step.settings if s.name == name), None)
