"""One action of kandev's YAML in, its IR out (an `ActionCall`, which the IR printer writes: `format_action`): types,
config keys, moves, quorum guards, `queue_run` targets and literal payloads, every silent drop of kandev reported
(the step and workflow around it: `importer`).  Each node's span is the YAML node it was read from.
"""

from __future__ import annotations

import re

from interlock.dsl import ir

from . import formats as F
from .reading import NodeReader, wf_ident
from .yamlread import YNode

__all__ = ["ActionReader"]


class ActionReader(NodeReader):
    """Reads actions; the workflow being read sets `step_index`, `positions`, `roles` and `role_nodes`."""

    step_index: list[str]
    positions: dict[int, str]
    roles: set[str]
    role_nodes: dict[str, YNode]
    as_timer: bool = False
    """Reading an `on_heartbeat` list written as `every P { … }`: no `cadence_seconds` (the timer holds it), and
    `reason` written out (a timer's actions default it to the timer's label, kandev to the trigger's name)."""

    def target(self, raw: str, node: YNode) -> str:
        sid = wf_ident(raw)
        if sid not in self.step_index:
            self.report("dangling-step", node, f"no step `{raw}` in this workflow: kandev drops this reference "
                        "silently")
        return sid

    # ---- one action -------------------------------------------------------------------------------
    def action(self, node: YNode, trigger: str, portable: bool) -> ir.ActionCall | None:
        """One action as IR (None: not imported, and why is reported)."""
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
            self.report("unknown-action", kind_node, f"unknown action type `{kind}`: kandev drops it silently; "
                        "not imported", help="the types are " + ", ".join(sorted(F.CONFIG_KEYS)))
            return None
        if not portable and kind not in F.TEMPLATE_ALLOWED[trigger]:
            self.report("trigger-refused", kind_node, f"kandev's template loader refuses `{kind}` under "
                        f"`{trigger}`", help="allowed there: " + ", ".join(F.TEMPLATE_ALLOWED[trigger]))
        cfg = self.config(node, kind)
        if kind in ("move_to_next", "move_to_previous", "move_to_step"):
            return self.move(kind, kind_node, cfg, trigger)
        if kind == "run_script":
            return self.script(kind_node, cfg)
        args = self.arguments(kind, kind_node, cfg)
        if args is None:
            return None
        return ir.ActionCall(span=self.at(node), name=self.name_of(F.KIND_OF_TYPE[kind], kind_node), args=tuple(args))

    # ---- IR nodes at YAML nodes --------------------------------------------------------------------
    def name_of(self, name: str, node: YNode) -> ir.Ident:
        return ir.Ident(span=self.at(node), name=name)

    def arg(self, name: str | None, value: ir.Value) -> ir.Arg:
        return ir.Arg(span=value.span, name=None if name is None else ir.Ident(span=value.span, name=name), value=value)

    def str_at(self, text: str, node: YNode) -> ir.StrLit:
        return ir.StrLit(span=self.at(node), value=text)

    def int_at(self, value: int, node: YNode) -> ir.IntLit:
        return ir.IntLit(span=self.at(node), value=value)

    def dotted(self, text: str, node: YNode) -> ir.NameValue:
        return ir.NameValue(span=self.at(node), parts=tuple(text.split(".")))

    def config(self, node: YNode, kind: str) -> dict[str, YNode]:
        """The config keys kandev reads for `kind`; any other is reported (kandev ignores it)."""
        config = self.mapping(node.get("config"), "`config`")
        cfg: dict[str, YNode] = {}
        for k, v in config.pairs if config is not None else ():
            if k.text in F.CONFIG_KEYS[kind]:
                cfg[k.text] = v
            else:
                self.report("unknown-config-key", k, f"`{kind}` has no config key `{k.text}`: kandev ignores it; "
                            "not imported", help="its keys are " + (", ".join(F.CONFIG_KEYS[kind]) or "none"))
        return cfg

    def arguments(self, kind: str, kind_node: YNode, cfg: dict[str, YNode]) -> list[ir.Arg] | None:
        """The arguments of every kind but the moves and `run_script` (None: not imported)."""
        args: list[ir.Arg] = []
        if kind == "set_session_mode":
            mode = self.string(cfg.get("mode"), "`mode`")
            if not mode:
                self.report("format-invalid", cfg.get("mode") or kind_node, "`set_session_mode` needs a non-empty "
                            "`mode` (kandev drops it otherwise); not imported")
                return None
            args.append(self.arg("mode", self.str_at(mode, cfg["mode"])))
        elif kind == "run_code_review":
            pid = self.string(cfg.get("agent_profile_id"), "`agent_profile_id`")
            if pid is not None:
                args.append(self.arg("agent_profile", self.str_at(pid, cfg["agent_profile_id"])))
        elif kind == "queue_run":
            target = self.string(cfg.get("target"), "`target`")
            if target is not None:
                value = self.queue_target(target, cfg["target"])
                if value is None:
                    return None
                args.append(self.arg("target", value))
            task = self.string(cfg.get("task_id"), "`task_id`")
            if task is not None:
                at = cfg["task_id"]
                args.append(self.arg("task", self.dotted("this", at) if task in ("this", "") else self.str_at(task, at)))
                if task == "":
                    self.report("normalised", cfg["task_id"], "an empty `task_id` means `this`: written as `this`")
        if kind in ("queue_run_for_each_participant", "ensure_participant_seat"):
            role = self.string(cfg.get("role"), "`role`")
            if not role:
                self.report("format-invalid", cfg.get("role") or kind_node, f"`{kind}` needs a `role`; not imported")
                return None
            args.append(self.arg("role", self.dotted(self.role(role, cfg["role"]), cfg["role"])))
        if kind in ("queue_run", "queue_run_for_each_participant"):
            reason = self.string(cfg.get("reason"), "`reason`")
            if reason is None and self.as_timer:
                reason = "on_heartbeat"
            if reason is not None:
                args.append(self.arg("reason", self.str_at(reason, cfg.get("reason") or kind_node)))
            if "payload" in cfg:
                payload = self.literal(cfg["payload"])
                if payload is not None:
                    args.append(self.arg("payload", payload))
        if kind == "queue_run" and "cadence_seconds" in cfg and not self.as_timer:
            cadence = self.integer(cfg["cadence_seconds"], "`cadence_seconds`", minimum=1)
            if cadence is not None:
                args.append(self.arg("cadence_seconds", self.int_at(cadence, cfg["cadence_seconds"])))
        return args

    def script(self, kind_node: YNode, cfg: dict[str, YNode]) -> ir.ActionCall | None:
        """`run_script` (ADR 0042): `command` verbatim, `timeout_seconds` 1..86400, `failure_policy: continue` as
        the flag `continue_on_failure`; what kandev refuses is not imported."""
        command = self.string(cfg.get("command"), "`command`")
        if command is None or not command.strip():
            self.report("format-invalid", cfg.get("command") or kind_node, "`run_script` needs a non-empty "
                        "`command`: kandev refuses it; not imported")
            return None
        args = [self.arg("command", self.str_at(command, cfg["command"]))]
        low, high, default = F.SCRIPT_TIMEOUT
        timeout = default
        if "timeout_seconds" in cfg:
            given = self.integer(cfg["timeout_seconds"], "`timeout_seconds`", minimum=low)
            if given is None or given > high:
                if given is not None:
                    self.report("format-invalid", cfg["timeout_seconds"], f"`timeout_seconds` must be {high:,} or "
                                "less (a day): kandev refuses it; not imported")
                return None
            timeout = given
            args.append(self.arg("timeout_seconds", self.int_at(given, cfg["timeout_seconds"])))
        policy = self.string(cfg.get("failure_policy"), "`failure_policy`")
        if policy is not None and policy not in F.FAILURE_POLICIES:
            self.report("format-invalid", cfg["failure_policy"], f"`failure_policy` `{policy}` is not `block` or "
                        "`continue`: kandev refuses it; not imported")
            return None
        if policy == "block":
            self.report("normalised", cfg["failure_policy"], "`failure_policy: block` is the default (no "
                        "`continue_on_failure`): a template export leaves it out, a portable one writes it")
        self.report("executor-timeout", kind_node, f"kandev gives this script {timeout:,} seconds; interlock "
                    "abandons a host executor after the runtime's `executor_timeout` (60 seconds unless the host "
                    "sets it) and records the call as failed (`timed out`)", help=f"build the host's Runtime with executor_timeout of at "
                    f"least {timeout} (or let its `run_script` executor enforce the script's own timeout)")
        return ir.ActionCall(span=self.at(kind_node), name=self.name_of("run_script", kind_node), args=tuple(args),
                             continue_on_failure=self.at(cfg["failure_policy"]) if policy == "continue" else None)

    def role(self, raw: str, node: YNode) -> str:
        role = wf_ident(raw)
        if role != raw:
            self.report("id-mapped", node, f"role `{raw}` is not an identifier of the language: written as `{role}`")
        self.roles.add(role)
        self.role_nodes.setdefault(role, node)
        return role

    def queue_target(self, target: str, node: YNode) -> ir.Value | None:
        if target.strip() in ("", "primary"):
            if target != "primary":
                self.report("normalised", node, "an empty `target` means `primary`: written as `primary`")
            return self.dotted("primary", node)
        if target == "workspace.ceo_agent":
            return self.dotted(target, node)
        for prefix in ("participant_role:", "agent_profile_id:"):
            if target.startswith(prefix) and target[len(prefix):]:
                if prefix == "participant_role:":
                    self.role(target[len(prefix):], node)
                return self.str_at(target, node)
        self.report("not-representable", node, f"unsupported `queue_run` target `{target}` (kandev fails the run); "
                    "not imported", help="targets: primary, workspace.ceo_agent, participant_role:ROLE, "
                    "agent_profile_id:ID")
        return None

    def literal(self, node: YNode) -> ir.Value | None:
        if node.kind == "map":
            entries = []
            for k, v in node.pairs:
                value = self.literal(v)
                if value is None:
                    return None
                entries.append(ir.MapEntry(span=self.at(k), key=k.text, value=value, key_span=self.at(k)))
            return ir.MapValue(span=self.at(node), entries=tuple(entries))
        if node.kind == "seq":
            items = [self.literal(i) for i in node.items]
            if any(i is None for i in items):
                return None
            return ir.ListValue(span=self.at(node), items=tuple(i for i in items if i is not None))
        if node.type == "str":
            return self.str_at(node.text, node)
        if node.type == "bool":
            return ir.BoolLit(span=self.at(node), value=bool(node.data()))
        if node.type == "int":
            return self.int_at(int(node.data()), node)
        self.report("not-representable", node, f"a {node.type} value has no form in the language's literals; "
                    "not imported")
        return None

    def move(self, kind: str, kind_node: YNode, cfg: dict[str, YNode], trigger: str) -> ir.ActionCall | None:
        args: list[ir.Arg] = []
        if kind == "move_to_step":
            sid = self.string(cfg.get("step_id"), "`step_id`")
            pos = self.integer(cfg.get("step_position"), "`step_position`") if "step_position" in cfg else None
            if sid:
                args.append(self.arg(None, self.dotted(self.target(sid, cfg["step_id"]), cfg["step_id"])))
            elif pos is not None:
                if pos not in self.positions:
                    self.report("dangling-step", cfg["step_position"], f"no step at position {pos}: kandev "
                                "refuses the whole document")
                    return None
                args.append(self.arg(None, self.dotted(self.positions[pos], cfg["step_position"])))
            else:
                self.report("dangling-step", kind_node, "`move_to_step` without `step_id` (or `step_position`): "
                            "kandev drops it silently; not imported")
                return None
        options = self.options(cfg, kind_node)
        if options.entries:
            args.append(self.arg("options", options))
        guard = self.guard(cfg, kind_node)
        approval = self.boolean(cfg.get("requires_approval"), "`requires_approval`")
        action = ir.ActionCall(span=self.at(kind_node), name=self.name_of(kind, kind_node), args=tuple(args),
                               guard=guard, requires_approval=self.at(cfg["requires_approval"]) if approval else None)
        if approval is False:
            self.report("normalised", cfg["requires_approval"], "`requires_approval: false` is the default; export "
                        "leaves it out")
        if trigger == "on_turn_start" and (guard or approval):
            self.report("ignored-on-turn-start", kind_node, "kandev ignores guards and `requires_approval` on "
                        "`on_turn_start`; interlock honours them", help="drop them to keep kandev's behaviour")
        return action

    def options(self, cfg: dict[str, YNode], kind_node: YNode) -> ir.MapValue:
        """kandev's entry options on a move (`instructions`, `skip_step_prompt`) as the map entries of the
        transition's `options` (ADR 0043)."""
        entries: list[ir.MapEntry] = []
        instructions = self.string(cfg.get("instructions"), "`instructions`")
        if instructions is not None:
            value: ir.Value = self.str_at(instructions, cfg["instructions"])
            entries.append(ir.MapEntry(span=value.span, key="instructions", value=value))
        skip = self.boolean(cfg.get("skip_step_prompt"), "`skip_step_prompt`")
        if skip is not None:
            value = ir.BoolLit(span=self.at(cfg["skip_step_prompt"]), value=skip)
            entries.append(ir.MapEntry(span=value.span, key="skip_step_prompt", value=value))
        return ir.MapValue(span=self.at(kind_node), entries=tuple(entries))

    def guard(self, cfg: dict[str, YNode], kind_node: YNode) -> ir.QuorumGuard | None:
        node = cfg.get("wait_for_quorum")
        wrapper = cfg.get("if")
        if wrapper is not None:
            if node is not None:
                self.report("malformed-guard", wrapper, "both `wait_for_quorum` and `if` given: kandev reads one "
                            "of them; not imported")
                return None
            if wrapper.kind != "map" or [k.text for k in wrapper.key_nodes()] != ["wait_for_quorum"]:
                self.report("malformed-guard", wrapper, "`if` must hold exactly `wait_for_quorum`: kandev treats "
                            "this as no guard, so the move would be unguarded")
                return None
            node = wrapper.get("wait_for_quorum")
            self.report("normalised", wrapper, "the `if: {wait_for_quorum}` form is written back as the top-level "
                        "`wait_for_quorum`")
        if node is None:
            return None
        bad = "a malformed quorum guard: kandev treats it as no guard (an unguarded move); the move is imported " \
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
        at = node.get("threshold") or node
        match = re.fullmatch(r"n_approve:([0-9]+)", threshold)
        if match and int(match.group(1)) >= 1:
            th = ir.Threshold(span=self.at(at), name=self.name_of("n_approve", at),
                              count=self.int_at(int(match.group(1)), at))
        elif threshold in F.THRESHOLDS:
            th = ir.Threshold(span=self.at(at), name=self.name_of(threshold, at))
        else:
            self.report("malformed-guard", node.get("threshold") or node, f"unknown threshold `{threshold}`: "
                        + bad, help="thresholds: " + ", ".join(F.THRESHOLDS) + ", n_approve:N (N ≥ 1)")
            return None
        role_at = node.get("role") or node
        return ir.QuorumGuard(span=self.at(node), role=self.name_of(self.role(role, role_at), role_at), threshold=th)
