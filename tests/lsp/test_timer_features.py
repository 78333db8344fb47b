"""The language server on timers and retry policies (docs/language.md §2, §4): completion offers `after`/`every` at a
step's item, durations after them, the kinds a timer may run inside one, `retry` after a task kind's `on` clause and
`backoff` after its count; hover explains a timer (when it fires, its duration) and a retry policy (its delays, what
follows the last); a timer's actions are indexed like a handler's (hover, definition, rename reach them); semantic
tokens classify the keywords and durations, parsed or not.  Called in process: pure functions of
(analysis, text, position)."""

from __future__ import annotations

from lsprotocol import types as lsp

from interlock.lsp.analysis import analyse
from interlock.lsp.convert import Locator
from interlock.lsp.features import completion, definition, document_symbols, hover, rename
from interlock.lsp.tokens import decode, semantic_tokens
from interlock.runtime.durations import retry_delays
from interlock.runtime.failures import delay
from interlock.runtime.plan import PlanRetry

TEXT = """task notify(channel: str) on on_comment retry 3 backoff 30s..10m
task ping on on_comment retry 8 backoff 1m
workflow w "W" {
  step review "Review" {
    start
    manual_move
    after 48h { queue_run(target: workspace.ceo_agent, reason: "overdue") }
    every 30m { ping }
    after 3d { move_to_step(done) }
  }
  step done "Done" { manual_move  terminal }
}
"""
LINES = TEXT.splitlines()


def _line(fragment: str, text: str = TEXT) -> int:
    return next(i for i, line in enumerate(text.splitlines()) if fragment in line)


def _hover(fragment: str, word: str) -> str:
    analysis = analyse("t.wf", TEXT, 1, None)
    n = _line(fragment)
    found = hover(analysis, Locator(analysis, "file:///t.wf", "utf-16"),
                  lsp.Position(line=n, character=LINES[n].index(word) + 1))
    assert found is not None and isinstance(found.contents, lsp.MarkupContent)
    return found.contents.value


def _labels(text: str, line: int, col: int) -> list[str]:
    analysis = analyse("t.wf", TEXT, 1, None)  # the last analysis that parsed; `text` is being typed
    return [i.label for i in completion(analysis, text, lsp.Position(line=line, character=col), "utf-16")]


# ---- hover ---------------------------------------------------------------------------------------------------------


def test_hover_on_an_after_timer_says_when_it_fires() -> None:
    for word in ("after", "48h"):
        text = _hover("after 48h", word)
        assert "after 48h { … }" in text and "timer** of step `review`" in text
        assert "once, 48 hours after the task enters the step" in text and "Duration: 172,800 s" in text
        assert "Actions: `queue_run`" in text


def test_hover_on_an_every_timer_says_its_slots_and_missed() -> None:
    text = _hover("every 30m", "every")
    assert "every 30 minutes while the task stays on the step (entry + 30m, + 1h, …)" in text
    assert "with `missed`" in text


def test_hover_on_a_retry_clause_lists_its_delays_and_the_incident() -> None:
    text = _hover("task notify", "backoff")
    assert "retry 3 backoff 30s..10m" in text
    assert "tried again up to 3 more times by `Runtime.tick()`, after 30s, 1m, 2m (the delay doubles up to 10m)" in text
    assert "incident" in text and "ctx.idempotency_key" in text
    long = _hover("task ping", "retry")
    assert "after 1m, 1m, 1m, 1m, 1m, … (the same delay)" in long


def test_the_delays_shown_are_the_runtimes() -> None:
    for attempts, backoff, most in ((3, 30, 600), (8, 60, None), (12, 1, 86_400)):
        policy = PlanRetry(attempts=attempts, backoff=backoff, max_backoff=most)
        assert retry_delays(attempts, backoff, most) == [int(delay(policy, n)) for n in range(1, attempts + 1)]


def test_hover_on_an_invalid_duration_explains_the_form() -> None:
    text = TEXT.replace("after 3d", "after 3w")
    analysis = analyse("t.wf", text, 1, None)
    n = _line("after 3w", text)
    found = hover(analysis, Locator(analysis, "file:///t.wf", "utf-16"),
                  lsp.Position(line=n, character=text.splitlines()[n].index("3w")))
    assert found is not None and isinstance(found.contents, lsp.MarkupContent)
    assert "`3w` is not a duration" in found.contents.value and "invalid-duration" in found.contents.value


# ---- a timer's actions are indexed ---------------------------------------------------------------------------------


def test_a_timers_actions_hover_go_to_definition_and_rename_with_the_step() -> None:
    analysis = analyse("t.wf", TEXT, 1, None)
    where = Locator(analysis, "file:///t.wf", "utf-16")
    n = _line("after 3d")
    on_kind = lsp.Position(line=n, character=LINES[n].index("move_to_step") + 1)
    found = hover(analysis, where, on_kind)
    assert found is not None and isinstance(found.contents, lsp.MarkupContent)
    assert "transition move_to_step" in found.contents.value
    on_step = lsp.Position(line=n, character=LINES[n].index("(done)") + 2)
    (target,) = definition(analysis, where, on_step)
    assert target.range.start.line == _line('step done "Done"')
    edit = rename(analysis, where, on_step, "finished")
    assert edit.changes is not None
    lines = sorted(e.range.start.line for e in edit.changes["file:///t.wf"])
    assert lines == [n, _line('step done "Done"')]  # the timer's reference is renamed with the declaration


def test_the_outline_lists_a_steps_timers_after_its_handlers() -> None:
    analysis = analyse("t.wf", TEXT, 1, None)
    (workflow,) = [s for s in document_symbols(analysis, Locator(analysis, "file:///t.wf", "utf-16"))
                   if s.name == "w"]
    review = next(s for s in workflow.children or () if s.name == "review")
    assert [(c.name, c.detail) for c in review.children or ()] == [
        ("after 48h", "timer"), ("every 30m", "timer"), ("after 3d", "timer")]
    assert (review.children or [])[0].selection_range.start.line == _line("after 48h")


# ---- completion ----------------------------------------------------------------------------------------------------


def test_a_steps_item_offers_after_and_every_as_snippets() -> None:
    text = TEXT.replace("    every 30m { ping }\n", "    \n")
    n = _line("manual_move", text) + 2
    analysis = analyse("t.wf", TEXT, 1, None)
    items = completion(analysis, text, lsp.Position(line=n, character=4), "utf-16")
    assert [i.label for i in items[:2]] == ["after", "every"]
    assert items[0].insert_text == "after ${1:48h} {\n\t$0\n}"
    assert items[0].insert_text_format == lsp.InsertTextFormat.Snippet
    assert "on" in [i.label for i in items] and "manual_move" in [i.label for i in items]  # the other keywords too


def test_after_after_the_durations_are_offered() -> None:
    text = TEXT.replace("    every 30m { ping }\n", "    every \n")
    n = _line("    every ", text)
    assert _labels(text, n, len("    every ")) == ["30m", "1h", "4h", "12h", "24h", "48h", "7d"]


def test_a_timers_body_offers_the_kinds_a_timer_may_run() -> None:
    text = TEXT.replace("every 30m { ping }", "every 30m {  }")
    n = _line("every 30m", text)
    labels = _labels(text, n, len("    every 30m { "))
    assert {"ping", "notify", "queue_run", "move_to_step", "when"} <= set(labels)
    assert "auto_start_agent" in labels  # the prelude allows it on generic triggers
    assert "ensure_seats" not in labels  # entry-only: not in a timer (IL-checked too)


def test_a_task_kinds_on_clause_is_followed_by_retry_then_backoff() -> None:
    head = "task ping on on_comment "
    text = TEXT.replace("task ping on on_comment retry 8 backoff 1m", head)
    assert _labels(text, 1, len(head)) == ["retry"]
    assert _labels(text.replace(head, head + "re"), 1, len(head) + 2) == ["retry"]
    count = head + "retry 2 "
    assert _labels(text.replace(head, count), 1, len(count)) == ["backoff"]
    # a session kind is never retried (IL-checked): no `retry` snippet for it, only the plain keyword list
    head = "session ping on on_comment "
    session = TEXT.replace("task ping on on_comment retry 8 backoff 1m", head)
    items = completion(analyse("t.wf", TEXT, 1, None), session, lsp.Position(line=1, character=len(head)), "utf-16")
    assert not [i for i in items if i.kind == lsp.CompletionItemKind.Snippet] and len(items) > 20


# ---- semantic tokens -----------------------------------------------------------------------------------------------


def _tokens(text: str) -> dict[tuple[int, str], str]:
    analysis = analyse("t.wf", text, 1, None)
    lines = text.splitlines()
    return {(line, lines[line][start:start + length]): kind
            for line, start, length, kind, _ in decode(semantic_tokens(analysis, text, "t.wf", "utf-16"))}


def test_semantic_tokens_know_timers_and_retry() -> None:
    tokens = _tokens(TEXT)
    assert tokens[(0, "retry")] == tokens[(0, "backoff")] == "keyword"
    assert tokens[(0, "3")] == tokens[(0, "30s")] == tokens[(0, "10m")] == "number"
    n = _line("after 48h")
    assert tokens[(n, "after")] == "keyword" and tokens[(n, "48h")] == "number"
    assert tokens[(n, "queue_run")] == "function"  # a kind in a timer, from the index
    m = _line("after 3d")
    assert tokens[(m, "done")] == "enumMember"  # a step named in a timer's transition


def test_semantic_tokens_of_a_text_that_does_not_parse_still_know_them() -> None:
    broken = TEXT.replace('reason: "overdue") }', 'reason: "overdue" }')
    tokens = _tokens(broken)
    n = _line("after 48h", broken)
    assert tokens[(n, "after")] == "keyword" and tokens[(n, "48h")] == "number"
    assert tokens[(0, "retry")] == "keyword" and tokens[(0, "30s")] == "number"
