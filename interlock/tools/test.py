"""`interlock test PATH…`: scenario files and folders in, a pass/fail report out (text, json or JUnit XML).

The runner is `interlock.runner`; this module is its command line.  Only the standard library is imported at the
top: the runtime loads when the command runs.
"""

from __future__ import annotations

import argparse

from interlock.cmdline import add_walk_options

__all__ = ["HELP", "DESCRIPTION", "EPILOG", "FORMATTER", "add_arguments", "run"]

HELP = "run scenarios that carry an `expect:` block, like a test runner"
DESCRIPTION = ("Run every scenario with an `expect:` block (folders: *.yaml, *.yml, recursively) and report "
               "pass/fail; a scenario that cannot be loaded or run is reported as an error and the others still run. "
               "A failure names the expectation's file:line:col and shows the nearest actual record as YAML. Ends "
               "with `N passed, M failed, K errors` (docs/scenarios.md).")
EPILOG = ("Exit status: 0 all passed (and coverage at or above --threshold), 1 a scenario failed or had errors, or "
          "coverage is under --threshold, 2 usage or internal error (no scenario found, a bad -k expression).")
FORMATTER = argparse.HelpFormatter


def _percent(raw: str) -> float:
    """A `--threshold` value: a number from 0 to 100."""
    try:
        value = float(raw)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number: {raw!r}") from None
    if not 0 <= value <= 100:
        raise argparse.ArgumentTypeError(f"a percentage from 0 to 100, not {raw}")
    return value


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("paths", nargs="+", metavar="PATH", help="scenario files or folders (a file named twice "
                                                                  "runs once)")
    parser.add_argument("-k", dest="keyword", metavar="EXPRESSION", default=None,
                        help="run only the scenarios whose name matches (its path under the folder given, or its "
                             "file name): words are case-insensitive substrings, combined with and, or, not and "
                             "parentheses (as pytest's -k)")
    parser.add_argument("--format", choices=("text", "json", "junit"), default="text",
                        help="report format: text (default), json (versioned, `test_version`) or junit (JUnit XML "
                             "for CI)")
    parser.add_argument("-o", "--output", metavar="FILE", default=None,
                        help="write the report to FILE instead of standard output")
    parser.add_argument("--coverage", action="store_true",
                        help="report, per workflow, the steps entered, transitions taken, guard outcomes and entry "
                             "kinds dispatched, and the dispatch-sequence guards matched, with what was never "
                             "exercised")
    parser.add_argument("--threshold", type=_percent, metavar="N", default=None,
                        help="with coverage (implies --coverage): exit 1 when it is under N percent")
    parser.add_argument("-v", "--verbose", action="store_true", help="print the trace of failing scenarios")
    add_walk_options(parser)


def run(args: argparse.Namespace) -> int:
    from interlock.runner import run_tests

    return run_tests(args)
