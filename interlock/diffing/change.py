"""The record of one difference between two plans, and what every part of the comparison shares: the two plans,
the changes found so far, the behaviour/metadata classification, and the field-by-field fallback.

`Change` is what `diff_plans` returns; `DifferBase` holds the two plans and collects the changes the
comparisons of interlock/diffing/vocabulary.py and interlock/diffing/workflows.py add.  `DifferBase.fields`
compares every field of two plan models that the caller did not compare itself, so a field added to
the plan model later is reported the day it is added (as `PART.attribute`), never ignored.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import dataclass
from difflib import unified_diff
from typing import Any

from pydantic import BaseModel

from interlock.runtime.plan import Plan, PlanStep, PlanWorkflow, SourceRef
from interlock.runtime.plan_digest import layout_fields, meaning_of

__all__ = ["Change", "DifferBase", "METADATA", "text_diff", "category_of"]

METADATA: dict[type[BaseModel], frozenset[str]] = {
    PlanWorkflow: frozenset({"title", "description", "hidden"}),
    PlanStep: frozenset({"title", "description", "color", "show_in_command_panel"}),
}
"""The fields that only change what people see (names, texts, colours, pickers): a change to one of them is
`metadata`.  Every other field is `behaviour`: what the runtime runs, or what the host does with the task (its
prompt, agent profile, archiving, turn-complete signals)."""

LONG_TEXT = 80
"""A changed value longer than this (as text or as JSON), or on several lines, is shown as a unified diff."""


@dataclass(frozen=True)
class Change:
    """One difference between two plans.

    `code` names what changed (`step.removed`, `guard.tightened`, … — the list is in
    docs/diff.md); `workflow`, `step` and `trigger` locate it; `subject` is the id of the
    thing itself (a role, a parameter, an attribute, a kind); `old` and `new` are JSON
    values (None for an absent side); `source` is `file:line:col` in the new plan (the old
    one for a removal).  `category` is `behaviour` or `metadata` (`METADATA`); `text_diff`
    holds the unified diff lines of a long or multi-line value (None otherwise)."""

    code: str
    breaking: bool
    message: str
    workflow: str | None = None
    step: str | None = None
    trigger: str | None = None
    subject: str | None = None
    old: Any = None
    new: Any = None
    source: str | None = None
    category: str = "behaviour"
    text_diff: tuple[str, ...] | None = None

    def to_json(self) -> dict[str, Any]:
        return {"code": self.code, "breaking": self.breaking, "category": self.category,
                "workflow": self.workflow, "step": self.step, "trigger": self.trigger, "subject": self.subject,
                "message": self.message, "old": self.old, "new": self.new, "source": self.source,
                "text_diff": None if self.text_diff is None else list(self.text_diff)}


def _src(ref: SourceRef | None) -> str | None:
    return None if ref is None else f"{ref.file}:{ref.line}:{ref.col}"


def _canon(value: Any) -> str:
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def _json(model: Any) -> Any:
    """A model (or tuple of models) as JSON data without its layout (source positions), read by the models' types:
    an argument or a payload field called `source` is kept."""
    if isinstance(model, (tuple, list)):
        return [_json(m) for m in model]
    if isinstance(model, dict):
        return {k: _json(v) for k, v in model.items()}
    if isinstance(model, BaseModel):
        return meaning_of(model, SourceRef)
    return model


def _union(old: Iterable[str], new: Iterable[str]) -> list[str]:
    """Ids of both sides: the old order, then the ids only the new side has, in its order."""
    out = list(dict.fromkeys(old))
    seen = set(out)
    out.extend(i for i in dict.fromkeys(new) if i not in seen)
    return out


def category_of(model: type[BaseModel], field: str) -> str:
    """`metadata` for the fields of `METADATA`, `behaviour` for every other field."""
    return "metadata" if field in METADATA.get(model, frozenset()) else "behaviour"


def _lines(value: Any) -> list[str]:
    if value is None:
        return []
    if isinstance(value, str):
        return value.splitlines()
    return json.dumps(value, indent=2, sort_keys=True, ensure_ascii=False).splitlines()


def text_diff(old: Any, new: Any) -> tuple[str, ...] | None:
    """The unified diff (difflib, two lines of context) of two values when either is long or spans lines: texts
    line by line, other JSON values as indented JSON.  None for short values, which a message shows inline."""
    def long(value: Any) -> bool:
        text = value if isinstance(value, str) else _canon(value)
        return value is not None and ("\n" in text or len(text) > LONG_TEXT)

    if not (long(old) or long(new)):
        return None
    return tuple(unified_diff(_lines(old), _lines(new), "old", "new", n=2, lineterm=""))


def _shown(value: Any) -> str:
    if value is None:
        return "(none)"
    return _canon(value)


def _size(value: Any) -> str:
    if value is None:
        return "none"
    count = len(_lines(value))
    return f"{count} line{'s' * (count != 1)}"


class DifferBase:
    """The two plans being compared and the changes found so far."""

    def __init__(self, old: Plan, new: Plan) -> None:
        self.old = old
        self.new = new
        self.out: list[Change] = []

    def add(self, code: str, breaking: bool, message: str, **fields: Any) -> None:
        self.out.append(Change(code, breaking, message, **fields))

    def value(self, code: str, label: str, subject: str, old: Any, new: Any, *, category: str = "behaviour",
              breaking: bool = False, **where: Any) -> None:
        """One changed value: its message says `old -> new` when short, the line counts when the value is long
        (the unified diff goes with the change)."""
        diff = text_diff(old, new)
        if diff is None:
            message = f"{label}: `{subject}` {_shown(old)} -> {_shown(new)}"
        else:
            message = f"{label}: `{subject}` changed ({_size(old)} -> {_size(new)})"
        self.add(code, breaking, message, subject=subject, old=old, new=new, category=category, text_diff=diff,
                 **where)

    def fields(self, code: str, label: str, old: BaseModel, new: BaseModel, compared: Iterable[str],
               **where: Any) -> None:
        """Every field of two models of one type that the caller did not compare (`compared`) and that is not
        layout, compared as JSON: one `code` change per field that differs, subject the field's name."""
        model = type(old)
        skip = set(compared) | layout_fields(model, SourceRef)
        for name in model.model_fields:
            if name in skip:
                continue
            a, b = _json(getattr(old, name)), _json(getattr(new, name))
            if _canon(a) != _canon(b):
                self.value(code, label, name, a, b, category=category_of(model, name), **where)
