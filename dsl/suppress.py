"""A program's diagnostics, its files' text and the codes a configuration ignores in; the diagnostics that are not
suppressed out, with an `unused-suppression` warning for each suppression that suppresses nothing
(docs/language.md, "Suppressing a check"; ADR 0039).

`# interlock: ignore[IL504]` (several codes comma separated, a reason may follow) at the end of a line suppresses
those codes on that line — the line a diagnostic points at, its first; written alone on a line, it suppresses them
on the line below.  Errors cannot be suppressed: a file with an error does not compile, so an error code in a
comment (or in a configuration, which `interlock.config` refuses) is itself reported.  A comment is found only
outside strings; files without the word `interlock:` are not scanned at all.
"""

from __future__ import annotations

import re
from collections.abc import Collection, Iterable, Iterator, Mapping
from typing import NamedTuple

from .construct import construct
from .diagnostics import CODES, Diagnostic, Severity, make
from .source import SourceFile, Span

__all__ = ["Suppression", "scan", "apply_suppressions", "MARKER"]

MARKER = "interlock:"
_COMMENT = re.compile(r"#[ \t]*interlock:(?P<rest>.*)")
_IGNORE = re.compile(r"[ \t]*ignore\[(?P<codes>[^\]\n]*)\]")
_CODE = re.compile(r"[A-Za-z]+[0-9]+")


class Suppression(NamedTuple):
    """One `# interlock: ignore[…]` comment: the line it suppresses on, and each code with its span."""

    file: str
    target: int
    codes: tuple[tuple[str, Span], ...]


class _Malformed(NamedTuple):
    span: Span


def _span(file: str, line: int, col: int, length: int) -> Span:
    return construct(Span, {"file": file, "line": line, "col": col, "end_line": line, "end_col": col + length})


def _comments(text: str) -> Iterator[tuple[int, int, str, bool]]:
    """Each `# …` comment outside strings: (1-based line, 1-based column, its text, alone on its line)."""
    i, n, line, line_start = 0, len(text), 1, 0
    while i < n:
        ch = text[i]
        if ch == "\n":
            line, line_start = line + 1, i + 1
            i += 1
        elif ch == "#":
            end = text.find("\n", i)
            end = n if end < 0 else end
            yield line, i - line_start + 1, text[i:end].rstrip("\r"), not text[line_start:i].strip()
            i = end
        elif text.startswith('"""', i) and re.match(r'"""[ \t]*\r?\n', text[i:i + 64]):
            close = text.find('"""', i + 3)
            close = n if close < 0 else close + 3
            line += text.count("\n", i, close)
            line_start = text.rfind("\n", 0, close) + 1 if "\n" in text[i:close] else line_start
            i = close
        elif ch == '"':
            i += 1
            while i < n and text[i] not in '"\n':
                i += 2 if text[i] == "\\" else 1
            i += 1 if i < n and text[i] == '"' else 0
        else:
            i += 1


def scan(source: SourceFile) -> list[Suppression | _Malformed]:
    """The suppression comments of one file (and the `# interlock:` comments that are not one)."""
    text = source.text
    if MARKER not in text:
        return []
    out: list[Suppression | _Malformed] = []
    for line, col, comment, alone in _comments(text):
        m = _COMMENT.match(comment)
        if m is None:
            continue
        rest_at = col + m.start("rest")
        ignore = _IGNORE.match(m.group("rest"))
        if ignore is None:
            out.append(_Malformed(_span(source.name, line, col, len(comment))))
            continue
        codes: list[tuple[str, Span]] = []
        listed = ignore.group("codes")
        at = rest_at + ignore.start("codes")
        for part in re.finditer(r"[^,]+", listed):
            raw = part.group()
            code = raw.strip()
            offset = part.start() + (len(raw) - len(raw.lstrip()))
            codes.append((code, _span(source.name, line, at + offset, max(len(code), 1))))
        if not codes:
            out.append(_Malformed(_span(source.name, line, col, len(comment))))
            continue
        out.append(Suppression(source.name, line + 1 if alone else line, tuple(codes)))
    return out


def _suggest(code: str) -> str | None:
    import difflib

    upper = code.upper()
    # a letter typed for the digit it looks like (`IL5O4`): the code meant, before any merely similar one
    digits = upper[:2] + upper[2:].translate(str.maketrans("OIL", "011"))
    if digits in CODES:
        return f"did you mean `{digits}`?"
    match = difflib.get_close_matches(upper, list(CODES), n=1, cutoff=0.6)
    return f"did you mean `{match[0]}`?" if match else None


def apply_suppressions(diagnostics: Iterable[Diagnostic], sources: Mapping[str, SourceFile],
                       files: Iterable[str], ignore: Collection[str] = ()) -> list[Diagnostic]:
    """`diagnostics` without those the comments of `files` (names in `sources`) or the `ignore`d codes suppress,
    plus an `unused-suppression` warning for each code of a comment that suppresses nothing.  Errors are never
    dropped.  Whether a warning would be reported cannot be told for a program with an error (some checks run only
    on one without), so unused comments are then not reported; malformed ones, unknown and error codes always are."""
    found = [s for name in files if name in sources for s in scan(sources[name])]
    kept = list(diagnostics)
    if not found and not ignore:
        return kept
    wanted: dict[tuple[str, int, str], list[bool]] = {}
    for s in found:
        if isinstance(s, Suppression):
            for code, _ in s.codes:
                wanted.setdefault((s.file, s.target, code.upper()), [False])
    has_error = any(d.is_error for d in kept)
    out: list[Diagnostic] = []
    for d in kept:
        if d.severity is not Severity.ERROR:
            used = wanted.get((d.file, d.span.line, d.code))
            if used is not None and d.code != "IL512":
                used[0] = True
                continue
            if d.code in ignore:
                continue
        out.append(d)
    extra: list[Diagnostic] = []
    for s in found:
        if isinstance(s, _Malformed):
            extra.append(make("unused-suppression", s.span, "not a suppression: an `# interlock:` comment reads "
                              "`# interlock: ignore[CODE, …]`, then a reason if you like",
                              help="write `# interlock: ignore[IL504] why the warning is accepted`"))
            continue
        for code, span in s.codes:
            problem = _problem(code, s, wanted, has_error)
            if problem is not None:
                extra.append(make("unused-suppression", span, problem[0], help=problem[1]))
    return out + [d for d in extra if d.code not in ignore]


def _problem(code: str, s: Suppression, wanted: Mapping[tuple[str, int, str], list[bool]],
             has_error: bool) -> tuple[str, str | None] | None:
    """What is wrong with one code of a suppression comment (None: it suppressed something)."""
    info = CODES.get(code.upper())
    if info is None or not _CODE.fullmatch(code):
        return f"`{code}` is not a diagnostic code", _suggest(code) or "codes are listed by `interlock explain`"
    if info.severity is Severity.ERROR:
        return (f"`{info.code}` ({info.name}) is an error, and errors cannot be suppressed: a file with an error "
                "does not compile", "fix what the error says instead")
    if info.code == "IL512":
        return "`IL512` cannot be suppressed by a comment (it would hide itself)", \
            "ignore it in the configuration (`ignore = [\"IL512\"]`) if you must"
    if wanted[(s.file, s.target, info.code)][0] or has_error:
        return None
    return (f"`ignore[{info.code}]` suppresses nothing: no {info.code} ({info.name}) is reported on line {s.target}",
            "remove the code from the comment (or the comment)")
