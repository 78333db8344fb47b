"""A schema-valid `Plan` whose references resolve in, every structural rule of the compiler it breaks out: what
makes a plan file input to be checked, not trusted (a hand-edited plan given a fresh digest loads otherwise).

Each rule is stated once, here: `load_plan` refuses a plan that breaks one, and the compiler's lowering runs the
same `structure_problems` on every plan it builds (a plan it built that broke one would be a compiler fault).
Each message names the workflow, step, kind or trigger, and ends with the name of the compiler's diagnostic for
the same rule in the source (`entry-kind-in-both-lists`, docs/diagnostics.md), so the two can be matched.
The rules: unique names (triggers, kinds, roles, records, dispatch sequences); one entry trigger, the policy's;
no transition kind declared on or listed for it; every entry-capable kind in exactly one entry list, and no
other kind in one; kinds declared on known triggers; a workflow has steps, in position order with distinct
positions, exactly one start step (its `start_step`), settings of 0 or more, no `pull_from` cycle and an
`agent_profile` that is an id or names an agent; an action's kind may be declared on its handler's trigger,
transitions never on the entry trigger, guards and approval on transitions only, `n_approve` with a count of
at least 1 and no other threshold with one, positions 0, 1, 2, … in order; a dispatch sequence per trigger at
most, its event a record, its guard names distinct, a message exactly on the recording guards, messages distinct,
its payload exactly its trigger's parameters; no record field starting with `_`; a step's timers (`after`/`every`,
RUNTIME §7) of 1 s to 365 days, labelled by their duration, never two of one kind with one duration, their actions
kinds allowed on a generic trigger, positioned and guarded as a handler's, a destination only on a transition; a
retry policy only on a task kind, of 1 to 100 attempts and a backoff of 1 s to 365 days that never shrinks.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable
from typing import TYPE_CHECKING

from .durations import MAX_SECONDS, MIN_SECONDS, label_seconds
from .vocabulary import GENERIC_TRIGGERS

if TYPE_CHECKING:  # annotations only: `check` reads RETRY_ATTEMPTS without loading the plan models
    from .plan_model import AgentProfile, Plan, PlanAction, PlanKind, PlanSequence, PlanStep, PlanWorkflow

RETRY_ATTEMPTS = (1, 100)
"""`retry N`: N tries after the first, 1 to 100 (LANGUAGE §6)."""

__all__ = ["structure_problems", "timer_allows", "RETRY_ATTEMPTS"]


def structure_problems(plan: Plan) -> list[str]:
    """Every structural rule of the compiler that `plan` breaks, as messages (empty: none).  `plan`'s references
    must resolve (`plan.reference_problems` is empty)."""
    problems: list[str] = []
    kinds = {k.name: k for k in plan.kinds}
    entry = plan.entry_policy.trigger
    _names(plan, problems)
    _entry(plan, kinds, problems)
    messages: Counter[str] = Counter()
    for seq in plan.sequences:
        _sequence(plan, seq, messages, problems)
    problems.extend(f"guard message {m!r} is used {n} times in dispatch sequences (duplicate-guard-message)"
                    for m, n in sorted(messages.items()) if n > 1)
    for record in plan.records:
        problems.extend(f"record `{record.name}`: field `{name}` starts with `_`, which the runtime reserves "
                        "(reserved-field-name)" for name in record.fields if name.startswith("_"))
    for wf in plan.workflows:
        _workflow(wf, problems)
        for step in wf.steps:
            where = f"workflow `{wf.id}`, step `{step.id}`"
            for trigger, actions in step.handlers.items():
                _handler(f"{where}, `{trigger}`", trigger, entry, actions, kinds, problems)
            _timers(where, step, kinds, problems)
    return problems


def timer_allows(kind: PlanKind) -> bool:
    """Whether `kind` may be used in an `after`/`every` handler: it may be declared on a generic trigger."""
    return any(t in GENERIC_TRIGGERS for t in kind.triggers)


def _twice(names: Iterable[str]) -> list[str]:
    counts = Counter(names)
    return sorted(n for n, c in counts.items() if c > 1)


def _names(plan: Plan, problems: list[str]) -> None:
    for what, names in (("trigger", (t.name for t in plan.triggers)), ("kind", (k.name for k in plan.kinds)),
                        ("role", plan.roles), ("record", (r.name for r in plan.records)),
                        ("dispatch sequence", (s.name for s in plan.sequences))):
        problems.extend(f"{what} `{name}` is declared twice (duplicate-declaration)" for name in _twice(names))
    for trigger in _twice(s.trigger for s in plan.sequences):
        problems.append(f"trigger `{trigger}` has more than one dispatch sequence (duplicate-dispatch)")


def _entry(plan: Plan, kinds: dict[str, PlanKind], problems: list[str]) -> None:
    policy = plan.entry_policy
    entry = policy.trigger
    marked = [t.name for t in plan.triggers if t.entry]
    if marked != [entry]:
        problems.append(f"the triggers marked entry are {', '.join(f'`{t}`' for t in marked) or 'none'}; exactly "
                        f"one, the entry policy's `{entry}`, must be (entry-trigger-count)")
    known = {t.name for t in plan.triggers}
    for kind in plan.kinds:
        for trigger in kind.triggers:
            if trigger not in known:
                problems.append(f"kind `{kind.name}` is declared on unknown trigger `{trigger}` (unknown-trigger)")
        if kind.action_class == "transition" and entry in kind.triggers:
            problems.append(f"transition `{kind.name}` is declared on the entry trigger `{entry}` "
                            "(transition-on-entry)")
        _retry(kind, problems)
    for mode, listed in (("exclude", policy.exclude), ("dispatch", policy.dispatch)):
        for name in _twice(listed):
            problems.append(f"kind `{name}` is listed twice under entry `{mode}`")
        for name in dict.fromkeys(listed):
            kind = kinds[name]
            if kind.action_class == "transition":
                problems.append(f"entry `{mode}` lists transition `{name}`; transitions never run on entry "
                                "(transition-on-entry)")
            elif entry not in kind.triggers:
                problems.append(f"entry `{mode}` lists `{name}`, which may not be declared on `{entry}` "
                                "(entry-list-not-a-kind)")
    both = set(policy.exclude) & set(policy.dispatch)
    for name in sorted(both):
        problems.append(f"kind `{name}` is in both entry lists, `exclude` and `dispatch` (entry-kind-in-both-lists)")
    for kind in plan.kinds:
        if kind.action_class != "transition" and entry in kind.triggers and \
                kind.name not in policy.exclude and kind.name not in policy.dispatch:
            problems.append(f"kind `{kind.name}` may be declared on `{entry}` but is in neither entry list "
                            "(entry-kind-unplaced)")


def _workflow(wf: PlanWorkflow, problems: list[str]) -> None:
    where = f"workflow `{wf.id}`"
    if not wf.steps:
        problems.append(f"{where} has no steps (empty-workflow)")
        return
    positions = [s.position for s in wf.steps]
    for pos in _twice(str(p) for p in positions):
        problems.append(f"{where}: steps {', '.join(f'`{s.id}`' for s in wf.steps if str(s.position) == pos)} "
                        f"share position {pos} (duplicate-position)")
    if positions != sorted(positions):
        problems.append(f"{where}: steps are not in position order ({', '.join(f'`{s.id}` {s.position}' for s in wf.steps)})")
    starts = [s.id for s in wf.steps if s.start]
    if starts != [wf.start_step]:
        problems.append(f"{where}: the steps marked start are {', '.join(f'`{s}`' for s in starts) or 'none'}; "
                        f"exactly one, its start step `{wf.start_step}`, must be (start-step-count)")
    _profile(where, wf.agent_profile, problems)
    pulls: dict[str, str] = {}
    for step in wf.steps:
        _step_settings(f"{where}, step `{step.id}`", step, problems)
        if step.pull_from is not None:
            pulls[step.id] = step.pull_from
    _pull_cycles(where, pulls, problems)


def _step_settings(where: str, step: PlanStep, problems: list[str]) -> None:
    for name in ("position", "wip_limit", "auto_archive_after_hours"):
        value = getattr(step, name)
        if value < 0:
            problems.append(f"{where}: `{name}` is {value}; it must be 0 or more (invalid-step-setting)")
    _profile(where, step.agent_profile, problems)


def _profile(where: str, profile: AgentProfile | None, problems: list[str]) -> None:
    if profile is None:
        return
    by_id = profile.id is not None
    if by_id == (profile.agent_name is not None) or (by_id and (profile.model or profile.mode)) or profile.id == "":
        problems.append(f"{where}: `agent_profile` must be a non-empty id or name an `agent_name` "
                        "(invalid-step-setting)")


def _pull_cycles(where: str, pulls: dict[str, str], problems: list[str]) -> None:
    done: set[str] = set()
    for start in sorted(pulls):
        path: list[str] = []
        current: str | None = start
        while current is not None and current not in done and current not in path:
            path.append(current)
            current = pulls.get(current)
        if current is not None and current in path:
            cycle = path[path.index(current):]
            problems.append(f"{where}: `pull_from` forms a cycle: {' -> '.join([*cycle, current])} (pull-from-cycle)")
        done.update(path)


def _retry(kind: PlanKind, problems: list[str]) -> None:
    retry = kind.retry
    if retry is None:
        return
    where = f"kind `{kind.name}`"
    if kind.action_class != "task":
        problems.append(f"{where} is a {kind.action_class} kind with a retry policy; only task kinds are retried "
                        "(retry-misplaced)")
    low, high = RETRY_ATTEMPTS
    if not low <= retry.attempts <= high:
        problems.append(f"{where}: `retry {retry.attempts}` is outside {low}..{high} (invalid-retry-policy)")
    for name, value in (("backoff", retry.backoff), ("max_backoff", retry.max_backoff)):
        if value is not None and not MIN_SECONDS <= value <= MAX_SECONDS:
            problems.append(f"{where}: `{name}` is {value} s, outside 1 s to 365 days (invalid-duration)")
    if retry.max_backoff is not None and retry.max_backoff < retry.backoff:
        problems.append(f"{where}: its backoff grows from {retry.backoff} s to {retry.max_backoff} s, less than "
                        "where it starts (invalid-retry-policy)")


def _timers(where: str, step: PlanStep, kinds: dict[str, PlanKind], problems: list[str]) -> None:
    seen: set[tuple[str, int]] = set()
    for timer in step.timers:
        here = f"{where}, `{timer.label}`"
        if not MIN_SECONDS <= timer.seconds <= MAX_SECONDS:
            problems.append(f"{here}: {timer.seconds} s is outside 1 s to 365 days (invalid-duration)")
        if label_seconds(timer.kind, timer.label) != timer.seconds:
            problems.append(f"{here}: the label does not state its {timer.kind} timer of {timer.seconds} s "
                            "(invalid-duration)")
        if (timer.kind, timer.seconds) in seen:
            problems.append(f"{here}: a second `{timer.kind}` timer of {timer.seconds} s on the step "
                            "(duplicate-timer)")
        seen.add((timer.kind, timer.seconds))
        _handler(here, None, "", timer.actions, kinds, problems)


def _handler(where: str, trigger: str | None, entry: str, actions: tuple[PlanAction, ...],
             kinds: dict[str, PlanKind], problems: list[str]) -> None:
    """The rules of one handler's actions (`trigger` None: a timer's, whose kinds are those of generic triggers)."""
    if [a.position for a in actions] != list(range(len(actions))):
        problems.append(f"{where}: action positions are {[a.position for a in actions]}, not 0, 1, 2, … in order")
    for action in actions:
        kind = kinds[action.kind]
        label = f"{where}: `{action.kind}`"
        if trigger is None:
            if not timer_allows(kind):
                problems.append(f"{label} may not be used in a timer: it may be declared on no generic trigger "
                                "(kind-not-allowed-on-trigger)")
        elif kind.action_class == "transition" and trigger == entry:
            problems.append(f"{label} is a transition on the entry trigger (transition-on-entry)")
        elif trigger not in kind.triggers:
            problems.append(f"{label} may not be declared on `{trigger}` (kind-not-allowed-on-trigger)")
        if kind.action_class != "transition" and action.target_step is not None:
            problems.append(f"{label} is not a transition but moves to `{action.target_step}`")
        if kind.action_class != "transition" and (action.guard is not None or action.requires_approval):
            problems.append(f"{label} is not a transition but has a guard or `requires_approval` "
                            "(guard-on-non-transition)")
        guard = action.guard
        if guard is not None and (guard.threshold == "n_approve") != (guard.count is not None):
            problems.append(f"{label}: threshold `{guard.threshold}` with count {guard.count} (unknown-threshold)")
        elif guard is not None and guard.count is not None and guard.count < 1:
            problems.append(f"{label}: `n_approve({guard.count})` can never be met (invalid-threshold-count)")


def _sequence(plan: Plan, seq: PlanSequence, messages: Counter[str], problems: list[str]) -> None:
    where = f"dispatch sequence `{seq.name}`"
    if seq.event not in {r.name for r in plan.records}:
        problems.append(f"{where}: event `{seq.event}` is not a record of the plan (unknown-record)")
    guards: list[str] = []
    for step in seq.steps:
        # one `load` case may handle both outcomes: the same guard, once
        outcomes = [(step.guard, step.level, step.message)] if step.step == "skip" else list(dict.fromkeys(
            (o.guard, o.level, o.message) for o in (step.on_missing, step.on_error) if o is not None))
        for guard, level, message in outcomes:
            guards.append(guard)
            if level == "silent" and message is not None:
                problems.append(f"{where}: guard `{guard}` is silent but has a message (silent-guard-with-message)")
            elif level != "silent" and message is None:
                problems.append(f"{where}: guard `{guard}` records at `{level}` without a message "
                                "(guard-message-missing)")
            elif message is not None and not seq.source.file.startswith("<prelude:"):
                messages[message] += 1  # unique among the user's sequences (the prelude's are its own)
    problems.extend(f"{where}: guard `{g}` is declared twice (duplicate-guard-name)" for g in _twice(guards))
    trigger = next((t for t in plan.triggers if t.name == seq.trigger), None)
    params = [p.name for p in trigger.params] if trigger is not None else []
    if sorted(seq.payload) != sorted(params):
        problems.append(f"{where}: payload sets {sorted(seq.payload)}, `{seq.trigger}` takes {sorted(params)} "
                        "(payload-mismatch)")
