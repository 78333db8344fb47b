"""interlock: a declarative rule engine with a typed DSL for workflow steps in agent/task orchestrators.

What a host and a tool author need, from one import::

    from interlock import compile_path, Runtime, ExecutorRegistry, open_store

    plan = compile_path(Path("board.wf")).plan        # or load_plan(text) for a compiled plan
    rt = Runtime(plan, open_store("sqlite:///app.db"), executors=ExecutorRegistry())

The names are loaded when first used, so `import interlock` stays cheap and `interlock check` never loads the
runtime.  The layers underneath are one namespaced distribution: `interlock.dsl` (front end),
`interlock.compiler` (checks and plans), `interlock.runtime` (plan interpreter), `interlock.stores` (durable
state); `interlock.errors` holds `InterlockError`, the root of every error that is the user's input.
"""

from __future__ import annotations

from importlib import import_module as _import_module
from typing import TYPE_CHECKING as _TYPE_CHECKING
from typing import Any as _Any

from . import _checkout

if _TYPE_CHECKING:
    from .compiler import CompileResult, compile_bytes, compile_path, compile_source
    from .dsl import Diagnostic, SourceFile
    from .errors import InterlockError
    from .runtime import (
        ActionContext,
        ActionFailed,
        AsyncExecutorRegistry,
        AsyncRuntime,
        Directory,
        ExecutorRegistry,
        JsonLinesSink,
        ListSink,
        LoggingSink,
        Participant,
        PayloadError,
        PendingRun,
        Plan,
        PlanError,
        QueuedRun,
        Record,
        RecordSink,
        Runtime,
        RuntimeFault,
        StaticDirectory,
        Store,
        StoreError,
        dump_plan,
        load_plan,
        store_task_loader,
    )
    from .stores import open_store

__all__ = [
    "__version__",
    # compiling
    "compile_path", "compile_source", "compile_bytes", "CompileResult", "SourceFile", "Diagnostic",
    # running
    "Runtime", "AsyncRuntime", "ExecutorRegistry", "AsyncExecutorRegistry", "ActionContext", "ActionFailed",
    "Directory", "StaticDirectory", "Participant", "Plan", "load_plan", "dump_plan", "store_task_loader",
    "Record", "RecordSink", "ListSink", "LoggingSink", "JsonLinesSink",
    # storing
    "open_store", "Store", "QueuedRun", "PendingRun",
    # errors
    "InterlockError", "PlanError", "PayloadError", "RuntimeFault", "StoreError",
]

__version__ = "0.1.0"

_checkout.install()  # a program run from the root of a clone imports the clone whole (ADR 0018)

_HOME = {
    **dict.fromkeys(("compile_path", "compile_source", "compile_bytes", "CompileResult"), "compiler"),
    **dict.fromkeys(("SourceFile", "Diagnostic"), "dsl"),
    **dict.fromkeys(("Runtime", "AsyncRuntime", "ExecutorRegistry", "AsyncExecutorRegistry", "ActionContext",
                     "ActionFailed", "Directory", "StaticDirectory", "Participant", "Plan", "load_plan", "dump_plan",
                     "store_task_loader", "Record", "RecordSink", "ListSink", "LoggingSink", "JsonLinesSink", "Store",
                     "QueuedRun", "PendingRun", "PlanError", "PayloadError", "RuntimeFault", "StoreError"), "runtime"),
    "open_store": "stores",
    "InterlockError": "errors",
}
"""Each exported name and the subpackage it is defined in (imported when the name is first used)."""


def __getattr__(name: str) -> _Any:
    home = _HOME.get(name)
    if home is None:  # a submodule not imported yet (`from interlock import cli`) is found by the import system
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(_import_module(f"{__name__}.{home}"), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})
