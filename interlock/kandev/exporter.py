"""A checked `.wf` out to kandev's workflow YAML (`interlock export`): what its loaders accept, refusals and drops
reported.

The export reads the compiled plan (resolved targets, positions) and the source (what was written: an explicit
`false`, an argument given at its default, a folded text), so that an imported template exports back to the same
data.  The template format takes the template loader's per-trigger allow-lists: anything that loader would reject
is an `export-refused` error.  What a format cannot carry — the portable format's seven generic triggers, stages,
ids, `hidden`, `wip_limit`, `pull_from`, the signal/cancel flags, session targets and agent tags; in both, a
`continue_on_failure` on anything but `run_script` and entry options kandev has no key for — is an
`export-dropped` warning (an error under `--strict`).  A step without `manual_move` is written with
`allow_manual_move: false`, so that importing the export gives the same plan (docs/kandev.md).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from interlock.compiler.guard_text import guard_text
from interlock.dsl import ir
from interlock.dsl.diagnostics import Diagnostic
from interlock.dsl.source import Span
from interlock.runtime import plan as P

from . import formats as F
from .codes import kv
from .timers import HEARTBEAT, heartbeat_reason, timer_export_problem

__all__ = ["Exported", "export_program", "dump_yaml"]


@dataclass
class Exported:
    data: dict[str, Any] | list[dict[str, Any]] | None = None  # a template per workflow, or one envelope
    diagnostics: list[Diagnostic] = field(default_factory=list)

    @property
    def errors(self) -> int:
        return sum(1 for d in self.diagnostics if d.is_error)


def export_program(module: ir.Module, plan: P.Plan, fmt: str) -> Exported:
    """The YAML data of the main module's workflows in `fmt` (`template` or `portable`)."""
    out = Exported()
    kinds = {k.name: k for k in plan.kinds}
    by_id = {w.id: w for w in plan.workflows}
    workflows = []
    for decl in module.decls:
        if isinstance(decl, ir.WorkflowDecl) and decl.name.name in by_id:
            workflows.append(_Workflow(decl, by_id[decl.name.name], kinds, fmt, out.diagnostics).data())
    if fmt == "portable":
        out.data = {"version": 1, "type": "kandev_workflow", "workflows": workflows}
    else:
        out.data = workflows[0] if len(workflows) == 1 else workflows
    return out


def _template_keeps(trigger: str, actions: Sequence[P.PlanAction]) -> str:
    """The help of a generic trigger the portable format drops: the template format keeps it, unless its loader
    refuses one of the handler's actions there too."""
    refused = sorted({a.kind for a in actions if F.TYPE_OF_KIND.get(a.kind) not in F.TEMPLATE_ALLOWED.get(trigger, ())})
    if not refused:
        return "use --yaml-format template to keep it"
    return (f"--yaml-format template cannot keep it either: kandev's template loader refuses "
            f"{', '.join(f'`{k}`' for k in refused)} under `{trigger}`")


def dump_yaml(data: Any) -> str:
    """YAML 1.2 text for `data`; multi-line strings as literal blocks when they read back exactly."""
    import io

    from ruamel.yaml import YAML
    from ruamel.yaml.scalarstring import DoubleQuotedScalarString, LiteralScalarString

    from interlock.dsl import blockstr

    def prepare(value: Any) -> Any:
        if isinstance(value, Folded) and blockstr.can_fold(value):
            return _folded_scalar(value)
        if isinstance(value, dict):
            return {k: prepare(v) for k, v in value.items()}
        if isinstance(value, list):
            return [prepare(v) for v in value]
        if isinstance(value, str) and any(c in value for c in "\x85\u2028\u2029"):
            return DoubleQuotedScalarString(value)  # YAML line breaks a plain or single-quoted scalar would fold
        if isinstance(value, str) and "\n" in value.rstrip("\n") and value.endswith("\n") \
                and not value.endswith("\n\n") and all(not line.endswith((" ", "\t")) for line in value.split("\n")) \
                and not value.startswith((" ", "\t", "\n")) and "\r" not in value:
            return LiteralScalarString(value)
        return value

    yaml = YAML(typ="rt", pure=True)
    yaml.width = 4096
    yaml.indent(mapping=2, sequence=4, offset=2)
    buf = io.StringIO()
    yaml.dump(prepare(data), buf)
    return buf.getvalue()


class _Workflow:
    def __init__(self, decl: ir.WorkflowDecl, wf: P.PlanWorkflow, kinds: dict[str, P.PlanKind], fmt: str,
                 diagnostics: list[Diagnostic]) -> None:
        self.decl, self.wf, self.kinds, self.fmt, self.diagnostics = decl, wf, kinds, fmt, diagnostics
        self.portable = fmt == "portable"
        self.position = {s.id: s.position for s in wf.steps}

    def report(self, code: str, node: ir.Node | Span, message: str, help: str | None = None) -> None:
        self.diagnostics.append(kv(code, node if isinstance(node, Span) else node.span, message, help=help))

    def data(self) -> dict[str, Any]:
        d, wf = self.decl, self.wf
        out: dict[str, Any] = {}
        if self.portable:
            self.report("export-dropped", d.name, f"the portable format has no workflow ids: `{wf.id}` is dropped "
                        "(kandev gives every imported workflow and step a fresh id)")
        else:
            out["id"] = wf.id
        out["name"] = wf.title
        written = {x.name: x for x in d.settings}
        if wf.description is not None:
            out["description"] = folded(wf.description, written.get("description"))
        if wf.hidden:
            if self.portable:
                self.report("export-dropped", d.name, "the portable format cannot carry `hidden`: dropped")
            else:
                out["hidden"] = True
        for s in d.settings:
            if s.name == "prompt" or (s.name == "agent_profile"):
                if not self.portable:
                    self.report("export-dropped", s, f"the template format has no workflow `{s.name}`: dropped",
                                help="use --yaml-format portable to keep it")
                elif s.name == "prompt" and wf.prompt is not None:
                    out["prompt"] = folded(wf.prompt, s)
                else:
                    profile = self.profile(s.value, wf.agent_profile, s)
                    if profile is not None:
                        out["agent_profile"] = profile
        decls = {s.name.name: s for s in d.steps}
        out["steps"] = [self.step(decls[s.id], s) for s in wf.steps]
        self.terminal(wf, decls)
        return out

    def terminal(self, wf: P.PlanWorkflow, decls: dict[str, ir.StepDecl]) -> None:
        derived = None
        for s in wf.steps:
            if s.title.strip().lower() in ("done", "complete", "completed", "approved"):
                derived = s.id
        for s in wf.steps:
            if s.terminal != (s.id == derived):
                what = "is `terminal`" if s.terminal else "is not `terminal`"
                self.report("export-dropped", decls[s.id].name, f"step `{s.id}` {what}, but kandev derives the "
                            "terminal step from names (the last one named Done, Complete, Completed or Approved)",
                            help="rename the step, or accept kandev's terminal step")

    def profile(self, value: ir.Node, profile: P.AgentProfile | None, where: ir.Node) -> dict[str, Any] | None:
        if profile is None:
            return None
        if profile.id is not None:
            self.report("export-dropped", where, "the portable format names agent profiles by "
                        "{agent_name, model, mode}, not by id: dropped")
            return None
        return {k: v for k, v in (("agent_name", profile.agent_name), ("model", profile.model),
                                  ("mode", profile.mode)) if v is not None}

    def step(self, decl: ir.StepDecl, s: P.PlanStep) -> dict[str, Any]:
        out: dict[str, Any] = {}
        if not self.portable:
            out["id"] = s.id
        out["name"] = s.title
        out["position"] = s.position
        settings: dict[str, ir.StepSetting] = {x.name: x for x in decl.settings}
        flags = {f.name: f for f in decl.flags}
        if "color" in settings:
            out["color"] = s.color
        if "stage" in settings:
            if self.portable:
                self.report("export-dropped", settings["stage"], "the portable format has no `stage_type`: dropped")
            else:
                out["stage_type"] = s.stage
        keys = F.PORTABLE_STEP_KEYS if self.portable else F.TEMPLATE_STEP_KEYS
        for key, flag in F.STEP_FLAGS.items():
            if flag in flags:
                if key in keys:
                    out[key] = flags[flag].value
                elif flags[flag].value:
                    self.report("export-dropped", flags[flag], f"the portable format has no `{key}`: dropped")
            elif flag == "manual_move":  # kandev reads a missing flag as allowed (never enforced); interlock refuses
                out[key] = False
        if "auto_archive_after_hours" in settings and (s.auto_archive_after_hours or not self.portable):
            out["auto_archive_after_hours"] = s.auto_archive_after_hours
        for name, key in (("wip_limit", "wip_limit"), ("pull_from", "pull_from_step_id")):
            if name in settings:
                if self.portable:
                    self.report("export-dropped", settings[name], f"the portable format has no `{key}`: dropped")
                else:
                    out[key] = getattr(s, name)
        if "agent_profile" in settings and s.agent_profile is not None:
            if self.portable:
                profile = self.profile(settings["agent_profile"].value, s.agent_profile, settings["agent_profile"])
                if profile is not None:
                    out["agent_profile"] = profile
            elif s.agent_profile.id is not None:
                out["agent_profile_id"] = s.agent_profile.id
            else:
                self.report("export-dropped", settings["agent_profile"], "the template format names an agent "
                            "profile by id (`agent_profile \"ID\"`): this profile map is dropped",
                            help="use --yaml-format portable to keep it")
        if "description" in settings:
            self.report("export-dropped", settings["description"], "kandev's steps have no description: dropped")
        self.host_metadata(settings, s, out)
        if s.prompt is not None:
            out["prompt"] = folded(s.prompt, settings.get("prompt"))
        events: dict[str, list[dict[str, Any]]] = {}
        for handler in decl.handlers:
            trigger = handler.trigger.name
            if self.portable and trigger not in F.PORTABLE_TRIGGERS:
                self.report("export-dropped", handler.trigger, f"the portable format cannot carry `{trigger}` "
                            "(kandev drops the generic triggers both ways, its issue #1109): dropped",
                            help=_template_keeps(trigger, s.handlers.get(trigger, ())))
                continue
            if trigger not in F.TRIGGERS:
                self.report("export-refused", handler.trigger, f"`{trigger}` is not a trigger of kandev")
                continue
            actions = [self.action(a, p, trigger) for a, p in zip(handler.actions, s.handlers.get(trigger, ()))]
            events[trigger] = [a for a in actions if a is not None]
        at = {h.trigger.name: (h.span.line, h.span.col) for h in decl.handlers}
        for timer, planned in zip(decl.timers, s.timers):
            beat = self.timer(decl, timer, planned)
            if beat is not None:
                events[HEARTBEAT] = beat
                at[HEARTBEAT] = (timer.span.line, timer.span.col)
        events = {k: events[k] for k in sorted(events, key=lambda k: at[k])}  # as the source orders them
        if events:
            out["events"] = events
        return out

    def timer(self, decl: ir.StepDecl, timer: ir.Timer, planned: P.PlanTimer) -> list[dict[str, Any]] | None:
        """An `every P` timer of `queue_run` actions as kandev's `on_heartbeat` with `cadence_seconds: P` (each
        action's `reason` written out unless it is kandev's default, the trigger's name); any other timer is
        dropped, and why is said (docs/kandev.md, "Timers")."""
        problem = timer_export_problem(timer, planned, decl)
        if problem is None and self.portable:
            problem = (f"the portable format cannot carry `on_heartbeat` (kandev drops the generic triggers both "
                       f"ways, its issue #1109): `{timer.written}` is dropped")
        if problem is not None:
            self.report("export-dropped", timer, problem, help="keep this workflow in interlock, or use "
                        "--yaml-format template for an `every` timer of `queue_run` actions")
            return None
        out = []
        for call, action in zip(timer.actions, planned.actions):
            config = {k: v for k, v in self.arguments(call, action, "queue_run").items()
                      if k not in ("reason", "cadence_seconds")}
            reason = heartbeat_reason(action)
            config = {**config, **({"reason": reason} if reason is not None else {})}
            payload = config.pop("payload", None)
            config.update({"payload": payload} if payload is not None else {})
            out.append({"type": "queue_run", "config": {**config, "cadence_seconds": planned.seconds}})
        return out

    def host_metadata(self, settings: Mapping[str, ir.StepSetting], s: P.PlanStep, out: dict[str, Any]) -> None:
        """`session_target` and `agent_tag` (ADR 0043): template keys; the portable format has neither."""
        for name, value in (("session_target", s.session_target), ("agent_tag", s.agent_tag)):
            if value is None:
                continue
            if self.portable:
                self.report("export-dropped", settings[name], f"the portable format has no `{name}`: dropped",
                            help="use --yaml-format template to keep it")
            elif isinstance(value, P.SessionTarget):
                out[name] = {"kind": "initial"} if value.kind == "initial" else {"kind": "step",
                                                                                  "step_id": value.step_id}
            else:
                out[name] = value

    def given(self, action: ir.ActionCall, kind: P.PlanKind) -> set[str]:
        """The parameters the source gives explicitly (positional ones by the kind's parameter order)."""
        names = [p.name for p in kind.params]
        out: set[str] = set()
        for i, arg in enumerate(action.args):
            if arg.name is not None:
                out.add(arg.name.name)
            elif i < len(names):
                out.add(names[i])
        return out

    def action(self, decl: ir.ActionCall, a: P.PlanAction, trigger: str) -> dict[str, Any] | None:
        kandev = F.TYPE_OF_KIND.get(a.kind)
        if kandev is None:
            self.report("export-refused", decl.name, f"kandev has no action `{a.kind}`: its loader would "
                        "reject the file", help="remove the action, or keep this workflow in interlock")
            return None
        if not self.portable and kandev not in F.TEMPLATE_ALLOWED[trigger]:
            self.report("export-refused", decl.name, f"kandev's template loader refuses `{kandev}` under "
                        f"`{trigger}`", help="allowed there: " + ", ".join(F.TEMPLATE_ALLOWED[trigger]))
            return None
        if a.continue_on_failure and a.kind != "run_script" and decl.continue_on_failure is not None:
            self.report("export-dropped", decl.continue_on_failure, f"kandev has a failure policy on `run_script` "
                        f"only: `continue_on_failure` on `{a.kind}` is dropped (kandev stops the list when it fails)")
        if a.action_class == "transition":
            if a.when is not None:  # anything but one quorum: kandev's `wait_for_quorum` cannot hold it
                assert decl.guard is not None
                self.report("guard-not-expressible", decl.guard,
                            f"kandev guards a transition with one `wait_for_quorum` at most: `{guard_text(a)}` "
                            "cannot be written (kandev would read any other guard as none and move the task)",
                            help="keep this workflow in interlock, or guard with a single `quorum(ROLE, THRESHOLD)`")
                return None
            config = self.move(decl, a)
        elif a.kind == "run_script":
            config = self.script(decl, a)
        else:
            config = self.arguments(decl, a, kandev)
        return {"type": kandev, "config": config} if config else {"type": kandev}

    def move(self, decl: ir.ActionCall, a: P.PlanAction) -> dict[str, Any]:
        config: dict[str, Any] = {}
        if a.kind == "move_to_step":
            target = a.target_step or ""
            if self.portable:
                config["step_position"] = self.position[target]
            else:
                config["step_id"] = target
        if a.guard is not None:
            th = a.guard.threshold if a.guard.count is None else f"{a.guard.threshold}:{a.guard.count}"
            config["wait_for_quorum"] = {"role": a.guard.role, "threshold": th}
        if a.requires_approval:
            config["requires_approval"] = True
        for key, value in (a.args.get("options") or {}).items():  # kandev's entry options on a move (ADR 0043)
            if (key, type(value)) in (("instructions", str), ("skip_step_prompt", bool)):
                config[key] = value
            else:
                self.report("export-dropped", decl.name, f"kandev's moves carry the entry options `instructions` "
                            f"(a string) and `skip_step_prompt` (a boolean) only: option `{key}` is dropped")
        return config

    def script(self, decl: ir.ActionCall, a: P.PlanAction) -> dict[str, Any]:
        """`run_script` (ADR 0042): the portable format writes the defaults out, as kandev's export does."""
        given = self.given(decl, self.kinds[a.kind])
        config: dict[str, Any] = {"command": a.args["command"]}
        if "timeout_seconds" in given or self.portable:
            config["timeout_seconds"] = a.args["timeout_seconds"]
        if a.continue_on_failure or self.portable:
            config["failure_policy"] = "continue" if a.continue_on_failure else "block"
        return config

    def arguments(self, decl: ir.ActionCall, a: P.PlanAction, kandev: str) -> dict[str, Any]:
        given = self.given(decl, self.kinds[a.kind])
        config: dict[str, Any] = {}
        mapping = {"set_session_mode": {"mode": "mode"}, "run_code_review": {"agent_profile": "agent_profile_id"},
                   "queue_run": {"target": "target", "task": "task_id", "reason": "reason", "payload": "payload",
                                 "cadence_seconds": "cadence_seconds"},
                   "queue_run_for_each_participant": {"role": "role", "reason": "reason", "payload": "payload"},
                   "ensure_seats": {"role": "role"}}.get(a.kind, {})
        for param in sorted(given):
            if param in mapping:
                config[mapping[param]] = a.args[param]
            else:
                self.report("export-dropped", decl.name, f"kandev's `{kandev}` has no setting for `{param}`: "
                            "dropped")
        if a.kind in ("queue_run_for_each_participant", "ensure_seats", "set_session_mode"):
            key = "mode" if a.kind == "set_session_mode" else "role"
            config[key] = a.args[key]
        order = list(mapping.values())
        return {k: config[k] for k in sorted(config, key=lambda k: order.index(k) if k in order else 99)}


class Folded(str):
    """A string written folded in the `.wf` (`>\"\"\"`): `dump_yaml` writes it folded (`>-`) too."""


def folded(text: str, setting: ir.StepSetting | ir.WorkflowSetting | None) -> str:
    """`text`, marked to be written folded when the `.wf` wrote it so."""
    return Folded(text) if setting is not None and setting.folded else text


def _folded_scalar(text: str) -> Any:
    """`text` as a folded (`>-`) YAML scalar, its lines broken where `fold` would break them."""
    from ruamel.yaml.scalarstring import FoldedScalarString

    from interlock.dsl import blockstr

    scalar = FoldedScalarString(text)
    lines = blockstr.fold(text, "", 80).split("\n")[1:-1]
    positions, at = [], 0
    for line in lines[:-1]:
        at += len(line)
        positions.append(at)  # the space after this line's last word
        at += 1
    scalar.fold_pos = positions
    return scalar
