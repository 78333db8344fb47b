"""An action call and its kind's declaration in, parameter -> argument bindings (and problems) out."""

from __future__ import annotations

from interlock.dsl import Diagnostic, ir
from interlock.dsl.diagnostics import label, make

from .symbols import suggest

__all__ = ["bind_args", "is_required"]


def is_required(param: ir.Param) -> bool:
    return param.default is None and not param.type.optional


def bind_args(action: ir.ActionCall, kind: ir.ActionKindDecl) -> tuple[dict[str, ir.Arg], list[Diagnostic]]:
    params = {p.name.name: p for p in kind.params}
    order = [p.name.name for p in kind.params]
    bound: dict[str, ir.Arg] = {}
    out: list[Diagnostic] = []
    positional = 0
    for arg in action.args:
        if arg.name is None:
            if positional >= len(order):
                out.append(make("too-many-arguments", arg.span,
                                f"`{kind.name.name}` takes {len(order)} argument{'s' if len(order) != 1 else ''}, "
                                f"this is argument {positional + 1}"))
                positional += 1
                continue
            pname = order[positional]
            positional += 1
        else:
            pname = arg.name.name
            if pname not in params:
                out.append(make("unknown-parameter", arg.name.span,
                                f"unknown parameter `{pname}` for `{kind.name.name}`",
                                help=suggest(pname, params) or
                                (f"`{kind.name.name}` takes {', '.join(f'`{o}`' for o in order)}" if order
                                 else f"`{kind.name.name}` takes no arguments")))
                continue
        if pname in bound:
            out.append(make("duplicate-argument", arg.span, f"parameter `{pname}` is given twice",
                            labels=(label(bound[pname].span, "first given here"),)))
            continue
        bound[pname] = arg
    for p in kind.params:
        if p.name.name not in bound and is_required(p):
            out.append(make("missing-required-parameter", action.name.span,
                            f"`{kind.name.name}` needs `{p.name.name}: {p.type.render()}`",
                            help=f"write `{kind.name.name}({p.name.name}: …)`"))
    return bound, out
