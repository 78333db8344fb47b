"""kandev's clocks in the language's timers (docs/kandev.md, "Timers"): which `on_heartbeat` list an `every P { … }`
timer holds exactly, and which `every` timer exports back to one.

kandev's cron scheduler fires a step's `on_heartbeat` for each task standing on it, at the `cadence_seconds` its
`queue_run` actions carry.  An `on_heartbeat` list of `queue_run` actions only, all with one cadence of 1 s to 365
days, is exactly a timer `every <cadence> { … }` of the same actions — their `reason` written out when the YAML
leaves it to the trigger's name, since a timer's actions default it to the timer's label.  Any other list with a
cadence (another action type, several cadences, one outside the range) is kept as `on on_heartbeat` with
`cadence_seconds` as data, and the import says the host must fire it.  `auto_archive_after_hours` is never a timer:
the language has no action that archives a task, so the setting is kept for the host.  Pure.
"""

from __future__ import annotations

from interlock.dsl import ir
from interlock.runtime.durations import MAX_SECONDS, seconds_duration
from interlock.runtime.plan import PlanAction, PlanTimer

from .yamlread import YNode

__all__ = ["HEARTBEAT", "heartbeat_cadence", "timer_label_of", "timer_export_problem", "heartbeat_reason"]

HEARTBEAT = "on_heartbeat"


def _int(node: YNode | None) -> int | None:
    return int(node.data()) if node is not None and node.kind == "scalar" and node.type == "int" else None


def heartbeat_cadence(actions: YNode | None) -> tuple[int | None, str | None]:
    """The cadence an `every` timer can hold for this `on_heartbeat` list, and why not when it cannot: (cadence,
    None) maps; (None, why) keeps the list as data; (None, None): no action carries a cadence (nothing to say)."""
    items = actions.items if actions is not None and actions.kind == "seq" else []
    configs = [(item.get("type"), item.get("config")) for item in items if item.kind == "map"]
    cadences = [_int(cfg.get("cadence_seconds")) if cfg is not None and cfg.kind == "map" else None
                for _, cfg in configs]
    if not any(c is not None for c in cadences):
        return None, None
    types = {t.text for t, _ in configs if t is not None}
    if len(configs) != len(items) or types != {"queue_run"}:
        others = ", ".join(f"`{t}`" for t in sorted(types - {"queue_run"})) or "an action without a type"
        return None, f"the list also has {others}, which no cadence times"
    if len(set(cadences)) != 1:
        return None, "its `queue_run` actions have different cadences (or one has none)"
    cadence = cadences[0]
    assert cadence is not None
    if not 1 <= cadence <= MAX_SECONDS:
        return None, f"`cadence_seconds: {cadence}` is outside a timer's range (1s to 365d)"
    return cadence, None


def timer_label_of(cadence: int) -> str:
    """`every 5m` for a cadence of 300 seconds: the duration in its largest exact unit."""
    return f"every {seconds_duration(cadence)}"


def timer_export_problem(timer: ir.Timer, planned: PlanTimer, step: ir.StepDecl) -> str | None:
    """Why this timer cannot be written as kandev's `on_heartbeat` with `cadence_seconds` (None: it can)."""
    if timer.mode == "after":
        return (f"kandev has no timer that runs actions once, a time after the entry: `{timer.written}` is dropped "
                "(`auto_archive_after_hours` is kandev's only delay, and it archives the task)")
    kinds = {a.kind for a in planned.actions}
    if not planned.actions or kinds != {"queue_run"}:
        return (f"kandev's heartbeat times `queue_run` actions only (`cadence_seconds`): `{timer.written}` with "
                f"{', '.join(f'`{k}`' for k in sorted(kinds - {'queue_run'})) or 'no action'} is dropped")
    if any(a.args.get("cadence_seconds") not in (None, planned.seconds) for a in planned.actions):
        return (f"a `queue_run` in `{timer.written}` gives a `cadence_seconds` of its own, and kandev's "
                f"heartbeat has one cadence per action: `{timer.written}` is dropped")
    if any(h.trigger.name == HEARTBEAT for h in step.handlers):
        return (f"the step has an `on on_heartbeat` handler too, and kandev has one `on_heartbeat` list per step: "
                f"`{timer.written}` is dropped")
    if sum(1 for t in step.timers if t.mode == "every") > 1:
        return (f"the step has several `every` timers, and kandev has one `on_heartbeat` list per step: "
                f"`{timer.written}` is dropped")
    return None


def heartbeat_reason(action: PlanAction) -> str | None:
    """The `reason` a timer's `queue_run` exports with: none when it is kandev's default for `on_heartbeat`."""
    reason = action.args.get("reason")
    return None if reason == HEARTBEAT or not isinstance(reason, str) else reason
