"""asyncio hosts (issue 21, finding 6): the synchronous runtime refuses `async def` executors and loaders, naming
`AsyncRuntime`; `AsyncRuntime` has every method of `Runtime` as a coroutine, keeps the event loop free, runs
`async def` executors and loaders on it (with the executor timeout), and lets executors call back into the loop.

(The runtime's behaviour tests run through `AsyncRuntime` too: the modules marked `async_runtime`, see conftest.py.)
"""

from __future__ import annotations

import asyncio
import functools
import inspect
import threading
from collections.abc import Callable
from typing import Any

import pytest

from interlock.runtime import (
    ActionFailed,
    AsyncExecutorRegistry,
    AsyncRuntime,
    ExecutorRegistry,
    ListSink,
    Runtime,
    RuntimeFault,
    StaticDirectory,
)
from interlock.stores import MemoryStore

WF = """
task notify(channel: str) on on_enter, on_comment, on_turn_start
entry { dispatch notify }
workflow w "W" {
  step a "A" {
    start manual_move
    on on_comment { notify(channel: "#a") }
    on on_turn_start { notify(channel: "#start") }
    on on_turn_complete { move_to_step(b) }
  }
  step b "B" { manual_move  on on_enter { notify(channel: "#b") } }
}
"""
COMMENT = {"comment_id": "c1", "author_id": "u1", "body": "hi"}
FAILURE = {"task_id": "T", "session_id": "S1", "execution_id": "E1", "agent_profile_id": "", "error_message": "x",
           "user_initiated": False}


@pytest.fixture()
def plan() -> Any:
    from interlock.compiler import compile_source
    from interlock.dsl import SourceFile

    result = compile_source(SourceFile("w.wf", WF))
    assert result.plan is not None, result.diagnostics
    return result.plan


async def notify_async(args: Any, ctx: Any) -> None:
    return None


class AsyncCall:
    async def __call__(self, args: Any, ctx: Any) -> None:
        return None


ASYNC_CALLABLES: dict[str, Callable[..., Any]] = {
    "async def": notify_async,
    "object with async __call__": AsyncCall(),
    "partial of async def": functools.partial(notify_async),
    "partial of async __call__": functools.partial(AsyncCall()),
    "async lambda-free method": AsyncCall().__call__,
}


# ---- the synchronous runtime refuses them -----------------------------------------------------------------------------

@pytest.mark.parametrize("fn", list(ASYNC_CALLABLES.values()), ids=list(ASYNC_CALLABLES))
def test_the_sync_registry_refuses_an_async_executor_naming_async_runtime(fn: Any) -> None:
    registry = ExecutorRegistry()
    with pytest.raises(RuntimeFault, match=r"executor `notify` is an `async def` callable: .*AsyncRuntime"):
        registry.register("notify", fn)
    assert "notify" not in registry


@pytest.mark.parametrize("fn", list(ASYNC_CALLABLES.values()), ids=list(ASYNC_CALLABLES))
def test_the_sync_runtime_refuses_an_async_loader_naming_async_runtime(plan: Any, fn: Any) -> None:
    with pytest.raises(RuntimeFault, match=r"loader `session` is an `async def` callable: .*AsyncRuntime"):
        Runtime(plan, MemoryStore(), loaders={"session": fn}, sinks=[])
    rt = Runtime(plan, MemoryStore(), sinks=[])
    with pytest.raises(RuntimeFault, match="AsyncRuntime"):
        rt.loaders["session"] = fn
    with pytest.raises(RuntimeFault, match="AsyncRuntime"):
        rt.loaders.update(session=fn)
    assert "session" not in rt.loaders


def test_plain_callables_are_still_taken(plan: Any) -> None:
    registry = ExecutorRegistry()
    registry.register("notify", functools.partial(lambda args, ctx, extra: None, extra=1))
    rt = Runtime(plan, MemoryStore(), executors=registry, loaders={"task": lambda tid, ev: None}, sinks=[])
    rt.loaders["session"] = lambda sid, ev: None
    assert rt.check() == []


def test_a_plain_callable_returning_a_coroutine_fails_saying_why_and_never_leaves_it_unawaited(plan: Any) -> None:
    """A lambda around an `async def` passes `register`; its call is a failure naming AsyncRuntime, and the coroutine is
    closed (pytest turns a "never awaited" RuntimeWarning into an error)."""
    registry = ExecutorRegistry()
    registry.register("notify", lambda args, ctx: notify_async(args, ctx))
    rt = Runtime(plan, MemoryStore(), executors=registry, sinks=[], executor_timeout=None)
    rt.create_task("T", "w")
    result = rt.fire("on_comment", "T", payload=COMMENT)
    assert result.result == "error" and "returned a coroutine" in (result.error or "")
    assert "AsyncRuntime" in (result.error or "")


def test_a_sync_runtime_given_an_async_registry_fails_the_call_saying_so(plan: Any) -> None:
    registry = AsyncExecutorRegistry()
    registry.register("notify", notify_async)
    rt = Runtime(plan, MemoryStore(), executors=registry, sinks=[], executor_timeout=None)
    rt.create_task("T", "w")
    result = rt.fire("on_comment", "T", payload=COMMENT)
    assert result.result == "error" and "runs only in a call of an AsyncRuntime" in (result.error or "")


def test_an_async_executor_cannot_be_transactional() -> None:
    with pytest.raises(RuntimeFault, match="cannot be transactional"):
        AsyncExecutorRegistry().register("notify", notify_async, transactional=True)


# ---- AsyncRuntime --------------------------------------------------------------------------------------------------

def test_async_runtime_has_every_public_method_of_runtime_as_a_coroutine() -> None:
    """A method added to `Runtime` must be added to `AsyncRuntime` (one line) or this fails."""
    configuration = {"add_sink"}  # no store work: a plain method on both
    methods = {name for name, value in vars(Runtime).items()
               if not name.startswith("_") and inspect.isfunction(value)}
    assert {"fire", "dispatch", "record_decision", "move", "create_task", "recover", "check"} <= methods
    for name in sorted(methods):
        assert hasattr(AsyncRuntime, name), f"AsyncRuntime lacks `{name}`"
        ours = getattr(AsyncRuntime, name)
        if name in configuration:
            assert not inspect.iscoroutinefunction(ours), name
        else:
            assert inspect.iscoroutinefunction(ours), f"AsyncRuntime.{name} is not a coroutine function"
            assert ours.__doc__ == getattr(Runtime, name).__doc__
    properties = {name for name, value in vars(Runtime).items() if isinstance(value, property)}
    assert properties <= set(dir(AsyncRuntime)), properties - set(dir(AsyncRuntime))


def build(plan: Any, executors: ExecutorRegistry, **kw: Any) -> AsyncRuntime:
    kw.setdefault("sinks", [])
    kw.setdefault("executor_timeout", 10.0)
    return AsyncRuntime(plan, MemoryStore(), executors=executors, directory=StaticDirectory(primary="p"), **kw)


def test_async_executors_and_loaders_run_on_the_loop(plan: Any) -> None:
    seen: list[tuple[str, bool]] = []

    async def main() -> None:
        loop = asyncio.get_running_loop()

        async def notify(args: Any, ctx: Any) -> list[dict[str, Any]]:
            await asyncio.sleep(0)  # a real await on the loop
            seen.append((args["channel"], asyncio.get_running_loop() is loop))
            return [{"channel": args["channel"]}]

        async def session(sid: Any, event: Any) -> dict[str, Any]:
            seen.append(("session", asyncio.get_running_loop() is loop))
            return {"id": sid, "task_id": "T", "agent_profile_id": "p", "state": "failed"}

        async def task(tid: Any, event: Any) -> None:
            return None

        registry = AsyncExecutorRegistry()
        registry.register("notify", notify)
        async with build(plan, registry, loaders={"session": session, "task": task}) as art:
            await art.create_task("T", "w")
            fired = await art.fire("on_comment", "T", payload=COMMENT, operation_id="c1")
            assert fired.result == "dispatched" and fired.actions == ("notify",)
            assert (await art.fire("on_comment", "T", payload=COMMENT, operation_id="c1")).result == "idempotent"
            moved = await art.fire("on_turn_complete", "T")
            assert moved.arrival is not None and moved.arrival.entry is not None
            assert moved.arrival.entry.attempted == ("notify",)
            skipped = await art.dispatch("agent_error", FAILURE)  # the async task loader finds nothing
            assert (skipped.result, skipped.guard) == ("skipped", "task_unavailable")
            assert await art.check() == []

    asyncio.run(main())
    assert seen == [("#a", True), ("#b", True), ("session", True)]


def test_the_loop_runs_while_a_call_blocks_in_its_executor(plan: Any) -> None:
    """A plain executor blocks its thread until a task on the loop lets it go: had the call run on the loop, the task
    could never run (the executor gives up after 10 s and the call fails)."""
    released = threading.Event()

    def notify(args: Any, ctx: Any) -> None:
        if not released.wait(10):
            raise ActionFailed("the loop was blocked")

    async def main() -> str:
        registry = ExecutorRegistry()
        registry.register("notify", notify)
        async with build(plan, registry) as art:
            await art.create_task("T", "w")
            call = asyncio.create_task(art.fire("on_comment", "T", payload=COMMENT))
            await asyncio.sleep(0)  # the call starts; the loop is free again
            released.set()
            return (await call).result

    assert asyncio.run(main()) == "dispatched"


def test_a_plain_executor_may_call_back_into_the_loop(plan: Any) -> None:
    """The issue's case (30 of 30 timed out): an executor that waits for a coroutine on the host's loop."""
    async def main() -> list[str]:
        loop = asyncio.get_running_loop()
        got: list[str] = []

        async def on_loop(channel: str) -> str:
            await asyncio.sleep(0)
            return channel

        def notify(args: Any, ctx: Any) -> None:
            got.append(asyncio.run_coroutine_threadsafe(on_loop(args["channel"]), loop).result(10))

        registry = ExecutorRegistry()
        registry.register("notify", notify)
        async with build(plan, registry) as art:
            await art.create_task("T", "w")
            results = await asyncio.gather(*(art.fire("on_comment", "T", payload=COMMENT) for _ in range(30)))
        assert {r.result for r in results} == {"dispatched"}
        return got

    assert asyncio.run(main()) == ["#a"] * 30


def test_an_async_executor_calls_back_into_the_async_runtime_even_with_one_worker(plan: Any) -> None:
    """A call from inside an async executor gets a thread of its own: with one pool worker, held by the outer call,
    the nested call still runs."""
    async def main() -> tuple[str, str | None]:
        art: AsyncRuntime

        async def notify(args: Any, ctx: Any) -> None:
            if args["channel"] == "#start":
                inner = await art.fire("on_comment", ctx.task.id, payload=COMMENT, operation_id="nested")
                assert inner.result == "dispatched"

        registry = AsyncExecutorRegistry()
        registry.register("notify", notify)
        art = build(plan, registry, max_workers=1)
        async with art:
            await art.create_task("T", "w")
            outer = await art.fire("on_turn_start", "T")
            return outer.result, outer.error

    assert asyncio.run(main()) == ("dispatched", None)


def test_an_async_executor_that_hangs_times_out_and_is_cancelled(plan: Any) -> None:
    async def main() -> tuple[str, str | None]:
        cancelled = asyncio.Event()

        async def notify(args: Any, ctx: Any) -> None:
            try:
                await asyncio.Event().wait()  # never set
            except asyncio.CancelledError:
                cancelled.set()
                raise

        registry = AsyncExecutorRegistry()
        registry.register("notify", notify)
        async with build(plan, registry, executor_timeout=0.2) as art:
            await art.create_task("T", "w")
            result = await art.fire("on_comment", "T", payload=COMMENT)
            await asyncio.wait_for(cancelled.wait(), 10)  # the coroutine was cancelled, not left running
        return result.result, result.error

    result, error = asyncio.run(main())
    assert result == "error" and "timed out after 0.2s" in (error or "")


def test_async_runtime_register_and_live_loaders_take_async_callables(plan: Any) -> None:
    async def main() -> list[str]:
        calls: list[str] = []

        async def notify(args: Any, ctx: Any) -> None:
            calls.append(args["channel"])

        async def task(tid: Any, event: Any) -> None:
            calls.append("task")

        sink = ListSink()
        async with AsyncRuntime(plan, MemoryStore(), sinks=[sink]) as art:
            art.register("notify", notify)
            art.loaders["session"] = lambda sid, ev: {"id": sid, "task_id": "T", "agent_profile_id": "p",
                                                      "state": "failed"}
            art.loaders["task"] = task
            assert await art.check() == []
            await art.create_task("T", "w")
            await art.fire("on_comment", "T", payload=COMMENT)
            await art.dispatch("agent_error", FAILURE)
            assert art.counters.snapshot()["arrivals"] == 1 and art.plan is art.runtime.plan
            assert [r.fields["code"] for r in sink.of("warning")] == ["runtime_misconfigured"]  # before register
        return calls

    assert asyncio.run(main()) == ["#a", "task"]


def test_an_async_executor_raising_action_failed_is_an_ordinary_failure(plan: Any) -> None:
    async def main() -> tuple[str, str | None]:
        async def notify(args: Any, ctx: Any) -> None:
            raise ActionFailed("channel down")

        registry = AsyncExecutorRegistry()
        registry.register("notify", notify)
        async with build(plan, registry, executor_timeout=None) as art:
            await art.create_task("T", "w")
            result = await art.fire("on_comment", "T", payload=COMMENT)
        return result.result, result.error

    assert asyncio.run(main()) == ("error", "channel down")
