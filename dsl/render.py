"""Diagnostics (and the source files they point into) in, text out: terminal, concise, JSON, SARIF and GitHub forms.

Every renderer is a pure function of its arguments.  Columns in `Span` are 1-based
character positions with an exclusive end; the SARIF output says so explicitly
(`columnKind: unicodeCodePoints`) and the GitHub output drops columns for spans that
cross lines, as the annotations API asks.
"""

from __future__ import annotations

import unicodedata
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, NamedTuple

from .diagnostics import CODES, Diagnostic, Severity
from .source import SourceFile, Span

__all__ = [
    "Summary",
    "summary_line",
    "render_full",
    "render_concise",
    "render_json",
    "render_sarif",
    "render_github",
]

# The project has no published home yet; both links below derive from this one constant.

_JSON_VERSION = 1
_SARIF_SCHEMA = "https://docs.oasis-open.org/sarif/sarif/v2.1.0/errata01/os/schemas/sarif-schema-2.1.0.json"
_TAB_WIDTH = 4


# -- summary ------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Summary:
    """How many files were checked and how many errors and warnings they produced."""

    files: int
    errors: int
    warnings: int

    @classmethod
    def count(cls, diagnostics: Iterable[Diagnostic], *, files: int) -> Summary:
        """Count the errors and warnings among `diagnostics` (notes count as neither)."""
        errors = warnings = 0
        for d in diagnostics:
            if d.severity is Severity.ERROR:
                errors += 1
            elif d.severity is Severity.WARNING:
                warnings += 1
        return cls(files=files, errors=errors, warnings=warnings)


def _plural(n: int, word: str) -> str:
    return f"{n} {word}" if n == 1 else f"{n} {word}s"


def summary_line(summary: Summary) -> str:
    """One line such as `3 files checked: 2 errors, 1 warning` or `1 file checked: no problems`."""
    parts = []
    if summary.errors:
        parts.append(_plural(summary.errors, "error"))
    if summary.warnings:
        parts.append(_plural(summary.warnings, "warning"))
    return f"{_plural(summary.files, 'file')} checked: {', '.join(parts) or 'no problems'}"


# -- full (rustc-style) ---------------------------------------------------------------

_RESET = "\x1b[0m"
_BOLD = "\x1b[1m"
_BLUE = "\x1b[1;34m"
_SEVERITY_STYLE = {Severity.ERROR: "\x1b[1;31m", Severity.WARNING: "\x1b[1;33m", Severity.NOTE: "\x1b[1;32m"}


class _Paint:
    """Wraps text in ANSI styles, or leaves it alone when colour is off."""

    def __init__(self, enabled: bool) -> None:
        self.enabled = enabled

    def __call__(self, style: str, text: str) -> str:
        if not self.enabled or not text:
            return text
        return f"{style}{text}{_RESET}"


class _Annotation(NamedTuple):
    span: Span
    message: str
    primary: bool


def _same_region(a: Span, b: Span) -> bool:
    return (a.file, a.line, a.col, a.end_line, a.end_col) == (b.file, b.line, b.col, b.end_line, b.end_col)


def _char_width(ch: str) -> int:
    if ch.isascii():
        return 1
    if unicodedata.combining(ch) or unicodedata.category(ch) in ("Mn", "Me", "Cf"):
        return 0
    return 2 if unicodedata.east_asian_width(ch) in ("W", "F") else 1


def _layout(raw: str) -> tuple[str, list[int]]:
    """The line as displayed and the display column of each character (plus one past the end).

    Tabs expand to the next multiple of `_TAB_WIDTH`, wide characters take two columns,
    and control characters become U+FFFD so source text cannot drive the terminal.
    """
    out: list[str] = []
    cols: list[int] = []
    col = 0
    for ch in raw:
        cols.append(col)
        if ch == "\t":
            step = _TAB_WIDTH - col % _TAB_WIDTH
            out.append(" " * step)
            col += step
            continue
        if ch < " " or "\x7f" <= ch <= "\x9f":
            ch = "\ufffd"
        out.append(ch)
        col += _char_width(ch)
    cols.append(col)
    return "".join(out).rstrip(), cols


def _underline(raw: str, cols: list[int], span: Span, line: int) -> tuple[int, int]:
    """Display start and width of `span` on `line`; a span that goes on stops at the line's end."""
    n = len(raw)
    start = min(max(span.col - 1, 0), n)
    end = span.end_col - 1 if span.end_line == line else n
    end = min(max(end, start), n)
    return cols[start], max(cols[end] - cols[start], 1)


def _resolvable(span: Span, sources: Mapping[str, SourceFile]) -> bool:
    src = sources.get(span.file)
    return src is not None and 1 <= span.line <= src.line_count


def _render_one(d: Diagnostic, sources: Mapping[str, SourceFile], paint: _Paint) -> str:
    sev_style = _SEVERITY_STYLE[d.severity]
    annotations = [_Annotation(lb.span, lb.message, _same_region(lb.span, d.span)) for lb in d.labels]
    if not any(a.primary for a in annotations):
        annotations.insert(0, _Annotation(d.span, "", True))

    shown = [a for a in annotations if _resolvable(a.span, sources)]
    unshown = [a for a in annotations if not a.primary and not _resolvable(a.span, sources)]

    # Files in order: the primary file first, then others as their labels appear.
    files: list[str] = [d.span.file]
    for a in shown:
        if a.span.file not in files:
            files.append(a.span.file)

    # Per file, the source lines to print: annotated lines, plus a lone line between two.
    plans: list[tuple[str, list[int | None], dict[int, list[_Annotation]]]] = []
    for name in files:
        by_line: dict[int, list[_Annotation]] = {}
        for a in shown:
            if a.span.file == name:
                by_line.setdefault(a.span.line, []).append(a)
        if not by_line:
            continue
        rows: list[int | None] = []
        previous = 0
        for ln in sorted(by_line):
            if previous and ln - previous == 2:
                rows.append(ln - 1)
            elif previous and ln - previous > 2:
                rows.append(None)
            rows.append(ln)
            previous = ln
        plans.append((name, rows, by_line))

    width = max((len(str(ln)) for _, rows, _ in plans for ln in rows if ln is not None), default=1)
    pad = " " * width
    bar = paint(_BLUE, "|")
    empty_gutter = f"{pad} {bar}"

    out = [f"{paint(sev_style, f'{d.severity.value}[{d.code}]')}{paint(_BOLD, ': ' + d.message)}"]
    out.append(f"{pad}{paint(_BLUE, '-->')} {d.span.short()}")
    for index, (name, rows, by_line) in enumerate(plans):
        if name != d.span.file or index > 0:
            top = min((a.span for anns in by_line.values() for a in anns), key=lambda s: (s.line, s.col))
            if index > 0:
                out.append(empty_gutter)
            out.append(f"{pad}{paint(_BLUE, ':::')} {top.short()}")
        out.append(empty_gutter)
        src = sources[name]
        for row in rows:
            if row is None:
                out.append(paint(_BLUE, "..."))
                continue
            raw = src.line_text(row)
            text, cols = _layout(raw)
            number = paint(_BLUE, f"{row:>{width}} |")
            out.append(f"{number} {text}" if text else number)
            marks = [(_underline(raw, cols, a.span, row), a) for a in by_line.get(row, ())]
            marks.sort(key=lambda m: (m[0][0], not m[1].primary))
            for (start, span_width), a in marks:
                style = sev_style if a.primary else _BLUE
                mark = ("^" if a.primary else "-") * span_width
                tail = f"{mark} {a.message}" if a.message else mark
                out.append(f"{empty_gutter} {' ' * start}{paint(style, tail)}")

    extras = [("note", f"{a.span.short()}: {a.message}" if a.message else a.span.short()) for a in unshown]
    extras += [("note", n) for n in d.notes]
    if d.help is not None:
        extras.append(("help", d.help))
    if extras:
        out.append(empty_gutter)
        for word, text in extras:
            head = f"{pad} {paint(_BLUE, '=')} {paint(_BOLD, word + ':')} "
            indent = " " * (width + 3 + len(word) + 2)
            first, *more = text.split("\n")
            out.append(head + first)
            out.extend(indent + line for line in more)
    return "\n".join(out) + "\n"


def render_full(diagnostics: Sequence[Diagnostic], sources: Mapping[str, SourceFile], *, color: bool = False) -> str:
    """rustc-style reports with source snippets and underlines, one block per diagnostic.

    `sources` maps a file name (as in `Span.file`) to its text; a diagnostic whose file
    or line is missing from it gets its header and location but no snippet.  A label
    covering exactly the primary span supplies the message under the `^` underline;
    other labels get `-` underlines.  With `color`, plain ANSI escapes are added.
    """
    paint = _Paint(color)
    return "\n".join(_render_one(d, sources, paint) for d in diagnostics)


# -- concise --------------------------------------------------------------------------


def render_concise(diagnostics: Sequence[Diagnostic]) -> str:
    """One line per diagnostic: `file:line:col: error[IL102] message (help: did you mean `x`?)` — the help, when
    there is one, kept on the line."""
    out = []
    for d in diagnostics:
        line = f"{d.span.short()}: {d.severity.value}[{d.code}] {' '.join(d.message.splitlines())}"
        if d.help:
            line += f" (help: {' '.join(d.help.splitlines())})"
        out.append(line + "\n")
    return "".join(out)


# -- JSON -----------------------------------------------------------------------------


def _region(span: Span) -> dict[str, Any]:
    return {"file": span.file, "line": span.line, "col": span.col, "end_line": span.end_line, "end_col": span.end_col}


def render_json(diagnostics: Sequence[Diagnostic], *, summary: Summary | None = None) -> str:
    """A versioned JSON document (`"version": 1`) listing every diagnostic and a summary.

    Without `summary`, errors and warnings are counted from `diagnostics` and `files` is
    the number of distinct files they name.
    """
    if summary is None:
        summary = Summary.count(diagnostics, files=len({d.span.file for d in diagnostics}))
    doc = {
        "version": _JSON_VERSION,
        "tool": "interlock",
        "diagnostics": [
            {
                "code": d.code,
                "name": d.name,
                "severity": d.severity.value,
                **_region(d.span),
                "message": d.message,
                "labels": [{**_region(lb.span), "message": lb.message} for lb in d.labels],
                "notes": list(d.notes),
                "help": d.help,
            }
            for d in diagnostics
        ],
        "summary": {"files": summary.files, "errors": summary.errors, "warnings": summary.warnings},
    }
    import json  # here, not at the top: the default (full) format does not need it at startup

    return json.dumps(doc, indent=2) + "\n"


# -- SARIF ----------------------------------------------------------------------------

_SARIF_LEVEL = {Severity.ERROR: "error", Severity.WARNING: "warning", Severity.NOTE: "note"}


def _uri(path: str) -> str:
    """A file name as a URI reference: forward slashes, percent-encoded, absolute paths as file URIs."""
    from urllib.parse import quote  # SARIF only: `interlock check` should not pay for the import

    path = path.replace("\\", "/")
    if path.startswith("/"):
        return "file://" + quote(path, safe="/!$&'()*+,;=:@-._~")
    if path[1:3] == ":/" and path[:1].isalpha():  # a Windows drive path
        return "file:///" + quote(path, safe="/!$&'()*+,;=:@-._~")
    # ':' stays encoded: in the first segment of a relative reference it would read as a scheme.
    return quote(path, safe="/!$&'()*+,;=@-._~")


def _full_text(d: Diagnostic) -> str:
    lines = [d.message, *(f"note: {n}" for n in d.notes)]
    if d.help is not None:
        lines.append(f"help: {d.help}")
    return "\n".join(lines)


def _physical(span: Span, artifact_index: Mapping[str, int]) -> dict[str, Any]:
    uri = _uri(span.file)
    location: dict[str, Any] = {"uri": uri}
    if uri in artifact_index:
        location["index"] = artifact_index[uri]
    line, col = max(span.line, 1), max(span.col, 1)
    end_line, end_col = max(span.end_line, 1), max(span.end_col, 1)
    if (end_line, end_col) < (line, col):
        end_line, end_col = line, col
    region = {"startLine": line, "startColumn": col, "endLine": end_line, "endColumn": end_col}
    return {"physicalLocation": {"artifactLocation": location, "region": region}}


def render_sarif(diagnostics: Sequence[Diagnostic], *, tool_version: str, files: Sequence[str] = (),
                 help_uri: Callable[[str, str], str | None] | None = None) -> str:
    """A SARIF 2.1.0 log with one run: every registered code as a rule, each diagnostic as a result.

    Labels become `relatedLocations`; notes and help are appended to the message text.
    `files` (the files checked) become the run's `artifacts`, duplicates dropped.  `help_uri(code, name)`: each
    rule's `helpUri`, the address of its documentation page (`interlock.diagnostic_pages.help_url`); none without it.
    """
    rule_index = {code: i for i, code in enumerate(CODES)}
    rules = []
    for info in CODES.values():
        rule: dict[str, Any] = {
            "id": info.code,
            "name": info.name,
            "shortDescription": {"text": info.summary},
            "defaultConfiguration": {"level": _SARIF_LEVEL[info.severity]},
            "help": {"text": f"{info.code} {info.name}: {info.summary}. `interlock explain {info.code}` prints its "
                             "page: an example and its fix."},
        }
        uri = help_uri(info.code, info.name) if help_uri is not None else None
        if uri is not None:
            rule["helpUri"] = uri
        rules.append(rule)
    artifact_index: dict[str, int] = {}
    for name in files:
        artifact_index.setdefault(_uri(name), len(artifact_index))

    results = []
    for d in diagnostics:
        result: dict[str, Any] = {"ruleId": d.code}
        if d.code in rule_index:
            result["ruleIndex"] = rule_index[d.code]
        result["level"] = _SARIF_LEVEL[d.severity]
        result["message"] = {"text": _full_text(d)}
        result["locations"] = [_physical(d.span, artifact_index)]
        if d.labels:
            result["relatedLocations"] = [
                {"id": i, **_physical(lb.span, artifact_index), "message": {"text": lb.message}}
                for i, lb in enumerate(d.labels)
            ]
        results.append(result)

    run: dict[str, Any] = {
        "tool": {
            "driver": {
                "name": "interlock",
                "version": tool_version,
                "rules": rules,
            }
        },
    }
    if artifact_index:
        run["artifacts"] = [{"location": {"uri": uri}, "roles": ["analysisTarget"]} for uri in artifact_index]
    run["columnKind"] = "unicodeCodePoints"
    run["results"] = results
    log = {"$schema": _SARIF_SCHEMA, "version": "2.1.0", "runs": [run]}
    import json

    return json.dumps(log, indent=2) + "\n"


# -- GitHub Actions -------------------------------------------------------------------

_GITHUB_COMMAND = {Severity.ERROR: "error", Severity.WARNING: "warning", Severity.NOTE: "notice"}


def _escape_data(text: str) -> str:
    return text.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def _escape_property(text: str) -> str:
    return _escape_data(text).replace(":", "%3A").replace(",", "%2C")


def render_github(diagnostics: Sequence[Diagnostic]) -> str:
    """GitHub Actions workflow commands (`::error file=…,line=…::message`), one line each.

    Columns are given only for spans on one line, as GitHub ignores them otherwise.
    """
    out = []
    for d in diagnostics:
        s = d.span
        props = [("file", s.file.replace("\\", "/")), ("line", str(s.line))]
        if s.end_line == s.line:
            props.append(("col", str(s.col)))
        props.append(("endLine", str(s.end_line)))
        if s.end_line == s.line:
            props.append(("endColumn", str(s.end_col)))
        props.append(("title", f"{d.code} {d.name}"))
        joined = ",".join(f"{key}={_escape_property(value)}" for key, value in props)
        out.append(f"::{_GITHUB_COMMAND[d.severity]} {joined}::{_escape_data(_full_text(d))}\n")
    return "".join(out)
