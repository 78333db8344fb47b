"""Lark tokens in, IR nodes out: the callbacks the LALR parser calls as it reduces each rule.

This is the only place IR nodes are built from syntax.  Method names match grammar rule
names.  The parser runs these methods inline (`interlock.dsl.parser`), so no parse tree
is ever built; they take tokens and nodes only (Lark forbids `meta` arguments inline).
Spans come straight from each token's own line/column fields, and nodes are built with `construct` from complete field dicts: the
grammar already guarantees their shape, so re-validating every node would only cost
time.  Count limits (IL009) and expression depth (IL003) are checked as nodes are built;
a violation stops the parse (`Refused`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, NoReturn

from lark import Token

from . import blockstr, ir
from .construct import construct
from .diagnostics import Diagnostic, make
from .escapes import unescape
from .source import SourceFile, Span

if TYPE_CHECKING:
    from .limits import Limits

__all__ = ["Lowering", "Refused", "unescape"]

# Integers are 64-bit signed: plans cross into JSON and SQL, and a longer digit string
# would otherwise trip Python's int-conversion limit.
_INT_MIN, _INT_MAX = -(2**63), 2**63 - 1

# canonical operator strings, so a binary node does not keep its token alive
_OPS = {op: op for op in ("or", "and", "==", "!=", "??")}


class Refused(Exception):
    """A limit was exceeded while lowering; the diagnostic is already recorded."""


def _start(item: Any) -> tuple[int, int]:
    if isinstance(item, Token):
        return item.line, item.column  # type: ignore[return-value]
    span: Span = item.span
    return span.line, span.col


def _end(item: Any) -> tuple[int, int]:
    if isinstance(item, Token):
        return item.end_line, item.end_column  # type: ignore[return-value]
    span: Span = item.span
    return span.end_line, span.end_col


class Lowering:
    """One file's lowering state plus a method per grammar rule (`begin` before each parse).

    Every rule has a method: with no `__default__` to fall back on, Lark's callbacks stay
    plain picklable objects (the built parser is cached as a pickle).
    """

    def __init__(self) -> None:
        self.diagnostics: list[Diagnostic] = []
        self._depth: dict[int, int] = {}

    def begin(self, source: SourceFile, limits: Limits) -> None:
        self.source = source
        self.file = source.name
        self.limits = limits
        self.diagnostics = []
        # Operator depth of each `not`/binary node built so far, by id.  A left-associative
        # chain (`a ?? b ?? …`) is flat in the grammar but as deep as it is long in the IR,
        # and every later pass walks expressions recursively.
        self._depth = {}

    def end(self) -> list[Diagnostic]:
        """The diagnostics of the parse just finished; drops per-file state."""
        diagnostics = self.diagnostics
        self.diagnostics = []
        self._depth = {}
        del self.source
        return diagnostics

    # ---- helpers -----------------------------------------------------------------------
    def tspan(self, tok: Token) -> Span:
        return construct(Span, {"file": self.file, "line": tok.line, "col": tok.column,
                                "end_line": tok.end_line, "end_col": tok.end_column})

    def cover(self, first: Any, last: Any) -> Span:
        """From the start of `first` to the end of `last` (each a token or a node)."""
        line, col = _start(first)
        end_line, end_col = _end(last)
        return construct(Span, {"file": self.file, "line": line, "col": col, "end_line": end_line, "end_col": end_col})

    def ident(self, tok: Token) -> ir.Ident:
        return construct(ir.Ident, {"span": self.tspan(tok), "kind": "ident", "name": str(tok)})

    def intlit(self, tok: Token) -> ir.IntLit:
        text = str(tok)
        digits = text.lstrip("-").lstrip("0") or "0"
        value = int(digits) if len(digits) <= 19 else _INT_MAX * 2  # too long: out of range either way
        if text.startswith("-"):
            value = -value
        if not _INT_MIN <= value <= _INT_MAX:
            shown = text if len(text) <= 24 else text[:21] + "..."
            self.diagnostics.append(make("invalid-token", self.tspan(tok),
                                         f"integer `{shown}` is out of range (64-bit signed)"))
            value = 0
        return construct(ir.IntLit, {"span": self.tspan(tok), "kind": "int", "value": value})

    def strlit(self, tok: Token) -> ir.StrLit:
        text, bad = unescape(tok[1:-1])
        if bad is not None:
            start = (tok.start_pos or 0) + 1 + bad
            self.diagnostics.append(make(
                "invalid-escape", self.source.span(start, start + 2),
                f"unknown escape `{tok[1 + bad:3 + bad]}` in string",
                help='use one of \\" \\\\ \\n \\t \\r \\0 \\/ or \\uXXXX'))
        return construct(ir.StrLit, {"span": self.tspan(tok), "kind": "str", "value": text})

    def _nest(self, node: ir.Expr, operands: tuple[ir.Expr, ...], where: ir.Expr) -> None:
        get = self._depth.get
        depth = 1 + max(get(id(o), 0) for o in operands)
        self._depth[id(node)] = depth
        if depth > self.limits.max_depth:
            self.diagnostics.append(make("nesting-too-deep", where.span,
                                         f"expression nested deeper than {self.limits.max_depth} levels",
                                         help="split the expression; operator chains count as nesting"))
            raise Refused

    def _count(self, items: list[Any], limit: int, what: str, whose: str) -> None:
        if len(items) > limit:
            self._too_many(items[limit], len(items), limit, what, whose)

    def _too_many(self, first_past: Any, count: int, limit: int, what: str, whose: str) -> NoReturn:
        span = first_past if isinstance(first_past, Span) else self.cover(first_past, first_past)
        self.diagnostics.append(make("too-many-items", span, f"{whose} has {count:,} {what}; the limit is {limit:,}",
                                     help="split it into smaller parts"))
        raise Refused

    # ---- module and vocabulary ------------------------------------------------------
    def start(self, c: list[Any]) -> ir.Module:
        self._count(c, self.limits.max_declarations, "declarations", "the file")
        return construct(ir.Module, {"span": self.source.span(0, len(self.source.text)), "kind": "module",
                                     "file": self.file, "decls": tuple(c)})

    def use_decl(self, c: list[Any]) -> ir.UseDecl:
        name = self.ident(c[0])
        return construct(ir.UseDecl, {"span": name.span, "kind": "use", "name": name})

    def trigger_decl(self, c: list[Any]) -> ir.TriggerDecl:
        name, params, entry = c
        last = entry if entry is not None else params[-1] if params else name
        return construct(ir.TriggerDecl, {"span": self.cover(name, last), "kind": "trigger", "name": self.ident(name),
                                          "params": tuple(params or ()), "entry": entry is not None})

    def role_decl(self, c: list[Any]) -> ir.RoleDecl:
        self._count(c, self.limits.max_items, "names", "this `role` line")
        return construct(ir.RoleDecl, {"span": self.cover(c[0], c[-1]), "kind": "role",
                                       "names": tuple(self.ident(t) for t in c)})

    def action_class(self, c: list[Any]) -> Token:
        tok: Token = c[0]
        return tok

    def action_decl(self, c: list[Any]) -> ir.ActionKindDecl:
        cls, name, params, triggers, retry = c
        last = triggers[-1] if triggers else params[-1] if params else name
        return construct(ir.ActionKindDecl, {
            "span": self.cover(cls, last), "kind": "action_kind", "action_class": str(cls), "name": self.ident(name),
            "params": tuple(params or ()), "triggers": None if triggers is None else tuple(triggers), "retry": retry})

    def retry_clause(self, c: list[Any]) -> ir.RetryPolicy:
        keyword, attempts, _backoff, backoff, most = c
        return construct(ir.RetryPolicy, {"span": self.cover(keyword, most or backoff), "kind": "retry",
                                          "attempts": self.intlit(attempts), "backoff": backoff, "max_backoff": most})

    def duration(self, c: list[Any]) -> ir.Duration:
        tok: Token = c[0]
        return construct(ir.Duration, {"span": self.tspan(tok), "kind": "duration", "text": str(tok)})

    def on_clause(self, c: list[Any]) -> list[ir.Ident]:
        self._count(c, self.limits.max_items, "triggers", "this `on` list")
        return [self.ident(t) for t in c]

    def params(self, c: list[Any]) -> list[ir.Param]:
        params = [p for p in c if p is not None]
        self._count(params, self.limits.max_items, "parameters", "this parameter list")
        return params

    def param(self, c: list[Any]) -> ir.Param:
        name, typ, default = c
        return construct(ir.Param, {"span": self.cover(name, typ if default is None else default), "kind": "param",
                                    "name": self.ident(name), "type": typ, "default": default})

    def type(self, c: list[Any]) -> ir.TypeRef:
        name, arg, optional = c
        last = optional if optional is not None else arg if arg is not None else name
        return construct(ir.TypeRef, {"span": self.cover(name, last), "kind": "type", "name": str(name), "arg": arg,
                                      "optional": optional is not None})

    def type_arg(self, c: list[Any]) -> ir.TypeRef:
        typ: ir.TypeRef = c[0]
        return typ

    def record_decl(self, c: list[Any]) -> ir.RecordDecl:
        name, *fields = c
        self._count(fields, self.limits.max_items, "fields", f"record `{name}`")
        return construct(ir.RecordDecl, {"span": self.cover(name, fields[-1] if fields else name), "kind": "record",
                                         "name": self.ident(name), "fields": tuple(fields)})

    def field(self, c: list[Any]) -> ir.Field:
        name, typ = c
        return construct(ir.Field, {"span": self.cover(name, typ), "kind": "field", "name": self.ident(name),
                                    "type": typ})

    def entry_decl(self, c: list[Any]) -> ir.EntryDecl:
        clauses = c[2:]  # after ENTRY_OPEN (`entry`) and its `{`
        self._count(clauses, self.limits.max_items, "lists", "this `entry` block")
        return construct(ir.EntryDecl, {"span": self.cover(c[0], c[1]), "kind": "entry", "clauses": tuple(clauses)})

    def entry_mode(self, c: list[Any]) -> Token:
        tok: Token = c[0]
        return tok

    def entry_clause(self, c: list[Any]) -> ir.EntryClause:
        mode, *names = c
        self._count(names, self.limits.max_items, "kinds", f"this `{mode}` list")
        return construct(ir.EntryClause, {"span": self.cover(mode, c[-1]), "kind": "entry_clause", "mode": str(mode),
                                          "kinds": tuple(self.ident(t) for t in names)})

    # ---- workflows ------------------------------------------------------------------
    def workflow_decl(self, c: list[Any]) -> ir.WorkflowDecl:
        name, title, *items = c
        steps = [i for i in items if isinstance(i, ir.StepDecl)]
        settings = [i for i in items if isinstance(i, ir.WorkflowSetting)]
        self._count(steps, self.limits.max_steps, "steps", f"workflow `{name}`")
        self._count(items, self.limits.max_items, "items", f"workflow `{name}`")
        return construct(ir.WorkflowDecl, {
            "span": self.cover(name, name if title is None else title), "kind": "workflow", "name": self.ident(name),
            "title": None if title is None else self.strlit(title),
            "hidden": len(steps) + len(settings) != len(items), "settings": tuple(settings), "steps": tuple(steps)})

    def workflow_setting(self, c: list[Any]) -> ir.WorkflowSetting:
        key, tok = c
        value = self.text(tok) if isinstance(tok, Token) else tok
        return construct(ir.WorkflowSetting, {"span": self.cover(key, tok), "kind": "workflow_setting",
                                              "name": str(key), "value": value, **_block(tok)})

    def text(self, tok: Token) -> ir.StrLit:
        """A quoted string, a block string (ADR 0033) or a folded one (ADR 0043) as a string literal."""
        if tok.type not in ("BLOCK_STRING", "FOLDED_STRING"):
            return self.strlit(tok)
        text, bad = (blockstr.decode if tok.type == "BLOCK_STRING" else blockstr.unfold)(str(tok))
        if bad is not None:
            start = (tok.start_pos or 0) + bad
            self.diagnostics.append(make(
                "block-string-indent", self.source.span(start, start + 1),
                "a block-string line is not indented like its closing `\"\"\"`",
                help='indent every line of the text at least as far as the closing `"""`, which must be on a line '
                     'of its own'))
        return construct(ir.StrLit, {"span": self.tspan(tok), "kind": "str", "value": text})

    def step_decl(self, c: list[Any]) -> ir.StepDecl:
        name, title, *items = c
        self._count(items, self.limits.max_items, "attributes and handlers", f"step `{name}`")
        groups: dict[str, list[Any]] = {"handler": [], "step_setting": [], "step_flag": [], "timer": []}
        for i in items:
            groups[i.kind].append(i)
        return construct(ir.StepDecl, {
            "span": self.cover(name, name if title is None else title), "kind": "step", "name": self.ident(name),
            "title": None if title is None else self.strlit(title), "flags": tuple(groups["step_flag"]),
            "settings": tuple(groups["step_setting"]), "handlers": tuple(groups["handler"]),
            "timers": tuple(groups["timer"])})

    def step_flag(self, c: list[Any]) -> ir.StepFlag:
        tok, given = c
        return construct(ir.StepFlag, {"span": self.cover(tok, tok if given is None else given), "kind": "step_flag",
                                       "name": str(tok), "value": given is None or given.type == "TRUE",
                                       "explicit": given is not None})

    def step_setting(self, c: list[Any]) -> ir.StepSetting:
        key, tok = c
        value: ir.Ident | ir.Value
        if not isinstance(tok, Token):
            value = tok
        elif tok.type == "INT":
            value = self.intlit(tok)
        elif tok.type in ("STRING", "BLOCK_STRING", "FOLDED_STRING"):
            value = self.text(tok)
        else:
            value = self.ident(tok)
        return construct(ir.StepSetting, {"span": self.cover(key, tok), "kind": "step_setting", "name": str(key),
                                          "value": value, **_block(tok)})

    def handler(self, c: list[Any]) -> ir.Handler:
        trigger = self.ident(c[0])
        actions = c[1:]
        self._count(actions, self.limits.max_actions, "actions", f"handler `on {trigger.name}`")
        return construct(ir.Handler, {"span": trigger.span, "kind": "handler", "trigger": trigger,
                                      "actions": tuple(actions)})

    def timer(self, c: list[Any]) -> ir.Timer:
        keyword, duration, *actions = c
        self._count(actions, self.limits.max_actions, "actions", f"timer `{keyword} {duration.text}`")
        return construct(ir.Timer, {"span": self.cover(keyword, duration), "kind": "timer", "mode": str(keyword),
                                    "duration": duration, "actions": tuple(actions)})

    def action(self, c: list[Any]) -> ir.ActionCall:
        name, args, guard, approval, carry_on = c
        last = next((x for x in (carry_on, approval, guard) if x is not None), args[-1] if args else name)
        return construct(ir.ActionCall, {
            "span": self.cover(name, last), "kind": "action", "name": self.ident(name), "args": tuple(args or ()),
            "has_parens": args is not None, "guard": guard,
            "requires_approval": None if approval is None else self.tspan(approval),
            "continue_on_failure": None if carry_on is None else self.tspan(carry_on)})

    def guard(self, c: list[Any]) -> ir.Expr:
        expr: ir.Expr = c[0]
        return expr

    def quorum_expr(self, c: list[Any]) -> ir.QuorumGuard:
        quorum, role, threshold = c
        return construct(ir.QuorumGuard, {"span": self.cover(quorum, threshold), "kind": "quorum",
                                          "role": self.ident(role), "threshold": threshold})

    def threshold(self, c: list[Any]) -> ir.Threshold:
        name, count = c
        return construct(ir.Threshold, {"span": self.cover(name, name if count is None else count), "kind": "threshold",
                                        "name": self.ident(name), "count": None if count is None else self.intlit(count)})

    def args(self, c: list[Any]) -> list[ir.Arg]:
        args = [a for a in c if a is not None]
        self._count(args, self.limits.max_items, "arguments", "this argument list")
        return args

    def named_arg(self, c: list[Any]) -> ir.Arg:
        name, value = c
        return construct(ir.Arg, {"span": self.cover(name, value), "kind": "arg", "name": self.ident(name),
                                  "value": value})

    def positional_arg(self, c: list[Any]) -> ir.Arg:
        value = c[0]
        return construct(ir.Arg, {"span": value.span, "kind": "arg", "name": None, "value": value})

    # ---- values -----------------------------------------------------------------------
    def string(self, c: list[Any]) -> ir.StrLit:
        return self.strlit(c[0])

    def integer(self, c: list[Any]) -> ir.IntLit:
        return self.intlit(c[0])

    def true(self, c: list[Any]) -> ir.BoolLit:
        return construct(ir.BoolLit, {"span": self.tspan(c[0]), "kind": "bool", "value": True})

    def false(self, c: list[Any]) -> ir.BoolLit:
        return construct(ir.BoolLit, {"span": self.tspan(c[0]), "kind": "bool", "value": False})

    def path(self, c: list[Any]) -> list[Token]:
        self._count(c, self.limits.max_items, "parts", "this dotted name")
        return c

    def name_value(self, c: list[Any]) -> ir.NameValue:
        toks = c[0]
        return construct(ir.NameValue, {"span": self.cover(toks[0], toks[-1]), "kind": "name",
                                        "parts": tuple(str(t) for t in toks)})

    def call_value(self, c: list[Any]) -> ir.CallValue:
        toks, *args = c
        name = self.name_value([toks])
        values = [a for a in args if a is not None]
        self._count(values, self.limits.max_items, "arguments", f"`{name.dotted}(…)`")
        return construct(ir.CallValue, {"span": self.cover(name, values[-1] if values else name), "kind": "call",
                                        "name": name, "args": tuple(values)})

    def list_value(self, c: list[Any]) -> ir.ListValue:
        items = [v for v in c[1:-1] if v is not None]
        self._count(items, self.limits.max_items, "items", "this list")
        return construct(ir.ListValue, {"span": self.cover(c[0], c[-1]), "kind": "list", "items": tuple(items)})

    def map_value(self, c: list[Any]) -> ir.MapValue:
        entries = [e for e in c[1:-1] if e is not None]
        self._count(entries, self.limits.max_items, "entries", "this map")
        return construct(ir.MapValue, {"span": self.cover(c[0], c[-1]), "kind": "map", "entries": tuple(entries)})

    def map_entry(self, c: list[Any]) -> ir.MapEntry:
        key, value = c
        text = self.strlit(key).value if key.type == "STRING" else str(key)
        return construct(ir.MapEntry, {"span": self.cover(key, value), "kind": "map_entry", "key": text,
                                       "value": value, "key_span": self.tspan(key)})

    # ---- dispatch sequences --------------------------------------------------------------
    def dispatch_decl(self, c: list[Any]) -> ir.DispatchDecl:
        _, name, trigger, *items = c
        self._count(items, self.limits.max_dispatch_items, "items", f"dispatch `{name}`")
        return construct(ir.DispatchDecl, {"span": self.cover(name, trigger), "kind": "dispatch",
                                           "name": self.ident(name), "trigger": self.ident(trigger),
                                           "items": tuple(items)})

    def event_item(self, c: list[Any]) -> ir.EventItem:
        record = self.ident(c[0])
        return construct(ir.EventItem, {"span": record.span, "kind": "event", "record": record})

    def level(self, c: list[Any]) -> str:
        return str(c[0])

    def skip_item(self, c: list[Any]) -> ir.SkipItem:
        name, level, message, cond = c
        return construct(ir.SkipItem, {"span": self.cover(name, cond), "kind": "skip", "name": self.ident(name),
                                       "level": level, "message": None if message is None else self.strlit(message),
                                       "condition": cond})

    def load_outcome(self, c: list[Any]) -> Token:
        tok: Token = c[0]
        return tok

    def load_item(self, c: list[Any]) -> ir.LoadItem:
        name, loader, *rest = c
        args = [x for x in rest if x is not None and not isinstance(x, ir.LoadCase)]
        cases = [x for x in rest if isinstance(x, ir.LoadCase)]
        self._count(args, self.limits.max_items, "arguments", f"`load {name}`")
        self._count(cases, self.limits.max_items, "cases", f"`load {name}`")
        return construct(ir.LoadItem, {"span": self.cover(name, args[-1] if args else loader), "kind": "load",
                                       "name": self.ident(name), "loader": self.ident(loader), "args": tuple(args),
                                       "cases": tuple(cases)})

    def load_case(self, c: list[Any]) -> ir.LoadCase:
        *outcomes, name, level, message = c
        self._count(outcomes, self.limits.max_items, "outcomes", "this load case")
        return construct(ir.LoadCase, {
            "span": self.cover(outcomes[0], name if message is None else message), "kind": "load_case",
            "outcomes": tuple(str(o) for o in outcomes), "guard": self.ident(name), "level": level,
            "message": None if message is None else self.strlit(message)})

    def operation_item(self, c: list[Any]) -> ir.OperationItem:
        kw, template, cond = c
        return construct(ir.OperationItem, {"span": self.cover(kw, template), "kind": "operation",
                                            "template": self.strlit(template), "condition": cond})

    def payload_item(self, c: list[Any]) -> ir.PayloadItem:
        assignments = c[1:]
        self._count(assignments, self.limits.max_items, "assignments", "this payload")
        return construct(ir.PayloadItem, {"span": self.tspan(c[0]), "kind": "payload",
                                          "assignments": tuple(assignments)})

    def assignment(self, c: list[Any]) -> ir.Assignment:
        name, value = c
        return construct(ir.Assignment, {"span": self.cover(name, value), "kind": "assignment",
                                         "name": self.ident(name), "value": value})

    # ---- expressions -------------------------------------------------------------------
    def _chain(self, c: list[Any]) -> ir.Expr:
        left: ir.Expr = c[0]
        for i in range(1, len(c), 2):
            right = c[i + 1]
            node = construct(ir.BinaryExpr, {"span": self.cover(left, right), "kind": "binary", "op": _OPS[c[i]],
                                             "left": left, "right": right})
            self._nest(node, (left, right), right)
            left = node
        return left

    or_expr = and_expr = cmp_expr = coalesce_expr = _chain

    def not_expr(self, c: list[Any]) -> ir.NotExpr:
        node = construct(ir.NotExpr, {"span": self.cover(c[0], c[1]), "kind": "not", "operand": c[1]})
        self._nest(node, (c[1],), node)
        return node

    def path_expr(self, c: list[Any]) -> ir.PathExpr:
        toks = c[0]
        return construct(ir.PathExpr, {"span": self.cover(toks[0], toks[-1]), "kind": "path",
                                       "parts": tuple(str(t) for t in toks)})

    def paren_expr(self, c: list[Any]) -> ir.Expr:
        expr: ir.Expr = c[0]
        return expr


def _block(tok: Any) -> dict[str, bool]:
    """How a setting's text was written: a block string, a folded block string (ADR 0043), or neither."""
    kind = tok.type if isinstance(tok, Token) else None
    return {"block": kind in ("BLOCK_STRING", "FOLDED_STRING"), "folded": kind == "FOLDED_STRING"}
