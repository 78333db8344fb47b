"""`.wf` source text in, the same program in the canonical layout out (`interlock fmt`), every comment kept.

The formatter works from the concrete structure, never from the IR: the concrete parse
tree holds every token in source order (`interlock.dsl.parser.parse_concrete`), the
comments come from the lexer, and the source text says where the blank lines were.  The
tree is turned into a layout document (text, line breaks that may or may not break,
groups, indentation, comments kept to the end of their line) which a Wadler/Prettier
style printer (`interlock.dsl.layout`) lays out at `WIDTH` columns.

Layout, in short (docs/fmt.md has the full list): two-space indentation; one block item
per line; a block whose source was on one line stays on one line when it fits (items two
spaces apart); runs of blank lines collapse to one and none are kept at the start or end
of a block; argument, parameter, list and map literals that do not fit are written one
element per line with a trailing comma; name lists (`role`, `on`, entry lists) fill
lines; `when` clauses and `on` clauses move to a continuation line when the line is too
long.  Token texts (strings, numbers, names) are written exactly as they are in the
source.  The only tokens the formatter adds or drops are commas where the grammar makes
them optional.

Comments: a comment on a line of its own is written on a line of its own before the
token that follows it (at that token's indentation; before a closing brace, inside the
block); a comment after code stays at the end of that line, aligned with the trailing
comments of the lines next to it.  Every token and every comment is visited exactly once
in source order; if either count comes out wrong, `FormatError` is raised instead of
writing text that lost something.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from lark import Tree as _Tree

from .comments import Comment, CommentCursor, collect
from .diagnostics import Diagnostic
from .format_rules import RULES as _RULES
from .format_rules import Node
from .format_rules import first as _first
from .format_rules import is_token as _is
from .format_rules import tokens as _tokens
from .layout import (
    FRESH,
    HARD,
    INDENT,
    LINE,
    SOFT,
    WIDTH,
    Doc,
    Fill,
    Flat,
    Group,
    IfBreak,
    Indent,
    Suffix,
    flat_width,
    render,
)
from .parser import DEFAULT_LIMITS, Limits, parse_concrete
from .source import SourceFile

if TYPE_CHECKING:
    from lark import Token, Tree

__all__ = ["WIDTH", "FormatResult", "FormatError", "format_source", "format_text"]

CONTINUATION = 4
"""Extra indentation of a `when …` or `on …` clause moved to a line of its own."""


class FormatError(Exception):
    """The formatter would have lost or duplicated a token or a comment (a bug; nothing is written)."""


@dataclass(frozen=True)
class FormatResult:
    """One file through the formatter.

    `text` is the formatted text, or the original text when the file could not be
    formatted (`diagnostics` then says why: a syntax error or a limit).
    """

    name: str
    original: str
    text: str
    diagnostics: tuple[Diagnostic, ...] = field(default=())

    @property
    def ok(self) -> bool:
        """The file was formatted (it parsed)."""
        return not self.diagnostics

    @property
    def changed(self) -> bool:
        """Formatting changed the text."""
        return self.text != self.original


def format_source(text: str, name: str = "<stdin>", *, limits: Limits = DEFAULT_LIMITS) -> FormatResult:
    """Format one file's text; a file that does not parse comes back unchanged, with its diagnostic."""
    source = SourceFile(name, text)
    tree, comment_tokens, refused = parse_concrete(source, limits)
    if tree is None:
        assert refused is not None
        return FormatResult(name, text, text, (refused,))
    # the tree's positions are the normalised text's (`\r\n` and `\r` are `\n`, ADR 0044): so are the comments'
    formatted = format_text(tree, collect(comment_tokens, source.text), source.text)
    return FormatResult(name, text, formatted)


# ---- from the concrete tree to a document --------------------------------------------------------

_NO_SPACE_BEFORE = frozenset({",", ")", "]", ":", ".", "?", ".."})  # `..`: a backoff's range, `30s..10m`
_NO_SPACE_AFTER = frozenset({"(", "[", ".", ".."})
_CALLERS = frozenset({"NAME", "QUORUM"})  # a `(` or `[` right after one of these opens its arguments

class _Builder:
    """Turns the concrete tree into a document, visiting every token once, in source order."""

    def __init__(self, comments: list[Comment], text: str) -> None:
        self.cursor = CommentCursor(comments, text)
        self.seen = 0  # tokens visited
        self.prev: Token | None = None  # the token visited last
        self.last_line = 0  # its line
        self.mark = 0  # comments handed out before the comment trailing the token visited last
        self.own_lines = 0  # comments written on lines of their own so far
        self.handler_heads: dict[int, tuple[list[Doc], int]] = {}  # one-line handler -> (padding slot, head width)

    # ---- tokens and their comments -------------------------------------------------------------
    def tok(self, t: Token) -> Doc:
        """A token's text, with the comments before it (each on a line of its own) and after it."""
        self.seen += 1
        cursor = self.cursor
        start = t.start_pos or 0
        line = t.end_line or t.line or 0  # a block string ends lines after it starts
        lead = cursor.before(start) if start > cursor.next_start else None
        self.mark = cursor.index
        trail = cursor.after(t.end_pos or start, line) if line == cursor.next_line else None
        self.prev = t
        self.last_line = line
        text = str(t)
        if not lead and trail is None:
            return text
        parts: list[Doc] = self.leading(lead, t.line or 0) if lead else []
        parts.append(text)
        if trail is not None:
            parts.append(Suffix(trail.text))
        return parts

    def optional(self, t: Token) -> Doc | None:
        """An optional comma: kept (and None returned) only when a comment is attached to it, else dropped."""
        if self.cursor.touches(t.start_pos or 0, t.end_pos or 0, t.line or 0):
            return self.tok(t)
        self.drop(t)
        return None

    def drop(self, t: Token) -> Doc:
        """A token the layout leaves out (an optional comma): only its comments are written."""
        self.seen += 1
        cursor = self.cursor
        start = t.start_pos or 0
        lead = cursor.before(start)
        self.mark = cursor.index
        trail = cursor.after(t.end_pos or start, t.line or 0)
        parts: list[Doc] = self.leading(lead, t.line or 0) if lead else []
        if trail is not None:
            parts.append(Suffix(trail.text))
        return parts

    def leading(self, comments: list[Comment], next_line: int, dangling: bool = False) -> list[Doc]:
        """Comments written on lines of their own before a token on `next_line` (`dangling`: before a
        closing bracket, whose own line break follows them)."""
        parts: list[Doc] = []
        previous = 0
        for c in comments:
            if c.own_line:
                self.own_lines += 1
                parts.append(FRESH)
                if previous and c.line - previous > 1:
                    parts.append(HARD)  # one blank line kept between two comments
                parts.append(c.text)
                parts.append(HARD)
            else:  # it trailed a dropped comma: it stays at the end of its line
                parts.append(Suffix(c.text))
            previous = c.line
        if not parts:
            return parts
        if dangling:
            if parts[-1] is HARD:
                parts.pop()
        elif comments[-1].own_line and next_line - previous > 1:
            parts.append(HARD)  # the blank line between a comment and its token
        return parts

    def space(self, nxt: Token) -> str:
        prev = self.prev
        if prev is None or nxt in _NO_SPACE_BEFORE or prev in _NO_SPACE_AFTER:
            return ""
        if (nxt == "(" or nxt == "[") and prev.type in _CALLERS:
            return ""
        return " "

    # ---- generic pieces ------------------------------------------------------------------------------
    def node(self, child: Node, depth: int) -> Doc:
        if type(child) is _Tree:
            method = _RULES.get(child.data)
            if method is not None:
                doc: Doc = method(self, child, depth)
                return doc
            return self.inline(child.children, depth)[1:]
        return self.tok(child)

    def inline(self, children: list[Node], depth: int) -> list[Doc]:
        """Children one after another, a blank between two tokens where the house style wants one."""
        out: list[Doc] = []
        for child in children:
            out.append(self.space(_first(child)))
            out.append(self.node(child, depth))
        return out

    def tail(self, children: list[Node], depth: int) -> list[Doc]:
        """`inline` without the blank before the first child."""
        return self.inline(children, depth)[1:]

    def bracketed(self, children: list[Node], depth: int, trailing: bool) -> Doc:
        """`(a, b)`, `[…]`, `{…}`: flat when it fits, else one element per line, with a trailing comma
        where the grammar allows one (`trailing`)."""
        open_tok, close_tok = children[0], children[-1]
        start = self.cursor.index
        head = self.tok(open_tok)
        elements: list[list[Node]] = [[]]
        commas: list[Token] = []
        for c in children[1:-1]:
            if _is(c, ","):
                commas.append(c)
                elements.append([])
            else:
                elements[-1].append(c)
        if not elements[-1]:
            elements.pop()  # after a trailing comma, or an empty list
        body: list[Doc] = []
        last = len(elements) - 1
        for i, element in enumerate(elements):
            if i:
                body.append(LINE)
            body.append(self.inline(element, depth)[1:])
            if i < last:
                body.append(self.tok(commas[i]))
            else:  # a trailing comma is the layout's to write, unless a comment is attached to it
                kept = self.optional(commas[i]) if i < len(commas) else None
                body.append(IfBreak("," if trailing else "") if kept is None else kept)
        close_lead = self.cursor.before(close_tok.start_pos or 0)
        if close_lead:
            body.append(self.leading(close_lead, close_tok.line or 0, dangling=True))
        end = self.tok(close_tok)
        broken = self.mark != start  # a comment inside (one after the `)` is not)
        if not body:
            return Group([head, end], broken)
        return Group([head, Indent([SOFT, *body]), SOFT, end], broken)

    def names(self, children: list[Node], depth: int, hang: int) -> Doc:
        """`a, b, c` filling lines; continuation lines `hang` columns in (under the first name)."""
        parts: list[Doc] = []
        content: list[Doc] = []
        for c in children:
            if _is(c, ","):
                content.append(self.tok(c))
                parts.append(content)
                parts.append(LINE)
                content = []
            else:
                content.append(self.node(c, depth))
        parts.append(content)
        return Indent(Fill(parts), hang)

    def clause(self, children: list[Node], depth: int) -> Doc:
        """`when …`, `on …`, `requires_approval`: on the line when it fits, else on a continuation line.

        Only a comment on a line of its own inside forces the continuation line: a comment at the
        end of a line inside has no line break of the clause after it to end at, so it moves to
        the end of the clause's last line either way (and would not force it the next time)."""
        start = self.own_lines
        docs = self.tail(children, depth)
        return Group(Indent([LINE, *docs], CONTINUATION), self.own_lines != start)

    # ---- blocks ----------------------------------------------------------------------------------------
    def separate(self, first: Token, first_in_block: bool) -> tuple[list[Doc], bool]:
        """The line break before a block item (and a blank line if the source had one there), then the
        comments of their own lines above it; whether the run of aligned lines above ends here."""
        cursor = self.cursor
        start = first.start_pos or 0
        first_line = cursor.first_line_before(start, first.line or 0)
        blank = not first_in_block and first_line - self.last_line > 1
        out: list[Doc] = [HARD, HARD] if blank else [HARD]
        lead = cursor.before(start)
        if lead:
            out.extend(self.leading(lead, first.line or 0))
        return out, blank or bool(lead)

    def block(self, tree: Tree[Token], depth: int, head: list[Doc], brace: int, align: bool = False,
              pad: list[Doc] | None = None) -> Doc:
        """`HEAD { item … }` from the children after the head (the `{` is child `brace`): one item per
        line, or all on the head's line, two blanks apart, when the source had the block on one line
        and it fits.  `align`: line up the `{` of neighbouring one-line handlers; `pad`: this is a
        handler, and its head is padded through this slot."""
        ch: list[Any] = tree.children
        brace_tok: Token = ch[brace]
        cursor = self.cursor
        moved: list[Doc] = []  # comments of their own lines before the `{`: written as the block's first lines
        gap = " "  # before the `{`
        if cursor.next_start < (brace_tok.start_pos or 0):
            lead = cursor.before(brace_tok.start_pos or 0)
            if all(c.own_line for c in lead) and not cursor.touches(brace_tok.start_pos or 0, brace_tok.end_pos or 0,
                                                                    brace_tok.line or 0):
                moved = [HARD, *self.leading(lead, 0, dangling=True)]
            else:  # moving them would put them after the `{`'s own comment: they stay before the `{`
                head = [*head, *self.leading(lead, brace_tok.line or 0)]
                gap = ""  # the `{` starts a line
        open_doc = self.tok(brace_tok)
        close_tok: Token = ch[-1]
        docs: list[list[Doc]] = []
        seps: list[list[Doc]] = []
        breaks: list[bool] = []
        for item in ch[brace + 1:-1]:
            if _is(item, ",") and docs:  # an optional comma after a record field
                kept = self.optional(item)
                if kept is not None:
                    docs[-1].append(kept)
                continue
            sep, ends_run = self.separate(_first(item), first_in_block=not docs)
            seps.append(sep)
            breaks.append(ends_run)
            docs.append([self.item(item, depth + 1)])
        close_first = self.cursor.first_line_before(close_tok.start_pos or 0, close_tok.line or 0)
        close_lead = self.cursor.before(close_tok.start_pos or 0)
        dangling: list[Doc] = []
        if close_lead:
            dangling.append(HARD)
            if docs and close_first - self.last_line > 1:
                dangling.append(HARD)
            dangling.extend(self.leading(close_lead, close_tok.line or 0, dangling=True))
        end = self.tok(close_tok)
        if align:
            self.align(docs, breaks)
        if not docs and not dangling and not moved and gap:  # `{}` (but a `{` after comments keeps its own)
            return [*head, gap, open_doc, end]
        if _first(tree).line == close_tok.line:
            flat: list[Doc] = [*head]
            if pad is not None:
                flat.append(pad)
            flat += [" ", open_doc, " "]
            for i, d in enumerate(docs):
                if i:
                    flat.append("  ")
                flat.append(d)
            flat += [" ", end]
            if depth * INDENT + flat_width(flat) <= WIDTH:
                return Flat(flat)
        body: list[Doc] = [*moved]
        for sep, d in zip(seps, docs):
            body.append(sep)
            body.append(d)
        body.extend(dangling)
        return [*head, gap, open_doc, Indent(body), HARD, end]

    def align(self, docs: list[list[Doc]], breaks: list[bool]) -> None:
        """Pad the heads of neighbouring one-line handlers (no blank line or comment between them)."""
        run: list[tuple[list[Doc], int]] = []

        def flush() -> None:
            if len(run) > 1:
                widest = max(w for _, w in run)
                for slot, w in run:
                    slot.append(" " * (widest - w))
            run.clear()

        for d, ends_run in zip(docs, breaks):
            info = self.handler_heads.get(id(d[0]))
            if info is None or ends_run:
                flush()
            if info is not None:
                run.append(info)
        flush()

    def item(self, item: Node, depth: int) -> Doc:
        return self.node(item, depth)

    # ---- the file ---------------------------------------------------------------------------------------
    def module(self, tree: Tree[Token]) -> Doc:
        parts: list[Doc] = []
        for i, decl in enumerate(tree.children):
            sep, _ = self.separate(_first(decl), first_in_block=i == 0)
            parts.append(sep[1:] if i == 0 else sep)  # nothing before the first declaration
            parts.append(self.node(decl, 0))
        rest = self.cursor.rest()
        if rest:
            if tree.children:
                parts.append(HARD)
                if rest[0].line - self.last_line > 1:
                    parts.append(HARD)
            parts.append(self.leading(rest, 0, dangling=True))
        return parts


def format_text(tree: Tree[Token], comments: list[Comment], text: str) -> str:
    """The canonical text of a parsed file, from its concrete tree, its comments and its text."""
    builder = _Builder(comments, text)
    doc = builder.module(tree)
    total = sum(1 for _ in _tokens(tree))
    if builder.seen != total:
        raise FormatError(f"the formatter visited {builder.seen} of the file's {total} tokens")
    if not builder.cursor.done:
        raise FormatError(f"the formatter placed {builder.cursor.index} of the file's {len(comments)} comments")
    return render(doc)
