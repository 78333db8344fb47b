"""An analysed program and its symbols in, every name occurrence out: where each step, kind, trigger, role, record, field,
parameter and module is declared and where it is used, by a key that names it unambiguously
(`("step", workflow, id)`, `("kind", name)`, …).  Built once per analysis, on the first request."""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from interlock.dsl import ir
from interlock.dsl.source import Span

if TYPE_CHECKING:
    from interlock.compiler.program import Program
    from interlock.compiler.symbols import Symbols

__all__ = ["Key", "Occurrence", "Index", "build_index", "name_span", "index_guard"]

Key = tuple[str, ...]


@dataclass(frozen=True)
class Occurrence:
    span: Span
    key: Key
    declaration: bool
    node: ir.Node | None = None  # the declaration node (on declarations), or the call (on arguments)


@dataclass
class Index:
    occurrences: list[Occurrence] = field(default_factory=list)
    declarations: dict[Key, Occurrence] = field(default_factory=dict)
    references: dict[Key, list[Occurrence]] = field(default_factory=lambda: defaultdict(list))
    _by_line: dict[tuple[str, int], list[Occurrence]] = field(default_factory=lambda: defaultdict(list))

    def add(self, span: Span, key: Key, declaration: bool = False, node: ir.Node | None = None) -> None:
        occ = Occurrence(span, key, declaration, node)
        self.occurrences.append(occ)
        if declaration:
            self.declarations.setdefault(key, occ)
        self.references[key].append(occ)
        self._by_line[(span.file, span.line)].append(occ)

    def at(self, file: str, line: int, col: int) -> Occurrence | None:
        """The occurrence covering 1-based (line, col) of `file` (its end column included, so a cursor
        just after a name still finds it)."""
        best = None
        for occ in self._by_line.get((file, line), ()):
            s = occ.span
            if s.line == s.end_line and s.col <= col <= s.end_col and (
                    best is None or s.end_col - s.col < best.span.end_col - best.span.col):
                best = occ
        return best


def name_span(span: Span, name: str) -> Span:
    return Span(file=span.file, line=span.line, col=span.col, end_line=span.line, end_col=span.col + len(name))


def build_index(program: Program | None, symbols: Symbols | None) -> Index:
    """Every name occurrence of an analysed program (an empty index when it has none: it did not parse)."""
    index = Index()
    if program is None or symbols is None:
        return index
    for module in program.modules:
        for decl in module.decls:
            _decl(index, decl, symbols)
    return index


def _typeref(index: Index, ref: ir.TypeRef, symbols: object) -> None:
    from interlock.compiler.symbols import Symbols

    assert isinstance(symbols, Symbols)
    if ref.name in symbols.records:
        index.add(name_span(ref.span, ref.name), ("record", ref.name))
    if ref.arg is not None:
        _typeref(index, ref.arg, symbols)


def _decl(index: Index, decl: ir.Decl, symbols: object) -> None:
    from interlock.compiler.symbols import Symbols

    assert isinstance(symbols, Symbols)
    match decl:
        case ir.UseDecl():
            index.add(decl.name.span, ("module", decl.name.name))
        case ir.TriggerDecl():
            index.add(decl.name.span, ("trigger", decl.name.name), True, decl)
            for p in decl.params:
                index.add(p.name.span, ("payload", decl.name.name, p.name.name), True, p)
                _typeref(index, p.type, symbols)
        case ir.RoleDecl():
            for n in decl.names:
                index.add(n.span, ("role", n.name), True, decl)
        case ir.ActionKindDecl():
            index.add(decl.name.span, ("kind", decl.name.name), True, decl)
            for p in decl.params:
                index.add(p.name.span, ("param", decl.name.name, p.name.name), True, p)
                _typeref(index, p.type, symbols)
            for t in decl.triggers or ():
                index.add(t.span, ("trigger", t.name))
        case ir.RecordDecl():
            index.add(decl.name.span, ("record", decl.name.name), True, decl)
            for f in decl.fields:
                index.add(f.name.span, ("field", decl.name.name, f.name.name), True, f)
                _typeref(index, f.type, symbols)
        case ir.EntryDecl():
            for clause in decl.clauses:
                for k in clause.kinds:
                    index.add(k.span, ("kind", k.name))
        case ir.WorkflowDecl():
            wf = decl.name.name
            index.add(decl.name.span, ("workflow", wf), True, decl)
            for step in decl.steps:
                index.add(step.name.span, ("step", wf, step.name.name), True, step)
            for step in decl.steps:
                _step(index, wf, step, symbols)
        case ir.DispatchDecl():
            index.add(decl.name.span, ("dispatch", decl.name.name), True, decl)
            index.add(decl.trigger.span, ("trigger", decl.trigger.name))
            for item in decl.items:
                match item:
                    case ir.EventItem():
                        index.add(item.record.span, ("record", item.record.name))
                    case ir.LoadItem():
                        index.add(item.name.span, ("load", decl.name.name, item.name.name), True, item)
                        if item.loader.name in symbols.records:
                            index.add(item.loader.span, ("record", item.loader.name))
        case _:
            pass


def _step(index: Index, wf: str, step: ir.StepDecl, symbols: object) -> None:
    from interlock.compiler.symbols import Symbols

    assert isinstance(symbols, Symbols)
    for setting in step.settings:
        if isinstance(setting.value, ir.Ident):
            if setting.name == "pull_from":
                index.add(setting.value.span, ("step", wf, setting.value.name))
            elif setting.name == "stage":
                index.add(setting.value.span, ("stage", setting.value.name))
    # a timer's actions are indexed like a handler's (its guards read no payload: `written` names no trigger)
    calls: list[tuple[ir.Ident | None, str, tuple[ir.ActionCall, ...]]]
    calls = [(h.trigger, h.trigger.name, h.actions) for h in step.handlers]
    calls += [(None, t.written, t.actions) for t in step.timers]
    for named, trigger, actions in calls:
        if named is not None:
            index.add(named.span, ("trigger", trigger))
        for call in actions:
            kind = symbols.kinds.get(call.name.name)
            index.add(call.name.span, ("kind", call.name.name), False, call)
            if call.guard is not None:
                index_guard(index, trigger, call.guard)
            params = kind.params if kind is not None else ()
            positional = 0
            for arg in call.args:
                param = None
                if arg.name is not None:
                    param = next((p for p in params if p.name.name == arg.name.name), None)
                    index.add(arg.name.span, ("param", call.name.name, arg.name.name), False, call)
                elif positional < len(params):
                    param = params[positional]
                    positional += 1
                value = arg.value
                if param is not None and isinstance(value, ir.NameValue) and len(value.parts) == 1:
                    if param.type.name == "step":
                        index.add(value.span, ("step", wf, value.parts[0]))
                    elif param.type.name == "role":
                        index.add(value.span, ("role", value.parts[0]))


def _paths(expr: ir.Expr) -> list[ir.PathExpr]:
    found: list[ir.PathExpr] = []
    stack: list[ir.Expr] = [expr]
    while stack:
        node = stack.pop()
        if isinstance(node, ir.PathExpr):
            found.append(node)
        elif isinstance(node, ir.NotExpr):
            stack.append(node.operand)
        elif isinstance(node, ir.BinaryExpr):
            stack.extend((node.right, node.left))
    return found


def _key(trigger: str, head: str, field: str) -> Key | None:
    if head == "payload":
        return ("payload", trigger, field)
    if head in ("task", "host"):
        return ("field", head, field)
    return None


def index_guard(index: Index, trigger: str, guard: ir.Expr) -> None:
    """Index the roles and thresholds of a guard's quorums and the fields its paths read (a path written on one
    line without spaces: its field's column is then known)."""
    from interlock.compiler.guards import quorums  # here: the server answers `initialize` before the compiler loads

    for q in quorums(guard):
        index.add(q.role.span, ("role", q.role.name))
        index.add(q.threshold.name.span, ("threshold", q.threshold.name.name))
    for path in _paths(guard):
        span = path.span
        if len(path.parts) < 2 or span.line != span.end_line or span.end_col - span.col != len(path.dotted):
            continue
        key = _key(trigger, path.parts[0], path.parts[1])
        if key is not None:
            at = span.model_copy(update={"col": span.col + len(path.parts[0]) + 1})
            index.add(name_span(at, path.parts[1]), key)
