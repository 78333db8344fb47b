"""Property tests of the comparison: a plan diffed with itself is empty, and after random edits with known ids the
diff names every edited id — and nothing outside what was edited.

Programs come from `valid_programs()` in tests/support/wf_strategies.py (imported by name, as
tests/property/test_dsl_properties.py does); the edits are made on the compiled plan, so each one's id is known.
"""

from __future__ import annotations

from collections.abc import Callable

from hypothesis import HealthCheck, assume, given, note, settings
from hypothesis import strategies as st
from support.wf_strategies import valid_programs

from interlock.compiler import compile_source
from interlock.diffing import Change, diff_plans
from interlock.dsl import SourceFile
from interlock.runtime.plan import Plan, PlanParam, PlanStep, PlanWorkflow, SourceRef

SETTINGS = settings(suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])  # examples: the profile

Scope = tuple[str, ...]  # ("workflow", wf) | ("step", wf, step) | ("handler", wf, step, trigger) | (vocab, name)


def compiled(text: str, name: str = "gen.wf") -> Plan | None:
    return compile_source(SourceFile(name, text)).plan


def names(change: Change, scope: Scope) -> bool:
    """Whether `change` names the edited id `scope`."""
    what = scope[0]
    if what == "workflow":
        return change.workflow == scope[1] and change.code.startswith("workflow.")
    if what == "step":
        return change.workflow == scope[1] and scope[2] in (change.step, change.new)
    if what == "handler":
        return (change.workflow, change.step, change.trigger) == scope[1:] or (
            change.code.startswith("handler.") and (change.workflow, change.step, change.subject) == scope[1:])
    return change.code.startswith(f"{what}.") and change.subject == scope[1]


def within(change: Change, scopes: list[Scope]) -> bool:
    """Whether `change` lies inside what was edited (a workflow's change inside an edited workflow)."""
    if change.workflow is not None:
        return any(s[0] in ("workflow", "step", "handler") and s[1] == change.workflow for s in scopes)
    return any(s[0] == change.code.partition(".")[0] and s[1] == change.subject for s in scopes)


# ---- edits with known ids ---------------------------------------------------------------------------------------

Edit = Callable[[Plan, st.DrawFn], tuple[Plan, Scope] | None]
_HERE = SourceRef(file="gen.wf", line=1, col=1)


def _replace_wf(plan: Plan, wf: PlanWorkflow) -> Plan:
    return plan.model_copy(update={"workflows": tuple(wf if w.id == wf.id else w for w in plan.workflows)})


def _replace_step(plan: Plan, wf: PlanWorkflow, step: PlanStep) -> Plan:
    steps = tuple(step if s.id == step.id else s for s in wf.steps)
    return _replace_wf(plan, wf.model_copy(update={"steps": steps}))


def _pick_step(plan: Plan, draw: st.DrawFn) -> tuple[PlanWorkflow, PlanStep] | None:
    pairs = [(w, s) for w in plan.workflows for s in w.steps]
    return draw(st.sampled_from(pairs)) if pairs else None


def remove_step(plan: Plan, draw: st.DrawFn) -> tuple[Plan, Scope] | None:
    picked = _pick_step(plan, draw)
    if picked is None:
        return None
    wf, step = picked
    steps = tuple(s for s in wf.steps if s.id != step.id)
    return _replace_wf(plan, wf.model_copy(update={"steps": steps})), ("step", wf.id, step.id)


def retitle_step(plan: Plan, draw: st.DrawFn) -> tuple[Plan, Scope] | None:
    picked = _pick_step(plan, draw)
    if picked is None:
        return None
    wf, step = picked
    return _replace_step(plan, wf, step.model_copy(update={"title": step.title + " (v2)"})), ("step", wf.id, step.id)


def toggle_manual_move(plan: Plan, draw: st.DrawFn) -> tuple[Plan, Scope] | None:
    picked = _pick_step(plan, draw)
    if picked is None:
        return None
    wf, step = picked
    return (_replace_step(plan, wf, step.model_copy(update={"manual_move": not step.manual_move})),
            ("step", wf.id, step.id))


def add_step(plan: Plan, draw: st.DrawFn) -> tuple[Plan, Scope] | None:
    if not plan.workflows:
        return None
    wf = draw(st.sampled_from(plan.workflows))
    sid = f"zz_added_{len(wf.steps)}"
    if any(s.id == sid for s in wf.steps):
        return None
    step = PlanStep(id=sid, title=f"Added {sid} (unique title)", position=len(wf.steps) + 100, source=_HERE)
    return _replace_wf(plan, wf.model_copy(update={"steps": (*wf.steps, step)})), ("step", wf.id, sid)


def drop_handler(plan: Plan, draw: st.DrawFn) -> tuple[Plan, Scope] | None:
    triples = [(w, s, t) for w in plan.workflows for s in w.steps for t in s.handlers]
    if not triples:
        return None
    wf, step, trigger = draw(st.sampled_from(triples))
    handlers = {t: a for t, a in step.handlers.items() if t != trigger}
    return (_replace_step(plan, wf, step.model_copy(update={"handlers": handlers})),
            ("handler", wf.id, step.id, trigger))


def drop_last_action(plan: Plan, draw: st.DrawFn) -> tuple[Plan, Scope] | None:
    triples = [(w, s, t) for w in plan.workflows for s in w.steps for t, acts in s.handlers.items() if acts]
    if not triples:
        return None
    wf, step, trigger = draw(st.sampled_from(triples))
    handlers = dict(step.handlers)
    handlers[trigger] = handlers[trigger][:-1]
    return (_replace_step(plan, wf, step.model_copy(update={"handlers": handlers})),
            ("handler", wf.id, step.id, trigger))


def remove_workflow(plan: Plan, draw: st.DrawFn) -> tuple[Plan, Scope] | None:
    if not plan.workflows:
        return None
    wf = draw(st.sampled_from(plan.workflows))
    return (plan.model_copy(update={"workflows": tuple(w for w in plan.workflows if w.id != wf.id)}),
            ("workflow", wf.id))


def retitle_workflow(plan: Plan, draw: st.DrawFn) -> tuple[Plan, Scope] | None:
    if not plan.workflows:
        return None
    wf = draw(st.sampled_from(plan.workflows))
    return _replace_wf(plan, wf.model_copy(update={"title": wf.title + "!"})), ("workflow", wf.id)


def remove_role(plan: Plan, draw: st.DrawFn) -> tuple[Plan, Scope] | None:
    if not plan.roles:
        return None
    role = draw(st.sampled_from(plan.roles))
    return plan.model_copy(update={"roles": tuple(r for r in plan.roles if r != role)}), ("role", role)


def add_role(plan: Plan, draw: st.DrawFn) -> tuple[Plan, Scope] | None:
    role = f"zz_role_{len(plan.roles)}"
    if role in plan.roles:
        return None
    return plan.model_copy(update={"roles": (*plan.roles, role)}), ("role", role)


def remove_kind(plan: Plan, draw: st.DrawFn) -> tuple[Plan, Scope] | None:
    kind = draw(st.sampled_from(plan.kinds))
    return plan.model_copy(update={"kinds": tuple(k for k in plan.kinds if k.name != kind.name)}), ("kind", kind.name)


def retype_trigger_param(plan: Plan, draw: st.DrawFn) -> tuple[Plan, Scope] | None:
    with_params = [t for t in plan.triggers if t.params]
    if not with_params:
        return None
    trigger = draw(st.sampled_from(with_params))
    first = trigger.params[0]
    retyped = PlanParam(name=first.name, type="int" if first.type != "int" else "str", required=first.required,
                        default=first.default)
    new = trigger.model_copy(update={"params": (retyped, *trigger.params[1:])})
    return (plan.model_copy(update={"triggers": tuple(new if t.name == trigger.name else t for t in plan.triggers)}),
            ("trigger", trigger.name))


EDITS: list[Edit] = [remove_step, retitle_step, toggle_manual_move, add_step, drop_handler, drop_last_action,
                     remove_workflow, retitle_workflow, remove_role, add_role, remove_kind, retype_trigger_param]


def _touches(scope: Scope, done: list[Scope]) -> bool:
    """Whether an edit of `scope` overlaps an earlier edit (same workflow for workflow-level edits)."""
    for s in done:
        if s[0] in ("workflow", "step", "handler") and scope[0] in ("workflow", "step", "handler"):
            if s[1] == scope[1] and ("workflow" in (s[0], scope[0]) or s[2] == scope[2]):
                return True
        elif s[:2] == scope[:2]:
            return True
    return False


class Case:
    """An old plan, the plan after the edits, and the edited ids (shown by those alone: plans print at length)."""

    def __init__(self, old: Plan, new: Plan, scopes: list[Scope]) -> None:
        self.old, self.new, self.scopes = old, new, scopes

    def __repr__(self) -> str:
        return f"Case(edits={self.scopes}, workflows={[(w.id, [s.id for s in w.steps]) for w in self.old.workflows]})"


@st.composite
def edited_plans(draw: st.DrawFn) -> Case:
    text = draw(valid_programs())
    plan = compiled(text)
    assume(plan is not None)
    assert plan is not None
    new = plan
    scopes: list[Scope] = []
    for edit in draw(st.lists(st.sampled_from(EDITS), min_size=1, max_size=4)):
        result = edit(new, draw)
        if result is None or _touches(result[1], scopes):
            continue  # each id edited once, so what each edit did stays visible
        new, scope = result
        scopes.append(scope)
    assume(scopes)
    return Case(plan, new, scopes)


@SETTINGS
@given(valid_programs())
def test_a_plan_diffed_with_itself_is_empty(text: str) -> None:
    plan = compiled(text)
    assume(plan is not None)
    assert plan is not None
    assert diff_plans(plan, plan) == []
    # the same source compiled under another file name is the same rules
    again = compiled(text, "elsewhere/other.wf")
    assert again is not None
    assert diff_plans(plan, again) == []


@SETTINGS
@given(edited_plans())
def test_the_diff_names_every_edited_id_and_nothing_else(case: Case) -> None:
    old, new, scopes = case.old, case.new, case.scopes
    found = diff_plans(old, new)
    note(f"edits: {scopes}")
    note("changes:\n" + "\n".join(f"  {c.code} {c.workflow}/{c.step}/{c.trigger}/{c.subject}" for c in found))
    for scope in scopes:
        assert any(names(c, scope) for c in found), f"no change names {scope}"
    for change in found:
        assert within(change, scopes), f"{change.code} ({change.message}) is outside the edits {scopes}"
    assert diff_plans(old, new) == found  # deterministic
