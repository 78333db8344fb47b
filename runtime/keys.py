"""Host-given texts and the runtime's own ids in, bounded and unambiguous idempotency keys out.

A key is fields joined with `:`.  Every field that comes from a host (an operation id, a task id,
an agent, a step) is escaped first (`%` → `%25`, `:` → `%3A`), so no two different tuples of
fields can ever give one key: operation `c:work` on task `T` and operation `c` on task
`review:T` are different keys (ADR 0036).  Keys must fit a B-tree on both store dialects, so an
operation id longer than `SHORT_ID_BYTES` appears by its SHA-256 (`op#…`), and a run key longer
than `MAX_KEY_BYTES` is replaced by the digest of its full text (`run#…`).  The prefixes `entry:`,
`exit:`, `op:`, `op#` and `run#` never meet: a host's key can never equal one the runtime builds
for its own deliveries.
"""

from __future__ import annotations

import hashlib

__all__ = ["escape", "operation_ident", "action_key", "run_key", "SHORT_ID_BYTES", "MAX_KEY_BYTES"]

SHORT_ID_BYTES = 200
"""Operation ids up to this many UTF-8 bytes appear escaped in keys; longer ones by their digest."""

MAX_KEY_BYTES = 400
"""A run key longer than this (in UTF-8 bytes) is stored as the digest of its text."""


def escape(text: str) -> str:
    """A host's text as one key field: `%` and `:` escaped, so `:` only ever separates fields."""
    if "%" in text:
        text = text.replace("%", "%25")
    if ":" in text:
        text = text.replace(":", "%3A")
    return text


def _utf8(text: str) -> bytes:
    return text.encode("utf-8", "surrogatepass")


def operation_ident(operation_id: str) -> str:
    """The prefix of every key derived from a host operation id: `op:<escaped id>` or `op#<sha256 hex>`."""
    data = _utf8(operation_id)
    if len(data) <= SHORT_ID_BYTES:
        return f"op:{escape(operation_id)}"
    return f"op#{hashlib.sha256(data).hexdigest()}"


def action_key(base: str, position: int, kind: str) -> str:
    """The key a host executor receives for one declared action of a delivery: `<base>:<position>:<kind>` (kinds
    are plan identifiers: they hold no `:`)."""
    return f"{base}:{position}:{kind}"


def run_key(base: str, position: int, step_id: str, task_id: str, agent: str, digest: str) -> str:
    """A queued run's unique key: the delivery's base key, the action's declared position, then the step, task and
    agent (escaped) and the digest of the action's configuration; `run#<sha256>` when that is too long."""
    key = f"{base}:{position}:{escape(step_id)}:{escape(task_id)}:{escape(agent)}:{digest}"
    if len(key) > MAX_KEY_BYTES // 4 and len(_utf8(key)) > MAX_KEY_BYTES:
        return f"run#{hashlib.sha256(_utf8(key)).hexdigest()}"
    return key
