"""The installed packages and the checkout's sources in, import-direction verdicts out.

Import direction (docs/architecture.md): `grammars <- dsl <- compiler -> runtime <- stores`.  The
runtime never loads lark, the DSL or the compiler, and `interlock check` never loads
SQLAlchemy, alembic, loguru, the runtime's API or the other commands (it must start fast in a
pre-commit hook).  The dynamic checks run in
fresh interpreters (`-I`, cwd a temp dir) so neither this process's imports nor the
checkout on `sys.path` can mask or fake a violation; the static checks read the sources
with `ast`, so they also catch imports on paths a test never executes (including
`if TYPE_CHECKING:` blocks, which still point the dependency the wrong way).
"""

from __future__ import annotations

import ast
import json
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
EXAMPLES = REPO / "examples"
# top-level folder -> package (mirrors setup.py)
ROOTS = {
    "interlock": "interlock",
    "grammars": "interlock.grammars",
    "dsl": "interlock.dsl",
    "compiler": "interlock.compiler",
    "runtime": "interlock.runtime",
    "stores": "interlock.stores",
}
# What each layer must never import (derived from the arrows above).
FORBIDDEN = {
    "dsl": ("interlock.compiler", "interlock.runtime", "interlock.stores"),
    "compiler": ("interlock.stores",),
    "runtime": ("lark", "interlock.dsl", "interlock.compiler", "interlock.stores", "interlock.grammars"),
    "stores": ("lark", "interlock.dsl", "interlock.compiler", "interlock.grammars"),
}
RUNTIME_MUST_NOT_LOAD = ("lark", "interlock.dsl", "interlock.compiler")
CHECK_MUST_NOT_LOAD = ("sqlalchemy", "alembic", "interlock.commands", "interlock.runtime.api", "loguru", "pygls",
                       "lsprotocol", "interlock.lsp",
                       # the record sinks and the OpenTelemetry adapter (ADR 0048), the asyncio runtime (ADR 0049)
                       "opentelemetry", "interlock.runtime.sinks", "interlock.runtime.otel", "interlock.runtime.aio",
                       # the feature packages of `interlock diff` and `interlock graph` (ADR 0055)
                       "interlock.diffing", "interlock.diagrams",
                       # the commands' modules: the CLI imports the module of the command it runs, no other
                       *(f"interlock.tools.{m}" for m in ("compile", "simulate", "test", "db", "diff", "explain",
                                                          "exports", "fmt", "graph", "imports", "lsp", "migrate",
                                                          "schema")))


def _run_probe(code: str, cwd: Path) -> dict[str, object]:
    proc = subprocess.run([sys.executable, "-I", "-c", textwrap.dedent(code)], cwd=cwd, capture_output=True,
                          text=True, timeout=120, check=False)
    assert proc.returncode == 0, f"probe failed (exit {proc.returncode}):\n{proc.stdout}\n{proc.stderr}"
    result: dict[str, object] = json.loads(proc.stdout.strip().splitlines()[-1])
    return result


_LOADED_HELPER = """
import sys
def loaded(prefixes):
    return sorted(m for m in sys.modules if any(m == p or m.startswith(p + ".") for p in prefixes))
"""


def _runtime_probe(extra_import: str = "") -> str:
    return _LOADED_HELPER + f"""
import importlib, json, pkgutil
import interlock.runtime, interlock.runtime.plan
{extra_import}
culprits = {{}}
names = []
for info in pkgutil.walk_packages(interlock.runtime.__path__, "interlock.runtime."):
    before = set(loaded({RUNTIME_MUST_NOT_LOAD!r}))
    importlib.import_module(info.name)
    names.append(info.name)
    new = sorted(set(loaded({RUNTIME_MUST_NOT_LOAD!r})) - before)
    if new:
        culprits[info.name] = new
print(json.dumps({{"file": interlock.runtime.__file__, "modules": names, "culprits": culprits,
                  "loaded": loaded({RUNTIME_MUST_NOT_LOAD!r})}}))
"""


def _checkout_modules(folder: str) -> set[str]:
    base = REPO / folder
    names = set()
    for path in base.rglob("*.py"):
        if "__pycache__" in path.parts:
            continue
        rel = path.relative_to(base).with_suffix("")
        parts = rel.parts[:-1] if rel.name == "__init__" else rel.parts
        # only modules reachable as packages (every folder on the way has an __init__.py)
        if all((base.joinpath(*rel.parts[:i]) / "__init__.py").is_file() for i in range(len(rel.parts))):
            names.add(".".join((ROOTS[folder], *parts)))
    return names


# -- dynamic --------------------------------------------------------------------------------


def test_runtime_loads_no_front_end(tmp_path: Path) -> None:
    found = _run_probe(_runtime_probe(), tmp_path)
    assert found["loaded"] == [], (
        f"importing the runtime loaded {found['loaded']}; first loaded by: {found['culprits']}")
    if Path(str(found["file"])).resolve().is_relative_to(REPO / "runtime"):
        expected = _checkout_modules("runtime") - {"interlock.runtime"}
        modules = found["modules"]
        assert isinstance(modules, list)
        assert set(modules) == expected, "the probe did not import every runtime module of the checkout"


def test_runtime_probe_detects_a_violation(tmp_path: Path) -> None:
    """Control: the same probe does see the front end once something imports it."""
    found = _run_probe(_runtime_probe("import interlock.compiler"), tmp_path)
    loaded = found["loaded"]
    assert isinstance(loaded, list)
    assert {"lark", "interlock.dsl", "interlock.compiler"} <= set(loaded)


def test_check_loads_no_database_layer(tmp_path: Path) -> None:
    bad = tmp_path / "bad.wf"
    bad.write_text((EXAMPLES / "kanban.wf").read_text(encoding="utf-8").replace("auto_start_agent", "nope", 1),
                   encoding="utf-8")
    code = _LOADED_HELPER + f"""
import contextlib, io, json
from interlock.cli import main
statuses = {{}}
for fmt in ("full", "concise", "json", "sarif", "github"):
    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
        statuses[fmt] = [main(["check", "--format", fmt, {str(EXAMPLES)!r}]),
                         main(["check", "--format", fmt, {str(bad)!r}])]
print(json.dumps({{"statuses": statuses, "loaded": loaded({CHECK_MUST_NOT_LOAD!r}),
                  "compiler": "interlock.compiler" in sys.modules}}))
"""
    found = _run_probe(code, tmp_path)
    assert found["compiler"] is True, "the check path did not run the compiler"
    statuses = found["statuses"]
    assert isinstance(statuses, dict)
    assert all(pair == [0, 1] for pair in statuses.values()), statuses
    assert found["loaded"] == [], f"`interlock check` loaded {found['loaded']}"


def test_a_runtime_without_opentelemetry_configured_never_loads_it(tmp_path: Path) -> None:
    """Issue 21: the OpenTelemetry adapter costs `fire` nothing when not configured. A runtime on its default sink
    that creates, fires, dispatches, records a decision and ticks loads neither `interlock.runtime.otel` nor
    `opentelemetry` (both installed here: the `otel` extra is in `test`)."""
    code = _LOADED_HELPER + f"""
import json
from interlock import Runtime, compile_path, open_store
plan = compile_path({str(EXAMPLES / "office_default.wf")!r}).plan
rt = Runtime(plan, open_store("sqlite://"))
rt.create_task("T1", "office_default")
rt.fire("on_turn_complete", "T1", session_id="S1", operation_id="turn:1")
rt.record_decision("T1", verdict="approved", agent="rev-a", role="reviewer")
rt.dispatch("agent_error", {{"task_id": "T1", "session_id": "", "execution_id": "E", "agent_profile_id": "",
                            "error_message": "x", "user_initiated": False}})
rt.tick()
import importlib.util
print(json.dumps({{"loaded": loaded(("opentelemetry", "interlock.runtime.otel")),
                  "installed": importlib.util.find_spec("opentelemetry") is not None}}))
"""
    found = _run_probe(code, tmp_path)
    assert found["installed"] is True, "the probe needs opentelemetry installed to show it is not loaded"
    assert found["loaded"] == [], f"a runtime without OpenTelemetry configured loaded {found['loaded']}"


# -- static ---------------------------------------------------------------------------------


def _module_name(folder: str, path: Path) -> tuple[str, bool]:
    rel = path.relative_to(REPO / folder).with_suffix("")
    is_pkg = rel.name == "__init__"
    parts = rel.parts[:-1] if is_pkg else rel.parts
    return ".".join((ROOTS[folder], *parts)), is_pkg


def _imports(folder: str, path: Path, text: str | None = None) -> list[tuple[int, str]]:
    """Every module a file imports, relative imports resolved, `from a import b` giving a and a.b."""
    module, is_pkg = _module_name(folder, path)
    package = module if is_pkg else module.rpartition(".")[0]
    source = path.read_text(encoding="utf-8") if text is None else text
    tree = ast.parse(source, filename=str(path))
    found: list[tuple[int, str]] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found.extend((node.lineno, alias.name) for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                anchor = package.split(".")
                anchor = anchor[: len(anchor) - (node.level - 1)]
                base = ".".join([*anchor, *([node.module] if node.module else [])])
            else:
                base = node.module or ""
            found.append((node.lineno, base))
            found.extend((node.lineno, f"{base}.{alias.name}") for alias in node.names if alias.name != "*")
        elif (isinstance(node, ast.Call) and node.args and isinstance(node.args[0], ast.Constant)
              and isinstance(node.args[0].value, str)
              and ((isinstance(node.func, ast.Attribute) and node.func.attr == "import_module")
                   or (isinstance(node.func, ast.Name) and node.func.id in {"import_module", "__import__"}))):
            found.append((node.lineno, node.args[0].value))
    return found


def _violations(folder: str) -> list[str]:
    forbidden = FORBIDDEN[folder]
    problems = []
    for path in sorted((REPO / folder).rglob("*.py")):
        if "__pycache__" in path.parts:
            continue
        for line, name in _imports(folder, path):
            if any(name == f or name.startswith(f + ".") for f in forbidden):
                problems.append(f"{path.relative_to(REPO)}:{line}: imports {name}")
    return problems


@pytest.mark.parametrize("folder", sorted(FORBIDDEN))
def test_static_import_direction(folder: str) -> None:
    assert (REPO / folder / "__init__.py").is_file()
    assert _violations(folder) == []


def test_static_check_resolves_relative_imports() -> None:
    """Control: relative and dynamic imports inside runtime/ resolve to the modules they name."""
    fake = REPO / "runtime" / "sub" / "mod.py"
    text = ("from ...compiler import passes\nfrom ... import dsl\nfrom . import sibling\n"
            "import importlib\nimportlib.import_module('lark')\n")
    names = {name for _, name in _imports("runtime", fake, text)}
    assert {"interlock.compiler", "interlock.compiler.passes", "interlock.dsl", "interlock.runtime.sub.sibling",
            "lark"} <= names
    assert "interlock.runtime.dsl" not in names


def test_grammars_hold_no_python_beyond_init() -> None:
    python = sorted(p.relative_to(REPO).as_posix() for p in (REPO / "grammars").rglob("*.py")
                    if "__pycache__" not in p.parts)
    assert python == ["grammars/__init__.py"]
    assert (REPO / "grammars" / "wf.lark").is_file()
