"""The checkout's folders in, `interlock.<folder>` out: the import hook that makes a clone import as a whole.

Python puts the working directory (or a script's folder) first on `sys.path`, so a program run from the root of a
clone imports the clone's `interlock/` folder even when interlock is installed as a wheel; that folder holds only
the facade, the CLI and the tools, and `interlock.compiler` would not be found.  `install()` (called by the facade)
appends a finder that completes the checkout's package from its sibling folders, so the checkout imports as a
whole, never half checkout, half wheel (ADR 0018; `tests/test_packaging.py` runs both cases).  An installed package
has its subpackages inside it: nothing is installed then.
"""

from __future__ import annotations

import os as _os
import sys as _sys
from typing import TYPE_CHECKING as _TYPE_CHECKING

if _TYPE_CHECKING:
    from collections.abc import Sequence as _Sequence
    from importlib.machinery import ModuleSpec
    from types import ModuleType

__all__ = ["install"]

_PACKAGE = "interlock"

# The top-level folders of a checkout that install as `interlock.<folder>` (setup.py's ROOTS).
_SUBPACKAGES = ("grammars", "dsl", "compiler", "runtime", "stores")


class _CheckoutFinder:
    """Finds `interlock.<folder>` in the sibling folders of a checkout (ADR 0018).

    Python puts the working directory (or a script's folder) first on `sys.path`, so a
    program run from the root of a clone imports the clone's `interlock/` folder even when
    interlock is installed as a wheel; that folder holds only the facade and the CLI, and
    `interlock.compiler` would not be found.  This finder completes the checkout's package
    from its siblings, so the checkout imports as a whole, never half checkout, half wheel."""

    def __init__(self, root: str) -> None:
        self.root = root

    def find_spec(self, fullname: str, path: _Sequence[str] | None = None,
                  target: ModuleType | None = None) -> ModuleSpec | None:
        parent, _, name = fullname.partition(".")
        if parent != _PACKAGE or name not in _SUBPACKAGES:
            return None  # deeper modules resolve through their own package's __path__
        from importlib.util import spec_from_file_location

        folder = _os.path.join(self.root, name)
        return spec_from_file_location(fullname, _os.path.join(folder, "__init__.py"),
                                       submodule_search_locations=[folder])


def _checkout_root() -> str | None:
    """The clone's root when this file is in the checkout's `interlock/` folder (not an installed copy)."""
    here = _os.path.dirname(_os.path.abspath(__file__))
    if _os.path.isdir(_os.path.join(here, "compiler")):
        return None  # an installed package: the subpackages are inside it
    root = _os.path.dirname(here)
    if not _os.path.isfile(_os.path.join(root, "setup.py")):
        return None
    if all(_os.path.isfile(_os.path.join(root, name, "__init__.py")) for name in _SUBPACKAGES):
        return root
    return None


def install() -> None:
    """Append the checkout's finder to `sys.meta_path` when this file is a checkout's (once)."""
    root = _checkout_root()
    if root is not None and not any(isinstance(f, _CheckoutFinder) for f in _sys.meta_path):
        # appended: an editable install's own finder (earlier on the path) keeps resolving first
        _sys.meta_path.append(_CheckoutFinder(root))
