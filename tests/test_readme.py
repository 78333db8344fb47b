"""The README must stay true: its `.wf` snippets compile and its commands and flags exist."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from interlock.cli import _parser
from interlock.compiler import compile_source
from interlock.dsl import SourceFile

README = Path(__file__).resolve().parents[1] / "README.md"
TEXT = README.read_text(encoding="utf-8")
SNIPPETS = re.findall(r"```wf\n(.*?)```", TEXT, re.S)


def test_readme_has_wf_snippets() -> None:
    assert len(SNIPPETS) >= 2


@pytest.mark.parametrize("index", range(len(SNIPPETS)))
def test_wf_snippet_compiles_clean(index: int) -> None:
    result = compile_source(SourceFile(f"README.md#snippet{index}", SNIPPETS[index]))
    assert [d.code for d in result.diagnostics] == []
    assert result.plan is not None


def test_quick_start_is_two_commands_using_real_subcommands() -> None:
    block = re.search(r"## Quick start.*?```sh\n(.*?)```", TEXT, re.S)
    assert block is not None
    commands = [line for line in block.group(1).splitlines() if line.strip()]
    assert len(commands) == 2
    assert "pip install -e '.[test]'" in commands[1] and commands[1].rstrip().endswith("pytest")
    subcommands = set(_parser()._subparsers._group_actions[0].choices)  # type: ignore[union-attr]
    for used in re.findall(r"interlock (\w+)", commands[0]):
        assert used in subcommands


def test_documented_check_flags_exist() -> None:
    help_text = _parser().format_help()
    assert "check" in help_text
    check = _parser()._subparsers._group_actions[0].choices["check"]  # type: ignore[union-attr]
    options = {opt for action in check._actions for opt in action.option_strings}
    for flag in ("--format", "-W", "-q", "--stdin-filename"):
        assert flag in options


PYTHON_SNIPPETS = re.findall(r"```python\n(.*?)```", TEXT, re.S)


def test_embedding_example_runs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                capsys: pytest.CaptureFixture[str]) -> None:
    """The README's complete embedding example runs as written (from a folder holding `examples/`)."""
    import shutil

    assert PYTHON_SNIPPETS, "the README shows how to embed the runtime"
    shutil.copytree(README.parent / "examples", tmp_path / "examples")
    monkeypatch.chdir(tmp_path)
    namespace: dict[str, object] = {"__name__": "readme_example"}
    exec(compile(PYTHON_SNIPPETS[0], "README.md", "exec"), namespace)
    out = capsys.readouterr().out
    assert "'entries_dispatched': 3" in out  # creation, review, approval
    store = namespace["store"]
    runs = store.runs("T1")  # type: ignore[attr-defined]
    # the CEO is cast as reviewer; as approver the runner is (the CEO holds a seat already)
    assert [(r.agent, r.reason) for r in runs] == [("ceo-1", "review_started"), ("coder", "approval_started")]
    assert store.get_task("T1").step_id == "approval"  # type: ignore[attr-defined]
    close = getattr(store, "close", None)
    if close:
        close()
