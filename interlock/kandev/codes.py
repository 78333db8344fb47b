"""The import/export diagnostics: `KVnnn` codes at YAML (or `.wf`) positions, the same `Diagnostic` records as
`interlock check` reports, so the same renderers print them (docs/kandev.md lists every code)."""

from __future__ import annotations

from typing import NamedTuple

from interlock.dsl.construct import construct
from interlock.dsl.diagnostics import Diagnostic, Severity
from interlock.dsl.source import Span

__all__ = ["KVCODES", "kv", "span_at", "strict"]


class _Info(NamedTuple):
    code: str
    severity: Severity


_E, _W, _N = Severity.ERROR, Severity.WARNING, Severity.NOTE

KVCODES: dict[str, _Info] = {
    "yaml-invalid": _Info("KV001", _E),          # not YAML, too large, too deep, an alias bomb, a duplicate key
    "format-invalid": _Info("KV002", _E),        # not a template nor a portable document; a wrong type
    "unknown-key": _Info("KV003", _E),           # a key kandev's strict loader refuses
    "unknown-action": _Info("KV004", _E),        # an action type kandev drops silently
    "unknown-config-key": _Info("KV005", _W),    # a config key kandev ignores silently
    "dangling-step": _Info("KV006", _E),         # a move_to_step target (step_id / step_position) that does not exist
    "malformed-guard": _Info("KV007", _E),       # a quorum guard kandev treats as no guard
    "ignored-on-turn-start": _Info("KV008", _W),  # requires_approval or a guard on on_turn_start: kandev ignores it
    "trigger-refused": _Info("KV009", _W),       # a type the template loader refuses under that trigger
    "role-declared": _Info("KV010", _N),         # a role used but not declared: the import declares it
    "id-mapped": _Info("KV011", _W),             # an id the language cannot hold, mapped deterministically
    "not-representable": _Info("KV012", _E),     # something interlock cannot carry (e.g. configure_session)
    "normalised": _Info("KV013", _N),            # a form written back differently (an `if:` guard, an explicit default)
    "export-refused": _Info("KV014", _E),        # export: the target loader would reject it
    "export-dropped": _Info("KV015", _W),        # export: the target format cannot carry it (an error with --strict)
    "wf-invalid": _Info("KV016", _E),            # export: the `.wf` does not check clean
    # where the imported `.wf` behaves differently from kandev (docs/kandev.md, "Where interlock differs")
    "manual-move-added": _Info("KV017", _N),     # no allow_manual_move: kandev never enforces it; the import writes manual_move
    "manual-move-enforced": _Info("KV018", _W),  # allow_manual_move: false: kandev never enforces it, interlock does
    "entry-continues": _Info("KV019", _W),       # a blocking run_script on on_enter: kandev stops the list, interlock goes on
    "generic-trigger-kept": _Info("KV020", _W),  # a generic trigger in a portable document: kandev drops it, interlock runs it
    "executor-timeout": _Info("KV021", _N),      # run_script's timeout: interlock's executor_timeout decides
    "wip-limit-not-held": _Info("KV022", _N),    # wip_limit: kandev queues arrivals over it, interlock's host must
    "guard-not-expressible": _Info("KV023", _E),  # export: a transition guard kandev's one quorum cannot hold
    "heartbeat-as-timer": _Info("KV024", _N),    # on_heartbeat with one cadence: written `every P { … }`
    "heartbeat-kept": _Info("KV025", _W),        # on_heartbeat with a cadence no timer holds: kept, the host fires it
    "auto-archive-for-host": _Info("KV026", _N),  # auto_archive_after_hours: kept for the host, never a timer
}


def span_at(file: str, line: int, col: int, end_line: int | None = None, end_col: int | None = None) -> Span:
    """A span from 1-based line and column (the end defaults to one character)."""
    return construct(Span, {"file": file, "line": line, "col": col, "end_line": end_line or line,
                            "end_col": end_col if end_col is not None else col + 1})


def kv(name: str, span: Span, message: str, *, help: str | None = None) -> Diagnostic:
    info = KVCODES[name]
    return construct(Diagnostic, {"code": info.code, "name": name, "severity": info.severity, "span": span,
                                  "message": message, "labels": (), "notes": (), "help": help})


def strict(diagnostics: list[Diagnostic], codes: tuple[str, ...]) -> list[Diagnostic]:
    """`--strict`: the diagnostics whose code is in `codes` (a drop: something not written) as errors."""
    return [d.model_copy(update={"severity": Severity.ERROR}) if d.code in codes else d for d in diagnostics]
