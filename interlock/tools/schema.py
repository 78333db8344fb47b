"""`interlock schema plan|scenario [-o FILE]`: the JSON Schema (2020-12) of the plan or of the scenario format.

The schema is generated from the runtime's models each time (`interlock.json_schemas`); the output is
deterministic, so the copies committed under `schemas/` can be compared with a fresh one.
"""

from __future__ import annotations

import argparse
import sys

__all__ = ["HELP", "DESCRIPTION", "EPILOG", "add_arguments", "run"]

HELP = "print the JSON Schema of the plan or of the scenario format"
DESCRIPTION = """\
Print the JSON Schema (draft 2020-12) of a plan (what `interlock compile` writes) or of a scenario
file (what `interlock simulate` and `interlock test` read), to standard output or -o FILE.
The output is deterministic (sorted keys, two-space indent): the copies in the repository's
schemas/ folder are regenerated with

  interlock schema plan -o schemas/plan.schema.json
  interlock schema scenario -o schemas/scenario.schema.json

Editors give completion for scenario files with a first line such as
  # yaml-language-server: $schema=../../schemas/scenario.schema.json
(docs/schema.md)."""
EPILOG = ("Exit status: 0 written; 2 usage error (an unknown schema name, -o into a missing folder or onto a "
          "folder) or internal error.")

_NAMES = ("plan", "scenario")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("name", choices=_NAMES, metavar="plan|scenario",
                        help="which schema: `plan` (compiled plans) or `scenario` (simulator scenarios)")
    parser.add_argument("-o", "--output", metavar="FILE",
                        help="write the schema to this file, replacing it (default, or `-`: standard output)")


def run(args: argparse.Namespace) -> int:
    from interlock.cmdline import output_target
    from interlock.json_schemas import render

    target = output_target(args.output, f"{args.name}.schema.json") if args.output and args.output != "-" else None
    text = render(args.name)
    if target is None:
        sys.stdout.write(text)
        return 0
    from interlock.atomic import write_atomic

    write_atomic(target, text)  # a reader never sees half a schema
    return 0
