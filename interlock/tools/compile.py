"""`interlock compile FILE [-o PLAN]`: one `.wf` file in, its versioned JSON plan out (diagnostics on standard error).

Source paths in the plan are made relative to the main file's folder, so a plan is byte-identical wherever it is
compiled from.  Only the standard library is imported at the top: `interlock check` must start fast.
"""

from __future__ import annotations

import argparse
import copy
import os
import sys
from pathlib import Path
from typing import Any

from interlock.cmdline import (
    COLOR_HELP,
    EXIT_OK,
    EXIT_PROBLEMS,
    STDIN_HELP,
    UsageError,
    collect_with_config,
    not_a_file,
    output_target,
    short,
    use_color,
)

__all__ = ["HELP", "DESCRIPTION", "EPILOG", "FORMATTER", "FRONT_END", "add_arguments", "reject_extra", "run"]

HELP = "compile one .wf file to a versioned JSON plan"
DESCRIPTION = ("Compile one `.wf` file to an executable plan (JSON). Diagnostics go to stderr; the plan to stdout or "
               "-o FILE. Source paths in the plan are relative to the main file's folder, so a plan is "
               "byte-identical wherever it is compiled from.")
EPILOG = "Exit status: 0 compiled, 1 errors found (no plan written), 2 usage or internal error (e.g. -o into a " \
         "missing folder)."
FORMATTER = argparse.HelpFormatter
FRONT_END = True


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("file", metavar="FILE", help="the .wf file (`-` for standard input)")
    parser.add_argument("-o", "--output", metavar="PLAN", help="write the plan to this file (default: stdout)")
    parser.add_argument("--color", choices=("auto", "always", "never"), default="auto", help=COLOR_HELP)
    parser.add_argument("--stdin-filename", metavar="NAME", default="<stdin>", help=STDIN_HELP)


def reject_extra(args: argparse.Namespace, extra: list[str]) -> str | None:
    """Why the words left over after parsing are refused, when more than one file was given."""
    if any(e.startswith("-") for e in extra):
        return None
    return (f"compile takes one file at a time, and was given {len(extra) + 1}: "
            f"{', '.join(short(f, 40) for f in [args.file, *extra])}; compile each with its own `-o PLAN`, or "
            "check them all with `interlock check FILE...`")


def relocate(plan_data: Any, main_dir: str) -> Any:
    """The plan with every source path relative to the main file's folder (`<prelude:...>`-style names kept).  The
    source positions are found by the plan models' types (`plan_layout`), never by their keys: an action argument
    that happens to be a `{file, line, col}` map is left as written."""
    from interlock.runtime.plan import plan_layout

    def rel(name: Any) -> Any:
        if not isinstance(name, str) or name.startswith("<"):
            return name
        return Path(os.path.relpath(os.path.abspath(name), main_dir)).as_posix()

    data = copy.deepcopy(plan_data)
    for path, value in plan_layout(data)[1]:
        if path[-1] == "source" and isinstance(value, dict):
            node = data
            for key in path[:-1]:
                node = node[key]
            node[path[-1]] = {**value, "file": rel(value.get("file"))}
    data["sources"] = [rel(name) for name in data.get("sources", [])]
    return data


def run(args: argparse.Namespace) -> int:
    from interlock.dsl import render
    from interlock.runtime.plan import Plan, dump_plan

    from .check import compile_one

    name = args.file
    if name != "-" and not Path(name).is_file():
        raise UsageError(not_a_file(name, "compile takes one .wf file", "FILE.wf",
                                    f"`interlock check {short(name)}` checks every .wf file of a folder"))
    target = output_target(args.output, "plan.json") if args.output and args.output != "-" else None
    ((_, config),) = collect_with_config([name])  # the warnings the project's configuration ignores stay quiet
    result = compile_one(name, args.stdin_filename, want_plan=True, ignore=config.ignore)
    if result.diagnostics:
        sys.stderr.write(render.render_full(result.diagnostics, result.sources,
                                            color=use_color(args.color, sys.stderr)) + "\n")
    if result.plan is None:
        shown = args.stdin_filename if name == "-" else name
        sys.stderr.write(f"interlock: {short(shown)}: not compiled ({result.errors} error"
                         f"{'s' if result.errors != 1 else ''})\n")
        return EXIT_PROBLEMS
    main_file = args.stdin_filename if name == "-" else name
    main_dir = os.path.dirname(os.path.abspath(main_file)) if not main_file.startswith("<") else os.getcwd()
    plan = Plan.model_validate(relocate(result.plan.model_dump(mode="json"), main_dir))
    text = dump_plan(plan)
    if target is not None:
        from interlock.atomic import write_atomic

        write_atomic(target, text)
    else:
        sys.stdout.write(text)
    return EXIT_OK
