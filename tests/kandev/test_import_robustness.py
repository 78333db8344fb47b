"""Whatever the YAML holds, import answers with `.wf` and diagnostics, never a traceback."""

from __future__ import annotations

from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from interlock.compiler import compile_bytes
from interlock.kandev.exporter import dump_yaml
from interlock.kandev.importer import import_text

KEYS = ["id", "name", "position", "steps", "events", "type", "config", "step_id", "step_position", "on_enter",
        "on_turn_start", "wait_for_quorum", "if", "role", "threshold", "target", "payload", "version",
        "workflows", "agent_profile", "prompt", "is_start_step", "hidden", "mode", "task_id", "agent_name"]
scalars = st.one_of(st.none(), st.booleans(), st.integers(-3, 3), st.sampled_from(["", "on", "no", "x", "0a-1",
                                                                                   "move_to_step", "kandev_workflow",
                                                                                   "n_approve:2", "primary"]))
documents: st.SearchStrategy[Any] = st.recursive(
    scalars, lambda inner: st.one_of(st.lists(inner, max_size=4),
                                     st.dictionaries(st.sampled_from(KEYS), inner, max_size=5)), max_leaves=30)


@settings(max_examples=200, deadline=None)
@given(documents)
def test_import_never_raises(doc: Any) -> None:
    result = import_text(dump_yaml(doc), "fuzz.yml")
    for d in result.diagnostics:
        assert d.span.line >= 1 and d.span.col >= 1
    for _, text in result.workflows:
        assert text.startswith(("workflow ", "role "))
        checked = compile_bytes("fuzz.wf", text.encode(), want_plan=False)
        syntax = [d for d in checked.diagnostics if d.code in ("IL001", "IL002", "IL007", "IL015")]
        assert syntax == [], (text, [d.message for d in syntax])
