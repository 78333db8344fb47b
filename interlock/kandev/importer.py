"""Seed-system YAML in, formatted `.wf` text out (`interlock import`), every silent drop of the seed reported.

Either format is taken: a document with `version`, `type` or `workflows` at the top is the portable envelope,
anything else a template.  Ids are kept as they are when the language can hold them; another id is mapped
deterministically (`id_` and the id with every other character as `_`) and reported.  Portable steps have no
ids: each gets its name, lower-cased, as an id.  Prompts and descriptions are kept byte for byte (a block string
when that reads back exactly, else a quoted string).  A diagnostic is an error when the seed would silently do
something other than what the file says (an unknown action type, a malformed guard, a dangling `move_to_step`);
the `.wf` is written anyway, without that part, so that it can be fixed there.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from interlock.dsl import blockstr
from interlock.dsl.diagnostics import Diagnostic
from interlock.dsl.printer import quote

from . import formats as F
from .diagnostics import kv, span_at
from .yamlread import YamlError, YNode, read_yaml

__all__ = ["Imported", "import_text", "combined", "PRELUDE_ROLES", "wf_ident"]

PRELUDE_ROLES = ("reviewer", "approver", "watcher", "collaborator", "runner")
_IDENT = re.compile(r"[A-Za-z_][A-Za-z0-9_-]*\Z")
_TERMINAL_NAMES = ("done", "complete", "completed", "approved")


@dataclass
class Imported:
    """The workflows read (id, `.wf` text), the format (`template` or `portable`) and the diagnostics."""

    kind: str = "template"
    workflows: list[tuple[str, str]] = field(default_factory=list)
    diagnostics: list[Diagnostic] = field(default_factory=list)

    @property
    def errors(self) -> int:
        return sum(1 for d in self.diagnostics if d.is_error)


def wf_ident(raw: str) -> str:
    """The deterministic `.wf` identifier for a seed id the language cannot hold as it is."""
    if _IDENT.match(raw):
        return raw
    return "id_" + re.sub(r"[^A-Za-z0-9_-]", "_", raw)


def _slug(name: str, prefix: str = "step") -> str:
    """A portable name as an id: lower-cased, runs of other characters as `-`; `PREFIX-` before a leading digit."""
    slug = re.sub(r"[^a-z0-9_]+", "-", name.strip().lower()).strip("-")
    return slug if slug and not slug[0].isdigit() else f"{prefix}-{slug}" if slug else prefix


def _text(value: str, indent: str) -> str:
    return blockstr.encode(value, indent) if "\n" in value and blockstr.can_encode(value) else quote(value)


def import_text(text: str, name: str) -> Imported:
    """Read `text` (the file `name`) as seed YAML; YAML errors come back as one `yaml-invalid` diagnostic."""
    out = Imported()
    try:
        root = read_yaml(text)
    except YamlError as exc:
        out.diagnostics.append(kv("yaml-invalid", span_at(name, exc.line, exc.col), exc.message))
        return out
    _Reader(name, out).document(root)
    out.workflows = [(wid, _formatted(text)) for wid, text in out.workflows]
    return out


def _formatted(text: str) -> str:
    from interlock.dsl.format import format_source

    result = format_source(text, "<import>")
    return result.text if result.ok else text


class _Reader:
    def __init__(self, name: str, out: Imported) -> None:
        self.name = name
        self.out = out

    # ---- diagnostics and typed reads -----------------------------------------------------------
    def at(self, node: YNode) -> Any:
        return span_at(self.name, node.line, node.col)

    def report(self, code: str, node: YNode, message: str, help: str | None = None) -> None:
        self.out.diagnostics.append(kv(code, self.at(node), message, help=help))

    def keys(self, node: YNode, allowed: tuple[str, ...], what: str) -> None:
        for k in node.key_nodes():
            if k.text not in allowed:
                self.report("unknown-key", k, f"{what} has no key `{k.text}`: the seed's loader refuses the file",
                            help="its keys are " + ", ".join(f"`{a}`" for a in allowed))

    def mapping(self, node: YNode | None, what: str) -> YNode | None:
        if node is None or (node.kind == "scalar" and node.type == "null"):
            return None
        if node.kind != "map":
            self.report("format-invalid", node, f"{what} must be a mapping")
            return None
        return node

    def seq(self, node: YNode | None, what: str) -> list[YNode]:
        if node is None or (node.kind == "scalar" and node.type == "null"):
            return []
        if node.kind != "seq":
            self.report("format-invalid", node, f"{what} must be a list")
            return []
        return node.items

    def string(self, node: YNode | None, what: str) -> str | None:
        if node is None or (node.kind == "scalar" and node.type == "null"):
            return None
        if node.kind != "scalar":
            self.report("format-invalid", node, f"{what} must be a string")
            return None
        return node.text

    def boolean(self, node: YNode | None, what: str) -> bool | None:
        if node is None:
            return None
        if node.kind != "scalar" or node.type != "bool":
            self.report("format-invalid", node, f"{what} must be `true` or `false`")
            return None
        return bool(node.data())

    def integer(self, node: YNode | None, what: str, minimum: int = 0) -> int | None:
        if node is None:
            return None
        if node.kind != "scalar" or node.type != "int":
            self.report("format-invalid", node, f"{what} must be an integer")
            return None
        value = int(node.data())
        if value < minimum:
            self.report("format-invalid", node, f"{what} must be {minimum} or more")
            return None
        return value

    # ---- document -------------------------------------------------------------------------------
    def document(self, root: YNode) -> None:
        if root.kind != "map":
            self.report("format-invalid", root, "a seed workflow document is a mapping (a template, or the portable "
                        "envelope `version`/`type`/`workflows`)")
            return
        if any(root.get(k) is not None for k in F.PORTABLE_ENVELOPE_KEYS):
            self.out.kind = "portable"
            self.envelope(root)
        else:
            self.workflow(root, portable=False)

    def envelope(self, root: YNode) -> None:
        self.keys(root, F.PORTABLE_ENVELOPE_KEYS, "the portable envelope")
        version, kind = root.get("version"), root.get("type")
        if version is None or version.type != "int" or version.data() != 1:
            self.report("format-invalid", version or root, "the portable envelope needs `version: 1`")
        if kind is None or kind.text != "kandev_workflow":
            self.report("format-invalid", kind or root, "the portable envelope needs `type: kandev_workflow`")
        workflows = self.seq(root.get("workflows"), "`workflows`")
        if not workflows:
            self.report("format-invalid", root.get("workflows") or root, "`workflows` must be a non-empty list")
        ids: set[str] = set()
        for wf in workflows:
            self.workflow(wf, portable=True, taken=ids)

    # ---- one workflow -----------------------------------------------------------------------------
    def workflow(self, node: YNode, *, portable: bool, taken: set[str] | None = None) -> None:
        if self.mapping(node, "a workflow") is None:
            return
        self.keys(node, F.PORTABLE_WORKFLOW_KEYS if portable else F.TEMPLATE_WORKFLOW_KEYS, "a workflow")
        title = self.string(node.get("name"), "`name`")
        if portable:
            if not title:
                self.report("format-invalid", node, "a portable workflow needs a `name`")
                title = "workflow"
            wid = _slug(title, "workflow")
            base, n = wid, 2
            while taken is not None and wid in taken:
                wid, n = f"{base}-{n}", n + 1
            if taken is not None:
                taken.add(wid)
        else:
            raw = self.string(node.get("id"), "`id`")
            if not raw:
                self.report("format-invalid", node, "a template needs an `id`")
                raw = "workflow"
            wid = self.ident(raw, node.get("id") or node, "workflow id")
        lines: list[str] = []
        head = f"workflow {wid}" + ("" if title is None else f" {quote(title)}") + " {"
        hidden = self.boolean(node.get("hidden"), "`hidden`")
        if hidden:
            lines.append("  hidden")
        elif hidden is False:
            self.report("normalised", node.get("hidden") or node, "`hidden: false` is the default; export leaves "
                        "it out")
        description = self.string(node.get("description"), "`description`")
        if description is not None:
            lines.append(f"  description {_text(description, '    ')}")
        prompt = self.string(node.get("prompt"), "`prompt`")
        if prompt is not None:
            lines.append(f"  prompt {_text(prompt, '    ')}")
        profile = self.profile(node.get("agent_profile"))
        if profile is not None:
            lines.append(f"  agent_profile {profile}")
        steps = self.seq(node.get("steps"), "`steps`")
        self.roles: set[str] = set()
        self.role_nodes: dict[str, YNode] = {}
        ids, positions = self.step_ids(steps, portable)
        self.step_index = ids
        self.positions = positions
        terminal = self.terminal(steps)
        for i, step in enumerate(steps):
            if step.kind == "map":
                lines.append("")
                lines += self.step(step, ids[i], portable, i == terminal)
        roles = sorted(r for r in self.roles if r not in PRELUDE_ROLES)
        for r in roles:
            self.report("role-declared", self.role_nodes[r], f"role `{r}` is used but not declared: the import "
                        f"declares it (`role {r}`)")
        text = "".join(f"role {r}\n" for r in roles) + ("\n" if roles else "")
        text += head + "\n" + "\n".join(lines) + "\n}\n"
        self.out.workflows.append((wid, text))

    def ident(self, raw: str, node: YNode, what: str) -> str:
        mapped = wf_ident(raw)
        if mapped != raw:
            self.report("id-mapped", node, f"{what} `{raw}` is not an identifier of the language: written as "
                        f"`{mapped}` (export writes `{mapped}`)",
                        help="identifiers match [A-Za-z_][A-Za-z0-9_-]*")
        return mapped

    def step_ids(self, steps: list[YNode], portable: bool) -> tuple[list[str], dict[int, str]]:
        ids: list[str] = []
        positions: dict[int, str] = {}
        seen: set[str] = set()
        for i, step in enumerate(steps):
            if step.kind != "map":
                self.report("format-invalid", step, "a step must be a mapping")
                ids.append(f"step-{i}")
                continue
            if portable:
                base = _slug(self.string(step.get("name"), "`name`") or f"step-{i}")
            else:
                raw = self.string(step.get("id"), "`id`")
                if not raw:
                    self.report("format-invalid", step, "a template step needs an `id`")
                    raw = f"step-{i}"
                base = self.ident(raw, step.get("id") or step, "step id")
            sid, n = base, 2
            while sid in seen:
                sid, n = f"{base}-{n}", n + 1
            if sid != base and not portable:
                self.report("format-invalid", step.get("id") or step, f"step id `{base}` is given twice: this one "
                            f"is written as `{sid}`")
            seen.add(sid)
            ids.append(sid)
            pos = step.get("position")
            if pos is not None and pos.type == "int":
                positions.setdefault(int(pos.data()), sid)
        return ids, positions

    def terminal(self, steps: list[YNode]) -> int:
        """The step the seed derives as terminal: the last whose trimmed, lower-cased name is done & co."""
        found, best = -1, (-1, -1)
        for i, step in enumerate(steps):
            name = step.get("name") if step.kind == "map" else None
            if name is not None and name.kind == "scalar" and name.text.strip().lower() in _TERMINAL_NAMES:
                pos = step.get("position")
                key = (int(pos.data()) if pos is not None and pos.type == "int" else i, i)  # the last on the board
                if key > best:
                    found, best = i, key
        return found

    def profile(self, node: YNode | None) -> str | None:
        if self.mapping(node, "`agent_profile`") is None or node is None:
            return None
        self.keys(node, F.PROFILE_KEYS, "`agent_profile`")
        parts = []
        for key in F.PROFILE_KEYS:
            value = self.string(node.get(key), f"`agent_profile.{key}`")
            if value is not None:
                parts.append(f"{key}: {quote(value)}")
        if node.get("agent_name") is None:
            self.report("format-invalid", node, "`agent_profile` needs an `agent_name`")
        return "{" + ", ".join(parts) + "}"

    # ---- one step ---------------------------------------------------------------------------------
    def step(self, node: YNode, sid: str, portable: bool, terminal: bool) -> list[str]:
        self.keys(node, F.PORTABLE_STEP_KEYS if portable else F.TEMPLATE_STEP_KEYS, "a step")
        title = self.string(node.get("name"), "`name`")
        if title is None:
            self.report("format-invalid", node, "a step needs a `name`")
        body: list[str] = []
        pos = self.integer(node.get("position"), "`position`")
        if pos is not None:
            body.append(f"position {pos}")
        elif portable:
            self.report("format-invalid", node, "a portable step needs a `position`")
        for key, flag in F.STEP_FLAGS.items():
            value = self.boolean(node.get(key), f"`{key}`")
            if value is not None:
                body.append(flag if value else f"{flag} false")
        if terminal:
            body.append("terminal")
        stage = self.string(node.get("stage_type"), "`stage_type`")
        if stage:
            if stage in F.STAGES:
                body.append(f"stage {stage}")
            else:
                self.report("format-invalid", node.get("stage_type") or node, f"`stage_type` `{stage}` is not one of "
                            + ", ".join(F.STAGES) + ": the seed's loader refuses it")
        elif stage == "":
            self.report("normalised", node.get("stage_type") or node, "an empty `stage_type` is the default "
                        "(custom); export leaves it out")
        color = self.string(node.get("color"), "`color`")
        if color is not None:
            body.append(f"color {quote(color)}")
        hours = self.integer(node.get("auto_archive_after_hours"), "`auto_archive_after_hours`")
        if hours is not None:
            body.append(f"auto_archive_after_hours {hours}")
        wip = self.integer(node.get("wip_limit"), "`wip_limit`")
        if wip is not None:
            body.append(f"wip_limit {wip}")
        pull = self.string(node.get("pull_from_step_id"), "`pull_from_step_id`")
        if pull:
            body.append(f"pull_from {self.target(pull, node.get('pull_from_step_id') or node)}")
        profile_id = self.string(node.get("agent_profile_id"), "`agent_profile_id`")
        if profile_id:
            body.append(f"agent_profile {quote(profile_id)}")
        profile = self.profile(node.get("agent_profile"))
        if profile is not None:
            body.append(f"agent_profile {profile}")
        prompt = self.string(node.get("prompt"), "`prompt`")
        if prompt is not None:
            body.append(f"prompt {_text(prompt, '  ')}")  # every line moves 4 further in
        events = self.mapping(node.get("events"), "`events`")
        for trigger_key, actions in events.pairs if events is not None else []:
            trigger = trigger_key.text
            if trigger not in F.TRIGGERS:
                self.report("unknown-key", trigger_key, f"`{trigger}` is not a trigger of the seed system",
                            help="the triggers are " + ", ".join(F.TRIGGERS))
                continue
            if portable and trigger not in F.PORTABLE_TRIGGERS:
                self.report("export-dropped", trigger_key, f"the seed drops `{trigger}` when it imports a portable "
                            "document (its issue #1109); interlock keeps it")
            written = [a for a in (self.action(x, trigger, portable) for x in self.seq(actions, f"`{trigger}`"))
                       if a is not None]
            body.append(f"on {trigger} {{" + "".join(f"\n  {a}" for a in written) + ("\n}" if written else " }"))
        head = f"step {sid}" + ("" if title is None else f" {quote(title)}")
        indented = "\n".join("    " + line if line else line for item in body for line in item.split("\n"))
        return [f"  {head} {{", *indented.split("\n"), "  }"]

    def target(self, raw: str, node: YNode) -> str:
        sid = wf_ident(raw)
        if sid not in self.step_index:
            self.report("dangling-step", node, f"no step `{raw}` in this workflow: the seed drops this reference "
                        "silently")
        return sid

    # ---- one action -------------------------------------------------------------------------------
    def action(self, node: YNode, trigger: str, portable: bool) -> str | None:
        if self.mapping(node, "an action") is None:
            return None
        self.keys(node, ("type", "config"), "an action")
        kind_node = node.get("type")
        kind = self.string(kind_node, "`type`")
        if kind is None or kind_node is None:
            self.report("format-invalid", node, "an action needs a `type`")
            return None
        if kind == "configure_session":
            self.report("not-representable", kind_node, "`configure_session` (per-agent session rules) has no "
                        "form in the language: not imported", help="configure the session rules on the host")
            return None
        if kind not in F.CONFIG_KEYS:
            self.report("unknown-action", kind_node, f"unknown action type `{kind}`: the seed drops it silently; "
                        "not imported", help="the types are " + ", ".join(sorted(F.CONFIG_KEYS)))
            return None
        if not portable and kind not in F.TEMPLATE_ALLOWED[trigger]:
            self.report("trigger-refused", kind_node, f"the seed's template loader refuses `{kind}` under "
                        f"`{trigger}`", help="allowed there: " + ", ".join(F.TEMPLATE_ALLOWED[trigger]))
        config = self.mapping(node.get("config"), "`config`")
        cfg: dict[str, YNode] = {}
        if config is not None:
            for k, v in config.pairs:
                if k.text in F.CONFIG_KEYS[kind]:
                    cfg[k.text] = v
                else:
                    self.report("unknown-config-key", k, f"`{kind}` has no config key `{k.text}`: the seed ignores "
                                "it; not imported", help="its keys are " + (", ".join(F.CONFIG_KEYS[kind]) or "none"))
        ikind = F.KIND_OF_TYPE[kind]
        if kind in ("move_to_next", "move_to_previous", "move_to_step"):
            return self.move(kind, kind_node, cfg, trigger)
        args: list[str] = []
        if kind == "set_session_mode":
            mode = self.string(cfg.get("mode"), "`mode`")
            if not mode:
                self.report("format-invalid", cfg.get("mode") or kind_node, "`set_session_mode` needs a non-empty "
                            "`mode` (the seed drops it otherwise); not imported")
                return None
            args.append(f"mode: {quote(mode)}")
        elif kind == "run_code_review":
            pid = self.string(cfg.get("agent_profile_id"), "`agent_profile_id`")
            if pid is not None:
                args.append(f"agent_profile: {quote(pid)}")
        elif kind == "queue_run":
            target = self.string(cfg.get("target"), "`target`")
            if target is not None:
                value = self.queue_target(target, cfg["target"])
                if value is None:
                    return None
                args.append(f"target: {value}")
            task = self.string(cfg.get("task_id"), "`task_id`")
            if task is not None:
                args.append("task: this" if task in ("this", "") else f"task: {quote(task)}")
                if task == "":
                    self.report("normalised", cfg["task_id"], "an empty `task_id` means `this`: written as `this`")
        if kind in ("queue_run_for_each_participant", "ensure_participant_seat"):
            role = self.string(cfg.get("role"), "`role`")
            if not role:
                self.report("format-invalid", cfg.get("role") or kind_node, f"`{kind}` needs a `role`; not imported")
                return None
            args.append(f"role: {self.role(role, cfg['role'])}")
        if kind in ("queue_run", "queue_run_for_each_participant"):
            reason = self.string(cfg.get("reason"), "`reason`")
            if reason is not None:
                args.append(f"reason: {quote(reason)}")
            if "payload" in cfg:
                payload = self.literal(cfg["payload"])
                if payload is not None:
                    args.append(f"payload: {payload}")
        if kind == "queue_run" and "cadence_seconds" in cfg:
            cadence = self.integer(cfg["cadence_seconds"], "`cadence_seconds`", minimum=1)
            if cadence is not None:
                args.append(f"cadence_seconds: {cadence}")
        return ikind + (f"({', '.join(args)})" if args else "")

    def role(self, raw: str, node: YNode) -> str:
        role = wf_ident(raw)
        if role != raw:
            self.report("id-mapped", node, f"role `{raw}` is not an identifier of the language: written as `{role}`")
        self.roles.add(role)
        self.role_nodes.setdefault(role, node)
        return role

    def queue_target(self, target: str, node: YNode) -> str | None:
        if target.strip() in ("", "primary"):
            if target != "primary":
                self.report("normalised", node, "an empty `target` means `primary`: written as `primary`")
            return "primary"
        if target == "workspace.ceo_agent":
            return target
        for prefix in ("participant_role:", "agent_profile_id:"):
            if target.startswith(prefix) and target[len(prefix):]:
                if prefix == "participant_role:":
                    self.role(target[len(prefix):], node)
                return quote(target)
        self.report("not-representable", node, f"unsupported `queue_run` target `{target}` (the seed fails the run); "
                    "not imported", help="targets: primary, workspace.ceo_agent, participant_role:ROLE, "
                    "agent_profile_id:ID")
        return None

    def literal(self, node: YNode) -> str | None:
        if node.kind == "map":
            parts = []
            for k, v in node.pairs:
                value = self.literal(v)
                if value is None:
                    return None
                parts.append(f"{quote(k.text)}: {value}")
            return "{" + ", ".join(parts) + "}"
        if node.kind == "seq":
            items = [self.literal(i) for i in node.items]
            if any(i is None for i in items):
                return None
            return "[" + ", ".join(i for i in items if i is not None) + "]"
        if node.type == "str":
            return quote(node.text)
        if node.type == "bool":
            return "true" if node.data() else "false"
        if node.type == "int":
            return str(node.data())
        self.report("not-representable", node, f"a {node.type} value has no form in the language's literals; "
                    "not imported")
        return None

    def move(self, kind: str, kind_node: YNode, cfg: dict[str, YNode], trigger: str) -> str | None:
        text = kind
        if kind == "move_to_step":
            sid = self.string(cfg.get("step_id"), "`step_id`")
            pos = self.integer(cfg.get("step_position"), "`step_position`") if "step_position" in cfg else None
            if sid:
                text += f"({self.target(sid, cfg['step_id'])})"
            elif pos is not None:
                if pos not in self.positions:
                    self.report("dangling-step", cfg["step_position"], f"no step at position {pos}: the seed "
                                "refuses the whole document")
                    return None
                text += f"({self.positions[pos]})"
            else:
                self.report("dangling-step", kind_node, "`move_to_step` without `step_id` (or `step_position`): the "
                            "seed drops it silently; not imported")
                return None
        guard = self.guard(cfg, kind_node)
        if guard:
            text += f" when quorum({guard})"
        approval = self.boolean(cfg.get("requires_approval"), "`requires_approval`")
        if approval:
            text += " requires_approval"
        elif approval is False:
            self.report("normalised", cfg["requires_approval"], "`requires_approval: false` is the default; export "
                        "leaves it out")
        if trigger == "on_turn_start" and (guard or approval):
            self.report("ignored-on-turn-start", kind_node, "the seed ignores guards and `requires_approval` on "
                        "`on_turn_start`; interlock honours them", help="drop them to keep the seed's behaviour")
        return text

    def guard(self, cfg: dict[str, YNode], kind_node: YNode) -> str | None:
        node = cfg.get("wait_for_quorum")
        wrapper = cfg.get("if")
        if wrapper is not None:
            if node is not None:
                self.report("malformed-guard", wrapper, "both `wait_for_quorum` and `if` given: the seed reads one "
                            "of them; not imported")
                return None
            if wrapper.kind != "map" or [k.text for k in wrapper.key_nodes()] != ["wait_for_quorum"]:
                self.report("malformed-guard", wrapper, "`if` must hold exactly `wait_for_quorum`: the seed treats "
                            "this as no guard, so the move would be unguarded")
                return None
            node = wrapper.get("wait_for_quorum")
            self.report("normalised", wrapper, "the `if: {wait_for_quorum}` form is written back as the top-level "
                        "`wait_for_quorum`")
        if node is None:
            return None
        bad = "a malformed quorum guard: the seed treats it as no guard (an unguarded move); the move is imported " \
              "without it"
        if node.kind != "map":
            self.report("malformed-guard", node, bad, help="write `wait_for_quorum: {role: ROLE, threshold: T}`")
            return None
        for k in node.key_nodes():
            if k.text not in ("role", "threshold"):
                self.report("unknown-config-key", k, f"`wait_for_quorum` has no key `{k.text}`: ignored")
        role = self.string(node.get("role"), "`role`")
        threshold = self.string(node.get("threshold"), "`threshold`")
        if not role or not threshold:
            self.report("malformed-guard", node, bad + " (a `role` and a `threshold` are needed)")
            return None
        match = re.fullmatch(r"n_approve:([0-9]+)", threshold)
        if match and int(match.group(1)) >= 1:
            th = f"n_approve({int(match.group(1))})"
        elif threshold in F.THRESHOLDS:
            th = threshold
        else:
            self.report("malformed-guard", node.get("threshold") or node, f"unknown threshold `{threshold}`: "
                        + bad, help="thresholds: " + ", ".join(F.THRESHOLDS) + ", n_approve:N (N ≥ 1)")
            return None
        return f"{self.role(role, node.get('role') or node)}, {th}"


def combined(workflows: list[tuple[str, str]]) -> str:
    """Several imported workflows as one `.wf` text, each role declared once at the top."""
    roles: list[str] = []
    bodies: list[str] = []
    for _, text in workflows:
        lines = text.splitlines(keepends=True)
        i = 0
        while i < len(lines) and (lines[i].startswith("role ") or not lines[i].strip()):
            if lines[i].startswith("role ") and lines[i] not in roles:
                roles.append(lines[i])
            i += 1
        bodies.append("".join(lines[i:]))
    return "".join(roles) + ("\n" if roles else "") + "\n".join(bodies)
