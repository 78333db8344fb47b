"""The authoring tools' subcommands (`interlock fmt`, `graph`, `schema`, `diff`, …): names in, their parsers and
runners out.

Each tool is a module `interlock.tools.<name>` with

    HELP: str                                            # one line for `interlock --help`
    def add_arguments(parser: argparse.ArgumentParser) -> None
    def run(args: argparse.Namespace) -> int             # the exit status

The module imports only the standard library at its top (the CLI imports it to build its
parser, and `interlock check` must start fast); everything else is imported inside `run`.
"""

from __future__ import annotations

import argparse
import importlib
from types import ModuleType

__all__ = ["TOOLS", "tool", "add_parsers"]

TOOLS: tuple[str, ...] = ("diff", "export", "fmt", "graph", "import", "lsp", "schema")
"""The tool commands, in the order `interlock --help` lists them."""

_MODULES = {"import": "imports", "export": "exports"}
"""Commands whose name is a Python keyword (or would shadow one) live in a module of another name."""


def tool(name: str) -> ModuleType:
    return importlib.import_module(f"{__name__}.{_MODULES.get(name, name)}")


def add_parsers(sub: argparse._SubParsersAction, parsers: dict[str, argparse.ArgumentParser]) -> None:  # type: ignore[type-arg]
    """Add every tool's subcommand parser to `sub` (and to `parsers`, by name)."""
    for name in TOOLS:
        module = tool(name)
        parser = sub.add_parser(name, help=module.HELP, description=getattr(module, "DESCRIPTION", module.HELP),
                                epilog=getattr(module, "EPILOG", None),
                                formatter_class=argparse.RawDescriptionHelpFormatter)
        module.add_arguments(parser)
        parsers[name] = parser
