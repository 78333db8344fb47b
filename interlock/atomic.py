"""A path and the bytes (or text) for it in, the file replaced atomically out: the one way every command writes a
file it was told to write (`compile -o`, `graph -o`, `schema -o`, `fmt` in place, `import -o`, `export -o`).

The data goes to a temporary file that `tempfile.mkstemp` creates in the target's own folder (a unique name,
`O_CREAT | O_EXCL | O_NOFOLLOW`: nothing planted there, a symlink least of all, is ever opened or followed),
is flushed and fsynced, and is then renamed onto the target with `os.replace`, so a reader sees the old file
or the whole new one, never half of one.  A target that is a symlink is replaced by a regular file: the link
goes, and the file it pointed at is never written through (ADR 0044).  An existing regular file keeps its
permission bits; a new file gets the usual `0o666` less the umask, as `open(…, "w")` would.

A target that is not a file one may replace is refused before anything is written (`refusal` says why): a
folder, a device, a FIFO or a socket, and any name in `/dev` or `/proc` (`-o /dev/stdout` would otherwise
replace the system's link; `-` is standard output for every command).
"""

from __future__ import annotations

import contextlib
import errno
import os
import stat
import tempfile
from pathlib import Path

__all__ = ["write_atomic", "refusal"]

_STREAM_FOLDERS = ("/dev", "/dev/fd", "/proc")
"""Folders whose entries are devices and process streams, never files a command replaces."""
_KINDS = ((stat.S_ISDIR, "a folder"), (stat.S_ISCHR, "a character device"), (stat.S_ISBLK, "a block device"),
          (stat.S_ISFIFO, "a FIFO (named pipe)"), (stat.S_ISSOCK, "a socket"))


def refusal(path: Path | str) -> str | None:
    """Why `path` may not be replaced by a file ("is a character device, not a file: …"), or None when it may
    (it is absent, a regular file, or a symlink, which is replaced and never followed)."""
    target = Path(path)
    folder = os.path.realpath(target.parent)
    if folder in _STREAM_FOLDERS or folder.startswith("/proc/") or folder.startswith("/dev/fd/"):
        return f"is in {folder}, a device or a stream, not a file: give `-` to write to standard output"
    try:
        st = os.lstat(target)
    except FileNotFoundError:
        return None
    for test, what in _KINDS:
        if test(st.st_mode):
            if what == "a folder":
                return "is a folder: give the name of a file in it"
            return f"is {what}, not a file: give `-` to write to standard output"
    return None


def write_atomic(path: Path | str, data: bytes | str) -> None:
    """Replace the file at `path` with `data` (text is written as UTF-8, newlines as given), atomically.

    The folder must exist.  Raises `OSError` naming `path` (nothing is left behind: the temporary file is
    removed) when the target is refused (`refusal`), the folder cannot be written or the disk is full.
    """
    target = Path(path)
    why = refusal(target)
    if why is not None:
        raise OSError(errno.EINVAL, why, str(target))
    payload = data.encode("utf-8") if isinstance(data, str) else data
    mode = _mode_for(target)
    fd, tmp = tempfile.mkstemp(dir=target.parent, prefix=f".{target.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(payload)
            fh.flush()
            os.fchmod(fh.fileno(), mode)
            os.fsync(fh.fileno())
        os.replace(tmp, target)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise
    _sync_folder(target.parent)


def _mode_for(target: Path) -> int:
    """The permission bits the new file gets: an existing regular file's own, else `0o666` less the umask."""
    try:
        st = os.lstat(target)
    except FileNotFoundError:
        st = None
    if st is not None and stat.S_ISREG(st.st_mode):
        return stat.S_IMODE(st.st_mode)
    umask = os.umask(0o022)  # read it: the only portable way is to set it and put it back at once
    os.umask(umask)
    return 0o666 & ~umask


def _sync_folder(folder: Path) -> None:
    """Make the rename itself durable (best effort: some file systems refuse to fsync a folder)."""
    with contextlib.suppress(OSError):
        fd = os.open(folder, os.O_RDONLY | getattr(os, "O_DIRECTORY", 0))
        try:
            os.fsync(fd)
        finally:
            os.close(fd)
