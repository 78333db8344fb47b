"""One step of kandev's YAML in, its `.wf` lines out: attributes, host metadata (`session_target`, `agent_tag`),
prompt and handlers, each line tagged with the YAML line it comes from (for the comments, `placing`); every place
where the imported step will behave differently from kandev is a `KVnnn` diagnostic (docs/kandev.md).
"""

from __future__ import annotations

from collections.abc import Callable

from interlock.dsl import ir
from interlock.dsl.escapes import quote
from interlock.dsl.printer import format_action

from . import formats as F
from .actions import ActionReader
from .placing import Line, text_of
from .reading import wf_ident
from .timers import HEARTBEAT, heartbeat_cadence, timer_label_of
from .yamlread import YNode

__all__ = ["StepReader", "TERMINAL_NAMES"]

TERMINAL_NAMES = ("done", "complete", "completed", "approved")
"""kandev derives the terminal step from names: the last one whose trimmed, lower-cased name is one of these."""

_BODY, _ACTION = "    ", "      "  # the indentation of a step's items and of a handler's actions


class StepReader(ActionReader):
    """Reads steps; the workflow being read sets `tagged` (its tag-configured steps) besides `ActionReader`'s."""

    tagged: set[str]

    def step(self, node: YNode, sid: str, portable: bool, terminal: bool) -> list[Line]:
        self.keys(node, F.PORTABLE_STEP_KEYS if portable else F.TEMPLATE_STEP_KEYS, "a step")
        title = self.string(node.get("name"), "`name`")
        if title is None:
            self.report("format-invalid", node, "a step needs a `name`")
        body = self.attributes(node, portable, terminal)
        body += self.metadata(node, sid)
        prompt_node = node.get("prompt")
        prompt = self.string(prompt_node, "`prompt`")
        if prompt is not None and prompt_node is not None:
            body.append(Line(f"{_BODY}prompt {text_of(prompt, _BODY + '  ', prompt_node)}", prompt_node.line))
        body += self.handlers(node, portable)
        head = f"  step {sid}" + ("" if title is None else f" {quote(title)}") + " {"
        return [Line(head, node.line), *body, Line("  }")]

    def attributes(self, node: YNode, portable: bool, terminal: bool) -> list[Line]:
        body: list[Line] = []

        def add(text: str, at: YNode | None) -> None:
            body.append(Line(_BODY + text, (at or node).line))

        pos = self.integer(node.get("position"), "`position`")
        if pos is not None:
            add(f"position {pos}", node.get("position"))
        elif portable:
            self.report("format-invalid", node, "a portable step needs a `position`")
        for key, flag in F.STEP_FLAGS.items():
            value = self.boolean(node.get(key), f"`{key}`")
            if value is not None:
                add(flag if value else f"{flag} false", node.get(key))
            if key == "allow_manual_move":
                self.manual_move(node, value, add)
        if terminal:
            add("terminal", node.get("name"))
        stage = self.string(node.get("stage_type"), "`stage_type`")
        if stage:
            if stage in F.STAGES:
                add(f"stage {stage}", node.get("stage_type"))
            else:
                self.report("format-invalid", node.get("stage_type") or node, f"`stage_type` `{stage}` is not one of "
                            + ", ".join(F.STAGES) + ": kandev's loader refuses it")
        elif stage == "":
            self.report("normalised", node.get("stage_type") or node, "an empty `stage_type` is the default "
                        "(custom); export leaves it out")
        color = self.string(node.get("color"), "`color`")
        if color is not None:
            add(f"color {quote(color)}", node.get("color"))
        hours = self.integer(node.get("auto_archive_after_hours"), "`auto_archive_after_hours`")
        if hours is not None:
            add(f"auto_archive_after_hours {hours}", node.get("auto_archive_after_hours"))
            if hours:
                self.report("auto-archive-for-host", node.get("auto_archive_after_hours") or node, "kept as "
                            f"`auto_archive_after_hours {hours}` for the host: kandev archives a task resting here "
                            f"after {hours} hours; interlock never archives, and no action of the language archives a "
                            f"task, so no `after {hours}h` timer can", help=f"let the host archive the step's tasks "
                            f"(or run the host's own archive kind from `after {hours}h {{ … }}`)")
        wip = self.integer(node.get("wip_limit"), "`wip_limit`")
        if wip is not None:
            add(f"wip_limit {wip}", node.get("wip_limit"))
            if wip:
                self.report("wip-limit-not-held", node.get("wip_limit") or node, f"kandev holds a task that would "
                            f"exceed `wip_limit: {wip}` in a queue and runs its `on_enter` when it is let in; "
                            "interlock keeps the limit for the host and enters every arrival at once",
                            help="let the host hold arrivals over the limit (route `queue_promotion` when it lets "
                                 "one in)")
        pull = self.string(node.get("pull_from_step_id"), "`pull_from_step_id`")
        if pull:
            add(f"pull_from {self.target(pull, node.get('pull_from_step_id') or node)}", node.get("pull_from_step_id"))
        return body

    def manual_move(self, node: YNode, value: bool | None, add: Callable[[str, YNode | None], None]) -> None:
        """kandev stores `allow_manual_move` but never enforces it; interlock refuses manual moves into a step
        without `manual_move` (docs/runtime.md §1)."""
        if value is None:
            add("manual_move", None)
            self.report("manual-move-added", node, "the step leaves out `allow_manual_move`: kandev never enforces "
                        "the flag, so people may move tasks into it by hand; interlock refuses manual moves into a "
                        "step without `manual_move`, so the import writes `manual_move` (the board's drag-and-drop "
                        "keeps working)", help="write `manual_move false` to refuse manual moves on purpose")
        elif value is False:
            self.report("manual-move-enforced", node.get("allow_manual_move") or node, "kandev stores "
                        "`allow_manual_move: false` but never enforces it; interlock does: a manual move (a "
                        "board's drag-and-drop) into this step is refused",
                        help="write `allow_manual_move: true` to keep kandev's behaviour")

    def metadata(self, node: YNode, sid: str) -> list[Line]:
        """Agent profile, agent tag and session target (ADR 0033, ADR 0043), checked as kandev checks them."""
        body: list[Line] = []
        profile_id = self.string(node.get("agent_profile_id"), "`agent_profile_id`")
        if profile_id:
            body.append(Line(f"{_BODY}agent_profile {quote(profile_id)}", (node.get("agent_profile_id") or node).line))
        profile = self.profile(node.get("agent_profile"))
        if profile is not None:
            body.append(Line(f"{_BODY}agent_profile {profile}", (node.get("agent_profile") or node).line))
        tag_node = node.get("agent_tag")
        tag = self.string(tag_node, "`agent_tag`")
        if tag is not None and tag_node is not None:
            if not tag.strip():
                self.report("format-invalid", tag_node, "`agent_tag` is empty: kandev refuses it; not imported")
            elif profile_id or profile is not None:
                self.report("format-invalid", tag_node, "a step names an agent tag instead of an agent profile, not "
                            "both: kandev refuses it; not imported")
            else:
                body.append(Line(f"{_BODY}agent_tag {quote(tag)}", tag_node.line))
        target = self.session_target(node.get("session_target"), node, sid)
        if target is not None:
            body.append(Line(f"{_BODY}session_target {target}", (node.get("session_target") or node).line))
        return body

    def session_target(self, node: YNode | None, step: YNode, sid: str) -> str | None:
        """`{kind: initial}` or `{kind: step, step_id: ID}` (ID a step of this workflow, not tag-configured), never
        with `configure_session` on the same step."""
        if self.mapping(node, "`session_target`") is None or node is None:
            return None
        self.keys(node, ("kind", "step_id"), "`session_target`")
        kind = self.string(node.get("kind"), "`session_target.kind`")
        raw = self.string(node.get("step_id"), "`session_target.step_id`")
        events = step.get("events")
        if events is not None and any(a.kind == "map" and (a.get("type") or a).text == "configure_session"
                                      for _, actions in events.pairs for a in actions.items):
            self.report("format-invalid", node, "`session_target` cannot be combined with `configure_session` on "
                        "the same step: kandev refuses it")
        if kind == "initial" and raw is None:
            return "initial"
        if kind == "step" and raw:
            target = wf_ident(raw)
            if target not in self.step_index:
                self.report("dangling-step", node.get("step_id") or node, f"`session_target` names no step `{raw}` "
                            "of this workflow: kandev refuses it; not imported")
                return None
            if target in self.tagged:
                self.report("format-invalid", node.get("step_id") or node, f"`session_target` names `{raw}`, a "
                            "tag-configured step (`agent_tag`): kandev refuses it; not imported")
                return None
            return f"step({target})"
        self.report("format-invalid", node, "`session_target` is `{kind: initial}` or `{kind: step, step_id: ID}`: "
                    "kandev refuses anything else; not imported")
        return None

    def handlers(self, node: YNode, portable: bool) -> list[Line]:
        body: list[Line] = []
        events = self.mapping(node.get("events"), "`events`")
        for trigger_key, actions in events.pairs if events is not None else []:
            trigger = trigger_key.text
            if trigger not in F.TRIGGERS:
                self.report("unknown-key", trigger_key, f"`{trigger}` is not a trigger of kandev",
                            help="the triggers are " + ", ".join(F.TRIGGERS))
                continue
            if portable and trigger not in F.PORTABLE_TRIGGERS:
                self.report("generic-trigger-kept", trigger_key, f"kandev drops `{trigger}` when it imports a portable "
                            "document (its issue #1109), so it never runs these actions; interlock keeps and runs "
                            "them", help="remove the handler to keep kandev's behaviour")
            head = f"on {trigger}"
            if trigger == HEARTBEAT:
                head = self.heartbeat(trigger_key, actions)
            self.as_timer = head != f"on {trigger}"
            written = [(x, a) for x in self.seq(actions, f"`{trigger}`")
                       if (a := self.action(x, trigger, portable)) is not None]
            self.as_timer = False
            if trigger == "on_enter":
                self.entry_continues(written)
            if not written:
                body.append(Line(f"{_BODY}{head} {{ }}", trigger_key.line))
                continue
            body.append(Line(f"{_BODY}{head} {{", trigger_key.line))
            body += [Line(_ACTION + format_action(a), x.line) for x, a in written]
            body.append(Line(_BODY + "}"))
        return body

    def heartbeat(self, key: YNode, actions: YNode) -> str:
        """`every P` for an `on_heartbeat` list whose one cadence a timer holds exactly, else `on on_heartbeat`
        (docs/kandev.md, "Timers"); either way, what the import did with the cadence is reported."""
        cadence, why = heartbeat_cadence(actions)
        if cadence is None:
            if why is not None:
                self.report("heartbeat-kept", key, f"kept as `on on_heartbeat` with `cadence_seconds` as data: {why}, "
                            "so no `every` timer holds it; interlock never fires `on_heartbeat` by itself",
                            help="let the host fire `on_heartbeat` at the cadence, or split the list into `every` "
                                 "timers of one cadence each")
            return f"on {HEARTBEAT}"
        label = timer_label_of(cadence)
        self.report("heartbeat-as-timer", key, f"`on_heartbeat` every {cadence:,} seconds is written `{label} {{ … }}`: "
                    "interlock's `tick` fires it durably, once per slot, counted from the task's entry into the step; "
                    "kandev's scheduler counts from its last beat and keeps it in memory (a restart forgets it)",
                    help="write `on on_heartbeat { … }` instead if the host is to fire the heartbeat itself")
        return label

    def entry_continues(self, written: list[tuple[YNode, ir.ActionCall]]) -> None:
        """A `run_script` that blocks (kandev's default policy) followed by more entry actions: kandev stops the list
        when it fails, interlock's entry goes on (record-and-continue)."""
        for i, (node, action) in enumerate(written[:-1]):
            if action.name.name == "run_script" and action.continue_on_failure is None:
                self.report("entry-continues", node, "when this script fails, kandev (`failure_policy: block`) "
                            f"stops the rest of `on_enter`; interlock's step entry records the failure and runs the "
                            f"{len(written) - i - 1} action(s) after it all the same",
                            help="move the actions that must not run after a failed script to the step the "
                                 "script's success leads to")

    def terminal(self, steps: list[YNode]) -> int:
        """The step kandev derives as terminal: the last whose trimmed, lower-cased name is done & co."""
        found, best = -1, (-1, -1)
        for i, step in enumerate(steps):
            name = step.get("name") if step.kind == "map" else None
            if name is not None and name.kind == "scalar" and name.text.strip().lower() in TERMINAL_NAMES:
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
