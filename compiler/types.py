"""Type references and values in, compatibility verdicts out: the type rules of docs/language.md §2.

Types are kept as `ir.TypeRef`; this module answers "is this type known", "does this
literal fit this type" and "what is the type of this field path".
"""

from __future__ import annotations

from typing import NamedTuple

from interlock.dsl import ir

from .symbols import THRESHOLDS, Symbols

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
    if isinstance(value, ir.StrLit):
        return "a string"
    if isinstance(value, ir.IntLit):
        return "an integer"
    if isinstance(value, ir.BoolLit):
        return "a boolean"
    if isinstance(value, ir.NameValue):
        return f"the name `{value.dotted}`"
    if isinstance(value, ir.ListValue):
        return "a list"
    if isinstance(value, ir.MapValue):
        return "a map"
    if isinstance(value, ir.CallValue):
        return f"`{value.name.dotted}(…)`"
    return "a value"


def check_value(value: ir.Value, t: ir.TypeRef, scope: Scope) -> list[Mismatch]:
    """Every way `value` fails to be a `t` (empty: it fits)."""
    name = t.name
    if name == "any":
        if isinstance(value, ir.NameValue):
            return [Mismatch(value, f"expected a literal value, found {_describe(value)}",
                             help=f'write a string: "{value.dotted}"')]
        return []
    if name == "list":
        if not isinstance(value, ir.ListValue):
            return [Mismatch(value, f"expected `{render(t)}`, found {_describe(value)}")]
        assert t.arg is not None
        out: list[Mismatch] = []
        for item in value.items:
            out.extend(check_value(item, t.arg, scope))
        return out
    if name == "str":
        if isinstance(value, ir.StrLit):
            return []
        help_text = f'write a string: "{value.dotted}"' if isinstance(value, ir.NameValue) else None
        return [Mismatch(value, f"expected a string, found {_describe(value)}", help=help_text)]
    if name == "int":
        return [] if isinstance(value, ir.IntLit) else [Mismatch(value, f"expected an integer, found {_describe(value)}")]
    if name == "bool":
        return [] if isinstance(value, ir.BoolLit) else [Mismatch(value, f"expected `true` or `false`, found {_describe(value)}")]
    if name == "map":
        return [] if isinstance(value, ir.MapValue) else [Mismatch(value, f"expected a map `{{key: value}}`, found {_describe(value)}")]
    if name == "step":
        step = _name_or_string(value)
        if step is None:
            return [Mismatch(value, f"expected a step id, found {_describe(value)}")]
        if scope.steps is not None and step not in scope.steps:
            from .symbols import suggest

            return [Mismatch(value, f"no step `{step}` in this workflow", name="unknown-step",
                             help=suggest(step, scope.steps))]
        return []
    if name == "role":
        role = _name_or_string(value)
        if role is None:
            return [Mismatch(value, f"expected a role, found {_describe(value)}")]
        if role not in scope.symbols.roles:
            from .symbols import suggest

            return [Mismatch(value, f"role `{role}` is not declared", name="unknown-role",
                             help=suggest(role, scope.symbols.roles) or f"declare it with `role {role}`")]
        return []
    if name == "target":
        return _check_target(value, scope)
    if name == "task_ref":
        if isinstance(value, ir.NameValue) and value.dotted == "this":
            return []
        if isinstance(value, ir.StrLit) and value.value:
            return []
        return [Mismatch(value, f"expected `this` or a task id string, found {_describe(value)}")]
    if name == "threshold":
        return _check_threshold(value)
    fields = scope.symbols.record_fields(name)
    if fields is not None:
        if not isinstance(value, ir.MapValue):
            return [Mismatch(value, f"expected a `{name}` record `{{field: value}}`, found {_describe(value)}")]
        out = []
        for entry in value.entries:
            fdecl = fields.get(entry.key)
            if fdecl is None:
                from .symbols import suggest

                out.append(Mismatch(entry, f"record `{name}` has no field `{entry.key}`", name="unknown-record-field",
                                    help=suggest(entry.key, fields)))
            else:
                out.extend(check_value(entry.value, fdecl.type, scope))
        return out
    return []  # unknown types are reported where they are declared


def _name_or_string(value: ir.Value) -> str | None:
    if isinstance(value, ir.NameValue) and len(value.parts) == 1:
        return value.parts[0]
    if isinstance(value, ir.StrLit):
        return value.value
    return None


def _check_target(value: ir.Value, scope: Scope) -> list[Mismatch]:
    if isinstance(value, ir.NameValue):
        if value.dotted in TARGET_NAMES:
            return []
        return [Mismatch(value, f"`{value.dotted}` is not a target",
                         help='a target is `primary`, `workspace.ceo_agent`, "participant_role:<role>" or '
                              '"agent_profile_id:<id>"')]
    if isinstance(value, ir.StrLit):
        text = value.value
        if text in TARGET_NAMES:
            return []
        if text.startswith("participant_role:"):
            role = text.split(":", 1)[1]
            if role not in scope.symbols.roles:
                return [Mismatch(value, f"role `{role}` is not declared", name="unknown-role")]
            return []
        if text.startswith("agent_profile_id:") and text.split(":", 1)[1]:
            return []
    return [Mismatch(value, f"expected a target, found {_describe(value)}",
                     help='a target is `primary`, `workspace.ceo_agent`, "participant_role:<role>" or '
                          '"agent_profile_id:<id>"')]


def _check_threshold(value: ir.Value) -> list[Mismatch]:
    from .symbols import suggest

    if isinstance(value, ir.NameValue) and len(value.parts) == 1:
        name = value.parts[0]
        if name == "n_approve":
            return [Mismatch(value, "`n_approve` needs a count: `n_approve(N)`")]
        if name not in THRESHOLDS:
            return [Mismatch(value, f"unknown threshold `{name}`", name="unknown-threshold",
                             help=suggest(name, THRESHOLDS))]
        return []
    if isinstance(value, ir.CallValue) and value.name.dotted == "n_approve":
        if len(value.args) != 1 or not isinstance(value.args[0], ir.IntLit):
            return [Mismatch(value, "`n_approve` takes one integer: `n_approve(N)`")]
        if value.args[0].value < 1:
            return [Mismatch(value.args[0], f"`n_approve({value.args[0].value})` can never be met: N must be at least 1",
                             name="invalid-threshold-count")]
        return []
    return [Mismatch(value, f"expected a threshold, found {_describe(value)}")]
