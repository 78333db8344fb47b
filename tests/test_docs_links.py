"""The documentation lives in the repository: every relative link of the README, `docs/` and
`examples/README.md` resolves to a file of the checkout (and its `#anchor` to a heading there),
no file points outside the repository at the design folder it grew from, and the language
reference's prelude table says what `std.wf` declares.
"""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import pytest

from interlock.compiler import compile_source
from interlock.dsl import SourceFile

ROOT = Path(__file__).resolve().parents[1]
DOCS = sorted([ROOT / "README.md", ROOT / "examples" / "README.md", *(ROOT / "docs").rglob("*.md")])
# Built from pieces so that this file does not match itself.
OUTSIDE = ("../" + "shared", "shared" + "/design", "shared" + "/reference",
           # the design folder's contracts by name: the repository cites its own docs/ instead
           "RUNTIME" + ".md", "LANGUAGE" + ".md", "ARCHITECTURE" + ".md")
SKIP_DIRS = {".git", ".venv", "venv", "build", "dist", "__pycache__", ".mypy_cache", ".pytest_cache", ".ruff_cache",
             ".hypothesis", "node_modules"}

LINK = re.compile(r"(?<!!)\[(?:[^\]]|\][^(])*?\]\(([^)\s]+)(?:\s+\"[^\"]*\")?\)")
CODE_BLOCK = re.compile(r"^(```|~~~).*?^\1", re.S | re.M)
INLINE_CODE = re.compile(r"`[^`\n]*`")


def _prose(text: str) -> str:
    """The text without code blocks and inline code (a link shown as code is not a link)."""
    return INLINE_CODE.sub("", CODE_BLOCK.sub("", text))


def _slug(heading: str) -> str:
    """GitHub's anchor for a heading: lower case, punctuation dropped, spaces to hyphens."""
    text = re.sub(r"`([^`]*)`", r"\1", heading.strip()).lower()
    text = re.sub(r"[^\w\- ]", "", text)
    return text.replace(" ", "-")


def _anchors(path: Path) -> set[str]:
    text = CODE_BLOCK.sub("", path.read_text(encoding="utf-8"))
    seen: dict[str, int] = {}
    out = set()
    for heading in re.findall(r"^#{1,6}\s+(.+?)\s*#*\s*$", text, re.M):
        slug = _slug(heading)
        n = seen.get(slug, 0)
        seen[slug] = n + 1
        out.add(slug if n == 0 else f"{slug}-{n}")
    return out


def _links(path: Path) -> list[str]:
    return [m.group(1) for m in LINK.finditer(_prose(path.read_text(encoding="utf-8")))]


def test_the_docs_exist_and_link() -> None:
    for name in ("language.md", "runtime.md", "scenarios.md", "diagnostics.md"):
        assert (ROOT / "docs" / name).is_file(), name
    readme = _links(ROOT / "README.md")
    for target in ("docs/language.md", "docs/runtime.md", "docs/scenarios.md", "docs/diagnostics.md"):
        assert any(link.split("#")[0] == target for link in readme), f"the README links {target}"


@pytest.mark.parametrize("doc", DOCS, ids=lambda p: p.relative_to(ROOT).as_posix())
def test_relative_links_resolve(doc: Path) -> None:
    problems = []
    for link in _links(doc):
        if re.match(r"^[a-z][a-z0-9+.-]*:", link):  # https:, mailto: ...: not a file of the repository
            continue
        target, _, anchor = link.partition("#")
        path = (doc.parent / target).resolve() if target else doc
        if ROOT not in (path, *path.parents):
            problems.append(f"{link}: points outside the repository")
            continue
        if not path.exists():
            problems.append(f"{link}: no such file")
            continue
        if anchor and path.suffix == ".md" and anchor not in _anchors(path):
            problems.append(f"{link}: no heading `#{anchor}` in {path.relative_to(ROOT)}")
    assert not problems, f"{doc.relative_to(ROOT)}: " + "; ".join(problems)


def _repository_files() -> list[Path]:
    if shutil.which("git") and (ROOT / ".git").exists():
        proc = subprocess.run(["git", "-C", str(ROOT), "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
                              capture_output=True, check=True)
        names = [n for n in proc.stdout.decode("utf-8").split("\0") if n]
        files = [ROOT / n for n in names]
    else:
        files = [p for p in ROOT.rglob("*") if p.is_file()]
    return [p for p in files if p.is_file() and not SKIP_DIRS.intersection(p.relative_to(ROOT).parts)
            and not any(part.endswith(".egg-info") for part in p.relative_to(ROOT).parts)]


def test_nothing_points_at_the_design_folder_outside_the_repository() -> None:
    offenders = []
    for path in _repository_files():
        try:
            text = path.read_text(encoding="utf-8")
        except (UnicodeDecodeError, OSError):
            continue  # binary files
        for line_no, line in enumerate(text.splitlines(), start=1):
            if any(needle in line for needle in OUTSIDE):
                offenders.append(f"{path.relative_to(ROOT)}:{line_no}: {line.strip()[:100]}")
    assert not offenders, "files that cite documents outside the repository:\n" + "\n".join(offenders)


def _table(text: str, header: str) -> list[list[str]]:
    """The rows of the markdown table whose header row starts with `header`."""
    lines = text.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith(header))
    rows = []
    for line in lines[start + 2:]:
        if not line.startswith("|"):
            break
        rows.append([cell.strip() for cell in line.strip().strip("|").split("|")])
    return rows


def test_the_prelude_table_is_what_std_wf_declares() -> None:
    """docs/language.md §8 lists every prelude kind with its class, parameters, triggers and entry placement."""
    result = compile_source(SourceFile("probe.wf", ""))
    assert result.plan is not None
    plan = result.plan
    generic = ("on_comment", "on_blocker_resolved", "on_children_completed", "on_approval_resolved",
               "on_heartbeat", "on_budget_alert", "on_agent_error")
    rows = _table((ROOT / "docs" / "language.md").read_text(encoding="utf-8"), "| kind | class |")
    documented = {row[0].strip("`"): row for row in rows}
    assert sorted(documented) == sorted(k.name for k in plan.kinds)
    for kind in plan.kinds:
        _, action_class, params, triggers, placement = documented[kind.name]
        assert action_class == kind.action_class, kind.name
        want_triggers = [t for t in kind.triggers if t not in generic]
        if any(t in kind.triggers for t in generic):
            assert set(generic) <= set(kind.triggers), kind.name  # "generic" means all seven
            want_triggers.append("generic")
        assert [t.strip() for t in triggers.split(",")] == want_triggers, kind.name
        names = re.findall(r"`(\w+):", params)
        assert names == [p.name for p in kind.params], kind.name
        for param in kind.params:
            cell = next(c for c in re.findall(r"`([^`]*)`", params) if c.startswith(f"{param.name}:"))
            assert cell.split(":", 1)[1].split("=")[0].strip().rstrip("?") == param.type.rstrip("?"), kind.name
            assert cell.rstrip().endswith("?") == (param.type.endswith("?")), (kind.name, param.name)
            assert ("=" in cell) == (param.default is not None and not param.type.endswith("?")), (kind.name, param)
        entry = plan.entry_policy
        expected = "exclude" if kind.name in entry.exclude else "dispatch" if kind.name in entry.dispatch else "—"
        assert placement == expected, kind.name
    assert sorted(plan.roles) == sorted(re.findall(r"`(\w+)`", re.search(
        r"\*\*Roles\.\*\*(.*?)\n\n", (ROOT / "docs" / "language.md").read_text(encoding="utf-8"), re.S)
        .group(1)))  # type: ignore[union-attr]
