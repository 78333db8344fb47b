"""kandev's workflow YAML in, formatted `.wf` text out (`interlock import`), every silent drop of kandev and every
place the `.wf` behaves differently reported.

Either format is taken: a document with `version`, `type` or `workflows` at the top is the portable envelope,
anything else a template.  Ids are kept as they are when the language can hold them; another id is mapped
deterministically (`id_` and the id with every other character as `_`) and reported.  Portable steps have no
ids: each gets its name, lower-cased, as an id.  Prompts and descriptions are kept byte for byte (a folded block
string for YAML's folded text, a block string for multi-line text, when that reads back exactly; else a quoted
string), and the YAML's comments are kept as `.wf` comments at the nearest place (`placing`).  A diagnostic is an
error when kandev would silently do something other than what the file says (an unknown action type, a malformed
guard, a dangling `move_to_step`); nothing is written then (`interlock import` refuses partial imports).
"""

from __future__ import annotations

import re

from interlock.dsl.escapes import quote

from . import formats as F
from .codes import kv, span_at
from .placing import Line, place, text_of
from .reading import Imported, wf_ident
from .steps import StepReader
from .yamlread import YamlError, YNode, comments, read_yaml

__all__ = ["Imported", "import_text", "combined", "PRELUDE_ROLES", "wf_ident"]

PRELUDE_ROLES = ("reviewer", "approver", "watcher", "collaborator", "runner")


def _slug(name: str, prefix: str = "step") -> str:
    """A portable name as an id: lower-cased, runs of other characters as `-`; `PREFIX-` before a leading digit."""
    slug = re.sub(r"[^a-z0-9_]+", "-", name.strip().lower()).strip("-")
    return slug if slug and not slug[0].isdigit() else f"{prefix}-{slug}" if slug else prefix


def import_text(text: str, name: str) -> Imported:
    """Read `text` (the file `name`) as kandev's YAML; YAML errors come back as one `yaml-invalid` diagnostic."""
    out = Imported()
    try:
        root = read_yaml(text)
    except YamlError as exc:
        out.diagnostics.append(kv("yaml-invalid", span_at(name, exc.line, exc.col), exc.message))
        return out
    reader = _Reader(name, out)
    reader.document(root)
    texts = place([lines for _, lines in reader.parts], comments(text, root))
    out.workflows = [(wid, _formatted(wf)) for (wid, _), wf in zip(reader.parts, texts)]
    return out


def _formatted(text: str) -> str:
    from interlock.dsl.format import format_source

    result = format_source(text, "<import>")
    return result.text if result.ok else text


class _Reader(StepReader):
    parts: list[tuple[str, list[Line]]]

    # ---- document -------------------------------------------------------------------------------
    def document(self, root: YNode) -> None:
        self.parts = []
        if root.kind != "map":
            self.report("format-invalid", root, "a kandev workflow document is a mapping (a template, or the "
                        "portable envelope `version`/`type`/`workflows`)")
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
        wid = self.workflow_id(node, title, portable, taken)
        lines = [Line(f"workflow {wid}" + ("" if title is None else f" {quote(title)}") + " {", node.line)]
        lines += self.workflow_settings(node)
        steps = self.seq(node.get("steps"), "`steps`")
        self.roles: set[str] = set()
        self.role_nodes: dict[str, YNode] = {}
        ids, positions = self.step_ids(steps, portable)
        self.step_index = ids
        self.positions = positions
        self.tagged = {ids[i] for i, s in enumerate(steps) if s.kind == "map" and s.get("agent_tag") is not None}
        terminal = self.terminal(steps)
        for i, step in enumerate(steps):
            if step.kind == "map":
                lines.append(Line(""))
                lines += self.step(step, ids[i], portable, i == terminal)
        lines.append(Line("}"))
        roles = sorted(r for r in self.roles if r not in PRELUDE_ROLES)
        for r in roles:
            self.report("role-declared", self.role_nodes[r], f"role `{r}` is used but not declared: the import "
                        f"declares it (`role {r}`)")
        head = [Line(f"role {r}", node.line, ends=False) for r in roles] + ([Line("")] if roles else [])
        self.parts.append((wid, head + lines))

    def workflow_id(self, node: YNode, title: str | None, portable: bool, taken: set[str] | None) -> str:
        if not portable:
            raw = self.string(node.get("id"), "`id`")
            if not raw:
                self.report("format-invalid", node, "a template needs an `id`")
                raw = "workflow"
            return self.ident(raw, node.get("id") or node, "workflow id")
        if not title:
            self.report("format-invalid", node, "a portable workflow needs a `name`")
            title = "workflow"
        wid = base = _slug(title, "workflow")
        n = 2
        while taken is not None and wid in taken:
            wid, n = f"{base}-{n}", n + 1
        if taken is not None:
            taken.add(wid)
        return wid

    def workflow_settings(self, node: YNode) -> list[Line]:
        lines: list[Line] = []
        hidden = self.boolean(node.get("hidden"), "`hidden`")
        if hidden:
            lines.append(Line("  hidden", (node.get("hidden") or node).line))
        elif hidden is False:
            self.report("normalised", node.get("hidden") or node, "`hidden: false` is the default; export leaves "
                        "it out")
        for key in ("description", "prompt"):
            value_node = node.get(key)
            value = self.string(value_node, f"`{key}`")
            if value is not None and value_node is not None:
                lines.append(Line(f"  {key} {text_of(value, '    ', value_node)}", value_node.line))
        profile = self.profile(node.get("agent_profile"))
        if profile is not None:
            lines.append(Line(f"  agent_profile {profile}", (node.get("agent_profile") or node).line))
        return lines

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


def combined(workflows: list[tuple[str, str]]) -> str:
    """Several imported workflows as one `.wf` text, each role declared once at the top (a workflow's leading
    comments stay with it)."""
    roles: list[str] = []
    bodies: list[str] = []
    opening = ""  # the first workflow's leading comments open the file, before the roles
    for n, (_, text) in enumerate(workflows):
        kept: list[str] = []
        lines = text.splitlines(keepends=True)
        i = 0
        while i < len(lines) and (lines[i].startswith(("role ", "#")) or not lines[i].strip()):
            if lines[i].startswith("role "):
                if lines[i] not in roles:
                    roles.append(lines[i])
            elif lines[i].strip():
                kept.append(lines[i])
            i += 1
        if n == 0:
            opening, kept = "".join(kept), []
        bodies.append("".join(kept) + "".join(lines[i:]))
    return opening + "".join(roles) + ("\n" if roles else "") + "\n".join(bodies)
