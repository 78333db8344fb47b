"""A node of the concrete tree in, its layout document out: how the formatter lays out each construct of the
grammar (a rule per tree node kind, `RULES`), and the helpers that read the concrete tree.

The rules call back into the formatter's builder (`interlock.dsl.format`), which visits every token once; they see
it through the `Builder` protocol, so this module does not import the formatter.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING, Any, Protocol

from lark import Tree as _Tree

from .layout import Doc, Flat, flat_width

if TYPE_CHECKING:
    from lark import Token, Tree

__all__ = ["RULES", "Builder", "Node", "tokens", "first", "is_token"]


class Builder(Protocol):
    """What a rule asks of the formatter's builder (`interlock.dsl.format._Builder`)."""

    handler_heads: dict[int, tuple[list[Doc], int]]

    def tok(self, t: Token) -> Doc: ...
    def space(self, nxt: Token) -> str: ...
    def node(self, child: Node, depth: int) -> Doc: ...
    def inline(self, children: list[Node], depth: int) -> list[Doc]: ...
    def bracketed(self, children: list[Node], depth: int, trailing: bool) -> Doc: ...
    def names(self, children: list[Node], depth: int, hang: int) -> Doc: ...
    def clause(self, children: list[Node], depth: int) -> Doc: ...
    def block(self, tree: Tree[Token], depth: int, head: list[Doc], brace: int, align: bool = False,
              pad: list[Doc] | None = None) -> Doc: ...


Node = Any  # a `Tree[Token]` or a `Token` of the concrete tree


def tokens(node: Node) -> Iterator[Token]:
    """The tokens of a subtree, in source order."""
    stack: list[Node] = [node]
    while stack:
        n = stack.pop()
        if type(n) is _Tree:
            stack.extend(reversed(n.children))
        else:
            yield n


def first(node: Node) -> Token:
    while type(node) is _Tree:
        node = node.children[0]
    token: Token = node
    return token


def is_token(node: Node, text: str) -> bool:
    """`node` is the token `text` (a bracket, a comma, a keyword)."""
    return type(node) is not _Tree and node == text


def _brace_index(tree: Tree[Token]) -> int:
    return next(i for i, c in enumerate(tree.children) if is_token(c, "{"))


def _plain_block(self: Builder, tree: Tree[Token], depth: int) -> Doc:
    """record, entry, workflow, dispatch, payload: the head inline, then the block."""
    brace = _brace_index(tree)
    return self.block(tree, depth, self.inline(tree.children[:brace], depth)[1:], brace)


def _step(self: Builder, tree: Tree[Token], depth: int) -> Doc:
    brace = _brace_index(tree)
    return self.block(tree, depth, self.inline(tree.children[:brace], depth)[1:], brace, align=True)


def _handler(self: Builder, tree: Tree[Token], depth: int) -> Doc:
    brace = _brace_index(tree)
    head = self.inline(tree.children[:brace], depth)[1:]
    pad: list[Doc] = []
    doc = self.block(tree, depth, head, brace, pad=pad)
    if type(doc) is Flat:
        self.handler_heads[id(doc)] = (pad, flat_width(head))
    return doc


def _load(self: Builder, tree: Tree[Token], depth: int) -> Doc:
    ch = tree.children  # load NAME = NAME ( [expr ("," expr)*] ) { load_case* }
    close = next(i for i, c in enumerate(ch) if is_token(c, ")"))
    head = self.inline(ch[:4], depth)[1:]
    head.append(self.bracketed(ch[4:close + 1], depth, trailing=False))
    return self.block(tree, depth, head, close + 1)


def _declared(self: Builder, tree: Tree[Token], depth: int) -> Doc:
    """`trigger NAME (PARAMS) entry`, `task NAME (PARAMS) on T, … retry …`: a blank before the parameters."""
    out: list[Doc] = []
    for c in tree.children:
        if type(c) is _Tree and c.data == "params":
            out.append(" ")
            out.append(self.bracketed(c.children, depth, trailing=True))
        elif type(c) is _Tree and c.data in ("on_clause", "retry_clause"):
            out.append(self.clause([c], depth))
        else:
            out.append(self.space(first(c)))
            out.append(self.node(c, depth))
    return out[1:]


def _on_clause(self: Builder, tree: Tree[Token], depth: int) -> Doc:
    ch: list[Any] = tree.children  # on NAME ("," NAME)*
    return [self.tok(ch[0]), " ", self.names(ch[1:], depth, hang=len("on "))]


def _role(self: Builder, tree: Tree[Token], depth: int) -> Doc:
    ch: list[Any] = tree.children
    return [self.tok(ch[0]), " ", self.names(ch[1:], depth, hang=len("role "))]


def _entry_clause(self: Builder, tree: Tree[Token], depth: int) -> Doc:
    ch = tree.children  # entry_mode NAME ("," NAME)*
    mode = first(ch[0])
    return [self.node(ch[0], depth), " ", self.names(ch[1:], depth, hang=len(mode) + 1)]


def _action(self: Builder, tree: Tree[Token], depth: int) -> Doc:
    """NAME (ARGS) [when quorum(…)] [requires_approval] [continue_on_failure]: the clauses may move to new lines."""
    out: list[Doc] = []
    for c in tree.children:
        if type(c) is _Tree and c.data == "args":
            out.append(self.bracketed(c.children, depth, trailing=True))
        elif (type(c) is _Tree and c.data == "guard") or is_token(c, "requires_approval") or is_token(c, "continue_on_failure"):
            out.append(self.clause([c], depth))
        else:
            out.append(self.node(c, depth))
    return out


def _when(self: Builder, tree: Tree[Token], depth: int) -> Doc:
    """`skip …`, `operation …`: the `when EXPR` clause may move to a continuation line."""
    ch = tree.children
    at = next((i for i, c in enumerate(ch) if is_token(c, "when")), len(ch))
    out = self.inline(ch[:at], depth)[1:]
    if at < len(ch):
        out.append(self.clause(ch[at:], depth))
    return out


def _bracketed(trailing: bool) -> object:
    def build(self: Builder, tree: Tree[Token], depth: int) -> Doc:
        return self.bracketed(tree.children, depth, trailing)

    return build


def _call_value(self: Builder, tree: Tree[Token], depth: int) -> Doc:
    ch = tree.children  # path ( [value ("," value)*] )
    return [self.node(ch[0], depth), self.bracketed(ch[1:], depth, trailing=False)]


RULES: dict[str, Any] = {
    "record_decl": _plain_block, "entry_decl": _plain_block, "workflow_decl": _plain_block,
    "dispatch_decl": _plain_block, "payload_item": _plain_block, "step_decl": _step, "handler": _handler,
    "load_item": _load, "trigger_decl": _declared, "action_decl": _declared, "on_clause": _on_clause,
    "role_decl": _role, "entry_clause": _entry_clause, "action": _action, "skip_item": _when, "timer": _handler,
    "operation_item": _when, "args": _bracketed(True), "list_value": _bracketed(True),
    "map_value": _bracketed(True), "call_value": _call_value,
}
