"""The ordered static checks.  Each pass is a pure function `Context -> list[Diagnostic]`, one module each."""

from __future__ import annotations

from collections.abc import Callable

from interlock.dsl import Diagnostic

from ..context import Context
from .analyse import analyse
from .literals import literals
from .resolve import resolve
from .typecheck import typecheck
from .validate import validate

__all__ = ["PASSES", "Pass", "resolve", "literals", "typecheck", "validate", "analyse"]

Pass = Callable[[Context], list[Diagnostic]]

PASSES: tuple[Pass, ...] = (resolve, literals, typecheck, validate, analyse)
