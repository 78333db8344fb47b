"""Lark parse tree in, IR `Module` out (plus diagnostics for bad string escapes).

This is the only place IR nodes are built from syntax.  Method names match grammar rule
names.  Spans come from tokens, so the same transformer works on a finished tree or
inline in the LALR parser.  Nodes are built with `model_construct`: the grammar already
guarantees their shape, so re-validating every node would only cost time.
"""

from __future__ import annotations

from typing import Any, cast

from lark import Token, Transformer, Tree

from . import ir
from .diagnostics import Diagnostic, make
from .source import SourceFile, Span

__all__ = ["lower_tree", "unescape"]

# Integers are 64-bit signed: plans cross into JSON and SQL, and a longer digit string
# would otherwise trip Python's int-conversion limit inside the transformer.
_INT_MIN, _INT_MAX = -(2**63), 2**63 - 1

_ESCAPES = {'"': '"', "\\": "\\", "n": "\n", "t": "\t", "r": "\r", "0": "\0", "/": "/"}


def unescape(body: str) -> tuple[str, int | None]:
    """Decode a string literal's body; returns (text, offset of first bad escape or None)."""
    if "\\" not in body:
        return body, None
    out: list[str] = []
    i, n = 0, len(body)
    while i < n:
        c = body[i]
        if c != "\\":
            out.append(c)
            i += 1
            continue
        nxt = body[i + 1] if i + 1 < n else ""
        if nxt in _ESCAPES:
            out.append(_ESCAPES[nxt])
            i += 2
        elif nxt == "u" and i + 6 <= n and all(ch in "0123456789abcdefABCDEF" for ch in body[i + 2:i + 6]):
            out.append(chr(int(body[i + 2:i + 6], 16)))
            i += 6
        else:
            return "".join(out), i
    return "".join(out), None


class _Lower(Transformer[Token, Any]):
    def __init__(self, source: SourceFile, max_depth: int) -> None:
        super().__init__(visit_tokens=False)
        self.source = source
        self.diagnostics: list[Diagnostic] = []
        self.max_depth = max_depth
        self.too_deep = False
        # Operator depth of each `not`/binary node built so far, by id.  A left-associative
        # chain (`a ?? b ?? …`) is flat in the parse tree but as deep as it is long in the IR,
        # and every later pass walks expressions recursively.
        self._depth: dict[int, int] = {}

    # ---- helpers -----------------------------------------------------------------------
    def tspan(self, tok: Token) -> Span:
        start = tok.start_pos or 0
        end = tok.end_pos if tok.end_pos is not None else start + len(tok)
        return self.source.span(start, end)

    def span(self, *items: Any) -> Span:
        first = last = None
        for item in items:
            s = self._item_span(item)
            if s is None:
                continue
            if first is None:
                first = s
            last = s
        if first is None or last is None:
            return self.source.span(0, 0)
        return Span.model_construct(file=first.file, line=first.line, col=first.col,
                                    end_line=last.end_line, end_col=last.end_col)

    def _item_span(self, item: Any) -> Span | None:
        if item is None:
            return None
        if isinstance(item, Token):
            return self.tspan(item)
        if isinstance(item, ir.Node):
            return item.span
        if isinstance(item, (list, tuple)):
            spans = [s for s in (self._item_span(x) for x in item) if s is not None]
            if not spans:
                return None
            return Span.model_construct(file=spans[0].file, line=spans[0].line, col=spans[0].col,
                                        end_line=spans[-1].end_line, end_col=spans[-1].end_col)
        return None

    def ident(self, tok: Token) -> ir.Ident:
        return ir.Ident.model_construct(span=self.tspan(tok), name=str(tok))

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
        return ir.IntLit.model_construct(span=self.tspan(tok), value=value)

    def _nest(self, node: ir.Expr, operands: tuple[ir.Expr, ...], where: ir.Expr) -> None:
        depth = 1 + max(self._depth.get(id(o), 0) for o in operands)
        self._depth[id(node)] = depth
        if depth > self.max_depth and not self.too_deep:
            self.too_deep = True
            self.diagnostics.append(make("nesting-too-deep", where.span,
                                         f"expression nested deeper than {self.max_depth} levels",
                                         help="split the expression; operator chains count as nesting"))

    def strlit(self, tok: Token) -> ir.StrLit:
        text, bad = unescape(str(tok)[1:-1])
        span = self.tspan(tok)
        if bad is not None:
            start = (tok.start_pos or 0) + 1 + bad
            self.diagnostics.append(make(
                "invalid-escape", self.source.span(start, start + 2),
                f"unknown escape `{str(tok)[1 + bad:3 + bad]}` in string",
                help='use one of \\" \\\\ \\n \\t \\r \\0 \\/ or \\uXXXX'))
        return ir.StrLit.model_construct(span=span, value=text)

    # ---- module and vocabulary ------------------------------------------------------
    def start(self, children: list[Any]) -> ir.Module:
        decls = tuple(children)
        end = len(self.source.text)
        return ir.Module.model_construct(span=self.source.span(0, end), file=self.source.name, decls=decls)

    def use_decl(self, c: list[Any]) -> ir.UseDecl:
        return ir.UseDecl.model_construct(span=self.span(c), name=self.ident(c[0]))

    def trigger_decl(self, c: list[Any]) -> ir.TriggerDecl:
        name, params, entry = c
        return ir.TriggerDecl.model_construct(span=self.span(c), name=self.ident(name),
                                              params=tuple(params or ()), entry=entry is not None)

    def role_decl(self, c: list[Any]) -> ir.RoleDecl:
        return ir.RoleDecl.model_construct(span=self.span(c), names=tuple(self.ident(t) for t in c))

    def action_class(self, c: list[Any]) -> Token:
        tok: Token = c[0]
        return tok

    def action_decl(self, c: list[Any]) -> ir.ActionKindDecl:
        cls, name, params, triggers = c
        return ir.ActionKindDecl.model_construct(
            span=self.span(c), action_class=cast(Any, str(cls)), name=self.ident(name), params=tuple(params or ()),
            triggers=None if triggers is None else tuple(triggers))

    def on_clause(self, c: list[Any]) -> list[ir.Ident]:
        return [self.ident(t) for t in c]

    def params(self, c: list[Any]) -> list[ir.Param]:
        return [p for p in c if p is not None]

    def param(self, c: list[Any]) -> ir.Param:
        name, typ, default = c
        return ir.Param.model_construct(span=self.span(c), name=self.ident(name), type=typ, default=default)

    def type(self, c: list[Any]) -> ir.TypeRef:
        name, arg, optional = c
        return ir.TypeRef.model_construct(span=self.span(c), name=str(name), arg=arg, optional=optional is not None)

    def type_arg(self, c: list[Any]) -> ir.TypeRef:
        typ: ir.TypeRef = c[0]
        return typ

    def record_decl(self, c: list[Any]) -> ir.RecordDecl:
        return ir.RecordDecl.model_construct(span=self.span(c), name=self.ident(c[0]), fields=tuple(c[1:]))

    def field(self, c: list[Any]) -> ir.Field:
        return ir.Field.model_construct(span=self.span(c), name=self.ident(c[0]), type=c[1])

    def entry_decl(self, c: list[Any]) -> ir.EntryDecl:
        return ir.EntryDecl.model_construct(span=self.span(c[0]), clauses=tuple(c[1:]))

    def entry_mode(self, c: list[Any]) -> Token:
        tok: Token = c[0]
        return tok

    def entry_clause(self, c: list[Any]) -> ir.EntryClause:
        return ir.EntryClause.model_construct(span=self.span(c), mode=cast(Any, str(c[0])),
                                              kinds=tuple(self.ident(t) for t in c[1:]))

    # ---- workflows ------------------------------------------------------------------
    def workflow_decl(self, c: list[Any]) -> ir.WorkflowDecl:
        name, title, *items = c
        hidden = any(isinstance(i, Token) and i.type == "HIDDEN" for i in items)
        steps = tuple(i for i in items if isinstance(i, ir.StepDecl))
        return ir.WorkflowDecl.model_construct(span=self.span(name, title), name=self.ident(name),
                                               title=None if title is None else self.strlit(title),
                                               hidden=hidden, steps=steps)

    def step_decl(self, c: list[Any]) -> ir.StepDecl:
        name, title, *items = c
        return ir.StepDecl.model_construct(
            span=self.span(name, title), name=self.ident(name),
            title=None if title is None else self.strlit(title),
            flags=tuple(i for i in items if isinstance(i, ir.StepFlag)),
            settings=tuple(i for i in items if isinstance(i, ir.StepSetting)),
            handlers=tuple(i for i in items if isinstance(i, ir.Handler)))

    def step_flag(self, c: list[Any]) -> ir.StepFlag:
        return ir.StepFlag.model_construct(span=self.span(c), name=cast(Any, str(c[0])))

    def step_setting(self, c: list[Any]) -> ir.StepSetting:
        key, tok = c
        value: ir.IntLit | ir.StrLit | ir.Ident
        if tok.type == "INT":
            value = self.intlit(tok)
        elif tok.type == "STRING":
            value = self.strlit(tok)
        else:
            value = self.ident(tok)
        return ir.StepSetting.model_construct(span=self.span(c), name=cast(Any, str(key)), value=value)

    def handler(self, c: list[Any]) -> ir.Handler:
        return ir.Handler.model_construct(span=self.span(c[0]), trigger=self.ident(c[0]), actions=tuple(c[1:]))

    def action(self, c: list[Any]) -> ir.ActionCall:
        name, args, guard, approval = c
        return ir.ActionCall.model_construct(
            span=self.span(c), name=self.ident(name), args=tuple(args or ()), has_parens=args is not None,
            guard=guard, requires_approval=None if approval is None else self.tspan(approval))

    def guard(self, c: list[Any]) -> ir.QuorumGuard:
        _, role, threshold = c
        return ir.QuorumGuard.model_construct(span=self.span(c), role=self.ident(role), threshold=threshold)

    def threshold(self, c: list[Any]) -> ir.Threshold:
        name, count = c
        return ir.Threshold.model_construct(
            span=self.span(c), name=self.ident(name),
            count=None if count is None else self.intlit(count))

    def args(self, c: list[Any]) -> list[ir.Arg]:
        return [a for a in c if a is not None]

    def named_arg(self, c: list[Any]) -> ir.Arg:
        return ir.Arg.model_construct(span=self.span(c), name=self.ident(c[0]), value=c[1])

    def positional_arg(self, c: list[Any]) -> ir.Arg:
        return ir.Arg.model_construct(span=self.span(c), name=None, value=c[0])

    # ---- values -----------------------------------------------------------------------
    def string(self, c: list[Any]) -> ir.StrLit:
        return self.strlit(c[0])

    def integer(self, c: list[Any]) -> ir.IntLit:
        return self.intlit(c[0])

    def true(self, c: list[Any]) -> ir.BoolLit:
        return ir.BoolLit.model_construct(span=self.tspan(c[0]), value=True)

    def false(self, c: list[Any]) -> ir.BoolLit:
        return ir.BoolLit.model_construct(span=self.tspan(c[0]), value=False)

    def path(self, c: list[Any]) -> list[Token]:
        return list(c)

    def name_value(self, c: list[Any]) -> ir.NameValue:
        toks = c[0]
        return ir.NameValue.model_construct(span=self.span(toks), parts=tuple(str(t) for t in toks))

    def call_value(self, c: list[Any]) -> ir.CallValue:
        toks, *args = c
        name = ir.NameValue.model_construct(span=self.span(toks), parts=tuple(str(t) for t in toks))
        values = tuple(a for a in args if a is not None)
        return ir.CallValue.model_construct(span=self.span(name, values), name=name, args=values)

    def list_value(self, c: list[Any]) -> ir.ListValue:
        items = tuple(v for v in c if v is not None)
        return ir.ListValue.model_construct(span=self.span(items), items=items)

    def map_value(self, c: list[Any]) -> ir.MapValue:
        entries = tuple(e for e in c if e is not None)
        return ir.MapValue.model_construct(span=self.span(entries), entries=entries)

    def map_entry(self, c: list[Any]) -> ir.MapEntry:
        key, value = c
        text = self.strlit(key).value if key.type == "STRING" else str(key)
        return ir.MapEntry.model_construct(span=self.span(c), key=text, value=value)

    # ---- dispatch sequences --------------------------------------------------------------
    def dispatch_decl(self, c: list[Any]) -> ir.DispatchDecl:
        _, name, trigger, *items = c
        return ir.DispatchDecl.model_construct(span=self.span(name, trigger), name=self.ident(name),
                                               trigger=self.ident(trigger), items=tuple(items))

    def event_item(self, c: list[Any]) -> ir.EventItem:
        return ir.EventItem.model_construct(span=self.span(c), record=self.ident(c[0]))

    def level(self, c: list[Any]) -> str:
        return str(c[0])

    def skip_item(self, c: list[Any]) -> ir.SkipItem:
        name, level, message, cond = c
        return ir.SkipItem.model_construct(span=self.span(name, cond), name=self.ident(name), level=level,
                                           message=None if message is None else self.strlit(message),
                                           condition=cond)

    def load_outcome(self, c: list[Any]) -> Token:
        tok: Token = c[0]
        return tok

    def load_item(self, c: list[Any]) -> ir.LoadItem:
        name, loader, *rest = c
        args = tuple(x for x in rest if x is not None and not isinstance(x, ir.LoadCase))
        cases = tuple(x for x in rest if isinstance(x, ir.LoadCase))
        return ir.LoadItem.model_construct(span=self.span(name, loader, args), name=self.ident(name),
                                           loader=self.ident(loader), args=args, cases=cases)

    def load_case(self, c: list[Any]) -> ir.LoadCase:
        *outcomes, name, level, message = c
        return ir.LoadCase.model_construct(span=self.span(c), outcomes=cast(Any, tuple(str(o) for o in outcomes)),
                                           guard=self.ident(name), level=level,
                                           message=None if message is None else self.strlit(message))

    def operation_item(self, c: list[Any]) -> ir.OperationItem:
        kw, template, cond = c
        return ir.OperationItem.model_construct(span=self.span(kw, template), template=self.strlit(template),
                                                condition=cond)

    def payload_item(self, c: list[Any]) -> ir.PayloadItem:
        return ir.PayloadItem.model_construct(span=self.span(c[0]), assignments=tuple(c[1:]))

    def assignment(self, c: list[Any]) -> ir.Assignment:
        return ir.Assignment.model_construct(span=self.span(c), name=self.ident(c[0]), value=c[1])

    # ---- expressions -------------------------------------------------------------------
    def _chain(self, c: list[Any]) -> ir.Expr:
        left: ir.Expr = c[0]
        for i in range(1, len(c), 2):
            op, right = c[i], c[i + 1]
            node = ir.BinaryExpr.model_construct(span=self.span(left, right), op=cast(Any, str(op)), left=left, right=right)
            self._nest(node, (left, right), right)
            left = node
        return left

    or_expr = and_expr = cmp_expr = coalesce_expr = _chain

    def not_expr(self, c: list[Any]) -> ir.NotExpr:
        node = ir.NotExpr.model_construct(span=self.span(c), operand=c[1])
        self._nest(node, (c[1],), node)
        return node

    def path_expr(self, c: list[Any]) -> ir.PathExpr:
        toks = c[0]
        return ir.PathExpr.model_construct(span=self.span(toks), parts=tuple(str(t) for t in toks))

    def paren_expr(self, c: list[Any]) -> ir.Expr:
        expr: ir.Expr = c[0]
        return expr


def lower_tree(tree: Tree[Token], source: SourceFile,
               max_depth: int = 64) -> tuple[ir.Module | None, list[Diagnostic]]:
    """Lower a parse tree of `source` to an IR module (None: an expression nests past `max_depth`)."""
    lowering = _Lower(source, max_depth)
    module = lowering.transform(tree)
    assert isinstance(module, ir.Module)
    return (None if lowering.too_deep else module), lowering.diagnostics
