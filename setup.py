"""Derive the package list from the fixed top-level folders.

Each folder (`dsl/`, `compiler/`, ...) installs as a subpackage of the one namespaced
distribution `interlock`.  The list is derived, never hand-written: a subpackage left
out of a hand-written list silently drops out of the wheel while an editable install
keeps working (docs/architecture.md, "known traps").
"""

from pathlib import Path

from setuptools import setup
from setuptools.command.build_py import build_py

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

# The diagnostics pages `interlock explain` prints and editors link to (ADR 0039): copied from docs/ into the
# built package, so a wheel carries them and the repository keeps one copy.  A checkout reads docs/ directly.
SHIPPED_DOCS = ("diagnostics.md", "kandev.md")


class BuildWithDocs(build_py):
    def run(self) -> None:
        super().run()
        target = Path(self.build_lib) / "interlock" / "docs"
        self.mkpath(str(target))
        for name in SHIPPED_DOCS:
            self.copy_file(str(here / "docs" / name), str(target / name))


setup(
    packages=packages,
    package_dir=package_dir,
    package_data={"": ["*.lark", "*.wf", "py.typed", "*.mako", "*.ini"]},
    include_package_data=False,
    cmdclass={"build_py": BuildWithDocs},
)
