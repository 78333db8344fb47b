"""Runtime error types in, nothing out: what the embedding API raises for bad requests."""

from __future__ import annotations

from interlock.errors import InterlockError

__all__ = ["RuntimeFault", "UnknownTaskError", "UnknownStepError", "UnknownWorkflowError", "UnknownTriggerError",
           "ActionFailed", "PayloadError"]


class RuntimeFault(InterlockError):
    """Base class: a request the runtime refuses (nothing was changed)."""


class UnknownTaskError(RuntimeFault):
    pass


class UnknownWorkflowError(RuntimeFault):
    pass


class UnknownStepError(RuntimeFault):
    pass


class UnknownTriggerError(RuntimeFault):
    pass


class PayloadError(RuntimeFault):
    pass


class ActionFailed(Exception):
    """Raised by an executor for an ordinary, expected failure (any other exception is a fault)."""
