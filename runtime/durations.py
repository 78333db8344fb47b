"""A duration as written (`90s`, `48h`, `2d`) in, its seconds or why it is not one out; and the label a timer is
named by in plans and records (`after 48h`).

LANGUAGE §6: a duration is an integer and a unit, `s`, `m`, `h` or `d`, from one second to 365 days.  The
compiler checks the durations of `.wf` files with `duration_problem` and writes `seconds` and `timer_label` into
the plan; the plan rules (`plan_rules.py`) check that a timer's label and seconds agree with `label_seconds`.
Pure functions of text: nothing here reads a clock.
"""

from __future__ import annotations

import re

__all__ = ["UNIT_SECONDS", "MIN_SECONDS", "MAX_SECONDS", "duration_problem", "duration_seconds", "normal_duration",
           "timer_label", "label_seconds", "seconds_duration", "retry_clause",
           "retry_delays", "spoken"]

UNIT_SECONDS = {"s": 1, "m": 60, "h": 3600, "d": 86_400}
"""Seconds per unit of a duration."""

MIN_SECONDS = 1
MAX_SECONDS = 365 * 86_400
"""The range of a duration: one second to 365 days."""

_DURATION = re.compile(r"([0-9]+)([smhd])")
_LABEL = re.compile(r"(after|every) ([1-9][0-9]*)([smhd])")


def duration_problem(text: str) -> str | None:
    """Why `text` is not a duration of the language (None: it is one)."""
    m = _DURATION.fullmatch(text)
    if m is None:
        number = re.match(r"-?[0-9]+(?:\.[0-9]+)?", text)
        if number is None:
            return f"`{text}` is not a duration: write a whole number and a unit, e.g. `48h`"
        unit = text[number.end():]
        if "." in number.group() or number.group().startswith("-"):
            return f"`{text}` is not a duration: the number is a whole number of at least 1"
        if not unit:
            return f"`{text}` has no unit: write `{text}s`, `{text}m`, `{text}h` or `{text}d`"
        return f"`{text}` has an unknown unit `{unit}`: the units are `s`, `m`, `h` and `d`"
    seconds = int(m.group(1)) * UNIT_SECONDS[m.group(2)]
    if seconds < MIN_SECONDS:
        return f"`{text}` is no time at all: a duration is at least 1s"
    if seconds > MAX_SECONDS:
        return f"`{text}` is longer than 365 days, the longest duration"
    return None


def duration_seconds(text: str) -> int:
    """The seconds of a duration `duration_problem` accepts (ValueError for any other text)."""
    problem = duration_problem(text)
    if problem is not None:
        raise ValueError(problem)
    m = _DURATION.fullmatch(text)
    assert m is not None
    return int(m.group(1)) * UNIT_SECONDS[m.group(2)]


def normal_duration(text: str) -> str:
    """A valid duration as a label writes it: the number without leading zeros, the unit as written (`048h` ->
    `48h`; `90m` stays `90m`, never `1h30m`)."""
    m = _DURATION.fullmatch(text)
    if m is None:
        raise ValueError(f"`{text}` is not a duration")
    return f"{int(m.group(1))}{m.group(2)}"


def timer_label(kind: str, text: str) -> str:
    """`after 48h`, `every 30m`: how plans and records name a timer."""
    return f"{kind} {normal_duration(text)}"


def label_seconds(kind: str, label: str) -> int | None:
    """The seconds a timer label of `kind` states (None: the label is not `KIND N UNIT` in normal form)."""
    m = _LABEL.fullmatch(label)
    if m is None or m.group(1) != kind:
        return None
    return int(m.group(2)) * UNIT_SECONDS[m.group(3)]


def seconds_duration(seconds: int) -> str:
    """Seconds as a duration of the language in its largest exact unit (`600` -> `10m`, `90` -> `90s`,
    `172800` -> `2d`): how the tools show a plan's retry backoff, which the plan keeps in seconds."""
    for unit in ("d", "h", "m"):
        if seconds and seconds % UNIT_SECONDS[unit] == 0:
            return f"{seconds // UNIT_SECONDS[unit]}{unit}"
    return f"{seconds}s"


def retry_clause(attempts: int, backoff: int, max_backoff: int | None) -> str:
    """`retry 3 backoff 30s..10m`: a retry policy as the language writes it (durations in their largest exact unit)."""
    most = f"..{seconds_duration(max_backoff)}" if max_backoff is not None else ""
    return f"retry {attempts} backoff {seconds_duration(backoff)}{most}"


def retry_delays(attempts: int, backoff: int, max_backoff: int | None) -> list[int]:
    """The seconds waited before each retry of a policy: the backoff, doubling up to the maximum (the backoff every
    time when there is none) — what runtime/failures.py's `delay` waits after each failed try."""
    if max_backoff is None:
        return [backoff] * attempts
    return [min(backoff * 2 ** min(n, 40), max_backoff) for n in range(attempts)]


_UNIT_WORDS = {"s": "second", "m": "minute", "h": "hour", "d": "day"}


def spoken(text: str) -> str:
    """A valid duration in words: `48h` -> `48 hours`, `1d` -> `1 day`."""
    m = _DURATION.fullmatch(text)
    if m is None:
        raise ValueError(f"`{text}` is not a duration")
    count = int(m.group(1))
    return f"{count} {_UNIT_WORDS[m.group(2)]}{'s' if count != 1 else ''}"
