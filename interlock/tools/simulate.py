"""`interlock simulate SCENARIO.yaml`: a scenario in, its trace out (one JSON object per line, or a table).

The scenario runs on an in-memory SQLite store (or an empty `--store` database) with simulated executors
(docs/scenarios.md); each record is written as it is made.  Only the standard library is imported at the top:
the runtime's store stack loads when the command runs.
"""

from __future__ import annotations

import argparse
import sys

from interlock.cmdline import EXIT_OK, EXIT_PROBLEMS

__all__ = ["HELP", "DESCRIPTION", "EPILOG", "FORMATTER", "add_arguments", "run"]

HELP = "run a scenario and print its trace"
DESCRIPTION = ("Run a scenario (docs/runtime.md §5) on an in-memory SQLite store with simulated executors and print "
               "the trace: one JSON object per line, or a table. Names the scenario uses are checked against the plan "
               "before it runs.")
EPILOG = ("Exit status: 0 the scenario ran; 1 the scenario has errors (each as FILE:LINE:COL on stderr; when the "
          "runtime refused an event, the trace up to it is printed first); 2 usage or internal error: no such file, "
          "a bad --store URL, or a --store database that already holds interlock data.")
FORMATTER = argparse.HelpFormatter


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("scenario", metavar="SCENARIO.yaml",
                        help="the scenario file (`-` reads it from standard input; its relative `workflow:` path is "
                             "then taken from the current folder)")
    parser.add_argument("--format", choices=("jsonl", "table"), default=None,
                        help="trace format (default: table on a terminal, jsonl otherwise); the table never cuts a "
                             "record: on a terminal long values wrap, piped each record stays on one line")
    parser.add_argument("--store", metavar="URL", default="sqlite://",
                        help="store URL (default: sqlite://, in memory). For an empty database only: one that holds "
                             "any interlock rows is refused (exit 2)")


def run(args: argparse.Namespace) -> int:
    from interlock.commands import read_scenario
    from interlock.commands import run as run_scenario
    from interlock.runtime.scenario import ScenarioError
    from interlock.stores.engine import check_url
    from interlock.traces import TraceWriter

    check_url(args.store)  # a bad URL is a usage error, whatever the scenario
    fmt = args.format or ("table" if sys.stdout.isatty() else "jsonl")
    try:
        scenario = read_scenario(args.scenario)
        # each record is written (and flushed) as it is made: Ctrl-C or a refused event leaves the trace so far
        run_scenario(scenario, args.store, on_record=TraceWriter(sys.stdout, fmt))
    except ScenarioError as exc:
        sys.stderr.write(f"{exc}\n")
        return EXIT_PROBLEMS
    return EXIT_OK
