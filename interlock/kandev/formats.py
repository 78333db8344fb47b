"""kandev's two workflow YAML formats, as data (paraphrased from the format references beside the repository: the
formats at kandev's commit cd9fa0e6 and what changed after it).

Template format: a workflow with ids (`config/workflows/*.yml`); portable format: an envelope `version: 1`,
`type: kandev_workflow`, `workflows: [...]`, steps without ids, `move_to_step` by `step_position`.
"""

from __future__ import annotations

__all__ = [
    "TEMPLATE_WORKFLOW_KEYS", "TEMPLATE_STEP_KEYS", "PORTABLE_ENVELOPE_KEYS", "PORTABLE_WORKFLOW_KEYS",
    "PORTABLE_STEP_KEYS", "PROFILE_KEYS", "TRIGGERS", "PORTABLE_TRIGGERS", "CONFIG_KEYS", "GUARD_KEYS",
    "OPTION_KEYS", "THRESHOLDS", "STAGES", "TEMPLATE_ALLOWED", "KIND_OF_TYPE", "TYPE_OF_KIND", "STEP_FLAGS",
    "FAILURE_POLICIES", "SCRIPT_TIMEOUT",
]

TEMPLATE_WORKFLOW_KEYS = ("id", "name", "description", "hidden", "steps")
TEMPLATE_STEP_KEYS = ("id", "name", "position", "color", "prompt", "stage_type", "is_start_step",
                      "show_in_command_panel", "allow_manual_move", "auto_archive_after_hours",
                      "auto_advance_requires_signal", "cancel_triggers_turn_complete", "events", "agent_profile_id",
                      "wip_limit", "pull_from_step_id", "session_target", "agent_tag")
PORTABLE_ENVELOPE_KEYS = ("version", "type", "workflows")
PORTABLE_WORKFLOW_KEYS = ("name", "description", "prompt", "agent_profile", "steps")
PORTABLE_STEP_KEYS = ("name", "position", "color", "prompt", "is_start_step", "show_in_command_panel",
                      "allow_manual_move", "auto_archive_after_hours", "agent_profile", "events")
PROFILE_KEYS = ("agent_name", "model", "mode")

# YAML bool key -> the `.wf` flag that holds it
STEP_FLAGS = {"is_start_step": "start", "allow_manual_move": "manual_move",
              "show_in_command_panel": "show_in_command_panel",
              "auto_advance_requires_signal": "auto_advance_requires_signal",
              "cancel_triggers_turn_complete": "cancel_triggers_turn_complete"}

TRIGGERS = ("on_enter", "on_turn_start", "on_turn_complete", "on_exit", "on_comment", "on_blocker_resolved",
            "on_children_completed", "on_approval_resolved", "on_heartbeat", "on_budget_alert", "on_agent_error")
PORTABLE_TRIGGERS = TRIGGERS[:4]
"""The triggers the portable format carries (kandev drops the seven generic ones both ways)."""

STAGES = ("work", "review", "approval", "custom")
THRESHOLDS = ("all_approve", "all_decide", "majority_approve", "any_reject")  # and n_approve:N
GUARD_KEYS = ("requires_approval", "wait_for_quorum", "if")
OPTION_KEYS = ("instructions", "skip_step_prompt")
"""kandev's one-shot entry options, written on a move (ADR 0043): a transition's `options` in the language."""
FAILURE_POLICIES = ("block", "continue")
"""`run_script`'s `failure_policy`: `continue` is the action flag `continue_on_failure` (ADR 0042)."""
SCRIPT_TIMEOUT = (1, 86_400, 600)
"""`run_script`'s `timeout_seconds`: least, most and default."""

CONFIG_KEYS: dict[str, tuple[str, ...]] = {
    "move_to_next": (*GUARD_KEYS, *OPTION_KEYS),
    "move_to_previous": (*GUARD_KEYS, *OPTION_KEYS),
    "move_to_step": ("step_id", "step_position", *GUARD_KEYS, *OPTION_KEYS),
    "set_session_mode": ("mode",),
    "run_code_review": ("agent_profile_id",),
    "queue_run": ("target", "task_id", "reason", "payload", "cadence_seconds"),
    "queue_run_for_each_participant": ("role", "reason", "payload"),
    "ensure_participant_seat": ("role",),
    "run_script": ("command", "timeout_seconds", "failure_policy"),
    "enable_plan_mode": (), "disable_plan_mode": (), "reset_agent_context": (), "auto_start_agent": (),
    "clear_decisions": (),
}
"""Every action type kandev compiles, with the config keys it reads (anything else it ignores)."""

_MOVES = ("move_to_next", "move_to_previous", "move_to_step")
_GENERIC = ("queue_run", "clear_decisions", "queue_run_for_each_participant")
TEMPLATE_ALLOWED: dict[str, tuple[str, ...]] = {
    "on_enter": ("enable_plan_mode", "auto_start_agent", "reset_agent_context", "set_session_mode",
                 "clear_decisions", "queue_run", "queue_run_for_each_participant", "ensure_participant_seat",
                 "run_script"),
    "on_turn_start": _MOVES,
    "on_turn_complete": (*_MOVES, "disable_plan_mode", "run_script"),
    "on_exit": ("disable_plan_mode", "run_script"),
    **{t: _GENERIC for t in TRIGGERS[4:]},
}
"""The template loader's per-trigger allow-lists: what `export --yaml-format template` may write (kandev today:
its Office Default seats reviewers on entry, and `run_script` runs on entry, turn completion and exit)."""

KIND_OF_TYPE = {t: t for t in CONFIG_KEYS} | {"ensure_participant_seat": "ensure_seats"}
"""kandev action type -> interlock action kind (the prelude's names)."""
TYPE_OF_KIND = {v: k for k, v in KIND_OF_TYPE.items()}
