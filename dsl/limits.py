"""Nothing in, the input limits out: how much a `.wf` file may hold before it is refused with a diagnostic."""

from __future__ import annotations

from typing import NamedTuple

__all__ = ["Limits", "DEFAULT_LIMITS"]


class Limits(NamedTuple):
    """Hard limits on one file; each violation is a diagnostic (IL003, IL004 or IL009) and the file is refused.

    The defaults are far above any hand-written workflow file (the 20,000-line benchmark
    file uses under a sixth of the token budget) and keep every later pass fast.  Build
    one with keywords: `Limits(max_steps=50)`.
    """

    max_bytes: int = 8 * 1024 * 1024
    """File size in bytes (IL004)."""
    max_depth: int = 64
    """Bracket nesting plus `not` chains, and operator depth of an expression (IL003)."""
    max_tokens: int = 500_000
    """Tokens in the file: names, literals, operators and punctuation, not comments (IL009)."""
    max_string_length: int = 100_000
    """Characters between the quotes of one string literal, escapes as written (IL009)."""
    max_name_length: int = 256
    """Characters of one name (identifier) (IL009)."""
    max_declarations: int = 10_000
    """Top-level declarations in the file (IL009)."""
    max_steps: int = 1_000
    """Steps in one workflow (IL009)."""
    max_actions: int = 1_000
    """Actions in one handler (IL009)."""
    max_dispatch_items: int = 1_000
    """Lines (`event`, `skip`, `load`, `operation`, `payload`) in one dispatch block (IL009)."""
    max_items: int = 10_000
    """Entries of any other list or block: list and map values, arguments, parameters,
    record fields, names in `role`/`on`/entry lists, step attributes and handlers,
    payload assignments, parts of a dotted name (IL009)."""


DEFAULT_LIMITS = Limits()
