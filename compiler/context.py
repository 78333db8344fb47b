"""A loaded `Program` and its `Symbols` in, convenient read-only views out, shared by every pass."""

from __future__ import annotations

from collections.abc import Iterator
from typing import NamedTuple, Union

from interlock.dsl import ir

from .program import Program
from .symbols import Symbols

__all__ = ["Context", "Block", "block_trigger", "block_name", "step_blocks"]

Block = Union[ir.Handler, ir.Timer]
"""A list of actions a step runs: a handler (`on TRIGGER { … }`) or a timer (`after D { … }`, `every D { … }`)."""


def block_trigger(block: Block) -> str | None:
    """The trigger a handler is declared on; None for a timer (its actions are those of generic triggers)."""
    return block.trigger.name if isinstance(block, ir.Handler) else None


def step_blocks(step: ir.StepDecl) -> tuple[Block, ...]:
    """A step's handlers, then its timers: every list of actions it runs."""
    return (*step.handlers, *step.timers)


def block_name(block: Block) -> str:
    """How messages name a block: `on on_comment`, `after 48h`."""
    return f"on {block.trigger.name}" if isinstance(block, ir.Handler) else block.written


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

    def blocks(self) -> Iterator[tuple[ir.WorkflowDecl, ir.StepDecl, Block]]:
        """Every handler, then every timer, of each step of the user's workflows."""
        for wf in self.workflows():
            for step in wf.steps:
                for handler in step.handlers:
                    yield wf, step, handler
                for timer in step.timers:
                    yield wf, step, timer

    def dispatches(self) -> Iterator[ir.DispatchDecl]:
        for decl in self.user_decls():
            if isinstance(decl, ir.DispatchDecl):
                yield decl

    def is_user(self, node: ir.Node) -> bool:
        return self.program.is_user(node.span.file)
