"""Checked declarations in, warnings out: things that are legal but can never do what they say.

Transitions that can never fire, moves past either end, self-transitions, steps no path
reaches, dispatch and transition guards shadowed by an earlier always-matching (or identical)
guard, the unbounded
restart loop of `auto_start_agent` under `on_agent_error`, and `requires_approval` moves
to a step nobody may move a task into by hand.
"""

from __future__ import annotations

from interlock.dsl import Diagnostic, ir
from interlock.dsl.diagnostics import label, make

from ..context import Context, block_trigger, step_blocks
from ..flow import Flow
from ..steps import StepOrder, transition_target

__all__ = ["analyse"]

_MOVES = ("move_to_next", "move_to_previous", "move_to_step")


def analyse(ctx: Context) -> list[Diagnostic]:
    out: list[Diagnostic] = []
    sym = ctx.symbols
    for wf in ctx.workflows():
        if not wf.steps:
            continue
        order = StepOrder(wf)
        by_id: dict[str, ir.StepDecl] = {}
        for decl in wf.steps:
            by_id.setdefault(decl.name.name, decl)
        by_hand = {sid for sid, decl in by_id.items() if decl.has("manual_move")}
        for step in wf.steps:
            for block in step_blocks(step):  # a timer's transitions are checked like a handler's
                unguarded: ir.ActionCall | None = None
                guards = _TransitionGuards()
                for action in block.actions:
                    kind = sym.kinds.get(action.name.name)
                    if kind is None or kind.action_class != "transition":
                        if action.name.name == "auto_start_agent" and block_trigger(block) == "on_agent_error":
                            out.append(make("restart-loop", action.name.span,
                                            "`auto_start_agent` under `on_agent_error` restarts the agent that just "
                                            "failed; every new failure dispatches again, with no bound",
                                            help="queue a run for someone else (`queue_run(target: "
                                                 "workspace.ceo_agent)`) or move the task instead"))
                        continue
                    if unguarded is not None:
                        out.append(make("unreachable-transition", action.name.span,
                                        f"this transition never fires: the unguarded `{unguarded.name.name}` on line "
                                        f"{unguarded.span.line} always fires first",
                                        labels=(label(unguarded.span, "unguarded transition"),),
                                        help="guard the earlier transition with `when …` or "
                                             "`requires_approval`, or remove this one"))
                    else:
                        guards.check(action, out)
                    target = transition_target(order, step, action)
                    if action.name.name in ("move_to_next", "move_to_previous") and target is None:
                        which = "last" if action.name.name == "move_to_next" else "first"
                        out.append(make("move-past-end", action.name.span,
                                        f"`{action.name.name}` on `{step.name.name}`, the {which} step, never moves"))
                    if target is not None and target == step.name.name:
                        out.append(make("self-transition", action.span,
                                        f"`{step.name.name}` moves to itself: the task stays, nothing enters"))
                    if target in by_id and action.requires_approval is not None and target not in by_hand:
                        out.append(make("approval-dead-end", action.requires_approval,
                                        f"`requires_approval` waits for a person to move the task to `{target}`, "
                                        f"but `{target}` has no `manual_move`, so nobody can",
                                        labels=(label(by_id[target].name.span, "no `manual_move` here"),),
                                        help=f"add `manual_move` to step `{target}`, or drop `requires_approval`"))
                    if action.guard is None and action.requires_approval is None and unguarded is None:
                        unguarded = action
        start = next((s for s in order.steps if s.has("start")), None)
        if start is None:
            continue
        # reachable = through any transition, a `pull_from`, or by hand into a `manual_move` step (and on from there)
        reached = Flow(wf, sym).reachable([start.name.name])
        for step in wf.steps:
            manual = step.has("manual_move")
            if step.name.name not in reached and not manual:
                out.append(make("unreachable-step", step.name.span,
                                f"step `{step.name.name}` is unreachable from the start step `{start.name.name}`",
                                help="add a transition to it, a `pull_from`, or `manual_move`"))
    for dispatch in ctx.dispatches():
        _shadowed(dispatch, out)
    return out


def _always(expr: ir.Expr) -> bool:
    match expr:
        case ir.BoolLit():
            return expr.value
        case ir.NotExpr():
            return _never(expr.operand)
        case ir.BinaryExpr(op="or"):
            return _always(expr.left) or _always(expr.right)
        case ir.BinaryExpr(op="and"):
            return _always(expr.left) and _always(expr.right)
    return False


def _never(expr: ir.Expr) -> bool:
    match expr:
        case ir.BoolLit():
            return not expr.value
        case ir.NotExpr():
            return _always(expr.operand)
        case ir.BinaryExpr(op="or"):
            return _never(expr.left) and _never(expr.right)
        case ir.BinaryExpr(op="and"):
            return _never(expr.left) or _never(expr.right)
    return False


def _strip(node: ir.Node) -> object:
    """An expression without its spans, for comparing conditions."""
    match node:
        case ir.PathExpr():
            return ("path", node.parts)
        case ir.StrLit() | ir.IntLit() | ir.BoolLit():
            return (node.kind, node.value)
        case ir.NotExpr():
            return ("not", _strip(node.operand))
        case ir.BinaryExpr():
            return (node.op, _strip(node.left), _strip(node.right))
        case ir.QuorumGuard():
            count = node.threshold.count
            return ("quorum", node.role.name, node.threshold.name.name, None if count is None else count.value)
    return type(node).__name__


class _TransitionGuards:
    """The guarded transitions of one handler so far, to find a guard that can never match: an earlier eligible
    transition's guard always holds, or has the same condition (first eligible transition wins)."""

    def __init__(self) -> None:
        self.always: ir.ActionCall | None = None
        self.seen: dict[object, ir.ActionCall] = {}

    def check(self, action: ir.ActionCall, out: list[Diagnostic]) -> None:
        name = action.name.name
        if self.always is not None:
            assert self.always.guard is not None
            out.append(make("shadowed-guard", action.name.span,
                            f"this `{name}` never fires: the guard of `{self.always.name.name}` on line "
                            f"{self.always.span.line} always holds, and the first eligible transition wins",
                            labels=(label(self.always.guard.span, "always true"),)))
            return
        if action.guard is None:
            return
        key = _strip(action.guard)
        first = self.seen.get(key)
        if first is not None:
            assert first.guard is not None
            out.append(make("shadowed-guard", action.guard.span,
                            f"this guard never decides: `{first.name.name}` on line {first.span.line} has the same guard "
                            "and fires first", labels=(label(first.guard.span, "same guard"),)))
        elif action.requires_approval is None:  # a `requires_approval` move never fires: it hides nothing
            self.seen[key] = action
            if _always(action.guard):
                self.always = action


def _shadowed(block: ir.DispatchDecl, out: list[Diagnostic]) -> None:
    always: ir.SkipItem | None = None
    seen: dict[object, ir.SkipItem] = {}
    for item in block.items:
        if isinstance(item, ir.SkipItem):
            key = _strip(item.condition)
            if always is not None:
                out.append(make("shadowed-guard", item.name.span,
                                f"guard `{item.name.name}` never matches: `{always.name.name}` always matches first",
                                labels=(label(always.condition.span, "always true"),)))
            elif key in seen:
                out.append(make("shadowed-guard", item.name.span,
                                f"guard `{item.name.name}` never matches: `{seen[key].name.name}` has the same "
                                "condition and matches first", labels=(label(seen[key].name.span, "same condition"),)))
            elif _always(item.condition):
                always = item
            seen.setdefault(key, item)
    unconditional: ir.OperationItem | None = None
    for item in block.items:
        if isinstance(item, ir.OperationItem):
            if unconditional is not None:
                out.append(make("shadowed-guard", item.span,
                                "this operation is never used: the one before it has no `when` and always applies",
                                labels=(label(unconditional.span, "always applies"),)))
            elif item.condition is None or _always(item.condition):
                unconditional = item
