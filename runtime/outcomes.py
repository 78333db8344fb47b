"""An executor's return value or exception in, an outcome value out: `Ok(effects)` or `Failed(reason, fault)`.

Pure value logic of the executor boundary (`invoker.Invoker`): what a return value means (None or a list
of effect dicts of plain JSON data; anything else is a failure, found before anything is recorded) and
what an exception means (`ActionFailed` and a store-backed executor's `StoreError` ordinary failures,
anything else a contained fault: ADR 0021).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from .coroutines import returned_coroutine
from .errors import ActionFailed
from .executors import Effect
from .frozen import fast_init
from .store import StoreError

__all__ = ["Ok", "Failed", "Outcome", "OK", "check_effects", "failed_from"]


@fast_init
@dataclass(frozen=True)
class Ok:
    """The call took effect; `effects` describe what it did (for the records)."""

    effects: tuple[Effect, ...] = ()


@fast_init
@dataclass(frozen=True)
class Failed:
    """The call failed: `reason` is recorded; `fault` says it raised an unexpected exception (an `error` record)."""

    reason: str
    fault: bool = False


Outcome = Ok | Failed

OK = Ok()
"""The outcome of a call that returned no effects (shared: it is immutable)."""

_SCALARS = (str, int, bool, type(None))
_MAX_EFFECT_VALUES = 100_000


def failed_from(exc: BaseException) -> Failed:
    """An executor's exception as its outcome: `ActionFailed` (and a store-backed executor's `StoreError`)
    ordinary, anything else a fault."""
    if isinstance(exc, (ActionFailed, StoreError)):
        return Failed(str(exc) or type(exc).__name__)
    text = str(exc)
    return Failed(f"{type(exc).__name__}: {text}" if text else type(exc).__name__, True)


def check_effects(result: Any) -> Outcome:
    """An executor's return value as its outcome: None or a list of effect dicts of plain JSON data is `Ok`;
    anything else is `Failed` (found before anything is recorded)."""
    if result is None:
        return OK
    if not isinstance(result, (list, tuple)):
        refused = returned_coroutine(result, "the executor")  # a plain callable around an `async def` one
        return Failed(refused or f"executor returned {type(result).__name__}, expected a list of effect dicts or None")
    effects = []
    for effect in result:
        if not isinstance(effect, Mapping):
            return Failed(f"executor returned a {type(effect).__name__} among its effects, expected a list of "
                          "effect dicts or None")
        problem = _not_plain(effect)
        if problem is not None:
            return Failed(f"executor returned an effect that is not plain JSON data: {problem}")
        effects.append(dict(effect))
    return Ok(tuple(effects)) if effects else OK


def _not_plain(value: Mapping[Any, Any]) -> str | None:
    """Why an effect is not plain JSON data (string keys at every level, finite numbers, nothing else), or None.
    A flat effect of strings and integers (every built-in's) is checked in one pass over its items."""
    for key, item in value.items():
        if type(key) is not str:
            return f"a {type(key).__name__} key {key!r} (keys are strings)"
        kind = type(item)
        if kind is not str and kind is not int and item is not None and kind is not bool:
            return _not_plain_nested(value)
    return None


def _not_plain_nested(value: Any) -> str | None:
    stack = [value]
    seen = 0
    while stack:
        item = stack.pop()
        seen += 1
        if seen > _MAX_EFFECT_VALUES:
            return f"more than {_MAX_EFFECT_VALUES} values"
        if isinstance(item, _SCALARS):
            continue
        if isinstance(item, float):
            if item != item or item in (float("inf"), float("-inf")):
                return f"the number {item!r} is not JSON"
            continue
        if isinstance(item, Mapping):
            for key, inner in item.items():
                if not isinstance(key, str):
                    return f"a {type(key).__name__} key {key!r} (keys are strings)"
                stack.append(inner)
            continue
        if isinstance(item, (list, tuple)):
            stack.extend(item)
            continue
        return f"a value of type {type(item).__name__}"
    return None
