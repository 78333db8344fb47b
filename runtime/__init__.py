"""The interlock runtime: a compiled plan, a store and executors in; arrivals, entry
dispatch, trigger dispatch and records out.  It never imports the parser or the compiler.

Public API (loaded lazily, so `import interlock.runtime.plan` stays cheap)::

    from interlock.runtime import Runtime, ExecutorRegistry, ActionContext, ActionFailed, load_plan

`AsyncRuntime` is the same API for asyncio hosts; `LoggingSink` and `JsonLinesSink` ship records (the OpenTelemetry
adapter is `interlock.runtime.otel`, with the `otel` extra); `Participant`, `Directory` and `StaticDirectory` are the
host's half of seating reviewers; `inspect_task` builds a task's `Timeline` from the store alone (`interlock inspect`).
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .aio import AsyncExecutorRegistry, AsyncRuntime
    from .api import Loader, Runtime
    from .errors import (
        ActionFailed,
        PayloadError,
        RuntimeFault,
        UnknownStepError,
        UnknownTaskError,
        UnknownTriggerError,
        UnknownWorkflowError,
    )
    from .executors import ActionContext, Directory, Effect, Executor, ExecutorRegistry, StaticDirectory
    from .loaders import store_task_loader
    from .plan import Plan, PlanError, dump_plan, load_plan
    from .preflight import Problem, RuntimeMisconfigured, Where
    from .records import Counters, ListSink, LoguruSink, Record, RecordSink
    from .results import ArrivalResult, DecisionResult, DispatchResult, EntryResult, FireResult, RecoverResult
    from .sinks import JsonLinesSink, LoggingSink
    from .store import Participant, PendingRun, QueuedRun, Store, StoreError, TaskState
    from .timeline import Timeline, inspect_task

__all__ = [
    "ActionContext", "ActionFailed", "ArrivalResult", "AsyncExecutorRegistry", "AsyncRuntime", "Counters",
    "DecisionResult", "Directory", "DispatchResult", "Effect", "EntryResult", "Executor", "ExecutorRegistry",
    "FireResult", "JsonLinesSink", "ListSink", "Loader", "LoggingSink", "LoguruSink", "Participant", "PayloadError",
    "PendingRun", "Plan", "PlanError", "Problem", "QueuedRun", "Record", "RecordSink", "RecoverResult", "Runtime",
    "RuntimeFault", "RuntimeMisconfigured", "StaticDirectory", "Store", "StoreError", "TaskState", "Timeline", "UnknownStepError",
    "UnknownTaskError", "UnknownTriggerError", "UnknownWorkflowError", "Where", "dump_plan", "load_plan",
    "inspect_task", "store_task_loader",
]

_WHERE = {
    "AsyncRuntime": "aio", "AsyncExecutorRegistry": "aio",
    "Runtime": "api", "Loader": "api",
    "ActionFailed": "errors", "PayloadError": "errors", "RuntimeFault": "errors", "UnknownStepError": "errors",
    "UnknownTaskError": "errors", "UnknownTriggerError": "errors", "UnknownWorkflowError": "errors",
    "ActionContext": "executors", "Directory": "executors", "Effect": "executors", "Executor": "executors",
    "ExecutorRegistry": "executors", "StaticDirectory": "executors",
    "store_task_loader": "loaders",
    "Plan": "plan", "PlanError": "plan", "dump_plan": "plan", "load_plan": "plan",
    "Problem": "preflight", "RuntimeMisconfigured": "preflight", "Where": "preflight",
    "JsonLinesSink": "sinks", "LoggingSink": "sinks",
    "Counters": "records", "ListSink": "records", "LoguruSink": "records", "Record": "records",
    "RecordSink": "records",
    "ArrivalResult": "results", "DecisionResult": "results", "DispatchResult": "results", "EntryResult": "results",
    "FireResult": "results", "RecoverResult": "results",
    "Participant": "store", "PendingRun": "store", "QueuedRun": "store", "Store": "store", "StoreError": "store",
    "TaskState": "store",
    "Timeline": "timeline", "inspect_task": "timeline",
}


def __getattr__(name: str) -> Any:
    module = _WHERE.get(name)
    if module is None:
        raise AttributeError(f"module 'interlock.runtime' has no attribute {name!r}")
    value = getattr(importlib.import_module(f".{module}", __name__), name)
    globals()[name] = value
    return value
