"""The ordered static checks.  Each pass is a pure function `Context -> list[Diagnostic]`, one module each."""

from __future__ import annotations

from collections.abc import Callable

from interlock.dsl import Diagnostic

from ..context import Context
from .analyse import analyse
from .host import host
from .literals import literals
from .liveness import liveness
from .resolve import resolve
from .timers import timers
from .typecheck import typecheck
from .validate import validate

__all__ = ["PASSES", "CLEAN_PASSES", "Pass", "resolve", "literals", "typecheck", "validate", "host", "analyse",
           "liveness", "timers"]

Pass = Callable[[Context], list[Diagnostic]]

PASSES: tuple[Pass, ...] = (resolve, literals, typecheck, validate, timers, host, analyse)
CLEAN_PASSES: tuple[Pass, ...] = (liveness,)
"""Passes run only when the others reported no error: they judge a workflow as a whole (can its tasks finish?),
which a file that does not compile cannot answer — its steps and moves are not all known."""
