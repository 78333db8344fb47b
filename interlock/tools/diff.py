"""`interlock diff OLD NEW`: two versions of a workflow in, what changed (breaking changes first) and, with
`--store`, the in-flight tasks the change strands out.  docs/diff.md describes the comparison and the formats.

OLD and NEW are `.wf` files, compiled plans (`.json`), `git:REV:PATH` (the file as committed in REV) or
`git::PATH` (the file as staged in the index).  `--staged PATH...` compares each staged `.wf` file with
HEAD's version (the pre-commit hook).  Only the standard library is imported at the top (ADR 0026).
"""

from __future__ import annotations

import argparse
import json
import os
import posixpath
import subprocess
import sys
import tempfile
import textwrap
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from interlock.errors import InterlockError

if TYPE_CHECKING:
    from interlock.diffing import Change
    from interlock.runtime.plan import Plan
    from interlock.stores.inflight import Stranded

__all__ = ["HELP", "DESCRIPTION", "EPILOG", "add_arguments", "run", "DIFF_VERSION"]

DIFF_VERSION = 1
"""The version of the JSON output (`diff_version`)."""

HELP = "compare two versions of a workflow: breaking changes and the in-flight tasks they strand"
DESCRIPTION = "\n\n".join(textwrap.fill(p, 88) for p in (
    "Compare two versions of a workflow by id: every field of the plan (workflows, steps, their attributes and "
    "host settings, handlers and their actions, guards, the entry policy, dispatch sequences, triggers, roles and "
    "kinds), each change classified as behaviour or metadata; a long or multi-line text (a prompt) is shown as a "
    "unified diff. Breaking changes (a step removed or renamed, a step that lost every way out, a kind moved "
    "between the entry lists, a guard tightened, a trigger's payload changed, a role, trigger, sequence or "
    "workflow removed) come first. Source positions, comments and file names are never changes.",
    "With --store, the tasks, entries, seats and decisions of that store the change strands are listed, each with "
    "its task id (read-only: the store is never written, a missing SQLite file is an error).",
    "OLD and NEW are .wf files, compiled plans (.json), git:REV:PATH (the file as committed in REV; PATH as git "
    "reads it: from the repository root, or ./PATH from the current folder) or git::PATH (the file as staged). "
    "docs/diff.md describes every change code."))
EPILOG = textwrap.fill(
    "Exit status: 0 nothing stranded (and, with --fail-on-breaking, no breaking change); 1 a stranded task, entry, "
    "seat or decision, or a breaking change with --fail-on-breaking; 2 usage error (a missing file, an unknown git "
    "revision, a file that does not compile, a bad --store URL or database).", 88)


class DiffUsageError(InterlockError):
    """The command cannot run as called (exit 2)."""


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("sources", nargs="*", metavar="OLD NEW",
                        help="the two versions (with --staged: the staged .wf files to compare with HEAD)")
    parser.add_argument("--staged", action="store_true",
                        help="compare each staged PATH (git::PATH) with HEAD's version (git:HEAD:PATH); files "
                             "HEAD does not have are new and skipped (what the pre-commit hook runs)")
    parser.add_argument("--store", metavar="URL", default=None,
                        help="also list the in-flight work of this store the change strands: sqlite:///FILE.db or "
                             "postgresql://USER@HOST/DATABASE, read-only (a missing SQLite file is an error)")
    parser.add_argument("--format", choices=("text", "json"), default="text", help="output format (default: text)")
    parser.add_argument("--fail-on-breaking", action="store_true", help="exit 1 when a breaking change is found")


# ---- reading a version --------------------------------------------------------------------------------------


def _git(*args: str, cwd: str | None = None) -> subprocess.CompletedProcess[bytes]:
    try:
        return subprocess.run(["git", *args], cwd=cwd, capture_output=True, check=False, timeout=60)
    except FileNotFoundError:
        raise DiffUsageError("git is not installed (needed for git: sources)") from None


@dataclass
class _Repo:
    top: str
    prefix: str  # the current folder, relative to the top ("" or "sub/dir/")
    checked: set[str] = field(default_factory=set)

    @classmethod
    def here(cls) -> _Repo:
        proc = _git("rev-parse", "--show-toplevel", "--show-prefix")
        if proc.returncode != 0:
            raise DiffUsageError("git: sources need a git repository, and the current folder is in none")
        lines = proc.stdout.decode("utf-8", "replace").splitlines()
        return cls(lines[0], lines[1] if len(lines) > 1 else "")

    def path(self, raw: str) -> str:
        """`raw` as a path from the repository's top: `./x` and `../x` are from the current folder (as git reads
        them), anything else is from the top already."""
        if raw.startswith(("./", "../")) or raw in (".", ".."):
            joined = posixpath.normpath(posixpath.join(self.prefix, raw))
            if joined == ".." or joined.startswith("../"):
                raise DiffUsageError(f"`{raw}` leads outside the repository")
            return joined
        return posixpath.normpath(raw)

    def check_rev(self, rev: str) -> None:
        if rev in self.checked:
            return
        proc = _git("rev-parse", "--verify", "--quiet", f"{rev}^{{commit}}", cwd=self.top)
        if proc.returncode != 0:
            raise DiffUsageError(f"git: unknown revision `{rev}`")
        self.checked.add(rev)

    def has(self, rev: str, path: str) -> bool:
        return _git("cat-file", "-e", f"{rev}:{path}", cwd=self.top).returncode == 0

    def read(self, rev: str, path: str) -> bytes:
        proc = _git("cat-file", "blob", f"{rev}:{path}", cwd=self.top)
        if proc.returncode != 0:
            where = "the index (is it staged?)" if rev == "" else f"revision `{rev}`"
            raise DiffUsageError(f"git: `{path}` is not in {where}")
        return proc.stdout

    def siblings(self, rev: str, folder: str) -> list[str]:
        """The `*.wf` files of `folder` (not its subfolders) in `rev` or, for rev "", in the index."""
        spec = f"{folder}/" if folder else "."
        if rev:
            proc = _git("ls-tree", "--name-only", "-z", rev, "--", spec, cwd=self.top)
        else:
            proc = _git("ls-files", "-z", "--", spec, cwd=self.top)
        names = [n for n in proc.stdout.decode("utf-8", "surrogateescape").split("\0") if n]
        return [n for n in names if n.endswith(".wf") and posixpath.dirname(n) == folder]


def _parse_git(spec: str) -> tuple[str, str] | None:
    """`git:REV:PATH` -> (REV, PATH); `git::PATH` -> ("", PATH) (the index); None for anything else."""
    if not spec.startswith("git:"):
        return None
    rev, sep, path = spec[4:].partition(":")
    if not sep or not path:
        raise DiffUsageError(f"`{spec}`: write git:REV:PATH (a committed version) or git::PATH (the staged one)")
    return rev, path


def _compiled(path: Path, shown: str) -> Plan:
    from interlock.compiler import compile_path
    from interlock.dsl.render import render_concise

    result = compile_path(path, display=shown)
    if result.plan is None:
        first = next((d for d in result.diagnostics if d.is_error), None)
        detail = render_concise([first]).strip().splitlines()[0] if first is not None else "unreadable"
        raise DiffUsageError(f"{shown} does not compile ({result.errors} error{'s' * (result.errors != 1)}; "
                             f"first: {detail}); run `interlock check` on it")
    return result.plan


def _plan_json(data: bytes, shown: str) -> Plan:
    from interlock.runtime.plan import PlanError, load_plan

    try:
        return load_plan(data)
    except PlanError as exc:
        raise DiffUsageError(f"{shown}: {exc}") from None


def load_version(spec: str, repo: list[_Repo]) -> Plan:
    """The plan of one OLD/NEW argument (`repo` caches the repository, found on first use)."""
    git = _parse_git(spec)
    if git is None:
        path = Path(spec)
        if not path.exists():
            raise DiffUsageError(f"no such file: {spec}")
        if not path.is_file():
            raise DiffUsageError(f"not a file: {spec}")
        if path.suffix == ".json":
            return _plan_json(path.read_bytes(), spec)
        return _compiled(path, spec)
    rev, raw = git
    if not repo:
        repo.append(_Repo.here())
    r = repo[0]
    if rev:
        r.check_rev(rev)
    path_in_repo = r.path(raw)
    data = r.read(rev, path_in_repo)
    if path_in_repo.endswith(".json"):
        return _plan_json(data, spec)
    # `use NAME` reads sibling files: give the compiler the folder as it is in that revision, not the work tree's
    folder = posixpath.dirname(path_in_repo)
    with tempfile.TemporaryDirectory(prefix="interlock-diff-") as tmp:
        for sibling in r.siblings(rev, folder):
            if sibling != path_in_repo:
                (Path(tmp) / posixpath.basename(sibling)).write_bytes(r.read(rev, sibling))
        main = Path(tmp) / posixpath.basename(path_in_repo)
        main.write_bytes(data)
        return _compiled(main, spec)


# ---- the run ------------------------------------------------------------------------------------------------


@dataclass
class _Comparison:
    old: str
    new: str
    skipped: str | None = None
    changes: list[Change] = field(default_factory=list)
    stranded: list[Stranded] | None = None


def _comparisons(args: argparse.Namespace) -> list[tuple[str, str, bool]]:
    """(old spec, new spec, old may be absent or broken) for each comparison asked for."""
    if args.staged:
        if not args.sources:
            return []
        return [(f"git:HEAD:{_relative(p)}", f"git::{_relative(p)}", True) for p in args.sources if p.endswith(".wf")]
    if len(args.sources) != 2:
        raise DiffUsageError(f"give OLD and NEW (got {len(args.sources)} argument"
                             f"{'s' * (len(args.sources) != 1)}), or --staged PATH...")
    return [(args.sources[0], args.sources[1], False)]


def _shown(spec: str) -> str:
    head, _, path = spec.rpartition(":")
    return f"{head}:{path[2:] if path.startswith('./') else path}"


def _relative(path: str) -> str:
    """A --staged path as git reads it from the current folder."""
    if os.path.isabs(path):
        raise DiffUsageError(f"--staged: give paths relative to the current folder, not {path}")
    return path if path.startswith(("./", "../")) else f"./{path}"


def _run(args: argparse.Namespace) -> tuple[list[_Comparison], str | None]:
    from interlock.diffing import diff_plans

    repo: list[_Repo] = []
    engine: Any = None
    shown_store: str | None = None
    if args.store is not None:
        from interlock.stores.engine import display_url
        from interlock.stores.inflight import InflightError, open_readonly

        try:
            engine = open_readonly(args.store)
            shown_store = display_url(args.store)
        except InflightError as exc:
            raise DiffUsageError(f"--store: {exc}") from None
    out: list[_Comparison] = []
    try:
        for old_spec, new_spec, lenient in _comparisons(args):
            shown_old, shown_new = (_shown(old_spec), _shown(new_spec)) if lenient else (old_spec, new_spec)
            if lenient:
                if not repo:
                    repo.append(_Repo.here())
                r = repo[0]
                head = _git("rev-parse", "--verify", "--quiet", "HEAD^{commit}", cwd=r.top).returncode == 0
                if not head or not r.has("HEAD", r.path(old_spec.split(":", 2)[2])):
                    out.append(_Comparison(shown_old, shown_new, skipped="new file: HEAD has no version of it"))
                    continue
                try:
                    old = load_version(old_spec, repo)
                except DiffUsageError as exc:
                    out.append(_Comparison(shown_old, shown_new, skipped=f"HEAD's version cannot be read: {exc}"))
                    continue
            else:
                old = load_version(old_spec, repo)
            new = load_version(new_spec, repo)
            comparison = _Comparison(shown_old, shown_new, changes=diff_plans(old, new))
            if engine is not None:
                from interlock.stores.inflight import InflightError, stranded

                try:
                    comparison.stranded = stranded(engine, old, new, comparison.changes)
                except InflightError as exc:
                    raise DiffUsageError(f"--store: {exc}") from None
            out.append(comparison)
    finally:
        if engine is not None:
            engine.dispose()
    return out, shown_store


def run(args: argparse.Namespace) -> int:
    try:
        comparisons, store = _run(args)
    except DiffUsageError as exc:
        sys.stderr.write(f"interlock diff: error: {exc}\n")
        return 2
    text = _json_text(comparisons, store) if args.format == "json" else _text(comparisons, store)
    sys.stdout.write(text)
    breaking = any(c.breaking for comp in comparisons for c in comp.changes)
    strands = any(comp.stranded for comp in comparisons)
    return 1 if strands or (args.fail_on_breaking and breaking) else 0


# ---- output -------------------------------------------------------------------------------------------------

_GROUPS = {"role": "roles", "trigger": "triggers", "kind": "action kinds", "record": "records",
           "entry": "entry policy", "sequence": "dispatch sequences"}


def _group(change: Change) -> str:
    if change.workflow is not None:
        return f"workflow {change.workflow}"
    return _GROUPS.get(change.code.partition(".")[0], "plan")


def _mark(change: Change) -> str:
    if change.breaking:
        return "!"
    tail = change.code.rpartition(".")[2]
    if tail.endswith(("added", "placed")) and not tail.endswith("unplaced"):
        return "+"
    if tail.endswith(("removed", "unplaced", "dropped")):
        return "-"
    return "~"


def _lines(changes: list[Change]) -> list[str]:
    groups: dict[str, list[Change]] = {}
    for c in changes:
        groups.setdefault(_group(c), []).append(c)
    out: list[str] = []
    for name, items in groups.items():
        out.append(f"  {name}")
        for c in items:
            where = f"  ({c.source})" if c.source else ""
            out.append(f"    {_mark(c)} {c.message}  [{c.code}]{where}")
            out.extend(f"        {line}".rstrip() for line in c.text_diff or ())
    return out


def _plural(n: int, word: str) -> str:
    return f"{n} {word}{'s' * (n != 1)}"


def _sections(changes: list[Change]) -> list[tuple[str, list[Change]]]:
    """The changes under their headings: breaking first, then the other behaviour changes, then metadata."""
    return [("BREAKING", [c for c in changes if c.breaking]),
            ("behaviour", [c for c in changes if not c.breaking and c.category != "metadata"]),
            ("metadata", [c for c in changes if not c.breaking and c.category == "metadata"])]


def _text(comparisons: list[_Comparison], store: str | None) -> str:
    out: list[str] = []
    for comp in comparisons:
        out.append(f"--- {comp.old}")
        out.append(f"+++ {comp.new}")
        if comp.skipped is not None:
            out.append(f"skipped: {comp.skipped}")
            out.append("")
            continue
        sections = _sections(comp.changes)
        if not comp.changes:
            out.append("no changes")
        else:
            counts = ", ".join(f"{len(items)} {title.lower()}" for title, items in sections if items)
            out.append(f"{_plural(len(comp.changes), 'change')}: {counts}")
        for title, items in sections:
            if items:
                out.append(title)
                out.extend(_lines(items))
        if comp.stranded is not None:
            if comp.stranded:
                out.append(f"STRANDED in {store}: {_plural(len(comp.stranded), 'item')}")
                for s in comp.stranded:
                    out.append(f"  ! {s.message}  [{s.reason}]")
            else:
                out.append(f"nothing stranded in {store}")
        out.append("")
    return "\n".join(out)


def _summary(changes: list[Change]) -> dict[str, int]:
    return {"changes": len(changes), "breaking": sum(c.breaking for c in changes),
            "behaviour": sum(c.category != "metadata" for c in changes),
            "metadata": sum(c.category == "metadata" for c in changes)}


def _json_text(comparisons: list[_Comparison], store: str | None) -> str:
    items: list[dict[str, Any]] = []
    for comp in comparisons:
        items.append({
            "old": comp.old, "new": comp.new, "skipped": comp.skipped,
            "summary": {**_summary(comp.changes),
                        "stranded": None if comp.stranded is None else len(comp.stranded)},
            "changes": [c.to_json() for c in comp.changes],
            "stranded": None if comp.stranded is None else [s.to_json() for s in comp.stranded],
        })
    stranded_total = None if store is None else sum(len(c.stranded or ()) for c in comparisons)
    totals = {key: sum(i["summary"][key] for i in items) for key in ("changes", "breaking", "behaviour", "metadata")}
    doc = {"diff_version": DIFF_VERSION, "store": store, "comparisons": items,
           "summary": {**totals, "stranded": stranded_total}}
    return json.dumps(doc, indent=2, ensure_ascii=False, sort_keys=False) + "\n"
