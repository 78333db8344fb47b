"""Timers and retry policies in, their diagnostics out (docs/language.md §6): durations of 1 s to 365 days written
as an integer and a unit, no two `after` (or two `every`) timers of one duration on a step, a warning for a timer
on a `terminal` step, and `retry N backoff D[..MAX]` on task kinds only, with N of 1 to 100 and MAX not below D.

What a timer's actions may be (kinds allowed on generic triggers, guards on transitions only) is checked with every
handler's actions, by `validate`; their arguments and guards by `typecheck`.
"""

from __future__ import annotations

from interlock.dsl import Diagnostic, ir
from interlock.dsl.diagnostics import label, make
from interlock.runtime.durations import duration_problem, duration_seconds
from interlock.runtime.plan_rules import RETRY_ATTEMPTS

from ..context import Context

__all__ = ["timers"]

_NOT_RETRIED = {
    "session": "a session kind runs in the host's own agent session, not through the runtime's executors: drop the "
               "`retry` clause",
    "transition": "a transition runs no executor, so it has no failure to retry: drop the `retry` clause",
}


def timers(ctx: Context) -> list[Diagnostic]:
    out: list[Diagnostic] = []
    for decl in ctx.user_decls():
        if isinstance(decl, ir.ActionKindDecl) and decl.retry is not None:
            _retry(decl, decl.retry, out)
    for wf in ctx.workflows():
        for step in wf.steps:
            _step(step, out)
    return out


def _duration(duration: ir.Duration, out: list[Diagnostic]) -> int | None:
    problem = duration_problem(duration.text)
    if problem is None:
        return duration_seconds(duration.text)
    out.append(make("invalid-duration", duration.span, problem,
                    help="a duration is an integer and a unit, `s`, `m`, `h` or `d` (`90s`, `30m`, `48h`, `2d`), "
                         "from 1s to 365d"))
    return None


def _step(step: ir.StepDecl, out: list[Diagnostic]) -> None:
    first: dict[tuple[str, int], ir.Timer] = {}
    for timer in step.timers:
        length = _duration(timer.duration, out)
        if length is None:
            continue
        earlier = first.get((timer.mode, length))
        if earlier is None:
            first[(timer.mode, length)] = timer
            continue
        same = "" if earlier.duration.text == timer.duration.text else f" (`{earlier.written}` is the same time)"
        out.append(make("duplicate-timer", timer.span,
                        f"step `{step.name.name}` has two `{timer.mode}` timers of one duration{same}",
                        labels=(label(earlier.span, "first timer"),),
                        help="merge the two action lists into one timer: records name a timer by its duration, "
                             "and the two would fire at the same moments"))
    if step.has("terminal"):
        for timer in step.timers:
            out.append(make("timer-on-terminal-step", timer.span,
                            f"`{timer.written}` on `{step.name.name}`, a terminal step: its actions run for tasks "
                            "that are done",
                            help="move the timer to the step a task waits in, or drop `terminal` if tasks leave "
                                 "this step again"))


def _retry(kind: ir.ActionKindDecl, retry: ir.RetryPolicy, out: list[Diagnostic]) -> None:
    if kind.action_class != "task":
        out.append(make("retry-misplaced", retry.span,
                        f"`retry` on `{kind.name.name}`, a {kind.action_class} kind: only task kinds are retried",
                        help=_NOT_RETRIED[kind.action_class]))
    low, high = RETRY_ATTEMPTS
    if not low <= retry.attempts.value <= high:
        out.append(make("invalid-retry-policy", retry.attempts.span,
                        f"`retry {retry.attempts.value}`: a failed call is tried again {low} to {high} times",
                        help=f"write a number of retries from {low} to {high}"))
    backoff = _duration(retry.backoff, out)
    most = None if retry.max_backoff is None else _duration(retry.max_backoff, out)
    if backoff is not None and most is not None and retry.max_backoff is not None and most < backoff:
        out.append(make("invalid-retry-policy", retry.max_backoff.span,
                        f"the backoff doubles from `{retry.backoff.text}` up to `{retry.max_backoff.text}`, which "
                        "is shorter than where it starts",
                        labels=(label(retry.backoff.span, "the first delay"),),
                        help=f"write `{retry.backoff.text}..MAX` with MAX of at least `{retry.backoff.text}`, or "
                             f"`backoff {retry.backoff.text}` for the same delay every time"))
