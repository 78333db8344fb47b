"""Arguments a host passes to the runtime in, a `RuntimeFault` naming the bad one out (nothing else is touched).

The runtime checks what the host hands it at the boundary, before any store call or executor:
ids are non-empty strings a store can key on (no NUL, no lone surrogate, at most `MAX_ID_BYTES`
UTF-8 bytes, since both dialects index them); texts are strings a store can keep; ledger ids are
integers in the store's range.  Operation ids are texts of any length (stores key them on a
digest, ADR 0020).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from .errors import RuntimeFault

__all__ = ["MAX_ID_BYTES", "MAX_LEDGER_ID", "check_id", "check_text", "check_ledger_id", "check_mapping",
           "check_bool", "text_problem"]

MAX_ID_BYTES = 256
"""The longest id (task, session, agent, user, workflow, step, role) in UTF-8 bytes: a few of them make up one
index row, which PostgreSQL's B-trees cap at about 2.7 kB."""

MAX_LEDGER_ID = 2**63 - 1


def text_problem(value: str) -> str | None:
    """What keeps a store from keeping `value` (a NUL, a lone surrogate), or None."""
    if "\x00" in value:
        return "contains a NUL character"
    try:
        value.encode("utf-8")
    except UnicodeEncodeError as exc:
        return f"contains a lone surrogate ({value[exc.start]!r} at index {exc.start})"
    return None


def check_text(value: Any, name: str, *, optional: bool = False) -> None:
    """`value` is a string (None too when `optional`) that a store can keep."""
    if value is None and optional:
        return
    if not isinstance(value, str):
        raise RuntimeFault(f"`{name}` must be a string, not {type(value).__name__}")
    problem = text_problem(value)
    if problem is not None:
        raise RuntimeFault(f"`{name}` {problem}: a store cannot keep it")


def check_id(value: Any, name: str, *, optional: bool = False) -> None:
    """`value` is a non-empty string id a store can key on (None too when `optional`)."""
    if value.__class__ is str and value.isascii() and 0 < len(value) <= MAX_ID_BYTES and "\x00" not in value:
        return  # the common case, checked in a few tens of nanoseconds (`isascii` reads a flag)
    if value is None and optional:
        return
    check_text(value, name)
    if not value:
        raise RuntimeFault(f"`{name}` must not be empty")
    size = len(value.encode("utf-8"))
    if size > MAX_ID_BYTES:
        raise RuntimeFault(f"`{name}` is {size} bytes long: ids are at most {MAX_ID_BYTES} bytes (UTF-8)")


def check_ledger_id(value: Any, name: str = "ledger_id") -> None:
    if isinstance(value, bool) or not isinstance(value, int):
        raise RuntimeFault(f"`{name}` must be an integer, not {type(value).__name__}")
    if not 1 <= value <= MAX_LEDGER_ID:
        raise RuntimeFault(f"`{name}` {value} is out of range (1 to {MAX_LEDGER_ID})")


def check_mapping(value: Any, name: str, *, optional: bool = False) -> None:
    if value is None and optional:
        return
    if not isinstance(value, Mapping):
        raise RuntimeFault(f"`{name}` must be a mapping, not {type(value).__name__}")
    bad = next((k for k in value if not isinstance(k, str)), None)
    if bad is not None:
        raise RuntimeFault(f"`{name}` has a {type(bad).__name__} key {bad!r}: keys are strings")


def check_bool(value: Any, name: str) -> None:
    if not isinstance(value, bool):
        raise RuntimeFault(f"`{name}` must be True or False, not {type(value).__name__}")


def check_limit(value: Any, name: str = "limit", *, most: int = 100_000) -> None:
    """A batch size: a whole number from 1 to `most`."""
    if isinstance(value, bool) or not isinstance(value, int):
        raise RuntimeFault(f"`{name}` must be an integer, not {type(value).__name__}")
    if not 1 <= value <= most:
        raise RuntimeFault(f"`{name}` {value} is out of range (1 to {most})")
