"""The checkout in, a verdict on the wheel and the installs out: the built wheel holds exactly
`interlock/` and its dist-info, with every package and data file of the six top-level folders,
and the CLI runs from a clean venv (outside the checkout and from the root of a clone: ADR 0018) and from
the editable install outside the checkout.

The wheel is built from a copy of the checkout's tracked and untracked-but-not-ignored files,
as a fresh clone would see them, so a stale `build/` folder cannot leak old modules into the
wheel and the checkout is never written to.  Building and installing needs the package index
(setuptools for the isolated build, the runtime dependencies for the clean venv).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tomllib
import zipfile
from collections.abc import Iterator
from importlib import metadata
from pathlib import Path, PurePosixPath

import pytest

pytestmark = pytest.mark.slow

REPO = Path(__file__).resolve().parents[1]
# top-level folder -> the package it installs as (mirrors setup.py's ROOTS)
ROOTS = {
    "interlock": "interlock",
    "grammars": "interlock.grammars",
    "dsl": "interlock.dsl",
    "compiler": "interlock.compiler",
    "runtime": "interlock.runtime",
    "stores": "interlock.stores",
}
REQUIRED_DATA = ("interlock/grammars/wf.lark", "interlock/compiler/prelude/std.wf", "interlock/py.typed")
# Files in package folders that are documentation, not needed at run time.
NOT_SHIPPED_SUFFIXES = (".md", ".pyc")
EXAMPLE = REPO / "examples" / "office_default.wf"
VERSION = tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))["project"]["version"]

BUILD_TIMEOUT = 300
INSTALL_TIMEOUT = 600
RUN_TIMEOUT = 60


def _run(cmd: list[str], *, cwd: Path, timeout: float = RUN_TIMEOUT,
         env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(cmd, cwd=cwd, env=env if env is not None else _clean_env(), timeout=timeout,
                          capture_output=True, text=True, check=False)


def _clean_env() -> dict[str, str]:
    """The environment minus anything that could put the checkout or the dev venv on the path."""
    env = {k: v for k, v in os.environ.items()
           if k not in {"PYTHONPATH", "PYTHONHOME", "PYTHONSTARTUP", "VIRTUAL_ENV", "PYTHONSAFEPATH"}}
    env["NO_COLOR"] = "1"
    return env


def _describe(proc: subprocess.CompletedProcess[str]) -> str:
    return f"exit {proc.returncode}\n--- stdout ---\n{proc.stdout}\n--- stderr ---\n{proc.stderr}"


def _checkout_files() -> list[str]:
    """Relative paths of the files a fresh clone (plus uncommitted, unignored work) would hold."""
    if shutil.which("git") and (REPO / ".git").exists():
        proc = subprocess.run(["git", "-C", str(REPO), "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
                              capture_output=True, check=True)
        names = [n for n in proc.stdout.decode("utf-8").split("\0") if n]
        return sorted(n for n in names if (REPO / n).is_file())  # deleted-but-tracked files drop out
    skip = {".git", ".venv", "build", "dist", "__pycache__", ".mypy_cache", ".pytest_cache", ".ruff_cache",
            ".hypothesis"}
    return sorted(p.relative_to(REPO).as_posix() for p in REPO.rglob("*")
                  if p.is_file() and not skip.intersection(p.relative_to(REPO).parts)
                  and not p.name.endswith(".egg-info"))


SHIPPED_DOCS = ("diagnostics.md", "kandev.md")  # copied into interlock/docs/ by setup.py's build step (ADR 0039)


def _expected_in_wheel(rel: str) -> str | None:
    """Where a checkout file should land in the wheel, or None if it is not package content."""
    if rel in {f"docs/{name}" for name in SHIPPED_DOCS}:
        return f"interlock/{rel}"
    parts = PurePosixPath(rel).parts
    if len(parts) < 2 or parts[0] not in ROOTS:
        return None
    if "__pycache__" in parts or rel.endswith(NOT_SHIPPED_SUFFIXES):
        return None
    return "/".join((*ROOTS[parts[0]].split("."), *parts[1:]))


@pytest.fixture(scope="module")
def workdir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("packaging")
    assert REPO not in path.parents, "the temp dir must lie outside the checkout"
    return path


@pytest.fixture(scope="module")
def wheel(workdir: Path) -> Path:
    src = workdir / "src"
    for rel in _checkout_files():
        target = src / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(REPO / rel, target)
    out = workdir / "dist"
    proc = _run([sys.executable, "-m", "build", "--wheel", "--outdir", str(out), str(src)],
                cwd=workdir, timeout=BUILD_TIMEOUT)
    assert proc.returncode == 0, f"wheel build failed: {_describe(proc)}"
    wheels = sorted(out.glob("*.whl"))
    assert len(wheels) == 1, wheels
    assert wheels[0].name.startswith(f"interlock-{VERSION}-"), wheels[0].name
    return wheels[0]


@pytest.fixture(scope="module")
def wheel_names(wheel: Path) -> set[str]:
    with zipfile.ZipFile(wheel) as zf:
        return {n for n in zf.namelist() if not n.endswith("/")}


@pytest.fixture(scope="module")
def clean_venv(workdir: Path, wheel: Path) -> Path:
    """A venv without system site-packages, with only the wheel and its declared dependencies."""
    venv = workdir / "venv"
    proc = _run([sys.executable, "-m", "venv", str(venv)], cwd=workdir)
    assert proc.returncode == 0, _describe(proc)
    python = venv / "bin" / "python"
    proc = _run([str(python), "-m", "pip", "install", "--quiet", str(wheel)], cwd=workdir, timeout=INSTALL_TIMEOUT)
    assert proc.returncode == 0, f"pip install of the wheel failed: {_describe(proc)}"
    return venv


@pytest.fixture()
def outside(tmp_path: Path) -> Iterator[Path]:
    """A working directory outside the checkout, holding a copy of a good and a bad `.wf`."""
    assert REPO not in tmp_path.parents
    shutil.copy2(EXAMPLE, tmp_path / EXAMPLE.name)
    text = (REPO / "examples" / "kanban.wf").read_text(encoding="utf-8")
    assert "auto_start_agent" in text, "the bad fixture is derived from kanban.wf's auto_start_agent action"
    (tmp_path / "bad.wf").write_text(text.replace("auto_start_agent", "launch_rockets", 1), encoding="utf-8")
    yield tmp_path


# -- the wheel ------------------------------------------------------------------------------


def test_wheel_top_level_is_only_interlock(wheel_names: set[str]) -> None:
    top = {name.split("/", 1)[0] for name in wheel_names}
    assert top == {"interlock", f"interlock-{VERSION}.dist-info"}, (
        f"unexpected top-level entries in the wheel: {sorted(top)}")
    for stray in ("runtime", "compiler", "dsl", "grammars", "stores", "tests", "examples", "benchmarks"):
        assert stray not in top


def test_wheel_top_level_txt_names_only_interlock(wheel: Path) -> None:
    with zipfile.ZipFile(wheel) as zf:
        names = zf.namelist()
        top_level = f"interlock-{VERSION}.dist-info/top_level.txt"
        if top_level in names:
            assert zf.read(top_level).decode().split() == ["interlock"]
        entry_points = zf.read(f"interlock-{VERSION}.dist-info/entry_points.txt").decode()
    assert "interlock = interlock.cli:console" in entry_points


@pytest.mark.parametrize("name", REQUIRED_DATA)
def test_wheel_has_required_data(wheel_names: set[str], name: str) -> None:
    assert name in wheel_names


def test_wheel_has_every_package_of_the_checkout(wheel_names: set[str]) -> None:
    packages = []
    for folder, package in ROOTS.items():
        for init in sorted((REPO / folder).rglob("__init__.py")):
            rel = init.parent.relative_to(REPO / folder)
            packages.append("/".join((*package.split("."), *rel.parts)))
    assert len(packages) >= len(ROOTS)
    missing = [p for p in packages if f"{p}/__init__.py" not in wheel_names]
    assert not missing, f"packages of the checkout missing from the wheel: {missing}"


def test_wheel_has_every_file_of_the_package_folders(wheel_names: set[str]) -> None:
    """Catches data files and `__init__`-less folders (e.g. alembic `versions/`) that drop out."""
    expected = {dest for rel in _checkout_files() if (dest := _expected_in_wheel(rel))}
    assert {"interlock/cli.py", "interlock/runtime/plan.py"} <= expected
    missing = sorted(expected - wheel_names)
    assert not missing, f"checkout files missing from the wheel (add them to package_data in setup.py): {missing}"


def test_wheel_has_nothing_the_checkout_lacks(wheel_names: set[str]) -> None:
    """A stale build folder or a mis-mapped package would add files no checkout file explains."""
    expected = {dest for rel in _checkout_files() if (dest := _expected_in_wheel(rel))}
    extra = sorted(n for n in wheel_names if n.startswith("interlock/") and n not in expected)
    assert not extra, f"wheel files with no source in the checkout: {extra}"


# -- the clean venv -------------------------------------------------------------------------


def test_clean_venv_has_no_system_site_packages(clean_venv: Path) -> None:
    cfg = (clean_venv / "pyvenv.cfg").read_text(encoding="utf-8")
    assert "include-system-site-packages = false" in cfg


def test_installed_cli_help(clean_venv: Path, outside: Path) -> None:
    proc = _run([str(clean_venv / "bin" / "interlock"), "--help"], cwd=outside)
    assert proc.returncode == 0, _describe(proc)
    assert "check" in proc.stdout and "compile" in proc.stdout


def test_installed_cli_checks_a_good_file(clean_venv: Path, outside: Path) -> None:
    proc = _run([str(clean_venv / "bin" / "interlock"), "check", EXAMPLE.name], cwd=outside)
    assert proc.returncode == 0, _describe(proc)
    assert proc.stdout.strip().splitlines()[-1] == "1 file checked: no problems", _describe(proc)


def test_installed_cli_rejects_a_bad_file(clean_venv: Path, outside: Path) -> None:
    proc = _run([str(clean_venv / "bin" / "interlock"), "check", "bad.wf"], cwd=outside)
    assert proc.returncode == 1, _describe(proc)
    assert "IL101" in proc.stdout and "bad.wf" in proc.stdout, _describe(proc)
    assert "1 error" in proc.stdout.strip().splitlines()[-1]


def test_installed_cli_compiles_a_plan(clean_venv: Path, outside: Path) -> None:
    """Exercises the prelude, the grammar and the runtime plan model from the installed wheel."""
    proc = _run([str(clean_venv / "bin" / "interlock"), "compile", EXAMPLE.name, "-o", "plan.json"], cwd=outside)
    assert proc.returncode == 0, _describe(proc)
    plan = json.loads((outside / "plan.json").read_text(encoding="utf-8"))
    assert isinstance(plan, dict) and plan


def test_installed_modules_come_from_site_packages(clean_venv: Path, outside: Path) -> None:
    code = ("import importlib.util, json, interlock.compiler, interlock.dsl, interlock.runtime, "
            "interlock.grammars, interlock.stores\n"
            "print(json.dumps({'files': [m.__file__ for m in (interlock.compiler, interlock.dsl, interlock.runtime, "
            "interlock.grammars, interlock.stores)], 'top': {n: importlib.util.find_spec(n) is not None "
            "for n in ('runtime', 'compiler', 'dsl', 'grammars', 'stores')}}))")
    proc = _run([str(clean_venv / "bin" / "python"), "-c", code], cwd=outside)
    assert proc.returncode == 0, _describe(proc)
    found = json.loads(proc.stdout)
    site = (clean_venv / "lib").resolve()
    for file in found["files"]:
        assert site in Path(file).resolve().parents, f"{file} is not inside the clean venv"
    assert not any(found["top"].values()), f"bare top-level modules importable: {found['top']}"


@pytest.mark.parametrize("name", SHIPPED_DOCS)
def test_wheel_ships_the_documentation_pages_as_they_are(wheel: Path, name: str) -> None:
    with zipfile.ZipFile(wheel) as zf:
        assert zf.read(f"interlock/docs/{name}") == (REPO / "docs" / name).read_bytes()


def test_installed_explain_prints_a_page_outside_the_checkout(clean_venv: Path, outside: Path) -> None:
    """`interlock explain` reads the pages the wheel carries (issue 22: codes were unexplained outside the
    checkout)."""
    proc = _run([str(clean_venv / "bin" / "interlock"), "explain", "IL102"], cwd=outside)
    assert proc.returncode == 0, _describe(proc)
    docs = (REPO / "docs" / "diagnostics.md").read_text(encoding="utf-8")
    start = docs.index("## IL102 unknown-parameter")
    assert proc.stdout == docs[start:docs.index("\n## IL103", start)].strip() + "\n"
    proc = _run([str(clean_venv / "bin" / "interlock"), "explain", "KV023"], cwd=outside)
    assert proc.returncode == 0 and "guard-not-expressible" in proc.stdout, _describe(proc)
    proc = _run([str(clean_venv / "bin" / "interlock"), "explain", "IL1O2"], cwd=outside)
    assert proc.returncode == 2 and "did you mean `IL102`" in proc.stderr, _describe(proc)


def test_installed_links_point_at_the_installed_page(clean_venv: Path, outside: Path) -> None:
    """SARIF's `helpUri` (and the language server's `codeDescription`, the same address) is a page that exists
    in the install."""
    proc = _run([str(clean_venv / "bin" / "interlock"), "check", "--format", "sarif", "bad.wf"], cwd=outside)
    assert proc.returncode == 1, _describe(proc)
    rules = json.loads(proc.stdout)["runs"][0]["tool"]["driver"]["rules"]
    uri = next(r["helpUri"] for r in rules if r["id"] == "IL101")
    assert uri.startswith("file://") and uri.endswith("#il101-unknown-action-kind"), uri
    page = Path(uri.removeprefix("file://").split("#")[0])
    site = (clean_venv / "lib").resolve()
    assert page.is_file() and site in page.resolve().parents, uri


# -- the clone's root with a regular (non-editable) install -------------------------------------
# Python puts the working directory first on sys.path, so a program run from the root of a clone
# imports the clone's `interlock/` folder, not the installed wheel (ADR 0018).


def test_installed_wheel_imports_whole_from_the_clone_root(clean_venv: Path, workdir: Path) -> None:
    """From the root of a clone, `interlock` and all its subpackages come from one place (the clone), never
    the facade from the clone and `interlock.compiler` missing (the `ModuleNotFoundError` of a half import)."""
    clone = workdir / "src"
    code = ("import json, interlock, interlock.compiler, interlock.dsl, interlock.grammars, interlock.runtime, "
            "interlock.runtime.plan, interlock.stores\n"
            "print(json.dumps({m.__name__: m.__file__ for m in (interlock, interlock.compiler, interlock.dsl, "
            "interlock.grammars, interlock.runtime, interlock.runtime.plan, interlock.stores)}))")
    (clone / "probe.py").write_text(code, encoding="utf-8")
    for cmd in ([str(clean_venv / "bin" / "python"), "-c", code], [str(clean_venv / "bin" / "python"), "probe.py"]):
        proc = _run(cmd, cwd=clone)
        assert proc.returncode == 0, _describe(proc)
        files = {name: Path(file).resolve() for name, file in json.loads(proc.stdout).items()}
        assert files["interlock"] == (clone / "interlock" / "__init__.py").resolve()
        for name, folder in (("interlock.compiler", "compiler"), ("interlock.dsl", "dsl"),
                             ("interlock.grammars", "grammars"), ("interlock.runtime", "runtime"),
                             ("interlock.stores", "stores")):
            assert files[name] == (clone / folder / "__init__.py").resolve(), (name, files[name])
        assert files["interlock.runtime.plan"] == (clone / "runtime" / "plan.py").resolve()


def test_readme_example_runs_from_the_clone_root(clean_venv: Path, workdir: Path) -> None:
    """The README's embedding example, saved in the clone's root and run there with the wheel installed."""
    import re

    clone = workdir / "src"
    (snippet,) = re.findall(r"```python\n(.*?)```", (clone / "README.md").read_text(encoding="utf-8"), re.S)[:1]
    (clone / "example.py").write_text(snippet, encoding="utf-8")
    for _ in range(2):
        proc = _run([str(clean_venv / "bin" / "python"), "example.py"], cwd=clone)
        assert proc.returncode == 0, _describe(proc)
        assert "step: done" in proc.stdout.splitlines(), _describe(proc)


def test_installed_cli_checks_from_the_clone_root(clean_venv: Path, workdir: Path) -> None:
    proc = _run([str(clean_venv / "bin" / "interlock"), "check", "examples/"], cwd=workdir / "src")
    assert proc.returncode == 0, _describe(proc)
    assert proc.stdout.strip().splitlines()[-1].endswith("no problems"), _describe(proc)


# -- the editable install (the dev venv / CI's `pip install -e`) ------------------------------


def _editable_checkout() -> Path | None:
    try:
        dist = metadata.distribution("interlock")
    except metadata.PackageNotFoundError:
        return None
    raw = dist.read_text("direct_url.json")
    if not raw:
        return None
    info = json.loads(raw)
    if not info.get("dir_info", {}).get("editable"):
        return None
    url = info.get("url", "")
    return Path(url.removeprefix("file://")).resolve() if url.startswith("file://") else None


def test_editable_install_resolves_into_the_checkout(tmp_path: Path) -> None:
    checkout = _editable_checkout()
    if checkout is None:
        pytest.skip("interlock is not installed editable in this interpreter")
    if checkout != REPO:
        pytest.skip(f"the editable install points at another checkout ({checkout})")
    code = ("import json, importlib.util, interlock, interlock.compiler, interlock.dsl, interlock.runtime, "
            "interlock.grammars, interlock.stores\n"
            "print(json.dumps({'files': {m.__name__: m.__file__ for m in (interlock, interlock.compiler, "
            "interlock.dsl, interlock.runtime, interlock.grammars, interlock.stores)}, "
            "'top': {n: importlib.util.find_spec(n) is not None for n in ('runtime', 'compiler', 'dsl')}}))")
    proc = _run([sys.executable, "-c", code], cwd=tmp_path)
    assert proc.returncode == 0, _describe(proc)
    found = json.loads(proc.stdout)
    for name, file in found["files"].items():
        folder = {v: k for k, v in ROOTS.items()}[name]
        assert Path(file).resolve() == REPO / folder / "__init__.py", f"{name} resolved to {file}"
    assert not any(found["top"].values()), f"bare top-level modules importable: {found['top']}"
