"""Derive the package list from the fixed top-level folders.

Each folder (`dsl/`, `compiler/`, ...) installs as a subpackage of the one namespaced
distribution `interlock`.  The list is derived, never hand-written: a subpackage left
out of a hand-written list silently drops out of the wheel while an editable install
keeps working (docs/architecture.md, "known traps").
"""

from pathlib import Path

from setuptools import setup

ROOTS = {
    "interlock": "interlock",
    "grammars": "interlock.grammars",
    "dsl": "interlock.dsl",
    "compiler": "interlock.compiler",
    "runtime": "interlock.runtime",
    "stores": "interlock.stores",
}

here = Path(__file__).parent
packages: list[str] = []
package_dir: dict[str, str] = {}
for folder, package in ROOTS.items():
    for init in sorted((here / folder).rglob("__init__.py")):
        rel = init.parent.relative_to(here / folder)
        name = ".".join((package, *rel.parts))
        packages.append(name)
        package_dir[name] = init.parent.relative_to(here).as_posix()

setup(
    packages=packages,
    package_dir=package_dir,
    package_data={"": ["*.lark", "*.wf", "py.typed", "*.mako", "*.ini"]},
    include_package_data=False,
)
