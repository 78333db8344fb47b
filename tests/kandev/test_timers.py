"""kandev's clocks and the language's timers (docs/kandev.md, "Timers"): an `on_heartbeat` list of `queue_run`
actions with one `cadence_seconds` imports as `every P { … }` and exports back to the same data; any other heartbeat
with a cadence is kept as data, and `auto_archive_after_hours` is kept for the host, each with a diagnostic that says
so; an export writes only the timers kandev can hold and says why it drops the others."""

from __future__ import annotations

from typing import Any

from support.kandev import compiled, data, export, import_clean

from interlock.kandev.importer import combined

TEMPLATE = """id: beats
name: Beats
steps:
  - id: work
    name: Work
    position: 0
    is_start_step: true
    allow_manual_move: true
    auto_archive_after_hours: {hours}
    events:
      on_heartbeat:
{beats}
  - id: done
    name: Done
    position: 1
    allow_manual_move: true
"""
ONE_CADENCE = """        - type: queue_run
          config:
            target: workspace.ceo_agent
            cadence_seconds: 1800
        - type: queue_run
          config:
            reason: nudge
            cadence_seconds: 1800"""


def imported(beats: str, hours: int = 0) -> tuple[str, list[Any]]:
    result = import_clean(TEMPLATE.format(beats=beats, hours=hours))
    return combined(result.workflows), list(result.diagnostics)


def codes(diagnostics: list[Any]) -> list[str]:
    return sorted(d.code for d in diagnostics)


def test_a_heartbeat_of_one_cadence_is_an_every_timer_of_its_actions() -> None:
    wf, diagnostics = imported(ONE_CADENCE)
    assert "    every 30m {\n" in wf and "on on_heartbeat" not in wf and "cadence_seconds" not in wf
    step = compiled("a.wf", wf).workflows[0].steps[0]
    assert "on_heartbeat" not in step.handlers
    (timer,) = step.timers
    assert (timer.kind, timer.seconds, timer.label) == ("every", 1800, "every 30m")
    # kandev's runs carry the trigger's name as their reason unless the config gives one: so do the timer's
    assert [(a.kind, a.args["target"], a.args["reason"]) for a in timer.actions] == [
        ("queue_run", "workspace.ceo_agent", "on_heartbeat"), ("queue_run", "primary", "nudge")]
    (note,) = [d for d in diagnostics if d.code == "KV024"]
    assert note.severity.value == "note" and note.span.line == 11
    assert "`every 30m { … }`" in note.message and "restart forgets it" in note.message


def test_the_export_of_the_timer_is_the_heartbeat_it_came_from() -> None:
    original = TEMPLATE.format(beats=ONE_CADENCE, hours=0)
    wf, _ = imported(ONE_CADENCE)
    yaml_text, diagnostics = export(wf, "template")
    assert data(yaml_text) == data(original)
    assert not [d for d in diagnostics if d.code in ("KV014", "KV015")]


def test_a_heartbeat_no_timer_holds_is_kept_as_data_and_said() -> None:
    mixed = ONE_CADENCE + "\n        - type: clear_decisions"
    wf, diagnostics = imported(mixed)
    assert "on on_heartbeat {" in wf and "cadence_seconds: 1800" in wf and "every" not in wf
    (kept,) = [d for d in diagnostics if d.code == "KV025"]
    assert kept.severity.value == "warning" and "`clear_decisions`" in kept.message
    assert "interlock never fires `on_heartbeat` by itself" in kept.message
    two = ONE_CADENCE.replace("cadence_seconds: 1800", "cadence_seconds: 60", 1)
    wf, diagnostics = imported(two)
    (kept,) = [d for d in diagnostics if d.code == "KV025"]
    assert "on on_heartbeat {" in wf and "different cadences" in kept.message
    huge = ONE_CADENCE.replace("1800", str(400 * 86_400))
    wf, diagnostics = imported(huge)
    assert "on on_heartbeat {" in wf and "outside a timer's range" in " ".join(d.message for d in diagnostics)
    plain = "        - type: queue_run"  # no cadence at all: a host-fired trigger, nothing to say
    wf, diagnostics = imported(plain)
    assert "on on_heartbeat {" in wf and "KV025" not in codes(diagnostics) and "KV024" not in codes(diagnostics)


def test_auto_archive_is_kept_for_the_host_and_said() -> None:
    wf, diagnostics = imported("        - type: queue_run", hours=24)
    assert "auto_archive_after_hours 24" in wf and "after 24h" not in wf
    (note,) = [d for d in diagnostics if d.code == "KV026"]
    assert "interlock never archives" in note.message and note.span.line == 9
    _, quiet = imported("        - type: queue_run", hours=0)
    assert "KV026" not in codes(quiet)


WF = """workflow w "W" {{
  step work "Work" {{
    start
    manual_move
{items}
  }}
  step done "Done" {{ manual_move  terminal }}
}}
"""


def exported(items: str, fmt: str = "template") -> tuple[dict[str, Any], list[Any]]:
    yaml_text, diagnostics = export(WF.format(items=items), fmt)
    return data(yaml_text), diagnostics


def test_an_every_timer_exports_its_reason_out_when_it_is_the_timers_label() -> None:
    out, _ = exported("    every 2h { queue_run(target: workspace.ceo_agent) }")
    assert out["steps"][0]["events"]["on_heartbeat"] == [
        {"type": "queue_run", "config": {"target": "workspace.ceo_agent", "reason": "every 2h", "cadence_seconds": 7200}}]


def test_timers_kandev_cannot_hold_are_dropped_with_the_reason() -> None:
    cases = {
        "    after 48h { queue_run(reason: \"late\") }": "kandev has no timer that runs actions once",
        "    every 1h { clear_decisions }": "times `queue_run` actions only",
        "    every 1h { queue_run }\n    on on_heartbeat { clear_decisions }": "an `on on_heartbeat` handler too",
        "    every 1h { queue_run }\n    every 2h { queue_run }": "several `every` timers",
        "    every 1h { queue_run(cadence_seconds: 60) }": "a `cadence_seconds` of its own",
    }
    for items, why in cases.items():
        out, diagnostics = exported(items)
        dropped = [d for d in diagnostics if d.code == "KV015"]
        assert dropped and all(why in d.message for d in dropped), (items, [d.message for d in diagnostics])
        beats = out["steps"][0].get("events", {}).get("on_heartbeat", [])
        assert all(b["type"] == "clear_decisions" for b in beats), items  # only the handler's own list, if any
    _, diagnostics = exported("    every 1h { queue_run }", "portable")
    assert any(d.code == "KV015" and "`on_heartbeat`" in d.message and "`every 1h`" in d.message for d in diagnostics)


def test_a_host_fired_heartbeat_with_cadence_data_exports_as_the_same_kandev_heartbeat() -> None:
    """The `.wf` form the import wrote before timers existed: its export is kandev's timed heartbeat, so importing
    that gives the `every` timer (the round trip of this one form is not the identity; docs/kandev.md says so)."""
    legacy, _ = exported("    on on_heartbeat { queue_run(cadence_seconds: 60) }")
    timer, _ = exported('    every 1m { queue_run(reason: "on_heartbeat") }')
    assert legacy == timer
