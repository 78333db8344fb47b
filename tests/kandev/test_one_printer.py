"""`interlock import` writes every action with the IR printer (ADR 0055): an action's text in an import is what
`interlock.dsl.printer.format_action` writes for the action it parses back to, so the bridge and the printer cannot
write one action two ways (escapes, map keys, guards, flags)."""

from __future__ import annotations

import re

from support.kandev import FIXTURES, import_clean

from interlock.dsl import ir, parse_bytes
from interlock.dsl.printer import format_action

PAYLOAD_TEMPLATE = """id: keys
name: Keys
steps:
  - id: work
    name: Work
    position: 0
    is_start_step: true
    allow_manual_move: true
    events:
      on_comment:
        - type: queue_run
          config:
            reason: "tab\\there"
            payload: {stage_type: review, "a b": 1, "on": true, "retry-after": [30]}
        - type: move_to_step
          config: {step_id: done, wait_for_quorum: {role: reviewer, threshold: "n_approve:2"}, requires_approval: true}
  - id: done
    name: Done
    position: 1
    allow_manual_move: true
"""


def _actions(module: ir.Module) -> list[ir.ActionCall]:
    return [a for d in module.decls if isinstance(d, ir.WorkflowDecl) for s in d.steps
            for h in (*s.handlers, *s.timers) for a in h.actions]


def _flat(text: str) -> str:
    """`text` without comments at line ends and without the layout `interlock fmt` adds to a long line (line breaks,
    indentation, trailing commas)."""
    text = re.sub(r"[ \t]+#[^\"\n]*$", "", text, flags=re.M)
    return re.sub(r",([)}\]])", r"\1", re.sub(r"\s+", "", text))


def _check(text: str) -> int:
    module, diagnostics = parse_bytes("imported.wf", text.encode())
    assert module is not None and not diagnostics
    flat = _flat(text)
    actions = _actions(module)
    missing = [format_action(a) for a in actions if _flat(format_action(a)) not in flat]
    assert not missing, f"written otherwise than the printer writes them: {missing}"
    return len(actions)


def test_an_import_writes_each_action_as_the_printer_does() -> None:
    (_, text), = import_clean(PAYLOAD_TEMPLATE).workflows
    assert 'payload: {stage_type: "review", "a b": 1, "on": true, retry-after: [30]}' in text
    assert '"tab\\there"' in text
    assert _check(text) == 2


def test_every_fixture_import_writes_its_actions_as_the_printer_does() -> None:
    for path in sorted(FIXTURES.glob("*.yml")):
        for _, text in import_clean(path.read_text(encoding="utf-8"), path.name).workflows:
            assert _check(text) > 0, path.name
