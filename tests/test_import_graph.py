"""The packages' import graph is acyclic and goes one way: `grammars <- dsl <- compiler -> runtime <- stores`.

Read from the source (every `import` a module runs, at its top or inside a function), so a cycle through a lazy
import is found too.  Imports under `if TYPE_CHECKING:` are for type checkers only: the layers' direction leaves
them out, but the cycle count takes them in (a cycle of annotations is still two modules that cannot be read one
without the other), over every folder, the CLI's and tools' `interlock/` included.  Modules are nodes; packages
are layers.  `interlock.errors` (the root of the user's errors) imports nothing: every layer may import it.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("grammars", "dsl", "compiler", "runtime", "stores")
FOLDERS = (*PACKAGES, "interlock")
"""Every folder of the distribution: `interlock/` installs as the top package itself."""
ALLOWED: dict[str, set[str]] = {
    "grammars": set(),
    "dsl": {"grammars"},
    "compiler": {"grammars", "dsl", "runtime"},
    "runtime": set(),
    "stores": {"runtime"},
}
"""The packages each package may import (besides itself)."""


def _modules(folders: tuple[str, ...] = PACKAGES) -> dict[str, Path]:
    found = {}
    for package in folders:
        for path in sorted((ROOT / package).rglob("*.py")):
            if "migrations" in path.parts or "__pycache__" in path.parts:  # alembic loads these by path
                continue
            rel = path.relative_to(ROOT).with_suffix("")
            parts = list(rel.parts)
            if parts[-1] == "__init__":
                parts.pop()
            if parts and parts[0] == "interlock":  # the top folder is the package `interlock` itself
                parts.pop(0)
            found[".".join(["interlock", *parts])] = path
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


def _imports(name: str, path: Path, modules: dict[str, Path], type_checking: bool = False) -> Iterator[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    skip = set() if type_checking else _type_checking_lines(tree)
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


def _graph(folders: tuple[str, ...] = PACKAGES, type_checking: bool = False) -> dict[str, set[str]]:
    modules = _modules(folders)
    return {name: set(_imports(name, path, modules, type_checking)) for name, path in modules.items()}


def _layer(module: str) -> str:
    return module.split(".")[1] if "." in module else ""


def test_every_import_goes_the_way_the_layers_allow() -> None:
    wrong = sorted(f"{a} -> {b}" for a, targets in _graph().items() for b in targets
                   if _layer(b) != _layer(a) and _layer(b) not in ALLOWED[_layer(a)])
    assert not wrong, "imports against grammars <- dsl <- compiler -> runtime <- stores:\n" + "\n".join(wrong)


FEATURES = ("interlock.diffing", "interlock.diagrams")
"""The feature packages of the top folder (`interlock diff`'s plan comparison, `interlock graph`'s diagrams):
libraries a command, a test or a host calls, named for what they do."""


def test_the_feature_packages_are_libraries_under_their_commands() -> None:
    """A feature package reads plans (the runtime's models, the compiler's guard text) and nothing above or beside
    it: not the CLI, the commands, the stores, the language server or the kandev bridge (`TYPE_CHECKING` counted)."""
    graph = _graph(FOLDERS, type_checking=True)
    allowed = ("interlock.runtime", "interlock.compiler", "interlock.errors")

    def inside(module: str, package: str) -> bool:
        return module == package or module.startswith(package + ".")

    wrong = sorted(f"{a} -> {b}" for a, targets in graph.items() for feature in FEATURES if inside(a, feature)
                   for b in targets if not inside(b, feature) and not any(inside(b, p) for p in allowed))
    assert set(FEATURES) <= set(graph)
    assert not wrong, "a feature package imports above or beside itself:\n" + "\n".join(wrong)

def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """One cycle through each back edge of a depth-first walk (none when the graph is acyclic).  A package imports
    its own modules from its __init__ (its public API), and the facade `interlock` names every layer: edges into
    a facade from below it are left out, since every module of a package is below its facade."""
    def facade_of(name: str, target: str) -> bool:
        return target == "interlock" or (target.count(".") == 1 and _layer(target) == _layer(name))

    graph = {name: {t for t in targets if not facade_of(name, t)} for name, targets in graph.items()}
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
    return cycles


def test_the_module_graph_has_no_cycle() -> None:
    cycles = _cycles(_graph())
    assert not cycles, "import cycles:\n" + "\n".join(" -> ".join(c) for c in cycles)


def test_no_cycle_even_through_type_checking_imports_in_any_folder() -> None:
    graph = _graph(FOLDERS, type_checking=True)
    assert {"interlock.cli", "interlock.tools.check", "interlock.stores.sql", "interlock.runtime.plan"} <= set(graph)
    cycles = _cycles(graph)
    assert not cycles, "import cycles (TYPE_CHECKING imports counted):\n" + "\n".join(" -> ".join(c) for c in cycles)


def test_the_cycle_count_sees_a_type_checking_cycle(tmp_path: Path) -> None:
    """Control: two modules that import each other only for annotations are a cycle for the count."""
    (tmp_path / "a.py").write_text("from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from .b import B\n",
                                   encoding="utf-8")
    (tmp_path / "b.py").write_text("def f():\n    from .a import A\n", encoding="utf-8")
    modules = {"interlock.x.a": tmp_path / "a.py", "interlock.x.b": tmp_path / "b.py"}
    graph = {name: set(_imports(name, path, modules, type_checking=True)) for name, path in modules.items()}
    assert _cycles(graph) == [["interlock.x.a", "interlock.x.b", "interlock.x.a"]]
    without = {name: set(_imports(name, path, modules)) for name, path in modules.items()}
    assert _cycles(without) == []


def test_the_errors_root_imports_nothing() -> None:
    """Every layer, the runtime included, may import `interlock.errors`: it must load no other module."""
    tree = ast.parse((ROOT / "interlock" / "errors.py").read_text(encoding="utf-8"))
    imported = [ast.unparse(n) for n in ast.walk(tree) if isinstance(n, ast.Import | ast.ImportFrom)]
    assert imported == ["from __future__ import annotations"]


def test_the_dsl_names_the_levels_the_runtime_defines() -> None:
    """The vocabularies are defined once for the runtime and the compiler (`interlock.runtime.vocabulary`); the DSL,
    which may not import the runtime, spells the record levels in its IR: they must be the same words."""
    from typing import get_args

    from interlock.dsl import ir
    from interlock.runtime.vocabulary import LEVELS

    assert get_args(ir.Level) == LEVELS
