"""The language server inside a transition's guard (docs/language.md §6): completion of `payload.` (the handler's
trigger's parameters), `task.` and `host.` fields and of the words a guard is made of; hover on a guard's fields.
Called in process: the features are pure functions of (analysis, text, position)."""

from __future__ import annotations

from lsprotocol import types as lsp

from interlock.lsp.analysis import analyse
from interlock.lsp.convert import Locator
from interlock.lsp.features import completion, hover

TEXT = """workflow w {
  step a { start manual_move
    on on_approval_resolved {
      move_to_step(b) when payload.status == "approved" and not task.archived
    }
  }
  step b { manual_move terminal }
}
"""


def _complete(text: str, line: int, col: int) -> list[lsp.CompletionItem]:
    return completion(analyse("t.wf", TEXT, 1, None), text, lsp.Position(line=line, character=col), "utf-16")


def _typed(fragment: str) -> tuple[str, int, int]:
    """TEXT with the guard replaced by `fragment`, and the cursor at its end."""
    line = "      move_to_step(b) when " + fragment
    text = TEXT.replace('      move_to_step(b) when payload.status == "approved" and not task.archived', line)
    return text, 3, len(line)


def test_payload_completes_the_triggers_parameters() -> None:
    items = _complete(*_typed("payload."))
    assert [i.label for i in items] == ["approval_id", "status", "note"]
    assert items[1].detail == "str: payload of on_approval_resolved"


def test_task_completes_what_a_guard_may_read() -> None:
    labels = [i.label for i in _complete(*_typed('payload.status == "x" and task.'))]
    assert "is_from_office" in labels and "archived" in labels
    assert "other_working_session" not in labels  # a transition guard cannot read it (IL106)


def test_host_completes_the_host_flags() -> None:
    assert [i.label for i in _complete(*_typed("host.e"))] == ["engine_ready"]


def test_after_when_the_guard_names_and_words() -> None:
    labels = [i.label for i in _complete(*_typed(""))]
    assert {"payload", "task", "host", "quorum", "not"} <= set(labels)
    assert "queue_run" not in labels  # not an action's place


def test_outside_a_guard_the_actions_still_complete() -> None:
    text = TEXT.replace('      move_to_step(b) when payload.status == "approved" and not task.archived', "      ")
    labels = [i.label for i in completion(analyse("t.wf", TEXT, 1, None), text, lsp.Position(line=3, character=6),
                                          "utf-16")]
    assert "queue_run" in labels and "payload" not in labels


def _hover(col: int) -> str:
    analysis = analyse("t.wf", TEXT, 1, None)
    found = hover(analysis, Locator(analysis, "file:///t.wf", "utf-16"), lsp.Position(line=3, character=col))
    assert found is not None and isinstance(found.contents, lsp.MarkupContent)
    return found.contents.value


def test_hover_on_a_payload_field_shows_the_triggers_parameter() -> None:
    line = TEXT.splitlines()[3]
    text = _hover(line.index("status") + 1)
    assert "status: str" in text and "trigger `on_approval_resolved`" in text


def test_hover_on_a_task_field_shows_the_record_field() -> None:
    line = TEXT.splitlines()[3]
    text = _hover(line.index("archived") + 1)
    assert "archived: bool" in text and "record `task`" in text
