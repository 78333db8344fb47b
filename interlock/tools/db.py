"""`interlock db upgrade|current --url URL`: a database URL in, interlock's tables created or upgraded (alembic
migrations), or their schema revision printed.

Only the standard library is imported at the top: SQLAlchemy and alembic load when the command runs.
"""

from __future__ import annotations

import argparse

from interlock.cmdline import EXIT_OK

__all__ = ["HELP", "DESCRIPTION", "EPILOG", "FORMATTER", "add_arguments", "run"]

HELP = "database maintenance"
DESCRIPTION = "Create, upgrade or inspect interlock's tables in a database."
EPILOG = "Exit status: 0 done, 2 usage error (e.g. a bad URL) or database error."
FORMATTER = argparse.HelpFormatter

_URL_HELP = "database URL: sqlite:///FILE.db, sqlite:// (in memory) or postgresql://USER@HOST/DATABASE"


def add_arguments(parser: argparse.ArgumentParser) -> dict[str, argparse.ArgumentParser]:
    """The `db` parser's actions; returns their parsers by full name (`db upgrade`)."""
    actions = parser.add_subparsers(dest="db_command", metavar="ACTION", required=True)
    up = actions.add_parser("upgrade", help="create or upgrade interlock's tables (alembic migrations)",
                            description="Create or upgrade interlock's tables (replayable).")
    up.add_argument("--url", required=True, help=_URL_HELP)
    cur = actions.add_parser("current", help="print the database's schema revision",
                             description="Print the database's interlock schema revision.")
    cur.add_argument("--url", required=True, help=_URL_HELP)
    return {"db upgrade": up, "db current": cur}


def run(args: argparse.Namespace) -> int:
    from interlock.stores.engine import check_url
    from interlock.stores.migrate import current_revision, head_revision, upgrade

    check_url(args.url)
    if args.db_command == "upgrade":
        revision = upgrade(args.url)
        print(f"database at revision {revision} (head {head_revision()})")
    else:
        print(current_revision(args.url) or "(empty: no interlock schema)")
    return EXIT_OK
