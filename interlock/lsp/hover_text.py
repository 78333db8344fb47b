"""IR nodes back to the short source text hovers and completions show (`queue_run(target: target =
primary, reason: str?)`)."""

from __future__ import annotations

from interlock.dsl import ir

__all__ = ["type_text", "value_text", "params_text"]


def type_text(ref: ir.TypeRef) -> str:
    inner = f"[{type_text(ref.arg)}]" if ref.arg is not None else ""
    return f"{ref.name}{inner}{'?' if ref.optional else ''}"


def value_text(value: ir.Node) -> str:
    match value:
        case ir.StrLit():
            escaped = value.value.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")
            return f'"{escaped}"'
        case ir.BoolLit():
            return "true" if value.value else "false"
        case ir.IntLit():
            return str(value.value)
        case ir.NameValue() | ir.PathExpr():
            return ".".join(value.parts)
        case ir.Ident():
            return value.name
        case ir.ListValue():
            return "[" + ", ".join(value_text(v) for v in value.items) + "]"
        case ir.MapValue():
            return "{" + ", ".join(f"{e.key}: {value_text(e.value)}" for e in value.entries) + "}"
        case ir.CallValue():
            return f"{value_text(value.name)}({', '.join(value_text(v) for v in value.args)})"
        case _:
            return "…"


def param_text(p: ir.Param) -> str:
    default = f" = {value_text(p.default)}" if p.default is not None else ""
    return f"{p.name.name}: {type_text(p.type)}{default}"


def params_text(params: tuple[ir.Param, ...]) -> str:
    return "(" + ", ".join(param_text(p) for p in params) + ")" if params else ""
