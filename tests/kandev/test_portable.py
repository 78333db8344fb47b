"""Portable documents and full-field templates (fixtures written for these tests): import, export in the same
format, equal data; the re-import compiles to the same plan; agent profiles, workflow prompts and step_position
moves survive."""

from __future__ import annotations

import pytest
from support.kandev import FIXTURES, comparable, compiled, data, export, import_clean

from interlock.kandev.importer import combined

CASES = ("portable-two-workflows", "template-all-fields")


@pytest.mark.parametrize("name", CASES)
def test_round_trip_gives_the_same_data_and_plan(name: str) -> None:
    original = (FIXTURES / f"{name}.yml").read_text()
    imported = import_clean(original)
    wf = combined(imported.workflows)
    yaml_text, _ = export(wf, imported.kind)
    assert data(yaml_text) == data(original)
    again = import_clean(yaml_text)
    assert comparable(compiled("b.wf", combined(again.workflows))) == comparable(compiled("a.wf", wf))


def test_portable_document_maps_profiles_prompts_and_positions() -> None:
    imported = import_clean((FIXTURES / "portable-two-workflows.yml").read_text())
    assert imported.kind == "portable"
    assert [wid for wid, _ in imported.workflows] == ["triage-board", "release-train"]
    plan = compiled("a.wf", combined(imported.workflows))
    triage, release = plan.workflows
    assert triage.prompt == "You are triaging task {task_id}.\nKeep answers short.\n"
    assert triage.agent_profile is not None and triage.agent_profile.model == "small-model"
    inbox, needs, ready = triage.steps
    assert inbox.handlers["on_turn_complete"][0].target_step == "ready"  # step_position 2
    assert needs.prompt == 'Ask the reporter one question.\n\nQuote their words: "like this".\n'
    assert ready.auto_archive_after_hours == 72
    assert ready.agent_profile is not None and ready.agent_profile.mode is None
    guard = release.steps[1].handlers["on_turn_complete"][0].guard
    assert guard is not None and (guard.role, guard.threshold, guard.count) == ("release_captain", "n_approve", 2)
    assert "release_captain" in plan.roles


def test_portable_export_says_what_it_drops() -> None:
    imported = import_clean((FIXTURES / "template-all-fields.yml").read_text())
    _, diagnostics = export(combined(imported.workflows), "portable")
    messages = " | ".join(d.message for d in diagnostics)
    for dropped in ("workflow ids", "`hidden`", "`stage_type`", "`on_heartbeat`", "`on_budget_alert`",
                    "`wip_limit`", "`pull_from_step_id`", "`auto_advance_requires_signal`", "by id"):
        assert dropped in messages
    assert {d.code for d in diagnostics} == {"KV015"}


def test_yaml_1_2_words_stay_strings() -> None:
    imported = import_clean((FIXTURES / "template-all-fields.yml").read_text())
    plan = compiled("a.wf", combined(imported.workflows))
    first, done = plan.workflows[0].steps
    assert (first.id, first.title, done.id) == ("no", "on", "yes")
    assert done.handlers["on_turn_start"][0].target_step == "no"
    assert first.cancel_triggers_turn_complete is False and first.auto_advance_requires_signal is True


def test_a_dropped_generic_trigger_points_at_the_template_format_only_when_it_keeps_it() -> None:
    """KV015's help sent the author to `--yaml-format template` even for a handler that format refuses (a move
    under `on_approval_resolved`, KV014): it says so instead."""
    text = ('workflow w {\n  step a { start manual_move\n'
            '    on on_comment { queue_run(target: primary, reason: "c") }\n'
            '    on on_approval_resolved { move_to_step(b) when payload.status == "approved" }\n  }\n'
            '  step b "Done" { manual_move terminal }\n}\n')
    _, diagnostics = export(text, "portable")
    helps = {d.span.line: d.help for d in diagnostics if d.code == "KV015" and "cannot carry `on_" in d.message}
    assert helps[3] == "use --yaml-format template to keep it"
    assert helps[4] == ("--yaml-format template cannot keep it either: kandev's template loader refuses "
                        "`move_to_step` under `on_approval_resolved`")
