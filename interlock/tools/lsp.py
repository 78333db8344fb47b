"""`interlock lsp`: the language server for `.wf` files, over standard input and output.

The server is `interlock.lsp.server` (pygls 2, lsprotocol; the optional extra `lsp`: `pip install -e '.[lsp]'`
in the checkout).  Only the standard library is imported at the top: the CLI imports this module to build its parser, and
`interlock check` must never load pygls.
"""

from __future__ import annotations

import argparse
import sys
import textwrap

__all__ = ["HELP", "DESCRIPTION", "EPILOG", "add_arguments", "run"]

HELP = "run the language server for editors (stdio)"
DESCRIPTION = textwrap.fill(
    "Speak the Language Server Protocol on standard input and output: diagnostics as `interlock check` "
    "reports them, hover, go to definition, references, completion, symbols, rename, formatting through "
    "`interlock fmt` and quick fixes. Editors start it themselves (docs/editors.md). Needs the extra: "
    "pip install -e '.[lsp]' in the interlock checkout.", 88)
EPILOG = textwrap.fill("Exit status: 0 when the client shut the server down; 2 when pygls is not installed.", 88)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--stdio", action="store_true", help="use standard input and output (the default and "
                                                             "only transport; accepted for editors that pass it)")
    parser.add_argument("--log-level", choices=("debug", "info", "warning", "error"), default="warning",
                        help="what the server logs to standard error (default: warning)")


def run(args: argparse.Namespace) -> int:
    import logging

    try:
        from interlock.lsp.server import make_server
    except ImportError as missing:
        sys.stderr.write(f"interlock lsp: {missing.name or missing} is not installed; "
                         "install the extra: pip install -e '.[lsp]' in the interlock checkout (interlock is not "
                         "on a package index)\n")
        return 2
    logging.basicConfig(level=args.log_level.upper(), stream=sys.stderr, format="%(levelname)s %(name)s: %(message)s")
    make_server().start_io()
    return 0
