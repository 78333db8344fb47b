"""Timers and retry policies in the editor (docs/language.md §2 and §4): the hover text of an `after`/`every` handler
and of a kind's `retry N backoff D..MAX` clause, and the completions that write them — `after`/`every` in a step, durations
after them, the kinds a timer may run inside one, `retry` after a task kind's `on` clause and `backoff` after its
count.  Pure functions of (analysis or symbols, text before the cursor).
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

from lsprotocol import types as lsp

from interlock.dsl import ir
from interlock.dsl.source import Span
from interlock.runtime.durations import duration_problem, duration_seconds, retry_delays, seconds_duration, spoken
from interlock.runtime.vocabulary import GENERIC_TRIGGERS

from .hover_text import params_text

if TYPE_CHECKING:
    from interlock.compiler.symbols import Symbols

    from .analysis import Analysis

__all__ = ["TIMER_KEYWORDS", "timer_hover", "timer_completion"]

TIMER_KEYWORDS = ("after", "every", "retry", "backoff")
DURATIONS = ("30m", "1h", "4h", "12h", "24h", "48h", "7d")
"""Durations offered after `after`/`every` (any integer and unit of 1s to 365d is one)."""

_AT_STATEMENT = re.compile(r"(?:^|[{}])\s*\w*$")
_TIMER_HEAD = re.compile(r"(?:^|[{}])\s*(after|every)\s+\w*$")
_TASK_HEAD = re.compile(r"^task\s+[A-Za-z_]\w*\s*(?:\([^()]*\))?\s*(?:on\s+\w+(?:\s*,\s*\w+)*\s+)?(\w*)$")
_RETRY_COUNT = re.compile(r"^task\b[^{}]*\bretry\s+\d+\s+(\w*)$")
_MAX_SHOWN = 5


def _inside(span: Span, name: str, line: int, col: int) -> bool:
    return span.file == name and (span.line, span.col) <= (line, col) <= (span.end_line, span.end_col)


def timer_hover(analysis: Analysis, line: int, col: int) -> list[str] | None:
    """What the timer or retry clause under (line, col) does, or None: the cursor is on neither."""
    program = analysis.program
    if program is None:
        return None
    for decl in program.main.decls:
        if isinstance(decl, ir.ActionKindDecl) and decl.retry is not None and \
                _inside(decl.retry.span, analysis.name, line, col):
            return _retry(decl, decl.retry)
        if isinstance(decl, ir.WorkflowDecl):
            for step in decl.steps:
                for timer in step.timers:
                    if _inside(timer.span, analysis.name, line, col):
                        return _timer(step, timer)
    return None


def _timer(step: ir.StepDecl, timer: ir.Timer) -> list[str]:
    head = [f"```wf\n{timer.written} {{ … }}\n```"]
    text = timer.duration.text
    if duration_problem(text) is not None:
        return [*head, f"**timer** of step `{step.name.name}`: `{text}` is not a duration (`90s`, `30m`, `48h`, "
                       "`2d`; from 1s to 365d)"]
    seconds = duration_seconds(text)
    if timer.mode == "after":
        what = (f"runs its actions once, {spoken(text)} after the task enters the step — not if it has left by "
                "then (leaving cancels it)")
    else:
        what = (f"runs its actions every {spoken(text)} while the task stays on the step (entry + {text}, + "
                f"{seconds_duration(2 * seconds)}, …); slots missed while nobody ticked fire once, with `missed`")
    kinds = ", ".join(f"`{call.name.name}`" for call in timer.actions) or "none"
    return [*head, f"**timer** of step `{step.name.name}`: {what}.", f"Duration: {seconds:,} s. Actions: {kinds}.",
            "Armed when a task enters the step, fired by `Runtime.tick()`; records name it "
            f"`{timer.mode} {text}` (docs/language.md §4)."]


def _retry(kind: ir.ActionKindDecl, retry: ir.RetryPolicy) -> list[str]:
    most = f"..{retry.max_backoff.text}" if retry.max_backoff is not None else ""
    head = [f"```wf\nretry {retry.attempts.value} backoff {retry.backoff.text}{most}\n```"]
    texts = [retry.backoff.text] + ([retry.max_backoff.text] if retry.max_backoff is not None else [])
    if any(duration_problem(t) is not None for t in texts) or not 1 <= retry.attempts.value <= 100:
        return [*head, f"**retry policy** of `{kind.name.name}`: `retry N backoff D` or `retry N backoff D..MAX`, "
                       "N from 1 to 100, durations from 1s to 365d"]
    top = duration_seconds(retry.max_backoff.text) if retry.max_backoff is not None else None
    delays = retry_delays(retry.attempts.value, duration_seconds(retry.backoff.text), top)
    shown = ", ".join(seconds_duration(d) for d in delays[:_MAX_SHOWN]) + (", …" if len(delays) > _MAX_SHOWN else "")
    growth = f"the delay doubles up to {retry.max_backoff.text}" if retry.max_backoff is not None else "the same delay"
    tries = "time" if retry.attempts.value == 1 else "times"
    return [*head, f"**retry policy** of `{kind.name.name}`: a failed call is tried again up to "
                   f"{retry.attempts.value} more {tries} by `Runtime.tick()`, after {shown} ({growth}); when none is "
                   "left it becomes an incident (`Runtime.incidents`, `redrive`).",
            "Each try carries the same `ctx.idempotency_key` and the next `ctx.attempt`."]


def timer_completion(symbols: Symbols, blocks: list[tuple[str, str]], text: str, offset: int, prefix: str,
                     keywords: tuple[str, ...]) -> list[lsp.CompletionItem] | None:
    """Completions for timers and retry policies at the cursor, or None: nothing of theirs fits there.  At the start
    of a step's item, `after`/`every` snippets first, then the other `keywords`."""
    K = lsp.CompletionItemKind
    innermost = blocks[-1][0] if blocks else ""
    if innermost == "step" and _TIMER_HEAD.search(prefix):
        return [lsp.CompletionItem(label=d, kind=K.Constant, detail="duration") for d in DURATIONS]
    if innermost == "step" and _AT_STATEMENT.search(prefix):
        return [_snippet("after", "after ${1:48h} {\n\t$0\n}", "timer: runs its actions once, D after the entry"),
                _snippet("every", "every ${1:1h} {\n\t$0\n}", "timer: runs its actions every D while the task stays"),
                *(lsp.CompletionItem(label=k, kind=K.Keyword) for k in keywords if k not in ("after", "every"))]
    if innermost == "timer":
        allowed = [(name, kind) for name, kind in symbols.kinds.items()
                   if any(symbols.kind_allows(kind, t) for t in GENERIC_TRIGGERS)]
        return ([lsp.CompletionItem(label=name, kind=K.Function, detail=f"{kind.action_class}{params_text(kind.params)}")
                 for name, kind in allowed]
                + [lsp.CompletionItem(label=w, kind=K.Keyword)
                   for w in ("when", "quorum", "requires_approval", "continue_on_failure")])
    if blocks:
        return None
    start = text.rfind("\n", 0, offset) + 1
    while start > 0 and text[start:start + 1] in (" ", "\t"):  # a continuation line: back to the declaration's
        start = text.rfind("\n", 0, start - 1) + 1
    statement = " ".join(text[start:offset].split()) + (" " if text[offset - 1:offset].isspace() else "")
    if _RETRY_COUNT.search(statement):
        return [lsp.CompletionItem(label="backoff", kind=K.Keyword, detail="the delay before a retry: D or D..MAX")]
    m = _TASK_HEAD.search(statement)
    if m is not None and "retry".startswith(m.group(1)) and (m.group(1) or statement.endswith(" ")):
        return [_snippet("retry", "retry ${1:3} backoff ${2:30s}..${3:10m}",
                         "a failed call is retried by tick, the delay doubling from D up to MAX")]
    return None


def _snippet(label: str, body: str, detail: str) -> lsp.CompletionItem:
    return lsp.CompletionItem(label=label, kind=lsp.CompletionItemKind.Snippet, detail=detail, insert_text=body,
                              insert_text_format=lsp.InsertTextFormat.Snippet)
