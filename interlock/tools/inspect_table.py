"""A timeline document (`interlock inspect`) in, rich tables on a stream out: the events, then where the task stands
(quorum, timers, incidents), then the answers of `--why`."""

from __future__ import annotations

import datetime as dt
import io
from typing import Any, TextIO

__all__ = ["render", "event_line"]

_STYLES = {"arrival": "bold", "operation": "cyan", "decision": "magenta", "run": "dim"}


def _time(at: float | None) -> str:
    if at is None:
        return "-"
    return dt.datetime.fromtimestamp(at, dt.UTC).strftime("%Y-%m-%d %H:%M:%S")


def _entry(entry: dict[str, Any] | None) -> str:
    if entry is None:
        return "enters no step"
    parts = []
    for a in entry["actions"]:
        mark = {"ran": "ok", "failed": "FAILED", "in_progress": "running", "pending": "pending",
                "not_run": "not run"}[a["result"]]
        parts.append(f"{a['kind']} {mark}" + (f" ({a['error']})" if a["error"] else ""))
    if entry["excluded"]:
        parts.append("excluded: " + ", ".join(entry["excluded"]))
    return ("entry " + entry["state"] + ": " + "; ".join(parts)) if parts else f"entry {entry['state']}: nothing"


def event_line(e: dict[str, Any]) -> tuple[str, str, str]:
    """(what, where, details) of one event."""
    if e["type"] == "arrival":
        head = f"#{e['ledger_id']} {e['route']}" + (" (current)" if e["current"] else "")
        runs = "; runs: " + ", ".join(f"{r['agent']}/{r['reason']}" for r in e["runs"]) if e["runs"] else ""
        return head, f"{e['from'] or '-'} -> {e['to'] or '-'}", _entry(e["entry"]) + runs
    if e["type"] == "operation":
        guards = "; ".join(f"-> {t['to']}" + (f" when {t['guard']}" if t["guard"] else "") + f": {t['result']}"
                           for t in e["transitions"])
        return f"{e['trigger']} {e['outcome']}", e["step"] or "-", f"op {e['operation_id']!r}" + (
            f"; {guards}" if guards else "")
    if e["type"] == "decision":
        seat = "" if e["seated"] is None else ("; seated" if e["seated"] else "; no seat")
        return f"decision #{e['id']}", e["step"], f"{e['decider']} {e['verdict']} as {e['role']} " \
                                                  f"(round {e['round']}, {e['state']}{seat})"
    return "run", e["step"] or "-", f"{e['agent']}/{e['reason']} key {e['key']}"


def render(doc: dict[str, Any], why: list[dict[str, Any]] | None, out: TextIO) -> None:
    """On a terminal, rich's tables straight to `out`; anywhere else (a pipe, a file) the same text with no line
    padded to the width by trailing spaces."""
    if out.isatty():
        _render(doc, why, out)
        return
    buffer = io.StringIO()
    _render(doc, why, buffer)
    out.write("".join(line.rstrip() + "\n" for line in buffer.getvalue().splitlines()))


def _render(doc: dict[str, Any], why: list[dict[str, Any]] | None, out: TextIO) -> None:
    from rich.console import Console
    from rich.table import Table

    console = Console(file=out, soft_wrap=False)
    task = doc["task"]
    console.print(f"[bold]{task['id']}[/bold] on {task['step'] or '(no step)'} (entry #{task['entry_id']}, "
                  f"plan {(task['plan'] or 'unknown').rpartition(':')[2][:12]})")
    table = Table(header_style="bold", box=None, pad_edge=False)
    for name in ("time", "what", "where", "details"):
        table.add_column(name, overflow="fold", ratio=1 if name == "details" else None)
    for e in doc["events"]:
        what, where, details = event_line(e)
        table.add_row(_time(e.get("at")), what, where, details, style=_STYLES.get(e["type"]))
    console.print(table)
    for q in doc["quorum"]:
        console.print(f"quorum: {q['trigger']} -> {q['to']} when {q['guard']}: {q['received']}/{q['required']} "
                      + ("satisfied" if q["satisfied"] else f"not satisfied ({q['reason']})"))
    for t in doc["timers"]:
        console.print(f"due: {t['kind']} `{t['label']}` of entry #{t['entry_id']} slot {t['slot']} at "
                      f"{_time(t['due_at'])} (in {t['due_in']:.0f}s)")
    for i in doc["incidents"]:
        console.print(f"incident #{i['id']} ({i['kind']}, {i['state']}): {i['error']} after {i['attempts']} "
                      "attempt(s)")
    for answer in why or ():
        console.print(f"[bold]{answer['question']}[/bold]")
        for line in answer["answer"]:
            console.print(f"  - {line}")
