"""A checked `Program` in, an executable `Plan` out.

Runs only after every pass reported no error, so it may assume that names resolve
and arguments bind.  Nodes are built with `construct` from complete field dicts (the
runtime validates plans in full when it loads them).  Arguments are resolved (steps, targets, thresholds), defaults are
filled in, an omitted `reason` becomes the trigger's name (a timer's label, `after 48h`), transition targets are
precomputed, and each step's entry handler is split into the runtime-dispatched and
host-inline halves by the entry policy.  The plan is checked against the runtime's plan rules
(`interlock.runtime.plan_rules`, what `load_plan` checks) before it is returned.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping
from typing import Any

from interlock import __version__
from interlock.dsl import ir
from interlock.dsl.construct import construct
from interlock.runtime import plan as P
from interlock.runtime.durations import duration_seconds, timer_label
from interlock.runtime.plan_rules import structure_problems

from .binding import bind_args
from .context import Context
from .exprs import PLACEHOLDER, ExprScope, type_of
from .guards import guard_scope
from .steps import StepOrder, step_position, transition_target
from .values import plan_value

__all__ = ["lower_plan", "seal", "agent_profile", "session_target"]


def _ref(node: ir.Node) -> P.SourceRef:
    return construct(P.SourceRef, {"file": node.span.file, "line": node.span.line, "col": node.span.col})


def _params(params: tuple[ir.Param, ...]) -> tuple[P.PlanParam, ...]:
    return tuple(
        construct(P.PlanParam, {
            "name": p.name.name, "type": p.type.render(), "required": p.default is None and not p.type.optional,
            "default": None if p.default is None else plan_value(p.default, p.type)})
        for p in params)


def lower_plan(ctx: Context) -> P.Plan:
    """The plan of a checked program; its `digest` is left empty (`seal` fills it in)."""
    sym = ctx.symbols
    entry = sym.entry_trigger or ""
    exclude: list[str] = []
    dispatch: list[str] = []
    for clause in sym.entry_clauses:
        target = exclude if clause.mode == "exclude" else dispatch
        for k in clause.kinds:
            if k.name not in target:
                target.append(k.name)
    dispatched, inline = frozenset(dispatch), frozenset(exclude)

    triggers = tuple(construct(P.PlanTrigger, {"name": t.name.name, "entry": t.entry, "params": _params(t.params)})
                     for t in sym.triggers.values())
    kinds = tuple(construct(P.PlanKind, {"name": k.name.name, "action_class": k.action_class,
                                         "params": _params(k.params), "triggers": sym.kind_triggers(k),
                                         "retry": _retry(k.retry), "source": _ref(k.name)})
                  for k in sym.kinds.values())
    records = tuple(construct(P.PlanRecord, {"name": r.name.name, "fields": {f.name.name: f.type.render()
                                                                              for f in r.fields}})
                    for r in sym.records.values())

    workflows: list[P.PlanWorkflow] = []
    for wf in ctx.workflows():
        order = StepOrder(wf)
        steps: list[P.PlanStep] = []
        start = ""
        for index, step in enumerate(wf.steps):
            flags = {f.name for f in step.flags if f.value}
            settings = {s.name: s.value for s in step.settings}
            if "start" in flags and not start:
                start = step.name.name
            handlers: dict[str, tuple[P.PlanAction, ...]] = {}
            for handler in step.handlers:
                trig = handler.trigger.name
                handlers[trig] = tuple(_action(ctx, order, step, trig, trig, pos, action)
                                       for pos, action in enumerate(handler.actions))
            timers = tuple(_timer(ctx, order, step, timer) for timer in step.timers)
            entry_actions = handlers.get(entry, ())
            stage = settings.get("stage")
            prompt = settings.get("prompt")
            wip = settings.get("wip_limit")
            pull = settings.get("pull_from")
            steps.append(construct(P.PlanStep, {
                "id": step.name.name, "title": step.title.value if step.title else step.name.name,
                "position": step_position(step, index), "start": "start" in flags,
                "manual_move": "manual_move" in flags, "terminal": "terminal" in flags,
                "stage": stage.name if isinstance(stage, ir.Ident) else "custom",
                "prompt": prompt.value if isinstance(prompt, ir.StrLit) else None,
                "wip_limit": wip.value if isinstance(wip, ir.IntLit) else 0,
                "pull_from": pull.name if isinstance(pull, ir.Ident) else None,
                **_step_metadata(flags, settings),
                "handlers": handlers, "timers": timers,
                "entry_dispatch": tuple(a for a in entry_actions if a.kind in dispatched),
                "entry_inline": tuple(a.kind for a in entry_actions if a.kind in inline),
                "source": _ref(step.name)}))
        steps.sort(key=lambda s: order.index[s.id])
        workflows.append(construct(P.PlanWorkflow, {
            "id": wf.name.name, "title": wf.title.value if wf.title else wf.name.name, "hidden": wf.hidden,
            **_workflow_metadata(wf),
            "start_step": start, "steps": tuple(steps), "source": _ref(wf.name)}))

    sequences = tuple(_sequence(ctx, block) for block in sym.dispatches)
    return _checked(construct(P.Plan, {
        "plan_version": P.PLAN_VERSION, "compiler": f"interlock {__version__}",
        "sources": tuple(m.file for m in ctx.program.modules), "triggers": triggers, "roles": tuple(sym.roles),
        "kinds": kinds, "records": records,
        "entry_policy": construct(P.EntryPolicy, {"trigger": entry, "exclude": tuple(exclude),
                                                  "dispatch": tuple(dispatch)}),
        "workflows": tuple(workflows), "sequences": sequences, "digest": "", "layout_digest": ""}))


def _checked(plan: P.Plan) -> P.Plan:
    """`plan`, checked against the structural rules `load_plan` checks (the runtime's own function, stated once
    there): the passes reported every broken rule in the source already, so a plan that breaks one is a compiler
    fault.  (References, which the resolve pass checks name by name, are left to `load_plan`: checking them
    again here cost 2-3% of a large compile.)"""
    broken = structure_problems(plan)
    if broken:
        raise AssertionError(f"the compiler built a plan that breaks the plan rules: {'; '.join(broken[:5])}")
    return plan


def seal(plan: P.Plan) -> P.Plan:
    """The plan with its digests filled in, so that it equals its own `load_plan(dump_plan(plan))`."""
    sealed = P.seal_digests(plan.model_dump(mode="json"))
    return plan.model_copy(update={"digest": sealed["digest"], "layout_digest": sealed["layout_digest"]})


def _text(value: object) -> str | None:
    return value.value if isinstance(value, ir.StrLit) else None


def agent_profile(value: object) -> P.AgentProfile | None:
    """The plan form of an `agent_profile` setting: a string is a profile id, a map the portable triple."""
    match value:
        case ir.StrLit(value=text):
            return construct(P.AgentProfile, {"id": text, "agent_name": None, "model": None, "mode": None})
        case ir.MapValue(entries=entries):
            fields = {e.key: e.value.value for e in entries if isinstance(e.value, ir.StrLit)}
            return construct(P.AgentProfile, {"id": None, "agent_name": None, "model": None, "mode": None} | fields)
    return None


def _step_metadata(flags: Collection[str], settings: Mapping[Any, Any]) -> dict[str, Any]:
    hours = settings.get("auto_archive_after_hours")
    return {"description": _text(settings.get("description")), "color": _text(settings.get("color")),
            "show_in_command_panel": "show_in_command_panel" in flags,
            "auto_archive_after_hours": hours.value if isinstance(hours, ir.IntLit) else 0,
            "auto_advance_requires_signal": "auto_advance_requires_signal" in flags,
            "cancel_triggers_turn_complete": "cancel_triggers_turn_complete" in flags,
            "agent_profile": agent_profile(settings.get("agent_profile")),
            "session_target": session_target(settings.get("session_target")), "agent_tag": _text(settings.get("agent_tag"))}


def session_target(value: object) -> P.SessionTarget | None:
    """The plan form of `session_target initial` / `session_target step(STEP)` (checked by the host pass)."""
    match value:
        case ir.NameValue(parts=("initial",)):
            return construct(P.SessionTarget, {"kind": "initial", "step_id": None})
        case ir.CallValue(args=(ir.NameValue() as ref,)):
            return construct(P.SessionTarget, {"kind": "step", "step_id": ref.dotted})
    return None


def _workflow_metadata(wf: ir.WorkflowDecl) -> dict[str, Any]:
    settings = {s.name: s.value for s in wf.settings}
    return {"description": _text(settings.get("description")), "prompt": _text(settings.get("prompt")),
            "agent_profile": agent_profile(settings.get("agent_profile"))}


def _retry(retry: ir.RetryPolicy | None) -> P.PlanRetry | None:
    if retry is None:
        return None
    most = retry.max_backoff
    return construct(P.PlanRetry, {"attempts": retry.attempts.value, "backoff": duration_seconds(retry.backoff.text),
                                   "max_backoff": None if most is None else duration_seconds(most.text)})


def _timer(ctx: Context, order: StepOrder, step: ir.StepDecl, timer: ir.Timer) -> P.PlanTimer:
    """A timer, named by its label (`after 48h`): the label is also the `reason` its actions default to."""
    name = timer_label(timer.mode, timer.duration.text)
    return construct(P.PlanTimer, {
        "kind": timer.mode, "seconds": duration_seconds(timer.duration.text), "label": name,
        "actions": tuple(_action(ctx, order, step, None, name, pos, action) for pos, action in enumerate(timer.actions)),
        "source": _ref(timer)})


def _action(ctx: Context, order: StepOrder, step: ir.StepDecl, trigger: str | None, reason: str, pos: int,
            action: ir.ActionCall) -> P.PlanAction:
    """One action of a handler of `trigger` (None: of a timer); an omitted `reason` argument is `reason`."""
    kind = ctx.symbols.kinds[action.name.name]
    bound, _ = bind_args(action, kind, ctx.symbols.signatures)
    args: dict[str, Any] = {}
    for p in kind.params:
        arg = bound.get(p.name.name)
        if arg is not None:
            args[p.name.name] = plan_value(arg.value, p.type)
        elif p.default is not None:
            args[p.name.name] = plan_value(p.default, p.type)
        elif p.name.name == "reason":
            args[p.name.name] = reason
        else:
            args[p.name.name] = None
    guard = when = None
    if isinstance(action.guard, ir.QuorumGuard):  # one quorum: the plan's `guard`, as every plan has it
        th = action.guard.threshold
        guard = construct(P.PlanGuard, {"role": action.guard.role.name, "threshold": th.name.name,
                                        "count": th.count.value if th.count else None,
                                        "source": _ref(action.guard)})
    elif action.guard is not None:  # any other guard: an expression (ADR 0038)
        when = _expr(action.guard, guard_scope(ctx.symbols, trigger))
    target = transition_target(order, step, action) if kind.action_class == "transition" else None
    return construct(P.PlanAction, {
        "position": pos, "kind": kind.name.name, "action_class": kind.action_class, "args": args, "guard": guard,
        "when": when, "requires_approval": action.requires_approval is not None, "target_step": target,
        "continue_on_failure": action.continue_on_failure is not None, "source": _ref(action.name)})


def _expr(expr: ir.Expr, scope: ExprScope) -> P.PlanExpr:
    match expr:
        case ir.StrLit() | ir.IntLit() | ir.BoolLit():
            return construct(P.LitX, {"op": "lit", "value": expr.value})
        case ir.PathExpr():
            return construct(P.PathX, {"op": "path", "path": expr.parts, "type": type_of(expr, scope, []) or "any"})
        case ir.NotExpr():
            return construct(P.NotX, {"op": "not", "arg": _expr(expr.operand, scope)})
        case ir.BinaryExpr():
            return construct(P.BinX, {"op": expr.op, "left": _expr(expr.left, scope),
                                      "right": _expr(expr.right, scope)})
        case ir.QuorumGuard():
            count = expr.threshold.count
            return construct(P.QuorumX, {"op": "quorum", "role": expr.role.name,
                                         "threshold": expr.threshold.name.name,
                                         "count": None if count is None else count.value})
    raise TypeError(f"not an expression node: {type(expr).__name__}")


def _outcome(case: ir.LoadCase | None) -> P.GuardOutcome | None:
    if case is None:
        return None
    return construct(P.GuardOutcome, {"guard": case.guard.name, "level": case.level,
                                      "message": case.message.value if case.message else None})


def _sequence(ctx: Context, block: ir.DispatchDecl) -> P.PlanSequence:
    sym = ctx.symbols
    scope = ExprScope(sym)
    event = next((i.record.name for i in block.items if isinstance(i, ir.EventItem)), "")
    scope.names["event"] = event
    scope.names["host"] = "host"
    steps: list[P.SkipStep | P.LoadStep] = []
    operations: list[P.PlanOperation] = []
    payload: dict[str, P.PlanExpr] = {}
    for item in block.items:
        match item:
            case ir.SkipItem():
                steps.append(construct(P.SkipStep, {
                    "step": "skip", "guard": item.name.name, "level": item.level,
                    "message": item.message.value if item.message else None, "when": _expr(item.condition, scope),
                    "source": _ref(item.name)}))
            case ir.LoadItem():
                steps.append(_load_step(item, scope))
                scope.names[item.name.name] = item.loader.name
            case ir.OperationItem():
                operations.append(_operation(item, scope))
            case ir.PayloadItem():
                for a in item.assignments:
                    payload[a.name.name] = _expr(a.value, scope)
    return construct(P.PlanSequence, {
        "name": block.name.name, "trigger": block.trigger.name, "event": event, "steps": tuple(steps),
        "operations": tuple(operations), "payload": payload, "source": _ref(block.name)})


def _load_step(item: ir.LoadItem, scope: ExprScope) -> P.LoadStep:
    missing = next((c for c in item.cases if "missing" in c.outcomes), None)
    error = next((c for c in item.cases if "error" in c.outcomes), None)
    return construct(P.LoadStep, {
        "step": "load", "name": item.name.name, "loader": item.loader.name,
        "args": tuple(_expr(a, scope) for a in item.args), "on_missing": _outcome(missing),
        "on_error": _outcome(error), "source": _ref(item.name)})


def _operation(item: ir.OperationItem, scope: ExprScope) -> P.PlanOperation:
    """An operation-id template split into literal text and `{path}` placeholders."""
    text = item.template.value
    parts: list[str | tuple[str, ...]] = []
    last = 0
    for m in PLACEHOLDER.finditer(text):
        if m.start() > last:
            parts.append(text[last:m.start()])
        parts.append(tuple(m.group(1).strip().split(".")))
        last = m.end()
    if last < len(text):
        parts.append(text[last:])
    return construct(P.PlanOperation, {
        "template": text, "parts": tuple(parts),
        "when": _expr(item.condition, scope) if item.condition is not None else None, "source": _ref(item)})
