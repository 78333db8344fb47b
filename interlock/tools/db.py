"""`interlock db upgrade|current --url URL`, `interlock db prune --store URL --older-than 90d`: a database URL in,
interlock's tables created or upgraded (alembic migrations), their schema revision printed, or the finished history
of quiet tasks deleted (`interlock.stores.prune`, in stores/pruning.py; docs/runtime.md, "Pruning the store").

Only the standard library is imported at the top: SQLAlchemy and alembic load when the command runs.
"""

from __future__ import annotations

import argparse
from typing import Any

from interlock.cmdline import EXIT_OK

__all__ = ["HELP", "DESCRIPTION", "EPILOG", "FORMATTER", "add_arguments", "run"]

HELP = "database maintenance"
DESCRIPTION = "Create, upgrade, inspect or prune interlock's tables in a database."
EPILOG = "Exit status: 0 done, 2 usage error (e.g. a bad URL or duration) or database error, 130 interrupted."
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
    return {"db upgrade": up, "db current": cur, "db prune": _prune_parser(actions)}


_PRUNE_DESCRIPTION = """\
Delete the finished history of the tasks that have been quiet for longer than the window (nothing of
them written since, nothing of them unfinished): their ledger rows other than the current entry, with
their markers; their applied operations (each id's fingerprint is kept, so a redelivery is refused as
`pruned`, never run again); their acknowledged runs, superseded decisions and resolved incidents; then
the owner rows of runtimes gone for longer than the window.  The current entry of every task, open
incidents, armed timers and retries, runs not acknowledged and anything newer than the window stay.

  interlock db prune --store sqlite:///orchestrator.db --older-than 90d --dry-run
  interlock db prune --store postgresql://app@db/orchestrator --older-than 90d --batch 2000

Tasks are taken BATCH at a time, each batch one transaction: an interrupted prune (Ctrl-C, a killed
process) loses nothing, and running it again goes on (--after TASK skips the tasks an interrupted run
reported it had looked at).  Progress goes to standard error on a terminal;
the last line says how many rows went, per table.  (docs/runtime.md, "Pruning the store")"""


def _prune_parser(actions: Any) -> argparse.ArgumentParser:
    pr: argparse.ArgumentParser = actions.add_parser("prune", help="delete the finished history of tasks quiet for longer than a window",
                            description=_PRUNE_DESCRIPTION, formatter_class=argparse.RawDescriptionHelpFormatter)
    pr.add_argument("--store", "--url", dest="url", required=True, metavar="URL", help=_URL_HELP)
    pr.add_argument("--older-than", required=True, type=_window, metavar="DURATION",
                    help="the deduplication window: a whole number and a unit s, m, h or d (e.g. 90d); a "
                         "redelivery of an operation older than this is refused, not run")
    pr.add_argument("--dry-run", action="store_true", help="count what would be deleted; write nothing")
    pr.add_argument("--batch", type=_batch, default=1000, metavar="N",
                    help="tasks per batch, each batch one transaction (default 1000, at most 5000)")
    pr.add_argument("--after", default="", metavar="TASK",
                    help="start after this task id (tasks are taken in id order): the last task an interrupted run "
                         "reported, to skip what it looked at")
    pr.add_argument("--format", choices=("text", "json"), default="text", help="the summary's format")
    return pr


def _window(text: str) -> float:
    from interlock.runtime.durations import duration_problem, duration_seconds

    problem = duration_problem(text)
    if problem is not None:
        raise argparse.ArgumentTypeError(problem)
    return float(duration_seconds(text))


def _batch(text: str) -> int:
    from interlock.stores.pruning import MAX_PRUNE_BATCH

    if not text.isdigit() or not 1 <= int(text) <= MAX_PRUNE_BATCH:
        raise argparse.ArgumentTypeError(f"`{text}` is not a batch size: give a whole number from 1 to "
                                         f"{MAX_PRUNE_BATCH}")
    return int(text)


def run(args: argparse.Namespace) -> int:
    from interlock.stores.engine import check_url
    from interlock.stores.migrate import current_revision, head_revision, upgrade

    check_url(args.url)
    if args.db_command == "prune":
        from .db_prune import run_prune

        return run_prune(args)
    if args.db_command == "upgrade":
        revision = upgrade(args.url)
        print(f"database at revision {revision} (head {head_revision()})")
    else:
        print(current_revision(args.url) or "(empty: no interlock schema)")
    return EXIT_OK
