"""Nothing in, the closed vocabularies of plans and records out: thresholds, stages, levels, action classes.

Defined once for the runtime and the compiler (which imports them from here); the DSL, which may
not import the runtime, names the same words in its IR, and a test checks the two agree.
"""

from __future__ import annotations

from typing import Literal, get_args

__all__ = ["Threshold", "THRESHOLDS", "Stage", "STAGES", "Level", "LEVELS", "ActionClass", "ACTION_CLASSES"]

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
