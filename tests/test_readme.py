"""The README must stay true: its `.wf` snippets compile and its commands and flags exist."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

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
    # a vocabulary snippet (roles, kinds, no workflow) gets only IL513, the warning that its plan runs nothing
    allowed = [] if "workflow " in SNIPPETS[index] else ["IL513"]
    assert [d.code for d in result.diagnostics] == allowed
    assert result.plan is not None


def _parsers() -> tuple[Any, dict[str, Any]]:
    """The CLI's top-level parser and its subcommand parsers by name."""
    built = _parser()
    if isinstance(built, tuple):
        return built[0], dict(built[1])
    return built, dict(built._subparsers._group_actions[0].choices)


def test_quick_start_is_two_commands_using_real_subcommands() -> None:
    block = re.search(r"## Quick start.*?```sh\n(.*?)```", TEXT, re.S)
    assert block is not None
    commands = [line for line in block.group(1).splitlines() if line.strip()]
    assert len(commands) == 2
    assert "pip install -e '.[test]'" in commands[1] and commands[1].rstrip().endswith("pytest")
    subcommands = set(_parsers()[1])
    for used in re.findall(r"interlock (\w+)", commands[0]):
        assert used in subcommands


def test_documented_check_flags_exist() -> None:
    top, subcommands = _parsers()
    assert "check" in top.format_help()
    check = subcommands["check"]
    options = {opt for action in check._actions for opt in action.option_strings}
    for flag in ("--format", "-W", "-q", "--stdin-filename"):
        assert flag in options


PYTHON_SNIPPETS = re.findall(r"```python\n(.*?)```", TEXT, re.S)
# the output the README shows for its embedding example: the ```text block right before it
SHOWN_OUTPUT = re.search(r"```text\n(.*?)```\s*```python\n", TEXT, re.S)


def _run_example(cwd: Path) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k not in {"PYTHONPATH", "PYTHONSTARTUP"}}
    return subprocess.run([sys.executable, "example.py"], cwd=cwd, env=env, capture_output=True, text=True,
                          timeout=120, check=False)


def test_embedding_example_runs_as_written_twice(tmp_path: Path) -> None:
    """The README's embedding example, saved as a file and run from a folder of its own (no `examples/`, no
    database left behind), twice in a row: it prints what the README says it prints, with the host's
    executor really called (on a comment and on the arrival at Review, not on the redelivery)."""
    assert PYTHON_SNIPPETS, "the README shows how to embed the runtime"
    assert SHOWN_OUTPUT is not None, "the README shows what the embedding example prints"
    (tmp_path / "example.py").write_text(PYTHON_SNIPPETS[0], encoding="utf-8")
    outputs = []
    for _ in range(2):
        proc = _run_example(tmp_path)
        assert proc.returncode == 0, proc.stderr
        outputs.append(proc.stdout)
    assert outputs[0] == outputs[1], "a second run behaves like the first"
    lines = outputs[0].splitlines()
    host_calls = [line for line in lines if line.startswith("host: notify")]
    assert host_calls == ["host: notify #dev (on_comment at work)", "host: notify #reviews (on_enter at review)"]
    assert [line for line in lines if line.startswith("arrival")] == [
        "arrival #1: None -> work (creation)", "arrival #2: work -> review (engine_transition)",
        "arrival #3: review -> done (decision)"]
    assert "step: done" in lines
    assert [line for line in lines if line.startswith("run:")] == ["run: ceo-1 agent_error", "run: rev-a review_started"]
    assert "problems: []" in lines
    assert sorted(p.name for p in tmp_path.iterdir()) == ["example.py"], "nothing written to the working folder"
    assert outputs[0] == SHOWN_OUTPUT.group(1), "the README's shown output is what the example prints"


def test_embedding_example_imports_only_public_names() -> None:
    """The example imports from the facade alone, and only names it exports (`interlock.__all__`): a host needs no
    deep module."""
    import ast

    import interlock

    tree = ast.parse(PYTHON_SNIPPETS[0])
    imported = [(node.module, alias.name) for node in ast.walk(tree) if isinstance(node, ast.ImportFrom)
                for alias in node.names]
    assert ("interlock", "Runtime") in imported
    bare = [alias.name for node in ast.walk(tree) if isinstance(node, ast.Import) for alias in node.names]
    assert not [name for name in bare if name.split(".")[0] == "interlock"], "an `import interlock.…` of a module"
    for module, name in imported:
        if module is None or module.split(".")[0] != "interlock":
            continue  # the standard library
        assert module == "interlock", f"the example imports from `{module}`, not from the facade `interlock`"
        assert name in interlock.__all__, f"`{name}` is not exported by `interlock`"
