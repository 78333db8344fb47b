"""`interlock explain CODE`: a diagnostic code (or its name) in, its documentation page on standard output out.

The page is the code's section of docs/diagnostics.md (IL codes) or its row of docs/kandev.md (KV codes), read from
the installed package (`interlock.diagnostic_pages`), so it works from a wheel install as from a checkout.
"""

from __future__ import annotations

import argparse
import sys

__all__ = ["HELP", "DESCRIPTION", "EPILOG", "add_arguments", "run"]

HELP = "print the documentation page of a diagnostic code (IL102, KV007)"
DESCRIPTION = """\
Print the page of a diagnostic code: what it means, a failing example and its fix (the code's
section of docs/diagnostics.md; for the KV codes of `import` and `export`, their entry in
docs/kandev.md). A code's name works too: `interlock explain unknown-parameter`.

  interlock explain IL102
  interlock explain --list          # every code, its name and severity"""
EPILOG = "Exit status: 0 printed; 2 an unknown code (with the nearest one) or usage error."


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("code", nargs="?", metavar="CODE", help="a code (IL102, il102, KV007) or a code's name")
    parser.add_argument("--list", action="store_true", help="list every code with its name and severity")


def run(args: argparse.Namespace) -> int:
    from interlock.cmdline import UsageError
    from interlock.diagnostic_pages import docs_file, known_codes, page, suggest_code

    if docs_file("diagnostics.md") is None:
        raise UsageError("the diagnostics pages are not installed with interlock (docs/diagnostics.md is missing): "
                         "reinstall the package")
    if args.list:
        sys.stdout.write("".join(f"{p.code}  {p.name}  ({p.severity})\n" for p in known_codes().values()))
        return 0
    if not args.code:
        raise UsageError("give a code, e.g. `interlock explain IL102` (or --list)")
    found = page(args.code)
    if found is None:
        hint = suggest_code(args.code)
        raise UsageError(f"no diagnostic code `{args.code}`" + (f"; {hint}" if hint else "") +
                         " (`interlock explain --list` lists them)")
    sys.stdout.write(found.text)
    return 0
