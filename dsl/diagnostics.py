"""Diagnostic records in, nothing out: the data model every pass reports problems with.

A `Diagnostic` is frozen data; passes return tuples of them instead of raising.
The code table (`CODES`) is the single registry of stable codes and kebab names;
`docs/diagnostics.md` documents each one and a test keeps the two in step.
"""

from __future__ import annotations

import re
from enum import StrEnum
from typing import NamedTuple

from pydantic import BaseModel, ConfigDict

from .construct import construct
from .source import Span

__all__ = ["Severity", "Label", "Diagnostic", "CodeInfo", "CODES", "make", "InternalCompilerError", "sort_key"]


class Severity(StrEnum):
    ERROR = "error"
    WARNING = "warning"
    NOTE = "note"


class Label(BaseModel):
    """A secondary span with a short message ("first declared here")."""

    model_config = ConfigDict(frozen=True, extra="forbid", defer_build=True)

    span: Span
    message: str


class Diagnostic(BaseModel):
    """One problem found in a source file, pointing at the exact region."""

    model_config = ConfigDict(frozen=True, extra="forbid", defer_build=True)

    code: str
    name: str
    severity: Severity
    span: Span
    message: str
    labels: tuple[Label, ...] = ()
    notes: tuple[str, ...] = ()
    help: str | None = None

    @property
    def file(self) -> str:
        return self.span.file

    @property
    def is_error(self) -> bool:
        return self.severity is Severity.ERROR


class CodeInfo(NamedTuple):
    code: str
    name: str
    severity: Severity
    summary: str


class InternalCompilerError(Exception):
    """A fault in interlock itself (never a problem with the user's file)."""


_E, _W = Severity.ERROR, Severity.WARNING

# The stable registry.  Never renumber; retire a code by leaving it here unused.
_TABLE: tuple[CodeInfo, ...] = (
    # -- input and syntax -------------------------------------------------------
    CodeInfo("IL001", "syntax-error", _E, "the text does not follow the grammar"),
    CodeInfo("IL002", "invalid-token", _E, "a character or token the language does not have"),
    CodeInfo("IL003", "nesting-too-deep", _E, "brackets or expressions nested past the limit"),
    CodeInfo("IL004", "file-too-large", _E, "the file exceeds the size limit"),
    CodeInfo("IL005", "not-text", _E, "the file is binary or not UTF-8"),
    CodeInfo("IL006", "unknown-module", _E, "`use NAME` names no shipped prelude and no sibling file"),
    CodeInfo("IL007", "invalid-escape", _E, "a string contains an escape the language does not have"),
    CodeInfo("IL008", "file-unreadable", _E, "the file cannot be read"),
    CodeInfo("IL009", "too-many-items", _E, "more tokens, declarations, steps, actions or list entries than the "
                                            "limit, or an over-long string or name"),
    CodeInfo("IL010", "unstorable-string", _E, "a string holds a NUL character or a lone surrogate, which no store "
                                               "can keep"),
    CodeInfo("IL011", "unsafe-module", _E, "`use NAME` leads outside the using file's folder, or to something that "
                                           "is not a regular file"),
    CodeInfo("IL012", "use-cycle", _E, "`use` lines that lead back to a file already being loaded"),
    CodeInfo("IL013", "misplaced-guard", _E, "`when quorum(…)` before its transition, after `requires_approval`, "
                                             "or twice"),
    CodeInfo("IL014", "misplaced-entry-block", _E, "an `entry { … }` block inside a workflow or step"),
    CodeInfo("IL015", "missing-comma", _E, "two items of a list (arguments, parameters, values) without a `,`"),
    CodeInfo("IL016", "block-string-indent", _E, "a line of a `\"\"\"` block string indented less than its "
                                                 "closing `\"\"\"`, or the closing `\"\"\"` not on a line of its own"),
    # -- names ------------------------------------------------------------------
    CodeInfo("IL101", "unknown-action-kind", _E, "an action names no declared kind"),
    CodeInfo("IL102", "unknown-parameter", _E, "a named argument the kind does not declare"),
    CodeInfo("IL103", "unknown-step", _E, "a step reference names no step of the workflow"),
    CodeInfo("IL104", "unknown-role", _E, "a role argument or quorum role that is not declared"),
    CodeInfo("IL105", "unknown-threshold", _E, "a quorum threshold that does not exist"),
    CodeInfo("IL106", "unknown-record-field", _E, "a field path names no field of the record"),
    CodeInfo("IL107", "unknown-trigger", _E, "a handler, `on` clause or dispatch names no declared trigger"),
    CodeInfo("IL108", "unknown-record", _E, "a record, loader or event type that is not declared"),
    CodeInfo("IL109", "unknown-type", _E, "a parameter or field type that does not exist"),
    CodeInfo("IL110", "duplicate-declaration", _E, "a trigger, kind, record, role or workflow declared twice"),
    CodeInfo("IL111", "unknown-stage", _E, "`stage` names no stage (work, review, approval, custom)"),
    CodeInfo("IL112", "unknown-name", _E, "an expression names something that is not in scope"),
    # -- arguments and types ----------------------------------------------------
    CodeInfo("IL201", "missing-required-parameter", _E, "a required parameter has no argument"),
    CodeInfo("IL202", "argument-type-mismatch", _E, "an argument's value does not fit the parameter type"),
    CodeInfo("IL203", "duplicate-argument", _E, "a parameter is given twice"),
    CodeInfo("IL204", "too-many-arguments", _E, "more positional arguments than parameters"),
    CodeInfo("IL205", "expression-type-error", _E, "an operator applied to values of the wrong type"),
    CodeInfo("IL206", "bad-operation-placeholder", _E, "an operation placeholder that is not a str or int path"),
    CodeInfo("IL207", "use-before-load", _E, "a loaded name used before its `load` line"),
    CodeInfo("IL208", "invalid-threshold-count", _E, "`n_approve(N)` with N < 1"),
    CodeInfo("IL209", "invalid-default", _E, "a parameter default that does not fit its type"),
    CodeInfo("IL210", "duplicate-map-key", _E, "a map literal gives one key twice"),
    # -- structure --------------------------------------------------------------
    CodeInfo("IL301", "kind-not-allowed-on-trigger", _E, "the kind may not be declared on that trigger"),
    CodeInfo("IL302", "duplicate-step", _E, "two steps of one workflow share an id"),
    CodeInfo("IL303", "duplicate-position", _E, "two steps of one workflow share a position"),
    CodeInfo("IL304", "start-step-count", _E, "a workflow without exactly one start step"),
    CodeInfo("IL305", "pull-from-cycle", _E, "`pull_from` links that form a cycle"),
    CodeInfo("IL306", "entry-kind-unplaced", _E, "an entry-capable kind in neither entry list"),
    CodeInfo("IL307", "entry-kind-in-both-lists", _E, "an entry-capable kind in both entry lists"),
    CodeInfo("IL308", "guard-on-non-transition", _E, "`when` or `requires_approval` on a non-transition action"),
    CodeInfo("IL309", "duplicate-dispatch", _E, "two `dispatch` blocks for one trigger"),
    CodeInfo("IL310", "payload-mismatch", _E, "a dispatch payload misses or adds a trigger parameter"),
    CodeInfo("IL311", "guard-message-missing", _E, "a recording guard without a message"),
    CodeInfo("IL312", "duplicate-guard-message", _E, "two recording guards with the same message"),
    CodeInfo("IL313", "transition-on-entry", _E, "a transition kind declared on, or listed for, the entry trigger"),
    CodeInfo("IL314", "duplicate-step-attribute", _E, "a step attribute given twice"),
    CodeInfo("IL315", "duplicate-handler", _E, "two handlers for one trigger in one step"),
    CodeInfo("IL316", "entry-trigger-count", _E, "not exactly one trigger is marked `entry`"),
    CodeInfo("IL317", "entry-list-not-a-kind", _E, "an entry list names something that cannot be declared on entry"),
    CodeInfo("IL318", "dispatch-without-event", _E, "a dispatch block with no (or two) `event` lines"),
    CodeInfo("IL319", "duplicate-guard-name", _E, "two guards of one dispatch block share a name"),
    CodeInfo("IL320", "silent-guard-with-message", _E, "a `silent` guard carries a message that is never recorded"),
    CodeInfo("IL321", "duplicate-load", _E, "a name loaded twice in one dispatch block"),
    CodeInfo("IL323", "invalid-step-setting", _E, "a step or workflow setting out of range (a negative number) or of the wrong shape (an `agent_profile`)"),
    CodeInfo("IL324", "empty-workflow", _E, "a workflow with no steps"),
    CodeInfo("IL325", "reserved-field-name", _E, "a record field name starting with `_` (reserved for the runtime)"),
    CodeInfo("IL326", "continue-on-failure-misplaced", _E, "`continue_on_failure` on a transition, or on an entry "
                                                           "kind the host runs inline: there is no failure the "
                                                           "runtime could continue from"),
    CodeInfo("IL327", "argument-out-of-range", _E, "an argument outside the range its kind accepts (`run_script`: "
                                                   "an empty `command`, `timeout_seconds` outside 1..86400; a "
                                                   "transition's `options` over 64 KiB as JSON)"),
    CodeInfo("IL328", "invalid-duration", _E, "a duration that is not an integer and a unit (`s`, `m`, `h`, `d`), "
                                              "or outside 1s to 365d"),
    CodeInfo("IL329", "duplicate-timer", _E, "two `after` (or two `every`) timers of one duration on one step"),
    CodeInfo("IL330", "retry-misplaced", _E, "`retry` on a session or transition kind: only task kinds are retried"),
    CodeInfo("IL331", "invalid-retry-policy", _E, "`retry N` with N outside 1..100, or a backoff `D..MAX` with MAX "
                                                  "below D"),
    # -- warnings ---------------------------------------------------------------
    CodeInfo("IL501", "unreachable-transition", _W, "a transition after an unguarded transition never fires"),
    CodeInfo("IL502", "move-past-end", _W, "`move_to_next` on the last step or `move_to_previous` on the first"),
    CodeInfo("IL503", "self-transition", _W, "a transition to its own step does nothing"),
    CodeInfo("IL504", "unreachable-step", _W, "a step no path reaches from the start step"),
    CodeInfo("IL505", "shadowed-guard", _W, "a guard that never matches because an earlier guard always does"),
    CodeInfo("IL506", "restart-loop", _W, "`auto_start_agent` under `on_agent_error` restarts the failed agent forever"),
    CodeInfo("IL507", "approval-dead-end", _W, "a `requires_approval` move to a step without `manual_move`: nobody "
                                               "can make it"),
    CodeInfo("IL508", "no-way-to-finish", _W, "a non-terminal step from which no terminal step can be reached"),
    CodeInfo("IL509", "workflow-never-finishes", _W, "a workflow whose start step reaches no terminal step"),
    CodeInfo("IL510", "replay-loop", _W, "a cycle of transitions needing no person and no quorum through steps "
                                         "that start the agent on entry"),
    CodeInfo("IL511", "prompt-never-sent", _W, "a step with a `prompt` whose entry never starts the agent"),
    CodeInfo("IL512", "unused-suppression", _W, "an `# interlock: ignore[…]` comment that suppresses nothing"),
    CodeInfo("IL513", "no-workflow", _W, "the file declares no workflow, so its plan has nothing to run"),
    CodeInfo("IL514", "timer-on-terminal-step", _W, "an `after` or `every` timer on a `terminal` step, where a task "
                                                    "stays done"),
)

CODES: dict[str, CodeInfo] = {info.code: info for info in _TABLE}
_BY_NAME: dict[str, CodeInfo] = {info.name: info for info in _TABLE}


def make(
    name: str,
    span: Span,
    message: str,
    *,
    labels: tuple[Label, ...] = (),
    notes: tuple[str, ...] = (),
    help: str | None = None,
) -> Diagnostic:
    """Build a diagnostic from its kebab name; the code and severity come from the registry."""
    info = _BY_NAME[name]
    if not message.isascii() or (help is not None and not help.isascii()) or notes:
        # A message quoting the user's text (an operation placeholder, a map key) could carry
        # a NUL or a lone surrogate, which no terminal, JSON or SARIF writer can print.
        message = printable(message)
        help = None if help is None else printable(help)
        notes = tuple(printable(n) for n in notes)
    return construct(Diagnostic, {"code": info.code, "name": info.name, "severity": info.severity, "span": span,
                                  "message": message, "labels": labels, "notes": notes, "help": help})


_UNPRINTABLE = re.compile(r"[\x00\ud800-\udfff]")


def printable(text: str) -> str:
    """`text` with NUL characters and lone surrogates written as `\\uXXXX` escapes."""
    return _UNPRINTABLE.sub(lambda m: f"\\u{ord(m.group()):04x}", text)


def label(span: Span, message: str) -> Label:
    return construct(Label, {"span": span, "message": message})


def sort_key(d: Diagnostic) -> tuple[str, int, int, str]:
    return (d.span.file, d.span.line, d.span.col, d.code)
