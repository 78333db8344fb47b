"""A diagnostic code in, its documentation page out: the code's section of docs/diagnostics.md (IL codes) or its row
of docs/kandev.md (KV codes), and the address that page has where interlock is installed (ADR 0039).

The pages are read from one place, never copied by hand: a wheel carries docs/diagnostics.md and docs/kandev.md as
package data (`interlock/docs/`, copied there by setup.py's build step); a checkout (or an editable install) reads
them from its `docs/` folder.  Links (`helpUri` in SARIF, `codeDescription` in the language server) point at the
page that exists where interlock runs — a `file://` URI with the code's anchor — unless the project's configuration
sets `docs_url` (`interlock.config`).  Only the standard library is imported here.
"""

from __future__ import annotations

import re
from functools import lru_cache
from pathlib import Path
from typing import NamedTuple

__all__ = ["Page", "docs_file", "page", "page_uri", "help_url", "suggest_code", "known_codes"]

_IL_HEADING = re.compile(r"^## (IL\d{3}) ([a-z0-9-]+)\s*$", re.MULTILINE)
_KV_ROW = re.compile(r"^\| (KV\d{3}) \| ([a-z0-9-]+) \| (\w+) \| (.*) \|\s*$", re.MULTILINE)


class Page(NamedTuple):
    """One code's documentation: its code, name, severity and the text (Markdown)."""

    code: str
    name: str
    severity: str
    text: str


@lru_cache(maxsize=4)
def docs_file(name: str) -> Path | None:
    """Where the documentation file `name` (`diagnostics.md`, `kandev.md`) is: inside the installed package, else
    in the checkout's docs/ folder; None when neither has it."""
    from importlib.resources import files

    installed = Path(str(files("interlock").joinpath("docs", name)))
    if installed.is_file():
        return installed
    checkout = Path(__file__).resolve().parents[1] / "docs" / name
    return checkout if checkout.is_file() else None


@lru_cache(maxsize=2)
def _read(name: str) -> str:
    path = docs_file(name)
    return path.read_text(encoding="utf-8") if path is not None else ""


def _il_pages() -> dict[str, Page]:
    from interlock.dsl.diagnostics import CODES

    text = _read("diagnostics.md")
    heads = list(_IL_HEADING.finditer(text))
    out: dict[str, Page] = {}
    for i, m in enumerate(heads):
        end = heads[i + 1].start() if i + 1 < len(heads) else len(text)
        info = CODES.get(m.group(1))
        severity = info.severity.value if info is not None else ""
        out[m.group(1)] = Page(m.group(1), m.group(2), severity, text[m.start():end].strip() + "\n")
    return out


def _kv_pages() -> dict[str, Page]:
    return {m.group(1): Page(m.group(1), m.group(2), m.group(3),
                             f"## {m.group(1)} {m.group(2)}\n\n**Severity:** {m.group(3)}. {m.group(4).strip()}\n\n"
                             "(`interlock import` and `interlock export`: docs/kandev.md)\n")
            for m in _KV_ROW.finditer(_read("kandev.md"))}


def known_codes() -> dict[str, Page]:
    """Every documented code's page, IL then KV codes."""
    return {**_il_pages(), **_kv_pages()}


def page(code_or_name: str) -> Page | None:
    """The page of a code (`IL102`, any case) or of a code's name (`unknown-parameter`); None when unknown."""
    pages = known_codes()
    key = code_or_name.strip()
    found = pages.get(key.upper())
    if found is None:
        found = next((p for p in pages.values() if p.name == key.lower()), None)
    return found


def suggest_code(code_or_name: str) -> str | None:
    """`did you mean …?` for an unknown code or name (None: nothing close)."""
    import difflib

    pages = known_codes()
    key = code_or_name.strip().upper()
    key = key[:2] + key[2:].replace("O", "0").replace("I", "1").replace("L", "1")  # IL1O2 meant IL102
    if key in pages:
        return f"did you mean `{key}` ({pages[key].name})?"
    match = difflib.get_close_matches(key, list(pages), n=1, cutoff=0.6)
    if match:
        return f"did you mean `{match[0]}` ({pages[match[0]].name})?"
    names = {p.name: p.code for p in pages.values()}
    match = difflib.get_close_matches(code_or_name.strip().lower(), list(names), n=1, cutoff=0.6)
    return f"did you mean `{names[match[0]]}` ({match[0]})?" if match else None


def page_uri(code: str, name: str) -> str | None:
    """The `file://` address of a code's section where interlock runs (None: the page is not there)."""
    path = docs_file("kandev.md" if code.startswith("KV") else "diagnostics.md")
    if path is None:
        return None
    anchor = "diagnostics" if code.startswith("KV") else f"{code.lower()}-{name}"
    return f"{path.resolve().as_uri()}#{anchor}"


def help_url(code: str, name: str, docs_url: str | None = None) -> str | None:
    """Where a diagnostic links: the configured `docs_url` template with the code filled in, else the page here."""
    if docs_url is not None:
        return docs_url.replace("{code}", code)
    return page_uri(code, name)
