"""A cache file name in, a verified file (or nothing) out: interlock's on-disk caches live only where nobody else can write.

The caches are pickles, and loading a pickle runs code, so a cache is read only from
`$XDG_CACHE_HOME/interlock` (default `~/.cache/interlock`) when that folder is a real
folder (not a symlink), owned by the current user and writable by nobody else, and only
from a regular file there with the same properties.  There is no fallback to the shared
temporary directory: without a safe folder the caches are simply not used (everything
is rebuilt in memory, and nothing is written).  Files are opened relative to a descriptor
of the verified folder, so the folder cannot be swapped between the check and the open.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Callable, Iterator
from contextlib import contextmanager, suppress
from typing import IO

__all__ = ["cache_path", "open_cached", "write_cached", "safe_folder"]

# Refused: writable by group or others.  (A folder or file only its owner can write cannot
# have been planted or swapped by someone else.)
_FOREIGN_WRITE = stat.S_IWGRP | stat.S_IWOTH
_SUPPORTED = (hasattr(os, "geteuid") and hasattr(os, "O_NOFOLLOW") and hasattr(os, "O_DIRECTORY")
              and os.open in os.supports_dir_fd)


def cache_path() -> str:
    """Where interlock's caches would live (they are used only if `safe_folder` accepts it)."""
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return os.path.join(base, "interlock")


def safe_folder(st: os.stat_result) -> bool:
    """A real folder of the current user that nobody else can write."""
    return stat.S_ISDIR(st.st_mode) and st.st_uid == os.geteuid() and not st.st_mode & _FOREIGN_WRITE


def _safe_file(st: os.stat_result) -> bool:
    return stat.S_ISREG(st.st_mode) and st.st_uid == os.geteuid() and not st.st_mode & _FOREIGN_WRITE


@contextmanager
def _folder(create: bool) -> Iterator[int | None]:
    """A descriptor of the verified cache folder (None: no safe folder, so no disk cache)."""
    if not _SUPPORTED:
        yield None
        return
    path = cache_path()
    if create:
        with suppress(OSError):
            os.makedirs(path, mode=0o700, exist_ok=True)  # mode applies to the last part only
    try:
        fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC)
    except OSError:
        yield None
        return
    try:
        yield fd if safe_folder(os.fstat(fd)) else None
    finally:
        os.close(fd)


def open_cached(name: str) -> IO[bytes] | None:
    """The cache file `name`, open for reading, if it may be trusted (None: absent or refused)."""
    with _folder(create=False) as folder:
        if folder is None:
            return None
        try:
            # O_NOFOLLOW: a symlink is refused; O_NONBLOCK: a FIFO planted there cannot hang the open
            fd = os.open(name, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC, dir_fd=folder)
        except OSError:
            return None
    try:
        if not _safe_file(os.fstat(fd)):
            os.close(fd)
            return None
        return os.fdopen(fd, "rb")
    except OSError:
        os.close(fd)
        return None


def write_cached(name: str, write: Callable[[IO[bytes]], None]) -> bool:
    """Write the cache file `name` atomically with `write` (False: no safe folder, or it failed).

    Any exception `write` raises is swallowed: a cache that cannot be written only costs time.
    """
    with _folder(create=True) as folder:
        if folder is None:
            return False
        tmp = f"{name}.{os.getpid()}.tmp"
        try:
            fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600,
                         dir_fd=folder)
        except OSError:
            return False
        try:
            with os.fdopen(fd, "wb") as fh:
                write(fh)
            os.replace(tmp, name, src_dir_fd=folder, dst_dir_fd=folder)
            return True
        except Exception:  # a full disk, or something that cannot be pickled
            with suppress(OSError):
                os.unlink(tmp, dir_fd=folder)
            return False
