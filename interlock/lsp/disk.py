"""A file the client did not send in (a `file://` URI and the workspace folders), its text or why it is not read
out: the server's only way to read a document from disk.

A client may ask about a URI it never opened (a hover, a definition, formatting `file:///dev/zero`), and the
workspace-symbol search reads the workspace's other `.wf` files.  Each such read goes through the checks
`interlock check` makes (`interlock.dsl.files.read_limited`: a regular file only, never a FIFO or a device,
checked before and after the open; a size bound; UTF-8 text), and the file must lie inside a workspace
folder (its real path: a symlink out of the workspace is refused) or be the shipped prelude.  A refusal is
`Refused`, which the server answers as an LSP error (or skips, in a workspace scan); the server goes on.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path
from urllib.parse import unquote, urlparse

from interlock.dsl.files import read_limited
from interlock.dsl.limits import DEFAULT_LIMITS, Limits
from interlock.dsl.source import SourceFile
from interlock.errors import InterlockError

from .analysis import prelude_path

__all__ = ["Refused", "path_of", "inside", "read_unsent"]


class Refused(InterlockError):
    """Why a file the client did not send is not read (the message names the file)."""


def path_of(uri: str) -> Path | None:
    """The local path of a `file://` URI (None for any other scheme)."""
    parsed = urlparse(uri)
    if parsed.scheme != "file":
        return None
    return Path(unquote(parsed.path))


def inside(path: Path, roots: Sequence[Path]) -> bool:
    """Whether the real path of `path` lies in the real path of one of `roots` (the folders themselves
    excluded: a folder is never a document)."""
    real = os.path.realpath(path)
    for root in roots:
        top = os.path.realpath(root)
        if real != top and os.path.commonpath([real, top]) == top:
            return True
    return False


def read_unsent(uri: str, roots: Sequence[Path], limits: Limits = DEFAULT_LIMITS) -> tuple[Path, SourceFile]:
    """The path and text of the file at `uri`, read as `interlock check` reads a file, or `Refused`: not a
    `file://` URI, outside every folder of `roots` (and not the prelude), or refused by the reader."""
    path = path_of(uri)
    if path is None:
        raise Refused(f"{uri}: not a file:// URI, and the client did not send its text")
    if not (inside(path, roots) or os.path.realpath(path) == os.path.realpath(prelude_path())):
        where = "no workspace folder is open" if not roots else "it is outside the workspace folders"
        raise Refused(f"{path}: not read: {where}, and the client did not send its text (open the file first)")
    source, problems = read_limited(path, limits, name=str(path))
    if source is None:
        raise Refused(f"{path}: {problems[0].message if problems else 'cannot read file'}")
    return path, source
