"""Everything kandev would drop or change in silence is a located diagnostic on import."""

from __future__ import annotations

import pytest

from interlock.kandev.importer import import_text

HEAD = "id: w\nname: W\nsteps:\n  - id: a\n    name: A\n    position: 0\n    is_start_step: true\n"
DONE = "  - id: done\n    name: Done\n    position: 1\n"


def template(events: str) -> str:
    return HEAD + "    events:\n" + events + DONE


def codes(text: str) -> list[tuple[str, int, int]]:
    return [(d.code, d.span.line, d.span.col) for d in import_text(text, "t.yml").diagnostics]


def wf(text: str) -> str:
    return import_text(text, "t.yml").workflows[0][1]


MOVE = "      on_turn_complete:\n        - type: move_to_step\n          config:\n"


@pytest.mark.parametrize(("events", "expected"), [
    ("      on_enter:\n        - type: launch_rockets\n", ("KV004", 10, 17)),
    ("      on_enter:\n        - type: auto_start_agent\n          config:\n            prompt: hi\n",
     ("KV005", 12, 13)),
    (MOVE + "            step_id: nowhere\n", ("KV006", 12, 22)),
    (MOVE + "            step_id: done\n            wait_for_quorum:\n              role: reviewer\n",
     ("KV007", 14, 15)),
    (MOVE + "            step_id: done\n            wait_for_quorum:\n              role: reviewer\n"
     "              threshold: most\n", ("KV007", 15, 26)),
    (MOVE + "            step_id: done\n            if: {quorum: x}\n", ("KV007", 13, 17)),
    ("      on_turn_start:\n        - type: move_to_next\n          config:\n            requires_approval: true\n",
     ("KV008", 10, 17)),
    ("      on_exit:\n        - type: auto_start_agent\n", ("KV009", 10, 17)),
    ("      on_enter:\n        - type: queue_run_for_each_participant\n          config:\n            role: qa\n",
     ("KV010", 12, 19)),
    ("      on_enter:\n        - type: configure_session\n", ("KV012", 10, 17)),
])
def test_each_silent_drop_is_reported_at_its_node(events: str, expected: tuple[str, int, int]) -> None:
    assert expected in codes(template(events))


def test_the_unknown_action_is_not_imported_and_the_rest_is() -> None:
    text = wf(template("      on_enter:\n        - type: launch_rockets\n        - type: auto_start_agent\n"))
    assert "launch_rockets" not in text and "auto_start_agent" in text


def test_a_malformed_guard_is_an_error_not_a_silent_unguarded_move() -> None:
    result = import_text(template(MOVE + "            step_id: done\n            wait_for_quorum: {role: r}\n"),
                         "t.yml")
    assert result.errors == 1
    (error,) = [d for d in result.diagnostics if d.is_error]
    assert "unguarded" in error.message


def test_guards_on_turn_start_are_kept_and_honoured() -> None:
    text = wf(template("      on_turn_start:\n        - type: move_to_next\n          config:\n"
                       "            wait_for_quorum: {role: reviewer, threshold: all_approve}\n"))
    assert "move_to_next when quorum(reviewer, all_approve)" in text


def test_an_undeclared_role_is_declared_by_the_import() -> None:
    text = wf(template("      on_enter:\n        - type: queue_run_for_each_participant\n          config:\n"
                       "            role: qa\n"))
    assert text.startswith("role qa\n")


def test_unknown_keys_are_errors_as_in_kandevs_strict_loader() -> None:
    assert ("KV003", 8, 5) in codes(HEAD + "    colour: red\n" + DONE)
    assert ("KV003", 1, 1) in codes("idd: w\n" + HEAD[6:] + DONE)


def test_a_uuid_id_is_mapped_deterministically_and_reported() -> None:
    text = HEAD.replace("id: a", "id: 0c9e-41\n    ") + DONE
    text = "id: w\nname: W\nsteps:\n  - id: 0c9e-41\n    name: A\n    position: 0\n    is_start_step: true\n" \
        "    events:\n      on_turn_complete:\n        - type: move_to_step\n          config:\n" \
        "            step_id: 1ab\n  - id: 1ab\n    name: Done\n    position: 1\n"
    result = import_text(text, "t.yml")
    assert [d.code for d in result.diagnostics if d.code != "KV017"] == ["KV011", "KV011"]
    assert "step id_0c9e-41" in result.workflows[0][1] and "move_to_step(id_1ab)" in result.workflows[0][1]
    assert import_text(text, "t.yml").workflows == result.workflows


@pytest.mark.parametrize(("text", "where"), [
    ("a: [1, 2\n", (2, 1)),
    ("id: w\nid: v\n", (2, 1)),
    ("a: &x [1]\nb: *x\nc: !!python/object:os.system {}\n", (3, 4)),
    ("[" * 70 + "]" * 70 + "\n", (1, 65)),
])
def test_bad_yaml_is_one_located_error(text: str, where: tuple[int, int]) -> None:
    result = import_text(text, "bad.yml")
    assert [(d.code, d.span.line, d.span.col) for d in result.diagnostics] == [("KV001", *where)]
    assert result.workflows == []


def test_an_alias_bomb_is_refused() -> None:
    lines = ["a0: &a0 [x, x, x, x, x, x, x, x, x, x]"]
    lines += [f"a{i}: &a{i} [" + ", ".join([f"*a{i - 1}"] * 10) + "]" for i in range(1, 6)]
    result = import_text("\n".join(lines) + "\n", "bomb.yml")
    assert [d.code for d in result.diagnostics] == ["KV001"]
    assert "alias" in result.diagnostics[0].message


def test_portable_step_position_that_matches_no_step_is_an_error() -> None:
    text = ("version: 1\ntype: kandev_workflow\nworkflows:\n  - name: P\n    steps:\n      - name: A\n"
            "        position: 0\n        events:\n          on_turn_complete:\n            - type: move_to_step\n"
            "              config: {step_position: 5}\n")
    assert ("KV006", 11, 39) in codes(text)
