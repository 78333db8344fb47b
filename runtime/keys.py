"""Host-given operation ids in, the bounded idempotency keys derived from them out.

An operation id is the host's text, of any length; the keys built from it (the one handed to a
host executor, a queued run's unique key) must fit a B-tree on both store dialects and must never
equal a key the runtime builds for its own deliveries (`entry:<ledger id>:…`).  So every key of a
host operation starts with `op:` (the id itself, when it is short) or `op#` (its SHA-256, when it
is long): the two forms and the runtime's own `entry:` and `exit:` prefixes cannot meet (ADR 0020).
"""

from __future__ import annotations

import hashlib

__all__ = ["operation_ident", "SHORT_ID_BYTES"]

SHORT_ID_BYTES = 200
"""Operation ids up to this many UTF-8 bytes appear as they are in keys; longer ones by their digest."""


def operation_ident(operation_id: str) -> str:
    """The prefix of every key derived from a host operation id: `op:<id>` or `op#<sha256 hex>`."""
    data = operation_id.encode("utf-8", "surrogatepass")
    if len(data) <= SHORT_ID_BYTES:
        return f"op:{operation_id}"
    return f"op#{hashlib.sha256(data).hexdigest()}"
