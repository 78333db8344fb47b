"""A path or bytes in, a `SourceFile` (or the diagnostic that refuses it) out: file types checked before any
read, bounded reads, decoding, names fit to print."""

from __future__ import annotations

import os
import stat
from pathlib import Path

from .construct import construct
from .diagnostics import Diagnostic, label, make
from .limits import DEFAULT_LIMITS, Limits
from .source import SourceFile, Span

__all__ = ["read_limited", "decode", "display_name", "not_regular"]


def _file_start(name: str) -> Span:
    return construct(Span, {"file": name, "line": 1, "col": 1, "end_line": 1, "end_col": 1})


def read_limited(path: Path, limits: Limits = DEFAULT_LIMITS, *,
                 name: str | None = None) -> tuple[SourceFile | None, list[Diagnostic]]:
    """Read a file as a `SourceFile`, or explain why it cannot be one (type, size, encoding, I/O).

    `name` is what the source and its diagnostics are called (default: the path as given).
    Only a regular file is read: a FIFO would block forever and a device (`/dev/zero`)
    never ends, so the type is checked before the file is opened, and again on the open
    descriptor (opened non-blocking) in case the path changed in between.
    """
    name = display_name(path) if name is None else name
    where = _file_start(name)
    try:
        refused = not_regular(os.stat(path))
        if refused is None:
            fd = os.open(path, os.O_RDONLY | _OPEN_FLAGS)
            with os.fdopen(fd, "rb") as fh:
                st = os.fstat(fh.fileno())
                refused = not_regular(st)
                if refused is None:
                    if st.st_size > limits.max_bytes:
                        return None, [_too_large(where, st.st_size, limits)]
                    data = fh.read(limits.max_bytes + 1)  # the file may have grown since
    except OSError as exc:
        return None, [make("file-unreadable", where, f"cannot read file: {exc.strerror or exc}")]
    if refused is not None:
        return None, [make("file-unreadable", where, f"cannot read file: it is {refused}, not a regular file",
                           help="`.wf` sources are regular files")]
    return decode(name, data, limits)


def _too_large(where: Span, size: int, limits: Limits) -> Diagnostic:
    return make("file-too-large", where, f"file is {size} bytes; the limit is {limits.max_bytes} bytes")


# non-blocking: opening a FIFO nobody writes to returns at once instead of waiting for a writer
_OPEN_FLAGS = getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0) | getattr(os, "O_BINARY", 0)
_FILE_TYPES = ((stat.S_ISDIR, "a folder"), (stat.S_ISFIFO, "a FIFO (named pipe)"), (stat.S_ISCHR, "a character device"),
               (stat.S_ISBLK, "a block device"), (stat.S_ISSOCK, "a socket"))


def not_regular(st: os.stat_result) -> str | None:
    """What a non-regular file is ("a FIFO (named pipe)"), or None for a regular file."""
    if stat.S_ISREG(st.st_mode):
        return None
    return next((what for test, what in _FILE_TYPES if test(st.st_mode)), "a special file")


def display_name(path: Path | str) -> str:
    """A path as diagnostics and plans show it: bytes of a file name that are not UTF-8 (which
    Python keeps as lone surrogates, and no store or JSON encoder can keep) as `\\xNN`."""
    text = str(path)
    if text.isascii():
        return text
    return text.encode("utf-8", "surrogateescape").decode("utf-8", "backslashreplace")


def decode(name: str, data: bytes, limits: Limits = DEFAULT_LIMITS) -> tuple[SourceFile | None, list[Diagnostic]]:
    """Bytes as a `SourceFile` (a leading byte-order mark dropped), or why they cannot be one."""
    where = _file_start(name)
    if len(data) > limits.max_bytes:
        return None, [make("file-too-large", where, f"input exceeds the limit of {limits.max_bytes} bytes")]
    nul = data.find(b"\x00")
    if nul >= 0:
        # pointed at the first NUL, so that one stray NUL in a text file can be found
        src = SourceFile(name, data[:nul].decode("utf-8", "replace"))
        at = src.span(len(src.text), len(src.text) + 1)
        return None, [make("not-text", at, "file is binary (it contains NUL bytes)",
                           labels=(label(at, "first NUL byte"),),
                           help="`interlock check` reads UTF-8 `.wf` text files, and a NUL has no place in one")]
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        src = SourceFile(name, data[: exc.start].decode("utf-8", "replace"))
        at = src.span(len(src.text), len(src.text) + 1)
        return None, [make("not-text", at, f"file is not valid UTF-8 (byte 0x{data[exc.start]:02x})",
                           labels=(label(at, "first invalid byte"),))]
    if text.startswith("\ufeff"):
        text = text[1:]
    return SourceFile(name, text), []
