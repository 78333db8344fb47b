"""A plan is input: each structural rule the compiler guarantees, broken in the compiled plans of the nine
examples and the digest recomputed as the loader checks it, makes `load_plan` refuse the plan with a
`PlanError` naming what is wrong (the workflow, step, kind or trigger) and the compiler's rule."""

from __future__ import annotations

import copy
import json
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from interlock.compiler import compile_path
from interlock.runtime.plan import PlanError, dump_plan, load_plan, seal_digests

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = sorted((ROOT / "examples").glob("*.wf"))
Data = dict[str, Any]
Mutation = Callable[[Data], "str | None"]
"""Breaks one rule in a plan's JSON in place; returns the pattern the refusal must match (None: not applicable)."""


@pytest.fixture(scope="module")
def plans() -> dict[str, Data]:
    out = {}
    for path in EXAMPLES:
        result = compile_path(path)
        assert result.plan is not None, path
        out[path.name] = json.loads(dump_plan(result.plan))
    assert len(out) == 9
    return out


def _action(kind: str, klass: str, position: int, **extra: Any) -> Data:
    return {"position": position, "kind": kind, "action_class": klass, "args": {}, "guard": None,
            "requires_approval": False, "target_step": None, "source": {"file": "x.wf", "line": 1, "col": 1},
            **extra}


def _add(step: Data, trigger: str, action: Data) -> None:
    actions = step["handlers"].setdefault(trigger, [])
    action["position"] = len(actions)
    actions.append(action)


def _first_action(data: Data, klass: str, trigger: str | None = None) -> tuple[Data, Data, str, Data] | None:
    for wf in data["workflows"]:
        for step in wf["steps"]:
            for trig, actions in step["handlers"].items():
                for action in actions:
                    if action["action_class"] == klass and trig in ((trigger,) if trigger else (trig,)):
                        return wf, step, trig, action
    return None


def _kind(data: Data, name: str) -> Data:
    return next(k for k in data["kinds"] if k["name"] == name)


def _resplit(d: Data) -> None:
    """Each step's entry halves made from its `on_enter` handler again: only the policy is then wrong."""
    policy = d["entry_policy"]
    for wf in d["workflows"]:
        for step in wf["steps"]:
            declared = step["handlers"].get("on_enter", [])
            step["entry_dispatch"] = [a for a in declared if a["kind"] in policy["dispatch"]]
            step["entry_inline"] = [a["kind"] for a in declared if a["kind"] in policy["exclude"]]


def both_lists(d: Data) -> str:
    d["entry_policy"]["exclude"].append("ensure_seats")
    _resplit(d)
    return r"kind `ensure_seats` is in both entry lists.*entry-kind-in-both-lists"


def neither_list(d: Data) -> str:
    d["entry_policy"]["dispatch"].remove("run_code_review")
    _resplit(d)
    return r"kind `run_code_review` may be declared on `on_enter` but is in neither entry list"


def transition_on_entry_handler(d: Data) -> str:
    wf, step = d["workflows"][0], d["workflows"][0]["steps"][0]
    _add(step, "on_enter", _action("move_to_step", "transition", 0, args={"step": step["id"]},
                                   target_step=step["id"]))
    return rf"workflow `{re.escape(wf['id'])}`, step `{step['id']}`, `on_enter`: `move_to_step` is a transition " \
           r"on the entry trigger"


def transition_declared_on_entry(d: Data) -> str:
    _kind(d, "move_to_next")["triggers"].append("on_enter")
    return r"transition `move_to_next` is declared on the entry trigger `on_enter`"


def two_start_steps(d: Data) -> str | None:
    wf = next((w for w in d["workflows"] if len(w["steps"]) > 1), None)
    if wf is None:
        return None
    other = next(s for s in wf["steps"] if not s["start"])
    other["start"] = True
    return rf"workflow `{re.escape(wf['id'])}`: the steps marked start are .*`{other['id']}`.*start-step-count"


def no_start_step(d: Data) -> str:
    wf = d["workflows"][0]
    for step in wf["steps"]:
        step["start"] = False
    return rf"workflow `{re.escape(wf['id'])}`: the steps marked start are none"


def ensure_seats_on_comment(d: Data) -> str:
    step = d["workflows"][0]["steps"][0]
    _add(step, "on_comment", _action("ensure_seats", "task", 0, args={"role": "reviewer"}))
    return rf"step `{step['id']}`, `on_comment`: `ensure_seats` may not be declared on `on_comment`"


def kind_on_unknown_trigger(d: Data) -> str:
    _kind(d, "queue_run")["triggers"].append("on_lunch")
    return r"kind `queue_run` is declared on unknown trigger `on_lunch`"


def second_entry_trigger(d: Data) -> str:
    next(t for t in d["triggers"] if t["name"] == "on_exit")["entry"] = True
    return r"the triggers marked entry are `on_enter`, `on_exit`.*entry-trigger-count"


def transition_in_entry_list(d: Data) -> str:
    d["entry_policy"]["dispatch"].append("move_to_next")
    return r"entry `dispatch` lists transition `move_to_next`"


def not_an_entry_kind_listed(d: Data) -> str:
    d["entry_policy"]["exclude"].append("create_child_task")
    return r"entry `exclude` lists `create_child_task`, which may not be declared on `on_enter`"


def duplicate_position(d: Data) -> str | None:
    wf = next((w for w in d["workflows"] if len(w["steps"]) > 1), None)
    if wf is None:
        return None
    wf["steps"][1]["position"] = wf["steps"][0]["position"]
    return rf"workflow `{re.escape(wf['id'])}`: steps `{wf['steps'][0]['id']}`, `{wf['steps'][1]['id']}` share position"


def out_of_position_order(d: Data) -> str | None:
    wf = next((w for w in d["workflows"] if len(w["steps"]) > 1), None)
    if wf is None:
        return None
    wf["steps"][0]["position"], wf["steps"][1]["position"] = wf["steps"][1]["position"], wf["steps"][0]["position"]
    return rf"workflow `{re.escape(wf['id'])}`: steps are not in position order"


def duplicate_step_id(d: Data) -> str | None:
    wf = next((w for w in d["workflows"] if len(w["steps"]) > 1), None)
    if wf is None:
        return None
    wf["steps"][1]["id"] = wf["steps"][0]["id"]
    return rf"workflow `{re.escape(wf['id'])}`: step `{wf['steps'][0]['id']}` is declared twice"


def unknown_target(d: Data) -> str | None:
    found = _first_action(d, "transition")
    if found is None:
        return None
    _, step, trig, action = found
    action["target_step"] = "nowhere"
    if "step" in action["args"]:
        action["args"]["step"] = "nowhere"
    return rf"step `{step['id']}`: `{trig}` transition to unknown step `nowhere`"


def unknown_kind(d: Data) -> str:
    step = d["workflows"][0]["steps"][0]
    _add(step, "on_comment", _action("launch_rockets", "task", 0))
    return r"`on_comment` action `launch_rockets` is not a kind of the plan"


def unknown_role(d: Data) -> str:
    step = d["workflows"][0]["steps"][0]
    _add(step, "on_enter", _action("ensure_seats", "task", 0, args={"role": "astronaut"}))
    _resplit(d)
    return r"`ensure_seats` argument `role` names undeclared role `astronaut`"


def pull_cycle(d: Data) -> str | None:
    wf = next((w for w in d["workflows"] if len(w["steps"]) > 1), None)
    if wf is None:
        return None
    a, b = wf["steps"][0], wf["steps"][1]
    a["pull_from"], b["pull_from"] = b["id"], a["id"]
    return rf"workflow `{re.escape(wf['id'])}`: `pull_from` forms a cycle"


def guard_on_a_task(d: Data) -> str:
    step = d["workflows"][0]["steps"][0]
    _add(step, "on_comment", _action("clear_decisions", "task", 0, guard={
        "role": "reviewer", "threshold": "all_approve", "count": None, "source": {"file": "x", "line": 1, "col": 1}}))
    return r"`clear_decisions` is not a transition but has a guard.*guard-on-non-transition"


def n_approve_without_count(d: Data) -> str | None:
    found = _first_action(d, "transition")
    if found is None:
        return None
    _, step, trig, action = found
    action["guard"] = {"role": "reviewer", "threshold": "n_approve", "count": None,
                       "source": {"file": "x", "line": 1, "col": 1}}
    return rf"step `{step['id']}`, `{trig}`: `{action['kind']}`: threshold `n_approve` with count None"


def action_positions(d: Data) -> str | None:
    for wf in d["workflows"]:
        for step in wf["steps"]:
            for trig, actions in step["handlers"].items():
                if len(actions) > 1 and trig != "on_enter":
                    actions[0]["position"], actions[1]["position"] = 1, 0
                    return rf"step `{step['id']}`, `{trig}`: action positions are \[1, 0"
    return None


def duplicate_kind(d: Data) -> str:
    d["kinds"].append(copy.deepcopy(_kind(d, "queue_run")))
    return r"kind `queue_run` is declared twice"


def empty_workflow(d: Data) -> str:
    wf = d["workflows"][0]
    wf["steps"] = []
    return rf"workflow `{re.escape(wf['id'])}`: start step `.*` is not one of its steps"


def negative_wip_limit(d: Data) -> str:
    step = d["workflows"][0]["steps"][0]
    step["wip_limit"] = -3
    return rf"step `{step['id']}`: `wip_limit` is -3; it must be 0 or more"


def nameless_agent_profile(d: Data) -> str:
    wf = d["workflows"][0]
    wf["agent_profile"] = {"id": None, "agent_name": None, "model": "m", "mode": None}
    return rf"workflow `{re.escape(wf['id'])}`: `agent_profile` must be a non-empty id or name an `agent_name`"


def payload_mismatch(d: Data) -> str:
    seq = d["sequences"][0]
    seq["payload"].pop(sorted(seq["payload"])[0])
    return rf"dispatch sequence `{seq['name']}`: payload sets .*payload-mismatch"


def silent_guard_with_message(d: Data) -> str:
    seq = d["sequences"][0]
    skip = next(s for s in seq["steps"] if s["step"] == "skip" and s["level"] == "silent")
    skip["message"] = "never recorded"
    return rf"dispatch sequence `{seq['name']}`: guard `{skip['guard']}` is silent but has a message"


def recording_guard_without_message(d: Data) -> str:
    seq = d["sequences"][0]
    skip = next(s for s in seq["steps"] if s["step"] == "skip" and s["level"] != "silent")
    skip["message"] = None
    return rf"guard `{skip['guard']}` records at `{skip['level']}` without a message"


def duplicate_guard_name(d: Data) -> str:
    seq = d["sequences"][0]
    skips = [s for s in seq["steps"] if s["step"] == "skip"]
    skips[1]["guard"] = skips[0]["guard"]
    return rf"dispatch sequence `{seq['name']}`: guard `{skips[0]['guard']}` is declared twice"


def second_sequence_for_a_trigger(d: Data) -> str:
    extra = copy.deepcopy(d["sequences"][0])
    extra["name"] = "agent_error_again"
    d["sequences"].append(extra)
    return rf"trigger `{d['sequences'][0]['trigger']}` has more than one dispatch sequence"


def reserved_field(d: Data) -> str:
    d["records"][0]["fields"]["_secret"] = "str"
    return rf"record `{d['records'][0]['name']}`: field `_secret` starts with `_`"


def unknown_event_record(d: Data) -> str:
    seq = d["sequences"][0]
    seq["event"] = "nothing"
    return rf"dispatch sequence `{seq['name']}`: event `nothing` is not a record"


# ---- timers and retry policies (issue 20) ----------------------------------------------------------------------


def _timer(step: Data, kind: str, seconds: int, label: str, *actions: Data) -> Data:
    timer = {"kind": kind, "seconds": seconds, "label": label,
             "actions": [{**a, "position": i} for i, a in enumerate(actions)],
             "source": {"file": "x.wf", "line": 1, "col": 1}}
    step.setdefault("timers", []).append(timer)
    return timer


def _wake() -> Data:
    return _action("queue_run", "task", 0, args={"target": "workspace.ceo_agent", "task": "this",
                                                 "reason": "overdue", "payload": {}, "cadence_seconds": None})


def timer_too_long(d: Data) -> str:
    step = d["workflows"][0]["steps"][0]
    _timer(step, "after", 366 * 86_400, "after 366d", _wake())
    return rf"step `{step['id']}`, `after 366d`: 31622400 s is outside 1 s to 365 days.*invalid-duration"


def timer_of_no_time(d: Data) -> str:
    step = d["workflows"][0]["steps"][0]
    _timer(step, "every", 0, "every 0s", _wake())
    return rf"step `{step['id']}`, `every 0s`: 0 s is outside 1 s to 365 days"


def timer_label_disagrees(d: Data) -> str:
    step = d["workflows"][0]["steps"][0]
    _timer(step, "after", 3600, "after 48h", _wake())
    return rf"step `{step['id']}`, `after 48h`: the label does not state its after timer of 3600 s"


def timer_label_of_the_other_kind(d: Data) -> str:
    step = d["workflows"][0]["steps"][0]
    _timer(step, "every", 3600, "after 1h", _wake())
    return r"`after 1h`: the label does not state its every timer of 3600 s"


def two_after_timers_of_one_duration(d: Data) -> str:
    step = d["workflows"][0]["steps"][0]
    _timer(step, "after", 3600, "after 1h", _wake())
    _timer(step, "after", 3600, "after 60m", _wake())
    return rf"step `{step['id']}`, `after 60m`: a second `after` timer of 3600 s on the step.*duplicate-timer"


def entry_kind_in_a_timer(d: Data) -> str:
    step = d["workflows"][0]["steps"][0]
    _timer(step, "after", 60, "after 1m", _action("ensure_seats", "task", 0, args={"role": "reviewer"}))
    return rf"step `{step['id']}`, `after 1m`: `ensure_seats` may not be used in a timer.*kind-not-allowed-on-trigger"


def guard_on_a_task_in_a_timer(d: Data) -> str:
    step = d["workflows"][0]["steps"][0]
    _timer(step, "every", 60, "every 1m", _action("clear_decisions", "task", 0, requires_approval=True))
    return r"`every 1m`: `clear_decisions` is not a transition but has a guard.*guard-on-non-transition"


def destination_on_a_task(d: Data) -> str:
    step = d["workflows"][0]["steps"][0]
    _timer(step, "every", 60, "every 1m", _action("clear_decisions", "task", 0, target_step=step["id"]))
    return rf"`every 1m`: `clear_decisions` is not a transition but moves to `{step['id']}`"


def timer_action_positions(d: Data) -> str:
    step = d["workflows"][0]["steps"][0]
    timer = _timer(step, "every", 60, "every 1m", _wake(), _wake())
    timer["actions"][0]["position"], timer["actions"][1]["position"] = 1, 0
    return r"`every 1m`: action positions are \[1, 0"


def unknown_kind_in_a_timer(d: Data) -> str:
    step = d["workflows"][0]["steps"][0]
    _timer(step, "after", 60, "after 1m", _action("launch_rockets", "task", 0))
    return r"`after 1m` action `launch_rockets` is not a kind of the plan"


def timer_moves_to_unknown_step(d: Data) -> str:
    step = d["workflows"][0]["steps"][0]
    _timer(step, "after", 60, "after 1m", _action("move_to_step", "transition", 0, args={"step": "nowhere"},
                                                  target_step="nowhere"))
    return r"`after 1m` transition to unknown step `nowhere`"


def timer_guard_reads_a_payload(d: Data) -> str:
    step = d["workflows"][0]["steps"][0]
    when = {"op": "==", "left": {"op": "path", "path": ["payload", "status"], "type": "str"},
            "right": {"op": "lit", "value": "approved"}}
    _timer(step, "after", 60, "after 1m", _action("move_to_step", "transition", 0, args={"step": step["id"]},
                                                  target_step=step["id"], when=when))
    return r"`after 1m`: `move_to_step` guard reads `payload.status`, which `payload` does not have"


def retry_on_a_session_kind(d: Data) -> str:
    _kind(d, "auto_start_agent")["retry"] = {"attempts": 3, "backoff": 30, "max_backoff": None}
    return r"kind `auto_start_agent` is a session kind with a retry policy.*retry-misplaced"


def retry_on_a_transition(d: Data) -> str:
    _kind(d, "move_to_next")["retry"] = {"attempts": 3, "backoff": 30, "max_backoff": None}
    return r"kind `move_to_next` is a transition kind with a retry policy"


def retry_attempts_out_of_range(d: Data) -> str:
    _kind(d, "queue_run")["retry"] = {"attempts": 101, "backoff": 30, "max_backoff": None}
    return r"kind `queue_run`: `retry 101` is outside 1..100.*invalid-retry-policy"


def retry_of_no_attempt(d: Data) -> str:
    _kind(d, "queue_run")["retry"] = {"attempts": 0, "backoff": 30, "max_backoff": None}
    return r"kind `queue_run`: `retry 0` is outside 1..100"


def retry_without_backoff(d: Data) -> str:
    _kind(d, "queue_run")["retry"] = {"attempts": 3, "backoff": 0, "max_backoff": None}
    return r"kind `queue_run`: `backoff` is 0 s, outside 1 s to 365 days"


def retry_backoff_shrinks(d: Data) -> str:
    _kind(d, "queue_run")["retry"] = {"attempts": 3, "backoff": 600, "max_backoff": 30}
    return r"kind `queue_run`: its backoff grows from 600 s to 30 s, less than where it starts"


MUTATIONS: list[Mutation] = [
    both_lists, neither_list, transition_on_entry_handler, transition_declared_on_entry, two_start_steps,
    no_start_step, ensure_seats_on_comment, kind_on_unknown_trigger, second_entry_trigger, transition_in_entry_list,
    not_an_entry_kind_listed, duplicate_position, out_of_position_order, duplicate_step_id, unknown_target,
    unknown_kind, unknown_role, pull_cycle, guard_on_a_task, n_approve_without_count, action_positions,
    duplicate_kind, empty_workflow, negative_wip_limit, nameless_agent_profile, payload_mismatch,
    silent_guard_with_message, recording_guard_without_message, duplicate_guard_name,
    second_sequence_for_a_trigger, reserved_field, unknown_event_record,
    timer_too_long, timer_of_no_time, timer_label_disagrees, timer_label_of_the_other_kind,
    two_after_timers_of_one_duration, entry_kind_in_a_timer, guard_on_a_task_in_a_timer, destination_on_a_task,
    timer_action_positions, unknown_kind_in_a_timer, timer_moves_to_unknown_step, timer_guard_reads_a_payload,
    retry_on_a_session_kind, retry_on_a_transition, retry_attempts_out_of_range, retry_of_no_attempt,
    retry_without_backoff, retry_backoff_shrinks,
]


def _redigest(data: Data) -> str:
    data.update(seal_digests(data))
    return json.dumps(data)


def test_every_example_plan_loads_as_compiled(plans: dict[str, Data]) -> None:
    for name, data in plans.items():
        assert load_plan(_redigest(copy.deepcopy(data))).workflows, name


@pytest.mark.parametrize("mutation", MUTATIONS, ids=lambda m: m.__name__)
def test_a_plan_breaking_a_rule_is_refused_by_name(mutation: Mutation, plans: dict[str, Data]) -> None:
    applied = 0
    for original in plans.values():
        data = copy.deepcopy(original)
        expected = mutation(data)
        if expected is None:
            continue
        applied += 1
        with pytest.raises(PlanError, match=expected):
            load_plan(_redigest(data))
    assert applied >= 1, "the mutation applied to no example"
