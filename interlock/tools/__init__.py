"""The authoring tools' subcommands (`interlock fmt`, `graph`, `schema`, `diff`, …): names in, their parsers and
runners out.

Each tool is a module `interlock.tools.<name>` with

    HELP: str                                            # one line for `interlock --help`
    def add_arguments(parser: argparse.ArgumentParser) -> None
    def run(args: argparse.Namespace) -> int             # the exit status

The module imports only the standard library at its top; everything else is imported inside
`run`.  The CLI imports the module of the tool it runs and no other: the one-line help of every
tool, all `interlock --help` needs, is held in `TOOLS`.
"""

from __future__ import annotations

import argparse
import importlib
from types import ModuleType

__all__ = ["TOOLS", "tool", "add_parsers"]

TOOLS: dict[str, str] = {
    "diff": "compare two versions of a workflow: breaking changes and the in-flight tasks they strand",
    "explain": "print the documentation page of a diagnostic code (IL102, KV007)",
    "export": "export .wf workflows as kandev's workflow YAML",
    "fmt": "format .wf files in the canonical layout, keeping every comment",
    "graph": "draw a file's workflows as a Mermaid, DOT, SVG or PNG diagram",
    "import": "import kandev's workflow YAML as formatted .wf",
    "inspect": "print a task's timeline from the store (arrivals, entries, operations, decisions) and why it is where it is",
    "lsp": "run the language server for editors (stdio)",
    "migrate": "move the tasks a new plan strands (on steps it lacks) onto its steps",
    "schema": "print the JSON Schema of the plan or of the scenario format",
}
"""The tool commands, in the order `interlock --help` lists them, with the line it shows for each (each module's
`HELP`, held here too so that listing them imports none; a test checks the two agree)."""

_MODULES = {"import": "imports", "export": "exports"}
"""Commands whose name is a Python keyword (or would shadow one) live in a module of another name."""


def tool(name: str) -> ModuleType:
    return importlib.import_module(f"{__name__}.{_MODULES.get(name, name)}")


def add_parsers(sub: argparse._SubParsersAction, parsers: dict[str, argparse.ArgumentParser],  # type: ignore[type-arg]
                only: str | None = None) -> None:
    """Add every tool's subcommand parser to `sub` (and to `parsers`, by name).  `only`: the command being run;
    the other tools then get a parser with their help line alone, and their modules are not imported (the
    commands that must start fast, `interlock check` first, import no tool)."""
    for name, help_line in TOOLS.items():
        if only is not None and name != only:
            parsers[name] = sub.add_parser(name, help=help_line, description=help_line)
            continue
        module = tool(name)
        parser = sub.add_parser(name, help=module.HELP, description=getattr(module, "DESCRIPTION", module.HELP),
                                epilog=getattr(module, "EPILOG", None),
                                formatter_class=argparse.RawDescriptionHelpFormatter)
        module.add_arguments(parser)
        parsers[name] = parser
