"""The packages' import graph is acyclic and goes one way: `grammars <- dsl <- compiler -> runtime <- stores`.

Read from the source (every `import` a module runs, at its top or inside a function; imports under
`if TYPE_CHECKING:` are for type checkers only and left out), so a cycle through a lazy import is
found too.  Modules are nodes; packages are layers.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("grammars", "dsl", "compiler", "runtime", "stores")
ALLOWED: dict[str, set[str]] = {
    "grammars": set(),
    "dsl": {"grammars"},
    "compiler": {"grammars", "dsl", "runtime"},
    "runtime": set(),
    "stores": {"runtime"},
}
"""The packages each package may import (besides itself)."""


def _modules() -> dict[str, Path]:
    found = {}
    for package in PACKAGES:
        for path in sorted((ROOT / package).rglob("*.py")):
            if "migrations" in path.parts:  # alembic loads these by path, never by import
                continue
            rel = path.relative_to(ROOT).with_suffix("")
            parts = list(rel.parts)
            if parts[-1] == "__init__":
                parts.pop()
            found["interlock." + ".".join(parts)] = path
    return found


def _type_checking_lines(tree: ast.Module) -> set[int]:
    lines: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            for inner in node.body:
                for sub in ast.walk(inner):
                    if hasattr(sub, "lineno"):
                        lines.add(sub.lineno)
    return lines


def _imports(name: str, path: Path, modules: dict[str, Path]) -> Iterator[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    skip = _type_checking_lines(tree)
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    for node in ast.walk(tree):
        if getattr(node, "lineno", None) in skip:
            continue
        if isinstance(node, ast.Import):
            targets = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")
                base = base[:len(base) - node.level + 1]
                prefix = ".".join(base + ([node.module] if node.module else []))
            else:
                prefix = node.module or ""
            targets = [prefix] + [f"{prefix}.{alias.name}" for alias in node.names]
        else:
            continue
        for target in targets:
            while target and target not in modules:
                target = target.rpartition(".")[0]
            if target and target != name:
                yield target


def _graph() -> dict[str, set[str]]:
    modules = _modules()
    return {name: set(_imports(name, path, modules)) for name, path in modules.items()}


def _layer(module: str) -> str:
    return module.split(".")[1]


def test_every_import_goes_the_way_the_layers_allow() -> None:
    wrong = sorted(f"{a} -> {b}" for a, targets in _graph().items() for b in targets
                   if _layer(b) != _layer(a) and _layer(b) not in ALLOWED[_layer(a)])
    assert not wrong, "imports against grammars <- dsl <- compiler -> runtime <- stores:\n" + "\n".join(wrong)


def test_the_module_graph_has_no_cycle() -> None:
    graph = _graph()
    # a package imports its own modules from its __init__ (its public API): edges into the package's own
    # facade are the only ones left out, since every module of a package is below its facade
    for name in graph:
        graph[name] = {t for t in graph[name] if not (t.count(".") == 1 and _layer(t) == _layer(name))}
    state: dict[str, int] = {}
    stack: list[str] = []
    cycles: list[list[str]] = []

    def visit(node: str) -> None:
        state[node] = 1
        stack.append(node)
        for target in sorted(graph.get(node, ())):
            if state.get(target) == 1:
                cycles.append([*stack[stack.index(target):], target])
            elif target not in state:
                visit(target)
        stack.pop()
        state[node] = 2

    for node in sorted(graph):
        if node not in state:
            visit(node)
    assert not cycles, "import cycles:\n" + "\n".join(" -> ".join(c) for c in cycles)


def test_the_dsl_names_the_levels_the_runtime_defines() -> None:
    """The vocabularies are defined once for the runtime and the compiler (`interlock.runtime.vocabulary`); the DSL,
    which may not import the runtime, spells the record levels in its IR: they must be the same words."""
    from typing import get_args

    from interlock.dsl import ir
    from interlock.runtime.vocabulary import LEVELS

    assert get_args(ir.Level) == LEVELS
