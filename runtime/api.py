"""A plan, a store and executors in; arrivals, entry dispatch, trigger dispatch, dispatch
sequences and decisions out — the runtime a host orchestrator embeds.

Step entry is record-and-continue (RUNTIME.md §1), every other trigger abort-on-first
(§2), dispatch sequences first-match-wins (§3).  Idempotency is durable: entry records
and per-position markers for arrivals, operation markers for other triggers, all in the
store.  The runtime holds no lock while an executor runs, so executors may call back in.

`Runtime` is assembled from one module per job: `core` (state, records, executor calls),
`entry`, `arrivals`, `triggers`, `decisions` and `sequences`.
"""

from __future__ import annotations

from .core import Loader
from .sequences import SequenceDispatch

__all__ = ["Runtime", "Loader"]


class Runtime(SequenceDispatch):
    """Interprets one compiled plan against one store.  Thread-safe; holds no lock across executors."""
