"""Nothing in, the closed vocabularies of plans and records out: thresholds, stages, levels, action classes.

Defined once for the runtime and the compiler (which imports them from here); the DSL, which may
not import the runtime, names the same words in its IR, and a test checks the two agree.
"""

from __future__ import annotations

from typing import Literal, get_args

__all__ = ["Threshold", "THRESHOLDS", "Stage", "STAGES", "Level", "LEVELS", "ActionClass", "ACTION_CLASSES",
           "GENERIC_TRIGGERS", "TimerKind", "TIMER_KINDS"]

Threshold = Literal["all_approve", "all_decide", "majority_approve", "any_reject", "n_approve"]
THRESHOLDS: tuple[str, ...] = get_args(Threshold)
"""Quorum thresholds; `n_approve` takes a count."""

Stage = Literal["work", "review", "approval", "custom"]
STAGES: tuple[str, ...] = get_args(Stage)

Level = Literal["silent", "debug", "info", "warning", "error"]
LEVELS: tuple[str, ...] = get_args(Level)
"""Record levels; `silent` records reach trace sinks only, never a log."""

ActionClass = Literal["session", "task", "transition"]
ACTION_CLASSES: tuple[str, ...] = get_args(ActionClass)

GENERIC_TRIGGERS: tuple[str, ...] = ("on_comment", "on_blocker_resolved", "on_children_completed",
                                     "on_approval_resolved", "on_heartbeat", "on_budget_alert", "on_agent_error")
"""The prelude's generic (event) triggers (LANGUAGE §1).  A timer's actions are those allowed on them: a kind may
be used in an `after`/`every` handler when it may be declared on at least one of these."""

TimerKind = Literal["after", "every"]
TIMER_KINDS: tuple[str, ...] = get_args(TimerKind)
"""`after D { … }` runs once, D after the entry; `every D { … }` at entry + D, + 2D, … (RUNTIME §7)."""
