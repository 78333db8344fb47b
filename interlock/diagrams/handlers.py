"""A step of a plan in, the lines `interlock graph --handlers` writes on it out (the diagrams draw them): each
handler's actions, briefly.

Transitions are the diagram's edges, so a handler is listed by its other actions: `on_enter: clear_decisions,
ensure_seats(role: reviewer)`; a timer is listed the same way after the handlers, by its label (`after 48h:
queue_run(reason: review_overdue)`).  An argument is shown only when it differs from its kind's declared default (the
plan fills defaults in), a long value is cut with `…`, and an entry kind the host runs inline (the entry
policy's `exclude`) is marked `(inline)`, and an action whose kind has a retry policy carries it
(`notify(channel: ops) retry 3 backoff 30s..10m`).  Pure.
"""

from __future__ import annotations

import json
from typing import Any

from interlock.runtime.durations import retry_clause
from interlock.runtime.plan import Plan, PlanAction, PlanStep

__all__ = ["handler_lines", "LINE_WIDTH"]

LINE_WIDTH = 44
"""Lines are wrapped after an action once they reach this many characters."""

_VALUE_WIDTH = 24


def _value(value: Any) -> str:
    text = value if isinstance(value, str) and value.isidentifier() else json.dumps(value, ensure_ascii=False)
    return text if len(text) <= _VALUE_WIDTH else text[:_VALUE_WIDTH - 1] + "…"


def _action(plan: Plan, action: PlanAction, inline: frozenset[str]) -> list[str]:
    """The action as text: one piece, or, when it is longer than a line, its kind and each argument a piece."""
    kind = next((k for k in plan.kinds if k.name == action.kind), None)
    defaults = {p.name: p.default for p in kind.params} if kind is not None else {}
    args = [f"{name}: {_value(value)}" for name, value in action.args.items()
            if value is not None and (name not in defaults or value != defaults[name])]
    tail = " (inline)" if action.kind in inline else ""
    if kind is not None and kind.retry is not None:
        tail += " " + retry_clause(kind.retry.attempts, kind.retry.backoff, kind.retry.max_backoff)
    text = f"{action.kind}({', '.join(args)}){tail}" if args else f"{action.kind}{tail}"
    if len(text) <= LINE_WIDTH or len(args) < 2:
        return [text]
    return [f"{action.kind}({args[0]},", *(f"{a}," for a in args[1:-1]), f"{args[-1]}){tail}"]


def handler_lines(plan: Plan, step: PlanStep) -> list[str]:
    """One line per handler (then per timer) that has actions other than transitions, wrapped after an action (or
    an argument of a long one) at `LINE_WIDTH`, continuation lines indented; in the order they are written."""
    policy = plan.entry_policy
    out: list[str] = []
    named = [*step.handlers.items(), *((timer.label, timer.actions) for timer in step.timers)]
    for trigger, actions in named:
        inline = frozenset(policy.exclude) if trigger == policy.trigger else frozenset()
        items = [_action(plan, a, inline) for a in actions if a.action_class != "transition"]
        if not items:
            continue
        head = f"{trigger}:"
        lines = [head]
        for i, pieces in enumerate(items):
            for j, piece in enumerate(pieces):
                piece = piece.strip() + ("," if j == len(pieces) - 1 and i < len(items) - 1 else "")
                if lines[-1] == head or len(lines[-1]) + 1 + len(piece) <= LINE_WIDTH:
                    lines[-1] += " " + piece
                else:  # a new action indented by two, an argument of a long one by four
                    lines.append(("  " if j == 0 else "    ") + piece)
        out += lines
    return out
