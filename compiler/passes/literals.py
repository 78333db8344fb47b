"""Literal values in, diagnostics out: strings no store can keep, and map literals that give a key twice.

A NUL character or a lone surrogate (`"\\0"`, `"\\u0000"`, `"\\ud800"`, or one written
raw into an in-memory source) survives parsing but not a store, a JSON encoder or a
terminal, so it is refused wherever text can appear: titles, prompts, messages,
operation templates, arguments, defaults, map keys, expressions.  Finding every string
means walking the whole tree, so a file is walked only when its text could hold such a
string at all (one regular-expression scan).  Maps appear only in argument values and
defaults; a key given twice would otherwise keep its last value silently.
"""

from __future__ import annotations

import re

from interlock.dsl import Diagnostic, Span, ir
from interlock.dsl.diagnostics import label, make

from ..context import Context, step_blocks

__all__ = ["literals", "unstorable"]

# Raw NUL or surrogate, or an escape that may produce one (a false hit only costs a walk).
_MAYBE = re.compile(r"\\(?:0|u(?:0000|[dD][89a-fA-F]))|[\x00\ud800-\udfff]")
_BAD = re.compile(r"[\x00\ud800-\udfff]")


def unstorable(text: str) -> str | None:
    """What makes `text` unstorable ("a NUL character", "a lone surrogate U+D800"), or None."""
    m = _BAD.search(text)
    if m is None:
        return None
    char = m.group()
    return "a NUL character" if char == "\0" else f"a lone surrogate U+{ord(char):04X}"


def literals(ctx: Context) -> list[Diagnostic]:
    out: list[Diagnostic] = []
    for module in ctx.program.modules:
        if not ctx.program.is_user(module.file):
            continue
        source = ctx.program.sources.get(module.file)
        if source is None or _MAYBE.search(source.text):
            _strings(module, out)
        for decl in module.decls:
            if isinstance(decl, (ir.TriggerDecl, ir.ActionKindDecl)):
                for p in decl.params:
                    if p.default is not None:
                        _maps(p.default, out)
            elif isinstance(decl, ir.WorkflowDecl):
                for step in decl.steps:
                    for block in step_blocks(step):
                        for action in block.actions:
                            for arg in action.args:
                                _maps(arg.value, out)
    return out


def _strings(module: ir.Module, out: list[Diagnostic]) -> None:
    for node in ir.walk(module):
        if isinstance(node, ir.StrLit):
            _check(node.value, node.span, "string", out)
        elif isinstance(node, ir.MapEntry):
            _check(node.key, node.key_span or node.span, "map key", out)


def _check(text: str, span: Span, what: str, out: list[Diagnostic]) -> None:
    problem = unstorable(text)
    if problem is not None:
        out.append(make("unstorable-string", span, f"this {what} contains {problem}, which no store can keep",
                        help="remove it; for a character beyond U+FFFF write the character itself, or both halves "
                             "of its surrogate pair (`\\ud83d\\ude00`)"))


def _maps(value: ir.Value, out: list[Diagnostic]) -> None:
    # nesting is bounded by the parser's depth limit, so recursion is safe here
    if isinstance(value, ir.MapValue):
        first: dict[str, ir.MapEntry] = {}
        for entry in value.entries:
            earlier = first.get(entry.key)
            if earlier is None:
                first[entry.key] = entry
            else:
                out.append(make("duplicate-map-key", entry.key_span or entry.span,
                                f"key `{entry.key}` is given twice in this map",
                                labels=(label(earlier.key_span or earlier.span, "first given here"),),
                                help="a map keeps one value per key: remove one of them or rename it"))
            _maps(entry.value, out)
    elif isinstance(value, ir.ListValue):
        for item in value.items:
            _maps(item, out)
    elif isinstance(value, ir.CallValue):
        for arg in value.args:
            _maps(arg, out)
