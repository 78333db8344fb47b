"""An action call and its kind's declaration in, parameter -> argument bindings (and problems) out."""

from __future__ import annotations

from interlock.dsl import Diagnostic, ir
from interlock.dsl.diagnostics import label, make

from .symbols import Signature, listing, suggest

__all__ = ["Signature", "bind_args", "is_required", "signature"]


def is_required(param: ir.Param) -> bool:
    return param.default is None and not param.type.optional


def signature(kind: ir.ActionKindDecl) -> Signature:
    params: dict[str, ir.Param] = {}
    for p in kind.params:
        params[p.name.name] = p
    order = [p.name.name for p in kind.params]
    takes = (f"`{kind.name.name}` takes {listing(order)}" if order else f"`{kind.name.name}` takes no arguments")
    required: dict[str, ir.Param] = {}  # by name: a duplicated parameter is missed once
    for p in kind.params:
        if is_required(p):
            required.setdefault(p.name.name, p)
    return Signature(params, order, tuple(required.values()), frozenset(required), takes)


def bind_args(action: ir.ActionCall, kind: ir.ActionKindDecl,
              signatures: dict[int, Signature] | None = None) -> tuple[dict[str, ir.Arg], list[Diagnostic]]:
    """Bind an action's arguments to its kind's parameters; `signatures` caches each kind's `Signature`."""
    if signatures is None:
        sig = signature(kind)
    else:
        found = signatures.get(id(kind))
        sig = signatures[id(kind)] = found or signature(kind)
    params, order = sig.params, sig.order
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
                                help=suggest(pname, params) or sig.takes))
                continue
        if pname in bound:
            out.append(make("duplicate-argument", arg.span, f"parameter `{pname}` is given twice",
                            labels=(label(bound[pname].span, "first given here"),)))
            continue
        bound[pname] = arg
    # One diagnostic per call, however many parameters it misses; finding the first three
    # takes at most (arguments + 3) steps, whatever the kind's size.
    given = sum(1 for name in bound if name in sig.required_names)
    count = len(sig.required) - given
    if count:
        first: list[ir.Param] = []
        for p in sig.required:
            if p.name.name not in bound:
                first.append(p)
                if len(first) == 3:
                    break
        shown = ", ".join(f"`{p.name.name}: {p.type.render()}`" for p in first)
        if count > len(first):
            shown += f" and {count - len(first):,} more required parameters"
        out.append(make("missing-required-parameter", action.name.span, f"`{kind.name.name}` needs {shown}",
                        help=f"write `{kind.name.name}({', '.join(f'{p.name.name}: …' for p in first)}"
                             f"{', …' if count > len(first) else ''})`"))
    return bound, out
