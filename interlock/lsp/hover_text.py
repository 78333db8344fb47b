"""IR nodes back to the short source text hovers and completions show (`queue_run(target: target =
primary, reason: str?)`): the IR printer's text (`interlock.dsl.printer`, one printer for `.wf` text, ADR 0055),
so a hover escapes strings and quotes map keys as the source does."""

from __future__ import annotations

from interlock.dsl import ir
from interlock.dsl.printer import format_params, format_type, format_value

__all__ = ["type_text", "value_text", "params_text"]


def type_text(ref: ir.TypeRef) -> str:
    return format_type(ref)


def value_text(value: ir.Node) -> str:
    """A value, or a name or field path where a hover shows one (a parameter's name, a setting's identifier)."""
    match value:
        case ir.StrLit() | ir.IntLit() | ir.BoolLit() | ir.NameValue() | ir.CallValue() | ir.ListValue() | ir.MapValue():
            return format_value(value)
        case ir.PathExpr():
            return value.dotted
        case ir.Ident():
            return value.name
    return "…"


def params_text(params: tuple[ir.Param, ...]) -> str:
    """A parameter list in parentheses, or nothing for none."""
    return format_params(params) if params else ""
