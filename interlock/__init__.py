"""interlock: a declarative rule engine with a typed DSL for workflow steps in agent/task orchestrators.

The package is one namespaced distribution: `interlock.dsl` (front end), `interlock.compiler`
(checks and plans), `interlock.runtime` (plan interpreter), `interlock.stores` (durable
state).  This facade stays import-light: `interlock check` must start fast.
"""

from __future__ import annotations

__all__ = ["__version__"]

__version__ = "0.1.0"
