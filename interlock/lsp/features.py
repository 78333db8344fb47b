"""The requests, answered from one document's cached analysis: hover, definition, references,
completion, document and workspace symbols, rename, formatting and code actions.  Pure functions of
(analysis, text, position); the server only routes."""

from __future__ import annotations

import difflib
import re
from typing import TYPE_CHECKING

from lsprotocol import types as lsp

from interlock.dsl import ir
from interlock.errors import InterlockError
from interlock.runtime.vocabulary import THRESHOLDS

from .analysis import PRELUDE_FILE
from .convert import anchor
from .guards import guard_completion
from .hover_text import params_text, type_text, value_text
from .positions import from_units, to_units
from .timers import timer_completion, timer_hover

if TYPE_CHECKING:
    from interlock.compiler.symbols import Symbols

    from .analysis import Analysis
    from .convert import Locator
    from .occurrences import Key, Occurrence

__all__ = ["cursor", "hover", "definition", "references", "completion", "document_symbols", "workspace_symbols",
           "prepare_rename", "rename", "formatting", "code_actions", "KEYWORDS", "RenameRefused"]

KEYWORDS = ("workflow", "step", "on", "use", "trigger", "role", "record", "session", "task", "transition", "entry",
            "dispatch", "exclude", "when", "quorum", "requires_approval", "true", "false", "event", "load", "skip",
            "operation", "payload", "stage", "start", "manual_move", "terminal", "position", "prompt", "wip_limit",
            "pull_from", "hidden", "description", "agent_profile", "auto_archive_after_hours", "session_target",
            "agent_tag", "continue_on_failure", "and", "or", "not", "after", "every", "retry", "backoff",
            "missing", "error", "warning", "info", "debug", "silent")
IDENT = re.compile(r"[A-Za-z_][A-Za-z0-9_-]*\Z")  # the grammar's NAME
THRESHOLD_HELP = {
    "all_approve": "every seat of the role approved", "all_decide": "every seat of the role decided",
    "majority_approve": "more than half of the role's seats approved", "any_reject": "at least one seat rejected",
    "n_approve": "at least N seats approved (`n_approve(N)`, N ≥ 1)"}
STAGE_HELP = {"work": "the agent works on the task", "review": "reviewers decide on the work",
              "approval": "approvers sign off", "custom": "a stage of the host's own"}


class RenameRefused(InterlockError):
    """Why a rename is refused (prelude name, keyword, invalid identifier, nothing renamable there)."""


def cursor(analysis: Analysis, pos: lsp.Position, encoding: str) -> tuple[int, int]:
    """The client position as the compiler's 1-based (line, code-point column)."""
    line = analysis.source.line_text(pos.line + 1)
    return pos.line + 1, from_units(line, pos.character, encoding) + 1


def _at(analysis: Analysis, pos: lsp.Position, encoding: str) -> Occurrence | None:
    line, col = cursor(analysis, pos, encoding)
    return analysis.index.at(analysis.name, line, col)


# ---- hover ----------------------------------------------------------------------------------------

def _md(*lines: str) -> lsp.MarkupContent:
    return lsp.MarkupContent(kind=lsp.MarkupKind.Markdown, value="\n".join(lines))


def _entry_lists(analysis: Analysis, kind: str) -> str:
    assert analysis.symbols is not None
    modes = sorted({c.mode for c in analysis.symbols.entry_clauses if any(k.name == kind for k in c.kinds)})
    return " and ".join(f"`{m}`" for m in modes) if modes else "neither list"


def _describe(analysis: Analysis, key: Key) -> list[str] | None:
    symbols, index = analysis.symbols, analysis.index
    assert symbols is not None
    decl = index.declarations.get(key)
    node = decl.node if decl is not None else None
    match key[0]:
        case "kind" if isinstance(node, ir.ActionKindDecl):
            out = [f"```wf\n{node.action_class} {node.name.name}{params_text(node.params)}\n```",
                   f"**{node.action_class}** action kind",
                   "Allowed on: " + ", ".join(f"`{t}`" for t in symbols.kind_triggers(node))]
            if symbols.entry_trigger is not None and symbols.kind_allows(node, symbols.entry_trigger):
                out.append(f"Entry policy: in {_entry_lists(analysis, node.name.name)}")
            return out
        case "trigger" if isinstance(node, ir.TriggerDecl):
            head = f"trigger {node.name.name}{params_text(node.params)}{' entry' if node.entry else ''}"
            payload = ", ".join(f"`{p.name.name}: {type_text(p.type)}`" for p in node.params) or "none"
            return [f"```wf\n{head}\n```", f"Payload: {payload}"]
        case "step" if isinstance(node, ir.StepDecl):
            title = f' "{node.title.value}"' if node.title is not None else ""
            attrs = [f.name if f.value else f"{f.name} false" for f in node.flags]
            attrs += [f"{s.name} {value_text(s.value)}" for s in node.settings if s.name not in ("prompt", "description")]
            handlers = ", ".join(f"`{h.trigger.name}`" for h in node.handlers) or "none"
            return [f"```wf\nstep {node.name.name}{title}\n```", f"Workflow `{key[1]}`",
                    "Attributes: " + (", ".join(f"`{a}`" for a in attrs) or "none"), f"Handlers: {handlers}"]
        case "role":
            return [f"```wf\nrole {key[1]}\n```", "A role: seats on a task (quorums count its decisions)"]
        case "threshold":
            return [f"**threshold** `{key[1]}`", THRESHOLD_HELP.get(key[1], "")]
        case "stage":
            return [f"**stage** `{key[1]}`", STAGE_HELP.get(key[1], "")]
        case "record" if isinstance(node, ir.RecordDecl):
            fields = "\n".join(f"  {f.name.name}: {type_text(f.type)}" for f in node.fields)
            return [f"```wf\nrecord {node.name.name} {{\n{fields}\n}}\n```"]
        case "field" if isinstance(node, ir.Field):
            return [f"```wf\n{key[2]}: {type_text(node.type)}\n```", f"Field of record `{key[1]}`"]
        case "param" | "payload" if isinstance(node, ir.Param):
            owner = "kind" if key[0] == "param" else "trigger"
            return [f"```wf\n{value_text(node.name)}: {type_text(node.type)}"
                    f"{' = ' + value_text(node.default) if node.default is not None else ''}\n```",
                    f"Parameter of {owner} `{key[1]}`"]
        case "workflow" if isinstance(node, ir.WorkflowDecl):
            return [f"```wf\nworkflow {node.name.name}\n```", f"{len(node.steps)} steps"]
        case "module":
            return [f"```wf\nuse {key[1]}\n```", "the shipped prelude" if key[1] == "std" else f"`{key[1]}.wf`"]
        case _:
            return None


def hover(analysis: Analysis, where: Locator, pos: lsp.Position) -> lsp.Hover | None:
    line, col = cursor(analysis, pos, where.encoding)
    parts: list[str] = []
    rng = None
    occ = analysis.index.at(analysis.name, line, col) if analysis.symbols is not None else None
    if occ is not None:
        described = _describe(analysis, occ.key)
        if described:
            parts.extend(described)
            rng = where.range(occ.span)
    elif analysis.program is not None:
        parts.extend(timer_hover(analysis, line, col) or ())
    from interlock.dsl.diagnostics import CODES

    for d in analysis.diagnostics:
        s = d.span
        if d.file == analysis.name and (s.line, s.col) <= (line, col) <= (s.end_line, s.end_col):
            info = CODES.get(d.code)
            summary = info.summary if info is not None else ""
            href = anchor(d.code, d.name, analysis.docs_url)
            parts.append(f"**{d.code} {d.name}**: {summary}" + (f" ([docs]({href}))" if href else ""))
    if not parts:
        return None
    return lsp.Hover(contents=_md(*(p for p in parts if p)), range=rng)


# ---- definition and references ------------------------------------------------------------------

def definition(analysis: Analysis, where: Locator, pos: lsp.Position) -> list[lsp.Location]:
    occ = _at(analysis, pos, where.encoding)
    if occ is None:
        return []
    if occ.key[0] == "module":
        program = analysis.program
        name = occ.key[1]
        if name == "std":
            return [lsp.Location(uri=where.uri_of(PRELUDE_FILE), range=lsp.Range(start=lsp.Position(line=0, character=0), end=lsp.Position(line=0, character=0)))]
        for file in program.sources if program is not None else ():
            if file.endswith(f"{name}.wf") and file != analysis.name:
                zero = lsp.Position(line=0, character=0)
                return [lsp.Location(uri=where.uri_of(file), range=lsp.Range(start=zero, end=zero))]
        return []
    decl = analysis.index.declarations.get(occ.key)
    return [where.location(decl.span)] if decl is not None else []


def references(analysis: Analysis, where: Locator, pos: lsp.Position, include_declaration: bool) -> list[lsp.Location]:
    occ = _at(analysis, pos, where.encoding)
    if occ is None:
        return []
    return [where.location(o.span) for o in analysis.index.references.get(occ.key, ())
            if include_declaration or not o.declaration]


# ---- completion ------------------------------------------------------------------------------------

_HEADERS = (("dispatch", re.compile(r"\bdispatch\s+(\w+)")), ("workflow", re.compile(r"\bworkflow\s+(\w+)")),
            ("step", re.compile(r"\bstep\s+(\w+)")), ("record", re.compile(r"\brecord\s+(\w+)")),
            ("entry", re.compile(r"\bentry\s*()$")), ("on", re.compile(r"\bon\s+(\w+)\s*$")),
            ("timer", re.compile(r"\b((?:after|every)\s+\w+)\s*$")))


def _enclosing(text: str, offset: int) -> list[tuple[str, str]]:
    """The unclosed `{` blocks before `offset`, outermost first, as (keyword, name): `("workflow", "w")`,
    `("step", "s")`, `("on", "on_enter")`, `("dispatch", "d")`; strings and comments skipped.  Each block is
    named by the text between the brace before it and its own `{`."""
    stack: list[tuple[str, str]] = []
    last = 0  # just after the last brace
    i, n = 0, min(offset, len(text))
    while i < n:
        ch = text[i]
        if ch == "#":
            j = text.find("\n", i)
            i = n if j < 0 else j
        elif ch == '"':
            i += 1
            while i < n and text[i] != '"':
                i += 2 if text[i] == "\\" else 1
        elif ch == "{":
            head = re.sub(r'"(?:[^"\\]|\\.)*"', "", text[last:i])
            head = re.sub(r"#[^\n]*", "", head)
            stack.append(next(((kw, m.group(1)) for kw, rx in _HEADERS if (m := rx.search(head))), ("", "")))
            last = i + 1
        elif ch == "}":
            if stack:
                stack.pop()
            last = i + 1
        i += 1
    return stack


def _items(names: object, kind: lsp.CompletionItemKind, detail: str | None = None) -> list[lsp.CompletionItem]:
    assert isinstance(names, (list, tuple, dict, set, frozenset))
    return [lsp.CompletionItem(label=n, kind=kind, detail=detail) for n in names]


def completion(analysis: Analysis, text: str, pos: lsp.Position, encoding: str) -> list[lsp.CompletionItem]:
    """Candidates at `pos` of `text` (the current text; `analysis` may be an older one that parsed)."""
    lines = text.split("\n")
    line = lines[pos.line].rstrip("\r") if pos.line < len(lines) else ""
    col = from_units(line, pos.character, encoding)
    prefix = line[:col]
    offset = sum(len(x) + 1 for x in lines[:pos.line]) + col
    symbols = analysis.symbols
    K = lsp.CompletionItemKind
    if symbols is None:
        return _items(KEYWORDS, K.Keyword)
    blocks = _enclosing(text, offset)
    workflow = next((name for kw, name in reversed(blocks) if kw == "workflow"), None)
    trigger = next((name for kw, name in reversed(blocks) if kw == "on"), None)
    dispatch = next((name for kw, name in reversed(blocks) if kw == "dispatch"), None)

    def steps() -> list[lsp.CompletionItem]:
        wf = symbols.workflows.get(workflow or "")
        return _items([s.name.name for s in wf.steps] if wf else [], K.EnumMember, f"step of {workflow}")

    if re.search(r"\bon\s+\w*$", prefix) or re.search(r"\bon\s+[\w\s,]*,\s*\w*$", prefix):
        return _items(_triggers_here(symbols, blocks, prefix), K.Event, "trigger")
    if re.search(r"\bquorum\(\s*\w*$", prefix):
        return _items(list(symbols.roles), K.Value, "role")
    if re.search(r"\bquorum\(\s*\w+\s*,\s*\w*$", prefix):
        return _items(list(THRESHOLDS), K.Constant, "threshold")
    if re.search(r"\bstage\s+\w*$", prefix):
        return _items(list(STAGE_HELP), K.EnumMember, "stage")
    if re.search(r"\bpull_from\s+\w*$", prefix):
        return steps()
    timer = blocks[-1][1] if blocks and blocks[-1][0] == "timer" else None
    if (trigger or timer) is not None and dispatch is None and (
            (in_guard := guard_completion(symbols, trigger or timer or "", prefix)) is not None):
        return in_guard
    if m := re.search(r"\b(\w+)\.(\w*)$", prefix):
        record = _record_of(analysis, m.group(1), dispatch, text)
        fields = symbols.record_fields(record) if record else None
        return _items(list(fields or {}), K.Field, f"field of {record}")
    if m := re.search(r"\b(\w+)\(([^()]*)$", prefix):
        kind = symbols.kinds.get(m.group(1))
        if kind is not None:
            given = set(re.findall(r"(\w+)\s*:", m.group(2)))
            current = re.search(r"(?:^|,)\s*(?:(\w+)\s*:\s*)?(\w*)$", m.group(2))
            param = None
            if current and current.group(1):
                param = next((p for p in kind.params if p.name.name == current.group(1)), None)
            elif current:
                n = m.group(2).count(",")
                positional = [p for p in kind.params if p.name.name not in given]
                param = kind.params[n] if n < len(kind.params) and not given else (positional[0] if positional else None)
            out: list[lsp.CompletionItem] = []
            if param is not None and param.type.name == "step":
                out += steps()
            elif param is not None and param.type.name == "role":
                out += _items(list(symbols.roles), K.Value, "role")
            if not (current and current.group(1)):
                out += [lsp.CompletionItem(label=f"{p.name.name}:", kind=K.Property, detail=type_text(p.type),
                                           insert_text=f"{p.name.name}: ")
                        for p in kind.params if p.name.name not in given]
            return out
    if dispatch is not None:
        loads = [it.name.name for d in symbols.dispatches if d.name.name == dispatch
                 for it in d.items if isinstance(it, ir.LoadItem)]
        return _items(["event", *loads], K.Variable, "in scope") + _items(KEYWORDS, K.Keyword)
    if trigger is not None:
        allowed = [name for name, kind in symbols.kinds.items() if symbols.kind_allows(kind, trigger)]
        items = [lsp.CompletionItem(label=name, kind=K.Function, detail=f"{symbols.kinds[name].action_class}"
                                    f"{params_text(symbols.kinds[name].params)}") for name in allowed]
        return items + _items(("when", "quorum", "requires_approval", "continue_on_failure"), K.Keyword)
    found = timer_completion(symbols, blocks, text, offset, prefix, KEYWORDS)
    return found if found is not None else _items(KEYWORDS, K.Keyword)


def _triggers_here(symbols: Symbols, blocks: list[tuple[str, str]], prefix: str) -> list[str]:
    """The triggers to offer after `on`: in a step (a handler begun), those the step has no handler for yet — a
    second handler for one is an error; elsewhere (a kind's `on` list, a dispatch block's trigger) every one."""
    if not blocks or blocks[-1][0] != "step" or not re.search(r"(?:^|[{}])\s*on\s+\w*$", prefix):
        return list(symbols.triggers)
    workflow = next((name for kw, name in reversed(blocks) if kw == "workflow"), "")
    wf = symbols.workflows.get(workflow)
    step = next((s for s in wf.steps if s.name.name == blocks[-1][1]), None) if wf is not None else None
    handled = {h.trigger.name for h in step.handlers} if step is not None else set()
    return [t for t in symbols.triggers if t not in handled]


def _record_of(analysis: Analysis, name: str, dispatch: str | None, text: str) -> str | None:
    symbols = analysis.symbols
    assert symbols is not None
    for d in symbols.dispatches:
        if dispatch is not None and d.name.name != dispatch:
            continue
        for it in d.items:
            if name == "event" and isinstance(it, ir.EventItem):
                return it.record.name
            if isinstance(it, ir.LoadItem) and it.name.name == name and it.loader.name in symbols.records:
                return it.loader.name
    if name == "event" and dispatch is not None:  # a block being typed (not in the last analysis that parsed)
        m = re.search(rf"\bdispatch\s+{re.escape(dispatch)}\b[^{{]*\{{[^}}]*?\bevent\s+(\w+)", text)
        if m:
            return m.group(1)
    return name if name in symbols.records else None


# ---- symbols ---------------------------------------------------------------------------------------

def _sym(name: str, kind: lsp.SymbolKind, node: ir.Node, sel: ir.Node, where: Locator, detail: str | None = None,
         children: list[lsp.DocumentSymbol] | None = None) -> lsp.DocumentSymbol:
    return lsp.DocumentSymbol(name=name, kind=kind, range=where.range(node.span), selection_range=where.range(sel.span),
                              detail=detail, children=children or None)


def document_symbols(analysis: Analysis, where: Locator) -> list[lsp.DocumentSymbol]:
    """The tree: workflow -> step -> handler, timer; records -> fields; dispatch blocks; triggers, kinds, roles."""
    program = analysis.program
    if program is None:
        return []
    S = lsp.SymbolKind
    out = []
    for decl in program.main.decls:
        match decl:
            case ir.WorkflowDecl():
                steps = [_sym(s.name.name, S.Class, s, s.name, where, s.title.value if s.title else None,
                              [_sym(h.trigger.name, S.Event, h, h.trigger, where) for h in s.handlers]
                              + [_sym(t.written, S.Event, t, t, where, "timer") for t in s.timers])
                         for s in decl.steps]
                out.append(_sym(decl.name.name, S.Module, decl, decl.name, where,
                                decl.title.value if decl.title else None, steps))
            case ir.RecordDecl():
                out.append(_sym(decl.name.name, S.Struct, decl, decl.name, where, None,
                                [_sym(f.name.name, S.Field, f, f.name, where, type_text(f.type)) for f in decl.fields]))
            case ir.DispatchDecl():
                out.append(_sym(decl.name.name, S.Namespace, decl, decl.name, where, f"dispatch on {decl.trigger.name}"))
            case ir.TriggerDecl():
                out.append(_sym(decl.name.name, S.Event, decl, decl.name, where, "trigger"))
            case ir.ActionKindDecl():
                out.append(_sym(decl.name.name, S.Function, decl, decl.name, where, decl.action_class))
            case ir.RoleDecl():
                out.extend(_sym(n.name, S.Constant, n, n, where, "role") for n in decl.names)
            case _:
                pass
    return out


def workspace_symbols(found: list[tuple[Analysis, Locator]], query: str) -> list[lsp.SymbolInformation]:
    q = query.lower()
    out = []

    def walk(syms: list[lsp.DocumentSymbol], where: Locator, container: str | None) -> None:
        for s in syms:
            if q in s.name.lower():
                out.append(lsp.SymbolInformation(name=s.name, kind=s.kind, container_name=container,
                                                 location=lsp.Location(uri=where.uri, range=s.selection_range)))
            walk(list(s.children or ()), where, s.name)

    for analysis, where in found:
        walk(document_symbols(analysis, where), where, None)
    return out


# ---- rename --------------------------------------------------------------------------------------------

_RENAMABLE = {"step", "role", "kind", "trigger"}


def prepare_rename(analysis: Analysis, where: Locator, pos: lsp.Position) -> lsp.PrepareRenamePlaceholder:
    occ = _at(analysis, pos, where.encoding)
    if occ is None or occ.key[0] not in _RENAMABLE:
        raise RenameRefused("only steps, roles, action kinds and triggers can be renamed")
    decl = analysis.index.declarations.get(occ.key)
    if decl is None:
        raise RenameRefused(f"`{occ.key[-1]}` is not declared")
    program = analysis.program
    if program is not None and not program.is_user(decl.span.file):
        raise RenameRefused(f"`{occ.key[-1]}` is declared in the shipped prelude and cannot be renamed")
    return lsp.PrepareRenamePlaceholder(range=where.range(occ.span), placeholder=occ.key[-1])


def rename(analysis: Analysis, where: Locator, pos: lsp.Position, new_name: str) -> lsp.WorkspaceEdit:
    prepare_rename(analysis, where, pos)
    if not IDENT.match(new_name):
        raise RenameRefused(f"`{new_name}` is not an identifier")
    if new_name in KEYWORDS:
        raise RenameRefused(f"`{new_name}` is a keyword")
    occ = _at(analysis, pos, where.encoding)
    assert occ is not None
    changes: dict[str, list[lsp.TextEdit]] = {}
    for o in analysis.index.references.get(occ.key, ()):
        changes.setdefault(where.uri_of(o.span.file), []).append(lsp.TextEdit(range=where.range(o.span),
                                                                               new_text=new_name))
    return lsp.WorkspaceEdit(changes=changes)


# ---- formatting ------------------------------------------------------------------------------------

def formatting(text: str, name: str, encoding: str) -> list[lsp.TextEdit]:
    """`interlock fmt`'s result as the fewest whole-line edits (none when the file has a syntax error)."""
    from interlock.dsl.format import format_source

    result = format_source(text, name)
    if not result.ok or result.text == text:
        return []
    before = text.splitlines(keepends=True)
    after = result.text.splitlines(keepends=True)

    def at(i: int) -> lsp.Position:
        if i < len(before) or not before or before[-1].endswith(("\n", "\r")):
            return lsp.Position(line=i, character=0)
        last = before[-1]
        return lsp.Position(line=len(before) - 1, character=to_units(last, len(last), encoding))

    edits = []
    for tag, i1, i2, j1, j2 in difflib.SequenceMatcher(None, before, after, autojunk=False).get_opcodes():
        if tag != "equal":
            edits.append(lsp.TextEdit(range=lsp.Range(start=at(i1), end=at(i2)), new_text="".join(after[j1:j2])))
    return edits


# ---- code actions ----------------------------------------------------------------------------------

_SUGGESTION = re.compile(r"did you mean `([^`]+)`\?")


def code_actions(analysis: Analysis, where: Locator, rng: lsp.Range) -> list[lsp.CodeAction]:
    out = []
    text = analysis.source.text
    for d in analysis.diagnostics:
        if d.file != analysis.name:
            continue
        r = where.range(d.span)
        if (r.end.line, r.end.character) < (rng.start.line, rng.start.character) or \
                (r.start.line, r.start.character) > (rng.end.line, rng.end.character):
            continue
        diag = lsp.Diagnostic(range=r, message=d.message, code=d.code, source="interlock")
        if d.help and (m := _SUGGESTION.search(d.help)):
            fix = m.group(1)
            out.append(lsp.CodeAction(title=f"Replace with `{fix}`", kind=lsp.CodeActionKind.QuickFix,
                                      diagnostics=[diag], is_preferred=True,
                                      edit=lsp.WorkspaceEdit(changes={where.uri: [lsp.TextEdit(range=r, new_text=fix)]})))
        if d.name == "entry-kind-unplaced" and (m := re.search(r"`(\w+)`", d.message)):
            kind = m.group(1)
            lines = text.split("\n")
            end = lsp.Position(line=len(lines) - 1, character=to_units(lines[-1], len(lines[-1]), where.encoding))
            lead = "" if text.endswith("\n") or not text else "\n"
            for mode in ("dispatch", "exclude"):
                out.append(lsp.CodeAction(
                    title=f"Add `{kind}` to the entry policy's `{mode}` list", kind=lsp.CodeActionKind.QuickFix,
                    diagnostics=[diag],
                    edit=lsp.WorkspaceEdit(changes={where.uri: [lsp.TextEdit(
                        range=lsp.Range(start=end, end=end), new_text=f"{lead}entry {{ {mode} {kind} }}\n")]})))
    return out
