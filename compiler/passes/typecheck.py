"""Arguments, defaults and dispatch expressions in, type diagnostics out.

Checks each action call against its kind's parameters (unknown, duplicate, missing,
mistyped arguments), each transition's guard, each parameter default against its type, and
every expression, operation placeholder and payload assignment of a `dispatch` block.
"""

from __future__ import annotations

from interlock.dsl import Diagnostic, ir
from interlock.dsl.diagnostics import make

from ..binding import bind_args
from ..context import Context, block_trigger
from ..exprs import PLACEHOLDER, ExprScope, type_of
from ..guards import check_guard
from ..symbols import suggest
from ..types import Scope, check_value, unknown_type

__all__ = ["typecheck"]


def typecheck(ctx: Context) -> list[Diagnostic]:
    out: list[Diagnostic] = []
    sym = ctx.symbols
    for decl in ctx.user_decls():
        if isinstance(decl, (ir.TriggerDecl, ir.ActionKindDecl)):
            for p in decl.params:
                if p.default is not None and unknown_type(p.type, sym) is None:
                    for m in check_value(p.default, p.type, Scope(sym)):
                        out.append(make("invalid-default", m.node.span,
                                        f"default of `{p.name.name}` does not fit `{p.type.render()}`: {m.message}",
                                        help=m.help))
    scopes: dict[int, Scope] = {}  # by workflow
    for wf, _step, block in ctx.blocks():
        scope = scopes.get(id(wf)) or scopes.setdefault(id(wf), Scope(sym, frozenset(s.name.name for s in wf.steps)))
        for action in block.actions:
            kind = sym.kinds.get(action.name.name)
            if kind is None:
                continue
            if action.guard is not None and kind.action_class == "transition":  # elsewhere: validate refuses it
                check_guard(action.guard, block_trigger(block), sym, out)
            bound, problems = bind_args(action, kind, sym.signatures)
            out.extend(problems)
            params = sym.signatures[id(kind)].params  # cached by `bind_args`
            for pname, arg in bound.items():
                param = params[pname]
                if unknown_type(param.type, sym) is not None:
                    continue
                for m in check_value(arg.value, param.type, scope):
                    # a bare type complaint does not say which argument it is about
                    message = (f"`{pname}` of `{kind.name.name}`: {m.message}" if m.name == "argument-type-mismatch"
                               else m.message)
                    out.append(make(m.name, m.node.span, message, help=m.help))
    for dispatch in ctx.dispatches():
        _dispatch(dispatch, ctx, out)
    return out


def _dispatch(block: ir.DispatchDecl, ctx: Context, out: list[Diagnostic]) -> None:
    sym = ctx.symbols
    scope = ExprScope(sym)
    events = [i for i in block.items if isinstance(i, ir.EventItem)]
    if events and events[0].record.name in sym.records:
        scope.names["event"] = events[0].record.name
    else:  # no event line, or an unknown record: reported by validate / resolve
        scope.unknown.add("event")
    if "host" in sym.records:
        scope.names["host"] = "host"
    scope.later = {i.name.name: i.loader.name for i in block.items if isinstance(i, ir.LoadItem)}

    def cond(expr: ir.Expr, what: str) -> None:
        t = type_of(expr, scope, out)
        if t is not None and t != "bool":
            out.append(make("expression-type-error", expr.span, f"{what} must be a bool, found `{t}`",
                            help='compare it: `x != ""`' if t == "str" else None))

    for item in block.items:
        if isinstance(item, ir.SkipItem):
            cond(item.condition, "a `skip` condition")
        elif isinstance(item, ir.LoadItem):
            if len(item.args) != 1:
                out.append(make("expression-type-error", item.loader.span,
                                f"`{item.loader.name}(…)` takes one argument, the id to load"))
            for arg in item.args:
                t = type_of(arg, scope, out)
                if t is not None and t != "str":
                    out.append(make("expression-type-error", arg.span, f"a load id must be a `str`, found `{t}`"))
            if item.name.name not in ("event", "host"):
                if item.loader.name in sym.records:
                    scope.names[item.name.name] = item.loader.name
                else:  # an unknown record (reported by resolve)
                    scope.unknown.add(item.name.name)
                scope.later.pop(item.name.name, None)
        elif isinstance(item, ir.OperationItem):
            if item.condition is not None:
                cond(item.condition, "an `operation` condition")
            _placeholders(item, scope, out)
    # the payload is evaluated after every guard and load
    trigger = sym.triggers.get(block.trigger.name)
    params = {p.name.name: p for p in trigger.params} if trigger is not None else {}
    for item in block.items:
        if not isinstance(item, ir.PayloadItem):
            continue
        for a in item.assignments:
            t = type_of(a.value, scope, out)
            p = params.get(a.name.name)
            if p is not None and t is not None and t != p.type.render().rstrip("?"):
                out.append(make("expression-type-error", a.value.span,
                                f"`{a.name.name}` is `{p.type.render()}` but this is `{t}`"))


def _placeholders(item: ir.OperationItem, scope: ExprScope, out: list[Diagnostic]) -> None:
    text = item.template.value
    span = item.template.span
    for m in PLACEHOLDER.finditer(text):
        raw = m.group(1).strip()
        parts = tuple(raw.split("."))
        if not raw or not all(p and (p[0].isalpha() or p[0] == "_") for p in parts):
            out.append(make("bad-operation-placeholder", span, f"placeholder `{{{m.group(1)}}}` is not a field path",
                            help="write `{event.field}`"))
            continue
        probe = ir.PathExpr.model_construct(span=span, parts=parts)
        t = scope.path_type(parts, probe, out)
        if t is not None and t not in ("str", "int"):
            out.append(make("bad-operation-placeholder", span,
                            f"placeholder `{{{raw}}}` is `{t}`; operation ids are built from `str` or `int` fields",
                            help=suggest(raw, ())))
    stray = PLACEHOLDER.sub("", text)
    if "{" in stray or "}" in stray:
        out.append(make("bad-operation-placeholder", span, "unbalanced `{` or `}` in the operation template"))
