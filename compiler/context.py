"""A loaded `Program` and its `Symbols` in, convenient read-only views out, shared by every pass."""

from __future__ import annotations

from collections.abc import Iterator
from typing import NamedTuple

from interlock.dsl import ir

from .program import Program
from .symbols import Symbols

__all__ = ["Context"]


class Context(NamedTuple):
    """The program being checked and its symbol table (a NamedTuple: cheaper to define than a dataclass)."""

    program: Program
    symbols: Symbols

    def user_decls(self) -> Iterator[ir.Decl]:
        """Declarations of user files (the shipped preludes are trusted and not re-checked)."""
        for module in self.program.modules:
            if self.program.is_user(module.file):
                yield from module.decls

    def workflows(self) -> Iterator[ir.WorkflowDecl]:
        for decl in self.user_decls():
            if isinstance(decl, ir.WorkflowDecl):
                yield decl

    def handlers(self) -> Iterator[tuple[ir.WorkflowDecl, ir.StepDecl, ir.Handler]]:
        for wf in self.workflows():
            for step in wf.steps:
                for handler in step.handlers:
                    yield wf, step, handler

    def dispatches(self) -> Iterator[ir.DispatchDecl]:
        for decl in self.user_decls():
            if isinstance(decl, ir.DispatchDecl):
                yield decl

    def is_user(self, node: ir.Node) -> bool:
        return self.program.is_user(node.span.file)
