"""A plan, a store and executors in; arrivals, entry dispatch, trigger dispatch, dispatch
sequences and decisions out — the runtime a host orchestrator embeds.

Step entry is record-and-continue (docs/runtime.md §1), every other trigger abort-on-first
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
    """Interprets one compiled plan against one store.  Thread-safe; holds no lock across host executors.

    `Runtime(plan, store, *, executors=None, loaders=None, directory=None, sinks=None, host=None,
    executor_timeout=60.0, builtins=True, session_live=None, atomic_arrivals=True)`:

    - `executors`: an `ExecutorRegistry` (the built-in store-backed kinds are added unless
      `builtins=False`); `executor_timeout`: seconds before a host executor is abandoned (None:
      called in place, no thread).
    - `loaders`: the records dispatch sequences `load`; `directory`: who the agents are;
      `host`: host flags guards read; `session_live(task_id)`: whether a task has a live session.
    - `sinks`: record sinks (default: loguru); `[]` builds no records at all.
    - `atomic_arrivals`: on a durable store, an arrival whose entry is all store-backed commits
      with its entry in one transaction (ADR 0010); False dispatches every entry after the commit.
    """
