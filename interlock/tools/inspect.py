"""`interlock inspect TASK --store URL [--why [SUBJECT]] [--format table|json]`: a task's timeline, read from the store
alone, and why it stands where it stands (ADR 0046; docs/runtime.md "Inspecting a task").

Read-only by construction: a SQLite file is opened with `mode=ro` (never created), a PostgreSQL session with
`default_transaction_read_only`, and the history is one read-only transaction of SELECTs.
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

__all__ = ["HELP", "DESCRIPTION", "EPILOG", "add_arguments", "run"]

HELP = "print a task's timeline from the store (arrivals, entries, operations, decisions) and why it is where it is"
DESCRIPTION = """\
Print a task's timeline from a store alone (no plan needed: the revisions its rows name are read from
the store): each arrival with its route, revision and entry (what ran, failed or was excluded), each
operation with its outcome and guards, decisions with the seats and the quorum's state, timers and
retries due, incidents.  A table on a terminal, JSON otherwise.

  interlock inspect T1 --store sqlite:///orchestrator.db
  interlock inspect T1 --store postgresql://…/orchestrator --why
  interlock inspect T1 --store postgresql://…/orchestrator --why run_code_review --format json

--why answers "why is this task on this step" and, for each thing that did not run, why not (excluded,
guard false, approval required, failed, superseded, no seat, incident open); --why SUBJECT keeps the
answers about one kind, trigger, step or decider (agent:ID).  (docs/runtime.md, "Inspecting a task")"""
EPILOG = ("Exit status: 0 printed; 1 the store knows no such task; 2 usage error (a bad URL, a store that cannot be "
          "read: its URL is shown with credentials masked).")

_ALL = "\x00all"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("task", metavar="TASK", help="the task id")
    parser.add_argument("--store", required=True, metavar="URL",
                        help="the store the runtimes use: sqlite:///FILE.db or postgresql://USER@HOST/DATABASE")
    parser.add_argument("--why", nargs="?", const=_ALL, default=None, metavar="SUBJECT",
                        help="answer why the task is on its step and why what did not run did not (SUBJECT: only "
                             "the answers about a kind, trigger, step or decider)")
    parser.add_argument("--format", choices=("table", "json"), default=None,
                        help="output format (default: table on a terminal, JSON otherwise)")


def open_readonly_store(url: str) -> Any:
    """A `SqlStore` that cannot write: SQLite `mode=ro`, PostgreSQL sessions read-only (`StoreError`/`InflightError`
    for a URL or database that cannot be read)."""
    from sqlalchemy import event

    from interlock.stores.inflight import open_readonly
    from interlock.stores.sql import SqlStore

    engine = open_readonly(url)
    if engine.dialect.name == "postgresql":
        @event.listens_for(engine, "connect")
        def _read_only(dbapi_connection: Any, _record: Any) -> None:
            autocommit = dbapi_connection.autocommit
            dbapi_connection.autocommit = True
            dbapi_connection.execute("SET SESSION default_transaction_read_only = on")
            dbapi_connection.autocommit = autocommit
    return SqlStore(engine, owns_engine=True)


def run(args: argparse.Namespace) -> int:
    from interlock.runtime.errors import UnknownTaskError
    from interlock.runtime.store import StoreError
    from interlock.runtime.timeline import inspect_task
    from interlock.stores.engine import display_url
    from interlock.stores.inflight import InflightError

    try:
        store = open_readonly_store(args.store)
    except (StoreError, InflightError) as exc:
        sys.stderr.write(f"interlock inspect: error: {str(exc).replace('the diff never', 'inspect never')}\n")
        return 2
    except Exception as exc:  # a driver refusing the URL before any query (SQLAlchemy's ArgumentError, …)
        sys.stderr.write(f"interlock inspect: error: cannot open {display_url(args.store)}: "
                         f"{type(exc).__name__}\n")
        return 2
    try:
        timeline = inspect_task(store, args.task)
    except UnknownTaskError as exc:
        sys.stderr.write(f"interlock inspect: {exc} ({display_url(args.store)})\n")
        return 1
    except StoreError as exc:
        sys.stderr.write(f"interlock inspect: error: {exc}\n")
        return 2
    finally:
        store.close()
    fmt = args.format or ("table" if sys.stdout.isatty() else "json")
    subject = None if args.why in (None, _ALL) else args.why
    if fmt == "json":
        doc = timeline.to_json()
        if args.why is not None:
            doc["why"] = timeline.why(subject)
        sys.stdout.write(json.dumps(doc, indent=2, default=str) + "\n")
    else:
        from .inspect_table import render

        render(timeline.to_json(), timeline.why(subject) if args.why is not None else None, sys.stdout)
    return 0
