"""Type references and values in, compatibility verdicts out: the type rules of docs/language.md §2.

Types are kept as `ir.TypeRef`; this module answers "is this type known", "does this
literal fit this type" and "what is the type of this field path".
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import NamedTuple

from interlock.dsl import ir

from .symbols import THRESHOLDS, Symbols, suggest

__all__ = ["PRIMITIVES", "DOMAIN", "TARGET_NAMES", "Scope", "unknown_type", "check_value", "base", "render"]

PRIMITIVES = frozenset({"str", "int", "bool", "map", "any"})
DOMAIN = frozenset({"step", "role", "target", "task_ref", "threshold"})
TARGET_NAMES = ("primary", "workspace.ceo_agent")
TARGET_PREFIXES = ("participant_role:", "agent_profile_id:")


def render(t: ir.TypeRef) -> str:
    return t.render()


def base(t: ir.TypeRef) -> str:
    """The type without `?` (`str?` -> `str`, `list[str]?` -> `list[str]`)."""
    return render(t).rstrip("?")


def unknown_type(t: ir.TypeRef, symbols: Symbols) -> ir.TypeRef | None:
    """The innermost unknown part of a type reference, or None if all of it is known."""
    if t.name == "list":
        if t.arg is None:
            return t
        return unknown_type(t.arg, symbols)
    if t.arg is not None:
        return t
    if t.name in PRIMITIVES or t.name in DOMAIN or t.name in symbols.records:
        return None
    return t


# Small immutable records are NamedTuples: a frozen dataclass costs half a millisecond to
# define, on every `interlock check`.


class Scope(NamedTuple):
    """What a value may refer to: the steps of the enclosing workflow (None outside one)."""

    symbols: Symbols
    steps: frozenset[str] | None = None


class Mismatch(NamedTuple):
    """One way a value fails its type: the node, the message and the diagnostic's kebab name."""

    node: ir.Node
    message: str
    name: str = "argument-type-mismatch"  # or unknown-step / unknown-role / unknown-threshold / ...
    help: str | None = None


def _describe(value: ir.Node) -> str:
    match value:
        case ir.StrLit():
            return "a string"
        case ir.IntLit():
            return "an integer"
        case ir.BoolLit():
            return "a boolean"
        case ir.NameValue():
            return f"the name `{value.dotted}`"
        case ir.ListValue():
            return "a list"
        case ir.MapValue():
            return "a map"
        case ir.CallValue():
            return f"`{value.name.dotted}(…)`"
    return "a value"


def _expected(value: ir.Value, what: str, help_text: str | None = None) -> list[Mismatch]:
    return [Mismatch(value, f"expected {what}, found {_describe(value)}", help=help_text)]


def check_value(value: ir.Value, t: ir.TypeRef, scope: Scope) -> list[Mismatch]:
    """Every way `value` fails to be a `t` (empty: it fits)."""
    match t.name, value:
        case "any", ir.NameValue():
            return [Mismatch(value, f"expected a literal value, found {_describe(value)}",
                             help=f'write a string: "{value.dotted}"')]
        case "any", _:
            return []
        case "list", ir.ListValue():
            assert t.arg is not None
            return [m for item in value.items for m in check_value(item, t.arg, scope)]
        case "list", _:
            return _expected(value, f"`{render(t)}`")
        case ("str", ir.StrLit()) | ("int", ir.IntLit()) | ("bool", ir.BoolLit()) | ("map", ir.MapValue()):
            return []
        case "str", ir.NameValue():
            return _expected(value, "a string", f'write a string: "{value.dotted}"')
        case "str", _:
            return _expected(value, "a string")
        case "int", _:
            return _expected(value, "an integer")
        case "bool", _:
            return _expected(value, "`true` or `false`")
        case "map", _:
            return _expected(value, "a map `{key: value}`")
        case "step", _:
            return _check_step(value, scope)
        case "role", _:
            return _check_role(value, scope)
        case "target", _:
            return _check_target(value, scope)
        case "task_ref", ir.NameValue(parts=("this",)):
            return []
        case "task_ref", ir.StrLit(value=text) if text:
            return []
        case "task_ref", _:
            return _expected(value, "`this` or a task id string")
        case "threshold", _:
            return _check_threshold(value)
    fields = scope.symbols.record_fields(t.name)
    if fields is None:
        return []  # unknown types are reported where they are declared
    return _check_record(value, t.name, fields, scope)


def _check_step(value: ir.Value, scope: Scope) -> list[Mismatch]:
    step = _name_or_string(value)
    if step is None:
        return _expected(value, "a step id")
    if scope.steps is not None and step not in scope.steps:
        return [Mismatch(value, f"no step `{step}` in this workflow", name="unknown-step",
                         help=suggest(step, scope.steps))]
    return []


def _check_role(value: ir.Value, scope: Scope) -> list[Mismatch]:
    role = _name_or_string(value)
    if role is None:
        return _expected(value, "a role")
    if role not in scope.symbols.roles:
        return [Mismatch(value, f"role `{role}` is not declared", name="unknown-role",
                         help=suggest(role, scope.symbols.roles) or f"declare it with `role {role}`")]
    return []


def _check_record(value: ir.Value, name: str, fields: Mapping[str, ir.Field], scope: Scope) -> list[Mismatch]:
    if not isinstance(value, ir.MapValue):
        return _expected(value, f"a `{name}` record `{{field: value}}`")
    out: list[Mismatch] = []
    for entry in value.entries:
        fdecl = fields.get(entry.key)
        if fdecl is None:
            out.append(Mismatch(entry, f"record `{name}` has no field `{entry.key}`", name="unknown-record-field",
                                help=suggest(entry.key, fields)))
        else:
            out.extend(check_value(entry.value, fdecl.type, scope))
    return out


def _name_or_string(value: ir.Value) -> str | None:
    match value:
        case ir.NameValue(parts=(name,)):
            return name
        case ir.StrLit():
            return value.value
    return None


_TARGET_HELP = ('a target is `primary`, `workspace.ceo_agent`, "participant_role:<role>" or '
                '"agent_profile_id:<id>"')


def _check_target(value: ir.Value, scope: Scope) -> list[Mismatch]:
    match value:
        case ir.NameValue() if value.dotted in TARGET_NAMES:
            return []
        case ir.NameValue():
            return [Mismatch(value, f"`{value.dotted}` is not a target", help=_TARGET_HELP)]
        case ir.StrLit(value=text) if text in TARGET_NAMES:
            return []
        case ir.StrLit(value=text) if text.startswith("participant_role:"):
            role = text.split(":", 1)[1]
            if role not in scope.symbols.roles:
                return [Mismatch(value, f"role `{role}` is not declared", name="unknown-role")]
            return []
        case ir.StrLit(value=text) if text.startswith("agent_profile_id:") and text.split(":", 1)[1]:
            return []
    return _expected(value, "a target", _TARGET_HELP)


def _check_threshold(value: ir.Value) -> list[Mismatch]:
    match value:
        case ir.NameValue(parts=("n_approve",)):
            return [Mismatch(value, "`n_approve` needs a count: `n_approve(N)`")]
        case ir.NameValue(parts=(name,)) if name not in THRESHOLDS:
            return [Mismatch(value, f"unknown threshold `{name}`", name="unknown-threshold",
                             help=suggest(name, THRESHOLDS))]
        case ir.NameValue(parts=(_,)):
            return []
        case ir.CallValue(args=(ir.IntLit(value=count) as arg,)) if value.name.dotted == "n_approve":
            if count < 1:
                return [Mismatch(arg, f"`n_approve({count})` can never be met: N must be at least 1",
                                 name="invalid-threshold-count")]
            return []
        case ir.CallValue() if value.name.dotted == "n_approve":
            return [Mismatch(value, "`n_approve` takes one integer: `n_approve(N)`")]
    return _expected(value, "a threshold")
