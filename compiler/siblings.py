"""A `use NAME` line and the using file's folder in, the sibling file to read (or the diagnostic refusing it) out.

`use NAME` loads `NAME.wf` from the folder of the file that uses it, and nothing else:
the name is resolved to its real path (symlinks followed) and refused, without being
read, when that path leaves the folder (`secrets.wf -> /etc/passwd`) or is not a regular
file (a FIFO would block the compiler, a device never ends).
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import NamedTuple

from interlock.dsl import Diagnostic, ir
from interlock.dsl.diagnostics import make
from interlock.dsl.parser import display_name, not_regular

__all__ = ["Sibling", "find_sibling"]


class Sibling(NamedTuple):
    """A sibling file that may be read: the path to read, its real path (its identity: two names
    for one file are one module), and the name diagnostics call it."""

    path: Path
    real: str
    name: str


def find_sibling(decl: ir.UseDecl, here: Path | None, user: str) -> Sibling | Diagnostic:
    """The file `decl` names next to the file `user` (whose folder is `here`), or why it is refused."""
    name = decl.name.name
    span = decl.name.span
    if here is None:
        return make("unknown-module", span, f"no shipped prelude and no file `{name}.wf` (the input has no directory)",
                    help="`use NAME` loads a shipped prelude or a sibling file NAME.wf")
    path = here / f"{name}.wf"
    shown = display_name(path)
    try:
        os.lstat(path)
    except FileNotFoundError:
        return make("unknown-module", span, f"no shipped prelude and no file `{name}.wf` next to {user}",
                    help="`use NAME` loads a shipped prelude or a sibling file NAME.wf")
    except OSError as exc:
        return make("file-unreadable", span, f"cannot read `{shown}`: {exc.strerror or exc}")
    real = os.path.realpath(path)
    if os.path.dirname(real) != os.path.realpath(here):
        return make("unsafe-module", span, f"`{name}.wf` leads outside the folder of {user} (it is a symlink), "
                    "so it is not read", help=f"put the module itself next to {user}, or use a prelude")
    try:
        st = os.stat(real)
    except FileNotFoundError:
        return make("unknown-module", span, f"`{name}.wf` next to {user} is a broken symlink",
                    help="`use NAME` loads a shipped prelude or a sibling file NAME.wf")
    except OSError as exc:
        return make("file-unreadable", span, f"cannot read `{shown}`: {exc.strerror or exc}")
    what = not_regular(st)
    if what is not None:
        return make("unsafe-module", span, f"`{name}.wf` is {what}, not a regular file, so it is not read",
                    help="a module is a regular `.wf` file next to the file that uses it")
    return Sibling(Path(real), real, shown)
