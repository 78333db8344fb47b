"""A mapping a host hands the runtime and the fields the plan declares for it in, the checked fields out: the one check
of a `fire`'s payload and a `dispatch`'s event (docs/runtime.md §2, §3).

A field the plan does not declare, a required field that is missing, a value of the wrong type, or anything that is
not plain JSON data is a `PayloadError` naming the field and the fields there are — raised before anything runs.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from .errors import PayloadError
from .plan import value_problem

__all__ = ["Field", "RecordField", "check_fields", "record_fields"]


class Field(Protocol):
    """A declared field (a trigger's `PlanParam`, or a record's field): name, plan type, required, default."""

    @property
    def name(self) -> str: ...

    @property
    def type(self) -> str: ...

    @property
    def required(self) -> bool: ...

    @property
    def default(self) -> Any: ...


@dataclass(frozen=True)
class RecordField:
    """A field of a plan record, as a declared field: required unless its type is optional (`T?`)."""

    name: str
    type: str
    required: bool
    default: Any = None


def record_fields(fields: Mapping[str, str]) -> tuple[RecordField, ...]:
    """A plan record's fields (name to plan type) as declared fields."""
    return tuple(RecordField(name, type_, not type_.endswith("?")) for name, type_ in fields.items())


def check_fields(given: Mapping[str, Any] | None, fields: Sequence[Field], what: str, noun: str,
                 records: Mapping[str, Mapping[str, str]], *, nulls: bool = False) -> dict[str, Any]:
    """`given` checked against `fields`, defaults filled in.  `what` names the trigger or sequence (`` `on_comment` ``),
    `noun` the mapping (`payload`, `event`); `nulls`: a field present with the value None passes (an event's field
    a sequence reads as empty)."""
    if given is not None and not isinstance(given, Mapping):
        raise PayloadError(f"{what}'s {noun} is a mapping of field to value, not {type(given).__name__}")
    checked = dict(given or {})
    names = {f.name for f in fields}
    extra = sorted(set(checked) - names, key=str)
    if extra:
        raise PayloadError(f"{what} has no {noun} field {', '.join(f'`{e}`' for e in extra)} "
                           f"(fields: {', '.join(sorted(names)) or 'none'})")
    missing = [f.name for f in fields if f.required and f.name not in checked]
    if missing:
        raise PayloadError(f"{what}'s {noun} lacks {', '.join(f'`{m}`' for m in missing)} "
                           f"(fields: {', '.join(f'{f.name}: {f.type}' for f in fields)})")
    for f in fields:
        if f.name in checked:
            value = checked[f.name]
            problem = None if value is None and nulls else value_problem(value, f.type, records)
            if problem:
                raise PayloadError(f"{what}'s {noun} field `{f.name}` ({f.type}): {problem}")
        else:
            checked[f.name] = f.default
    try:
        json.dumps(checked)
    except (TypeError, ValueError) as exc:
        raise PayloadError(f"{what}'s {noun} is not plain JSON data: {exc}") from None
    return checked
