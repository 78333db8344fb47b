"""An IR `Module` in, canonical `.wf` source text out (parsing that text gives back the same IR, spans aside).

What is written is decided here: one declaration item (field, entry clause, step attribute, handler action,
dispatch item, payload assignment) per line, a blank line around every block declaration, and only the
parentheses that precedence needs; the layout is then the formatter's (`interlock.dsl.format`, `interlock fmt`):
one layout for every `.wf` text interlock writes, the kandev bridge's included.
Comments and the original order of step flags, settings, handlers and timers are not kept:
the IR does not hold them.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from . import blockstr, ir
from .escapes import quote

__all__ = ["format_module", "format_value", "format_expr", "format_type", "format_params", "format_action",
           "quote", "BINARY_PRECEDENCE", "NOT_PRECEDENCE", "ATOM_PRECEDENCE"]

_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_-]*")
# Words the grammar spells as literals.  A map key spelled like one is quoted so that it
# can never be read as the keyword, whatever the parser state.
_KEYWORDS = frozenset({
    "use", "trigger", "role", "session", "task", "transition", "on", "record", "entry", "exclude",
    "dispatch", "workflow", "hidden", "step", "start", "manual_move", "terminal", "position",
    "wip_limit", "stage", "pull_from", "prompt", "description", "color", "agent_profile",
    "auto_archive_after_hours", "show_in_command_panel", "auto_advance_requires_signal",
    "cancel_triggers_turn_complete", "session_target", "agent_tag", "when", "quorum", "requires_approval",
    "continue_on_failure", "after", "every", "retry", "backoff", "true", "false", "event", "skip", "load", "missing",
    "error", "operation", "payload", "silent", "debug", "info", "warning", "or", "and", "not",
})
_INDENT = "  "

# Binding strength of each expression form: or < and < not < ==/!= < ?? < atom.
_OR, _AND, _NOT, _CMP, _COALESCE, _ATOM = 1, 2, 3, 4, 5, 6
_BINARY_PREC = {"or": _OR, "and": _AND, "==": _CMP, "!=": _CMP, "??": _COALESCE}
BINARY_PRECEDENCE, NOT_PRECEDENCE, ATOM_PRECEDENCE = _BINARY_PREC, _NOT, _ATOM
"""The language's binding strengths (or < and < not < ==/!= < ?? < atom), for every printer of expressions."""
# (minimum strength of the left operand, of the right operand) written without parentheses.
# `==`/`!=` take one comparison at most, so neither side may itself be a comparison.
_OPERAND_PREC = {_OR: (_OR, _AND), _AND: (_AND, _NOT), _CMP: (_COALESCE, _COALESCE),
                 _COALESCE: (_COALESCE, _ATOM)}


def _key(text: str) -> str:
    if _NAME.fullmatch(text) and text not in _KEYWORDS:
        return text
    return quote(text)


def _ids(idents: Iterable[ir.Ident]) -> str:
    return ", ".join(i.name for i in idents)


# ---- values ------------------------------------------------------------------------------


def format_value(value: ir.Value) -> str:
    """One value (argument, default, list item, map value) as source text."""
    match value:
        case ir.StrLit() | ir.BoolLit() | ir.IntLit():
            return _literal(value)
        case ir.NameValue():
            return value.dotted
        case ir.CallValue():
            return f"{value.name.dotted}({', '.join(format_value(a) for a in value.args)})"
        case ir.ListValue():
            return f"[{', '.join(format_value(v) for v in value.items)}]"
        case ir.MapValue():
            return "{" + ", ".join(f"{_key(e.key)}: {format_value(e.value)}" for e in value.entries) + "}"
    raise TypeError(f"not a value node: {type(value).__name__}")


def _literal(lit: ir.StrLit | ir.BoolLit | ir.IntLit) -> str:
    match lit:
        case ir.StrLit():
            return quote(lit.value)
        case ir.BoolLit():
            return "true" if lit.value else "false"
    return str(lit.value)


# ---- expressions ---------------------------------------------------------------------------


def _prec(expr: ir.Expr) -> int:
    match expr:
        case ir.BinaryExpr():
            return _BINARY_PREC[expr.op]
        case ir.NotExpr():
            return _NOT
    return _ATOM


def _expr(expr: ir.Expr, min_prec: int) -> str:
    prec = _prec(expr)
    match expr:
        case ir.PathExpr():
            text = expr.dotted
        case ir.StrLit() | ir.BoolLit() | ir.IntLit():
            text = _literal(expr)
        case ir.NotExpr():
            text = "not " + _expr(expr.operand, _NOT)
        case ir.BinaryExpr():
            text = _chain(expr, prec)
        case ir.QuorumGuard():
            text = _quorum(expr)
        case _:
            raise TypeError(f"not an expression node: {type(expr).__name__}")
    return f"({text})" if prec < min_prec else text


def _chain(expr: ir.BinaryExpr, prec: int) -> str:
    """A binary expression; a left-associative chain of one operator is walked iteratively
    (lowering builds `a ?? b ?? … ?? z` as a left spine as long as the source line)."""
    rights: list[ir.Expr] = []
    node: ir.Expr = expr
    while isinstance(node, ir.BinaryExpr) and node.op == expr.op and prec != _CMP:
        rights.append(node.right)
        node = node.left
    if not rights:
        rights.append(expr.right)
        node = expr.left
    left_min, right_min = _OPERAND_PREC[prec]
    parts = [_expr(node, left_min)]
    parts.extend(f"{expr.op} {_expr(r, right_min)}" for r in reversed(rights))
    return " ".join(parts)


def _quorum(q: ir.QuorumGuard) -> str:
    th = q.threshold
    count = "" if th.count is None else f"({th.count.value})"
    return f"quorum({q.role.name}, {th.name.name}{count})"


def format_expr(expr: ir.Expr) -> str:
    """One expression (of a dispatch sequence or a transition's guard), with only the parentheses precedence
    needs."""
    return _expr(expr, _OR)


# ---- declarations --------------------------------------------------------------------------


def format_type(t: ir.TypeRef) -> str:
    """A type reference as source text (`list[str]?`)."""
    inner = f"{t.name}[{format_type(t.arg)}]" if t.arg is not None else t.name
    return inner + ("?" if t.optional else "")


def format_params(params: tuple[ir.Param, ...]) -> str:
    """A parameter list as source text, parentheses included (`(channel: str = "ops")`)."""
    out = []
    for p in params:
        text = f"{p.name.name}: {format_type(p.type)}"
        if p.default is not None:
            text += f" = {format_value(p.default)}"
        out.append(text)
    return "(" + ", ".join(out) + ")"


def _block(head: str, body: list[str], depth: int) -> list[str]:
    pad = _INDENT * depth
    if not body:
        return [f"{pad}{head} {{}}"]
    return [f"{pad}{head} {{", *body, f"{pad}}}"]


def _trigger(d: ir.TriggerDecl) -> list[str]:
    text = f"trigger {d.name.name}"
    if d.params:
        text += f" {format_params(d.params)}"
    if d.entry:
        text += " entry"
    return [text]


def _action_kind(d: ir.ActionKindDecl) -> list[str]:
    text = f"{d.action_class} {d.name.name}"
    if d.params:
        text += format_params(d.params)
    if d.triggers is not None:
        text += f" on {_ids(d.triggers)}"
    if d.retry is not None:
        most = "" if d.retry.max_backoff is None else f"..{d.retry.max_backoff.text}"
        text += f" retry {d.retry.attempts.value} backoff {d.retry.backoff.text}{most}"
    return [text]


def _record(d: ir.RecordDecl) -> list[str]:
    body = [f"{_INDENT}{f.name.name}: {format_type(f.type)}" for f in d.fields]
    return _block(f"record {d.name.name}", body, 0)


def _entry(d: ir.EntryDecl) -> list[str]:
    body = [f"{_INDENT}{c.mode} {_ids(c.kinds)}" for c in d.clauses]
    return _block("entry", body, 0)


def _titled(keyword: str, name: ir.Ident, title: ir.StrLit | None) -> str:
    return f"{keyword} {name.name}" + ("" if title is None else f" {quote(title.value)}")


def _setting(s: ir.StepSetting | ir.WorkflowSetting, pad: str) -> str:
    match s.value:
        case ir.StrLit(value=text) if s.folded and blockstr.can_fold(text):
            return f"{s.name} {blockstr.fold(text, pad + _INDENT)}"
        case ir.StrLit(value=text) if s.block and blockstr.can_encode(text):
            return f"{s.name} {blockstr.encode(text, pad + _INDENT)}"
        case ir.IntLit() | ir.StrLit() as lit:
            return f"{s.name} {_literal(lit)}"
        case ir.Ident(name=name):
            return f"{s.name} {name}"
        case value:
            return f"{s.name} {format_value(value)}"  # an `agent_profile` map (anything else fails the checks)


def _flag(f: ir.StepFlag) -> str:
    return f.name + ((" true" if f.value else " false") if f.explicit else "")


def format_action(a: ir.ActionCall) -> str:
    """One action of a handler or timer as source text: the call, its guard and its flags (the kandev bridge
    writes its actions with it)."""
    text = a.name.name
    if a.has_parens or a.args:
        args = (f"{x.name.name}: {format_value(x.value)}" if x.name is not None else format_value(x.value)
                for x in a.args)
        text += "(" + ", ".join(args) + ")"
    if a.guard is not None:
        text += f" when {format_expr(a.guard)}"
    if a.requires_approval is not None:
        text += " requires_approval"
    if a.continue_on_failure is not None:
        text += " continue_on_failure"
    return text


def _step(s: ir.StepDecl, depth: int) -> list[str]:
    pad = _INDENT * (depth + 1)
    body = [f"{pad}{_flag(f)}" for f in s.flags]
    body += [f"{pad}{_setting(x, pad)}" for x in s.settings]
    for h in s.handlers:
        actions = [f"{pad}{_INDENT}{format_action(a)}" for a in h.actions]
        body += _block(f"on {h.trigger.name}", actions, depth + 1)
    for t in s.timers:
        body += _block(t.written, [f"{pad}{_INDENT}{format_action(a)}" for a in t.actions], depth + 1)
    return _block(_titled("step", s.name, s.title), body, depth)


def _workflow(d: ir.WorkflowDecl) -> list[str]:
    body = [f"{_INDENT}hidden"] if d.hidden else []
    body += [f"{_INDENT}{_setting(x, _INDENT)}" for x in d.settings]
    for i, s in enumerate(d.steps):
        if i or body:
            body.append("")
        body += _step(s, 1)
    return _block(_titled("workflow", d.name, d.title), body, 0)


def _guard_tail(name: ir.Ident, level: str, message: ir.StrLit | None) -> str:
    return f"skip {name.name} {level}" + ("" if message is None else f" {quote(message.value)}")


def _dispatch_item(item: ir.DispatchItem) -> list[str]:
    pad = _INDENT
    match item:
        case ir.EventItem():
            return [f"{pad}event {item.record.name}"]
        case ir.SkipItem():
            return [f"{pad}{_guard_tail(item.name, item.level, item.message)} when {format_expr(item.condition)}"]
        case ir.LoadItem():
            cases = [f"{pad}{_INDENT}{', '.join(c.outcomes)} -> {_guard_tail(c.guard, c.level, c.message)}"
                     for c in item.cases]
            args = ", ".join(format_expr(a) for a in item.args)
            return _block(f"load {item.name.name} = {item.loader.name}({args})", cases, 1)
        case ir.OperationItem():
            when = "" if item.condition is None else f" when {format_expr(item.condition)}"
            return [f"{pad}operation {quote(item.template.value)}{when}"]
        case ir.PayloadItem():
            body = [f"{pad}{_INDENT}{a.name.name} = {format_expr(a.value)}" for a in item.assignments]
            return _block("payload", body, 1)
    raise TypeError(f"not a dispatch item: {type(item).__name__}")


def _dispatch(d: ir.DispatchDecl) -> list[str]:
    body = [line for item in d.items for line in _dispatch_item(item)]
    return _block(f"dispatch {d.name.name} on {d.trigger.name}", body, 0)


def _decl(d: ir.Decl) -> list[str]:
    match d:
        case ir.UseDecl():
            return [f"use {d.name.name}"]
        case ir.TriggerDecl():
            return _trigger(d)
        case ir.RoleDecl():
            return [f"role {_ids(d.names)}"]
        case ir.ActionKindDecl():
            return _action_kind(d)
        case ir.RecordDecl():
            return _record(d)
        case ir.EntryDecl():
            return _entry(d)
        case ir.WorkflowDecl():
            return _workflow(d)
        case ir.DispatchDecl():
            return _dispatch(d)
    raise TypeError(f"not a declaration: {type(d).__name__}")


def format_module(module: ir.Module) -> str:
    """The canonical `.wf` text of `module`: one declaration after another, ending in a newline, laid out by the
    formatter (`interlock fmt`'s layout: the one canonical layout of `.wf` text)."""
    from .format import format_source

    return format_source(_print_module(module), "<printer>").text


def _print_module(module: ir.Module) -> str:
    lines: list[str] = []
    previous: str | None = None
    for d in module.decls:
        chunk = _decl(d)
        # One-line declarations of one kind stay together; anything else gets a blank line.
        if previous is not None and (len(chunk) > 1 or previous != d.kind):
            lines.append("")
        lines += chunk
        previous = d.kind if len(chunk) == 1 else "block"
    return "\n".join(lines) + "\n" if lines else ""
