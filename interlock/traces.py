"""Trace records in, one at a time as the simulator makes them, JSON lines or table rows out: `interlock
simulate` streams its trace, flushing each record, so an interrupted or long run leaves what happened so far.

The table keeps three narrow columns (seq, event, record) and the details.  On a terminal the details wrap
to its width and records are coloured by kind; anywhere else (a pipe, a file) each record is one line of plain
text, no wider than it needs: no padding to a width, no trailing spaces.
"""

from __future__ import annotations

import json
from typing import Any, TextIO

__all__ = ["TraceWriter", "summarise"]

_STYLES = {"error": "red", "warning": "yellow", "redelivery_discarded": "magenta", "arrival": "cyan",
           "entry": "green", "summary": "bold"}
_WIDTHS = (4, 5, 21)
"""The seq, event and record columns (a longer value widens its row only)."""


def summarise(record: dict[str, Any]) -> str:
    """A record's fields other than seq, event and record, as `key=value` (lists and maps as compact JSON)."""
    parts = []
    for key, value in record.items():
        if key in ("seq", "event", "record") or value is None or value == [] or value == {}:
            continue
        if isinstance(value, (dict, list)):
            value = json.dumps(value, separators=(",", ":"), sort_keys=True, default=str)
        parts.append(f"{key}={value}")
    return " ".join(parts)


class TraceWriter:
    """Writes each record it is given to `out` at once, as a JSON line (`jsonl`) or a table row (`table`)."""

    def __init__(self, out: TextIO, fmt: str) -> None:
        self.out = out
        self.fmt = fmt
        self.terminal = out.isatty()
        self.header = False

    def __call__(self, record: dict[str, Any]) -> None:
        if self.fmt == "jsonl":
            self.out.write(json.dumps(record, sort_keys=False, default=str) + "\n")
        elif self.terminal:
            self._rich_row(record)
        else:
            if not self.header:
                self.out.write(self._plain(("seq", "event", "record", "details")) + "\n")
                self.header = True
            self.out.write(self._plain((str(record["seq"]), str(record["event"]), str(record["record"]),
                                        summarise(record))) + "\n")
        self.out.flush()

    @staticmethod
    def _plain(cells: tuple[str, str, str, str]) -> str:
        seq, event, kind, details = cells
        return f"{seq:>{_WIDTHS[0]}} {event:>{_WIDTHS[1]}} {kind:<{_WIDTHS[2]}} {details}".rstrip()

    def _rich_row(self, record: dict[str, Any]) -> None:
        from rich.console import Console
        from rich.table import Table

        table = Table(show_header=not self.header, header_style="bold", box=None, pad_edge=False)
        for (name, justify), width in zip((("seq", "right"), ("event", "right"), ("record", "left")), _WIDTHS,
                                          strict=True):
            table.add_column(name, justify=justify, min_width=width, overflow="fold")  # type: ignore[arg-type]
        table.add_column("details", justify="left", overflow="fold", ratio=1)
        table.add_row(str(record["seq"]), str(record["event"]), str(record["record"]), summarise(record),
                      style=_STYLES.get(record["record"]))
        self.header = True
        Console(file=self.out, soft_wrap=False).print(table)
