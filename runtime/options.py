"""Entry options in (from a host's `move` or `create_task`, or a transition's `options` argument), the canonical
JSON text a ledger row keeps out — and that text back as the read-only mapping entry executors see
(`ctx.arrival_options`, ADR 0043).

Options are one-shot: they belong to the arrival that carries them, are written with its ledger row in the row's
own transaction, and only the entry of that row reads them (kandev's `instructions` and `skip_step_prompt`, or
anything else a host gives).  They are plain JSON data with string keys, bounded in size and depth; anything
else is refused with a `PayloadError` before the store is touched.  An empty mapping is no options.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from types import MappingProxyType
from typing import Any

from .checks import text_problem
from .errors import PayloadError

__all__ = ["MAX_OPTIONS_BYTES", "MAX_OPTIONS_DEPTH", "NO_OPTIONS", "check_options", "options_of",
           "transition_options"]

MAX_OPTIONS_BYTES = 64 * 1024
"""The largest options object, as canonical JSON text in UTF-8 bytes (a long `instructions` text fits)."""
MAX_OPTIONS_DEPTH = 16
"""How deeply lists and mappings may nest inside the options."""

NO_OPTIONS: Mapping[str, Any] = MappingProxyType({})
"""What an entry executor reads when its arrival carried no options."""


def check_options(value: Any, name: str = "options") -> str | None:
    """`value` (a mapping, or None) as canonical JSON text (sorted keys, no spaces), or None when there are no
    options; a `PayloadError` naming `name` and the problem otherwise."""
    if value is None:
        return None
    if not isinstance(value, Mapping):
        raise PayloadError(f"`{name}` must be a mapping of option name to value, not {type(value).__name__}")
    if not value:
        return None
    problem = _problem(value, 0)
    if problem is not None:
        raise PayloadError(f"`{name}` is not plain JSON data: {problem}")
    text = json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False, allow_nan=False)
    size = len(text.encode("utf-8"))
    if size > MAX_OPTIONS_BYTES:
        raise PayloadError(f"`{name}` is {size:,} bytes as JSON: entry options are at most {MAX_OPTIONS_BYTES:,}")
    return text


def options_of(text: str | None) -> Mapping[str, Any]:
    """The options a ledger row keeps (its canonical text), as a read-only mapping (`NO_OPTIONS` for none)."""
    if text is None:
        return NO_OPTIONS
    value = json.loads(text)
    return MappingProxyType(value) if isinstance(value, dict) else NO_OPTIONS


def transition_options(args: Mapping[str, Any], kind: str) -> str | None:
    """The arrival options a transition's `options` argument names (None: it names none)."""
    options = args.get("options")
    return None if not options else check_options(options, f"the `options` of `{kind}`")


def _problem(value: Any, depth: int) -> str | None:
    """Why `value` is not plain JSON data a store can keep (string keys, finite numbers, storable text), or None."""
    if depth > MAX_OPTIONS_DEPTH:
        return f"nested deeper than {MAX_OPTIONS_DEPTH} levels"
    if value is None or isinstance(value, (bool, int)):
        return None
    if isinstance(value, float):
        return None if math.isfinite(value) else f"the number {value!r} is not JSON"
    if isinstance(value, str):
        problem = text_problem(value)
        return None if problem is None else f"a string {problem}"
    if isinstance(value, Mapping):
        for key, item in value.items():
            if not isinstance(key, str):
                return f"a {type(key).__name__} key {key!r} (keys are strings)"
            problem = text_problem(key)
            if problem is not None:
                return f"a key {problem}"
            problem = _problem(item, depth + 1)
            if problem is not None:
                return f"`{key}`: {problem}"
        return None
    if isinstance(value, (list, tuple)):
        for i, item in enumerate(value):
            problem = _problem(item, depth + 1)
            if problem is not None:
                return f"item {i}: {problem}"
        return None
    return f"a value of type {type(value).__name__}"
