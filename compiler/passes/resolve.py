"""Names in, diagnostics out (and guards written where the parser reads them as actions): every trigger, kind, record, type, role, threshold, stage and
`pull_from` step a user file mentions must be declared (argument values are typecheck's)."""

from __future__ import annotations

from interlock.dsl import Diagnostic, Span, ir
from interlock.dsl.diagnostics import make

from ..context import Block, Context
from ..guards import quorums
from ..symbols import STAGES, THRESHOLDS, suggest
from ..types import unknown_type

__all__ = ["resolve"]

# names other languages use for the built-in types; difflib is too strict to suggest these
_TYPE_ALIASES = {alias: f"did you mean `{t}`?" for alias, t in (
    ("string", "str"), ("integer", "int"), ("number", "int"), ("boolean", "bool"), ("dict", "map"),
    ("object", "map"), ("array", "list[T]"))}


def resolve(ctx: Context) -> list[Diagnostic]:
    out: list[Diagnostic] = []
    sym = ctx.symbols

    def trigger(ident: ir.Ident) -> None:
        if ident.name not in sym.triggers:
            out.append(make("unknown-trigger", ident.span, f"unknown trigger `{ident.name}`",
                            help=suggest(ident.name, sym.triggers)))

    known: list[str] = []  # type names, built at the first unknown type

    def typ(t: ir.TypeRef) -> None:
        bad = unknown_type(t, sym)
        if bad is not None:
            if bad.name == "list" and bad.arg is None:
                out.append(make("unknown-type", bad.span, "`list` needs an element type: `list[T]`"))
            elif bad.arg is not None:
                out.append(make("unknown-type", bad.span, f"`{bad.name}` takes no type argument"))
            else:
                if not known:
                    known.extend(sorted(("str", "int", "bool", "map", "any", "step", "role", "target", "task_ref",
                                         "threshold")))
                    known.extend(sym.records)
                out.append(make("unknown-type", bad.span, f"unknown type `{bad.name}`",
                                help=_TYPE_ALIASES.get(bad.name) or suggest(bad.name, known)))

    for decl in ctx.user_decls():
        if isinstance(decl, ir.TriggerDecl):
            for p in decl.params:
                typ(p.type)
        elif isinstance(decl, ir.ActionKindDecl):
            for p in decl.params:
                typ(p.type)
            for t in decl.triggers or ():
                trigger(t)
        elif isinstance(decl, ir.RecordDecl):
            for f in decl.fields:
                typ(f.type)
        elif isinstance(decl, ir.EntryDecl):
            for clause in decl.clauses:
                for k in clause.kinds:
                    if k.name not in sym.kinds:
                        out.append(make("unknown-action-kind", k.span, f"unknown action kind `{k.name}`",
                                        help=suggest(k.name, sym.kinds)))
        elif isinstance(decl, ir.WorkflowDecl):
            step_ids = {s.name.name for s in decl.steps}
            for step in decl.steps:
                for setting in step.settings:
                    value = setting.value
                    if setting.name == "stage" and isinstance(value, ir.Ident) and value.name not in STAGES:
                        out.append(make("unknown-stage", value.span, f"unknown stage `{value.name}`",
                                        help=suggest(value.name, STAGES) or "a stage is work, review, approval or custom"))
                    if setting.name == "pull_from" and isinstance(value, ir.Ident) and value.name not in step_ids:
                        out.append(make("unknown-step", value.span, f"no step `{value.name}` in workflow "
                                        f"`{decl.name.name}`", help=suggest(value.name, step_ids)))
                for handler in step.handlers:
                    trigger(handler.trigger)
                    _actions(handler, ctx, out)
                for timer in step.timers:
                    _actions(timer, ctx, out)
        elif isinstance(decl, ir.DispatchDecl):
            trigger(decl.trigger)
            for item in decl.items:
                if isinstance(item, ir.EventItem) and item.record.name not in sym.records:
                    out.append(make("unknown-record", item.record.span, f"unknown record `{item.record.name}`",
                                    help=suggest(item.record.name, sym.records)))
                elif isinstance(item, ir.LoadItem) and item.loader.name not in sym.records:
                    out.append(make("unknown-record", item.loader.span,
                                    f"unknown record `{item.loader.name}`: a load reads a declared record",
                                    help=suggest(item.loader.name, sym.records)))
    return out


def _actions(block: Block, ctx: Context, out: list[Diagnostic]) -> None:
    """Each action of a handler or timer names a declared kind, and its guard's quorums declared roles and
    thresholds."""
    sym = ctx.symbols
    consumed = misplaced_guards(block, ctx, out)
    for index, action in enumerate(block.actions):
        if index in consumed:
            continue
        if action.name.name not in sym.kinds:
            out.append(make("unknown-action-kind", action.name.span, f"unknown action kind `{action.name.name}`",
                            help=suggest(action.name.name, sym.kinds)))
        if action.guard is not None:
            for quorum in quorums(action.guard):
                _guard(quorum, ctx, out)


def _text(node: ir.Node | Span, ctx: Context) -> str:
    """The source text of a one-line node, as written."""
    span = node if isinstance(node, Span) else node.span
    source = ctx.program.sources.get(span.file)
    if source is None or span.line != span.end_line:
        return "…"
    text = source.line_text(span.line)[span.col - 1:span.end_col - 1]
    return text + ")" * (text.count("(") - text.count(")"))  # spans end at the last argument, not at `)`


def misplaced_guards(handler: Block, ctx: Context, out: list[Diagnostic]) -> set[int]:
    """Guards written in the wrong place, which the parser reads as actions named `when`, `and`
    or `or` followed by an action `quorum(…)`: `when quorum(…)` before its transition, after
    `requires_approval`, or twice, and `and`/`or quorum(…)` after `requires_approval`.  Reports
    each as one `misplaced-guard` and returns the positions of the actions it explains."""
    actions = handler.actions
    consumed: set[int] = set()
    for i, word in enumerate(actions):
        if word.name.name not in ("when", "and", "or") or word.has_parens or i + 1 >= len(actions):
            continue
        quorum = actions[i + 1]
        if quorum.name.name != "quorum" or not quorum.has_parens or word.name.name in ctx.symbols.kinds:
            continue
        guard = _text(quorum.span, ctx)
        span = word.span.merge(quorum.span)
        before = actions[i - 1] if i > 0 and i - 1 not in consumed else None
        after = actions[i + 2] if i + 2 < len(actions) else None
        approval = None if before is None or before.requires_approval is None else before.requires_approval
        if word.name.name != "when":  # `X when G requires_approval and quorum(…)`: the guard was cut short
            if before is None or before.guard is None or approval is None:
                continue
            first = _text(before.guard, ctx)
            move = _text(before.name.span if not before.args else before.name.span.merge(before.args[-1].span), ctx)
            out.append(make("misplaced-guard", span, f"`{word.name.name} {guard}` is written after "
                            "`requires_approval`; the whole guard comes first",
                            help=f"write `{move} when {first} {word.name.name} {guard} requires_approval`"))
        elif before is not None and before.guard is not None:
            first = _text(before.guard, ctx)
            out.append(make("misplaced-guard", span, f"`{_text(before.name, ctx)}` already has a guard: a transition "
                            "takes one `when …`",
                            help=f"join the conditions into one guard: `when {first} and {guard}` (both must "
                                 "hold) or `or` (either)"))
        elif before is not None and approval is not None:
            move = _text(before.span.merge(approval), ctx)
            fixed = move.replace(" requires_approval", "").rstrip()
            out.append(make("misplaced-guard", span, "`requires_approval` is written before `when quorum(…)`; the "
                            "guard comes first", help=f"write `{fixed} when {guard} requires_approval`"))
        else:
            target = _text(after.span, ctx) if after is not None else "move_to_step(STEP)"
            out.append(make("misplaced-guard", span, "`when quorum(…)` is written before the transition it guards; "
                            "it follows the transition", help=f"write `{target} when {guard}`"))
        consumed.update((i, i + 1))
    return consumed


def _guard(guard: ir.QuorumGuard, ctx: Context, out: list[Diagnostic]) -> None:
    sym = ctx.symbols
    if guard.role.name not in sym.roles:
        out.append(make("unknown-role", guard.role.span, f"role `{guard.role.name}` is not declared",
                        help=suggest(guard.role.name, sym.roles) or f"declare it with `role {guard.role.name}`"))
    th = guard.threshold
    if th.name.name not in THRESHOLDS:
        out.append(make("unknown-threshold", th.name.span, f"unknown threshold `{th.name.name}`",
                        help=suggest(th.name.name, THRESHOLDS) or
                        "thresholds: all_approve, all_decide, majority_approve, any_reject, n_approve(N)"))
    elif th.name.name == "n_approve":
        if th.count is None:
            out.append(make("unknown-threshold", th.span, "`n_approve` needs a count: `n_approve(N)`"))
        elif th.count.value < 1:
            out.append(make("invalid-threshold-count", th.count.span,
                            f"`n_approve({th.count.value})` can never be met: N must be at least 1"))
    elif th.count is not None:
        out.append(make("unknown-threshold", th.span, f"`{th.name.name}` takes no count"))
