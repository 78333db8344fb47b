"""The subcommands of `interlock` (`check`, `compile`, `simulate`, …, `fmt`, `graph`, `schema`): their names in, their
parsers and runners out.  This is the one registry: `interlock.cli` parses and dispatches through it alone.

Each command is a module `interlock.tools.<name>` with

    HELP: str                                            # one line for `interlock --help`
    DESCRIPTION: str, EPILOG: str                        # optional: the command's own --help
    FORMATTER: type[argparse.HelpFormatter]              # optional (default: RawDescriptionHelpFormatter)
    FRONT_END: bool                                      # optional: runs the compiler alone (`check`, `compile`)
    def add_arguments(parser) -> dict[str, parser] | None  # nested parsers by full name (`db upgrade`), if any
    def reject_extra(args, extra) -> str | None          # optional: why leftover words are refused
    def run(args: argparse.Namespace) -> int             # the exit status

What every command needs (exit codes, `UsageError`, paths shown, `-o`, folder walking) is in `interlock.cmdline`.
A command module imports only the standard library and `interlock.cmdline` at its top; everything else is imported
inside `run`.  The CLI imports the module of the command it runs and no other: the one-line help of every command,
all `interlock --help` needs, is held in `COMMANDS`.
"""

from __future__ import annotations

import argparse
import importlib
from types import ModuleType

__all__ = ["COMMANDS", "TOOLS", "command", "tool", "add_parsers"]

COMMANDS: dict[str, str] = {
    "check": "check .wf files and report diagnostics",
    "compile": "compile one .wf file to a versioned JSON plan",
    "simulate": "run a scenario and print its trace",
    "test": "run scenarios that carry an `expect:` block, like a test runner",
    "db": "database maintenance",
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
"""Every command, in the order `interlock --help` lists them, with the line it shows for each (each module's
`HELP`, held here too so that listing them imports none; a test checks the two agree)."""

TOOLS = COMMANDS
"""The registry's former name (it once held the authoring tools alone)."""

_MODULES = {"import": "imports", "export": "exports"}
"""Commands whose name is a Python keyword live in a module of another name."""


def command(name: str) -> ModuleType:
    """The module of command `name` (imported now)."""
    return importlib.import_module(f"{__name__}.{_MODULES.get(name, name)}")


tool = command


def add_parsers(sub: argparse._SubParsersAction, parsers: dict[str, argparse.ArgumentParser],  # type: ignore[type-arg]
                only: str | None = None) -> None:
    """Add every command's parser to `sub` (and to `parsers`, by name; nested ones as `db upgrade`).  `only`: the
    command being run; the others then get a parser with their help line alone, and their modules are not imported
    (the commands that must start fast, `interlock check` first, import no other)."""
    for name, help_line in COMMANDS.items():
        if only is not None and name != only:
            parsers[name] = sub.add_parser(name, help=help_line, description=help_line)
            continue
        module = command(name)
        parser = sub.add_parser(name, help=module.HELP, description=getattr(module, "DESCRIPTION", module.HELP),
                                epilog=getattr(module, "EPILOG", None),
                                formatter_class=getattr(module, "FORMATTER", argparse.RawDescriptionHelpFormatter))
        nested = module.add_arguments(parser)
        parsers[name] = parser
        parsers.update(nested or {})
