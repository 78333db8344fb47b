"""`interlock db prune`'s run: the parsed arguments in, `interlock.stores.prune` on the store, progress on standard
error (a terminal only) and a summary of the rows deleted per table out.

A dry run opens the store read-only (as `interlock inspect` does): it cannot write.  Ctrl-C between batches ends
the run with what was deleted so far (each batch is one transaction) and says so; a rerun goes on.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from typing import Any

from interlock.cmdline import EXIT_INTERRUPTED, EXIT_OK

__all__ = ["run_prune", "summary"]


def _open(url: str, dry_run: bool) -> Any:
    if dry_run:
        from .inspect import open_readonly_store

        return open_readonly_store(url)
    from interlock.stores import open_store

    return open_store(url, create=False)


class _Progress:
    """One line on standard error, rewritten after each batch (only when it is a terminal)."""

    def __init__(self) -> None:
        self.began = time.perf_counter()
        self.shown = sys.stderr.isatty()

    def __call__(self, report: Any) -> None:
        if not self.shown:
            return
        rate = report.rows / max(time.perf_counter() - self.began, 1e-9)
        verb = "would delete" if report.dry_run else "deleted"
        sys.stderr.write(f"\r{report.tasks_seen:,} tasks looked at, {report.tasks_pruned:,} quiet; {verb} "
                         f"{report.rows:,} rows ({rate:,.0f} rows/s), at task {report.last_task or '-'}   ")
        sys.stderr.flush()

    def end(self) -> None:
        if self.shown:
            sys.stderr.write("\n")


def summary(report: Any) -> str:
    """The last line: rows deleted (or that would be) per table, the fingerprints kept, the tasks."""
    verb = "would delete" if report.dry_run else "deleted"
    tables = ", ".join(f"{t.removeprefix('interlock_')} {n:,}" for t, n in report.deleted.items())
    kept = "would keep" if report.dry_run else "kept"
    return (f"{verb} {report.rows:,} rows ({tables}); {kept} {report.fingerprints:,} operation fingerprints; "
            f"{report.tasks_pruned:,} of {report.tasks_seen:,} tasks quiet for {_days(report.window)}")


def _days(seconds: float) -> str:
    for unit, size in (("d", 86_400), ("h", 3600), ("m", 60)):
        if seconds >= size and seconds % size == 0:
            return f"{int(seconds // size)}{unit}"
    return f"{seconds:g}s"


def _json(report: Any, interrupted: bool) -> str:
    return json.dumps({"prune_version": 1, "dry_run": report.dry_run, "window_seconds": report.window,
                       "cutoff": report.cutoff, "tasks_seen": report.tasks_seen, "tasks_pruned": report.tasks_pruned,
                       "deleted": report.deleted, "fingerprints": report.fingerprints, "batches": report.batches,
                       "last_task": report.last_task, "interrupted": interrupted}, indent=2)


def run_prune(args: argparse.Namespace) -> int:
    from interlock.stores.pruning import PruneReport, prune

    store = _open(args.url, args.dry_run)
    progress = _Progress()
    seen: list[PruneReport] = []

    def step(report: PruneReport) -> None:
        seen[:] = [report]
        progress(report)

    try:
        report = prune(store, older_than=args.older_than, dry_run=args.dry_run, batch=args.batch, progress=step,
                       after=args.after)
        interrupted = False
    except KeyboardInterrupt:
        if not seen:
            raise
        report, interrupted = seen[0], True
    finally:
        progress.end()
        store.close()
    sys.stdout.write((_json(report, interrupted) if args.format == "json" else summary(report)) + "\n")
    if interrupted:
        sys.stderr.write(f"interlock db prune: interrupted after {report.batches} batch(es): what they deleted stays "
                         f"deleted, nothing else was; run it again to go on (--after {report.last_task} skips the "
                         "tasks it looked at)\n")
        return EXIT_INTERRUPTED
    return EXIT_OK
