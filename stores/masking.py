"""A database URL or libpq connection string as a user typed it in, the same text with every credential masked
out: what every message, report, record and repr shows of a store's address.

One function, `mask_credentials`, covers each form SQLAlchemy and libpq accept for a secret: the password of a
URL's user part (`postgresql://user:SECRET@host/db`, percent-encoded or not), a secret query argument
(`?password=SECRET`, `&sslpassword=SECRET`, repeated, in any case, with a percent-encoded key such as
`pass%77ord`), and a secret keyword of a key/value connection string (`host=h password=SECRET`,
`password = 'quoted \\' value'`).  A secret key is one whose name holds `password`, `passwd`, `secret` or
`token`, or is `pwd`.  `passfile` and `sslkey` name files, not secrets, and stay shown: an operator needs them
to find what is wrong (ADR 0044).  Where the text is ambiguous (an `@` inside a password) more is masked, never
less.  Pure standard library: it masks a URL that no parser accepts, too.  `scrub` masks the same secrets
wherever else they appear in a message (a driver's or a parser's error text that quotes the URL).
"""

from __future__ import annotations

import re
from urllib.parse import unquote

__all__ = ["MASK", "mask_credentials", "is_secret_key", "scrub"]

MASK = "***"
"""What a secret is shown as (SQLAlchemy's own `hide_password` shows the same)."""

# `scheme://user:` then the password, greedy to the last `@` (a password may hold a raw `@`: masking too much
# is safe, too little is not); the user part holds no `:`, `/` or `@`, as in SQLAlchemy's own parser
_USERINFO = re.compile(r"(?P<head>\A\s*[A-Za-z][A-Za-z0-9+.\-]*://[^:/@]*:)(?P<secret>.*)(?=@)", re.DOTALL)
# a URL's query arguments: `key=value` after `?` or `&`, the value up to the next `&`
_QUERY = re.compile(r"(?P<head>(?<=[?&])(?P<key>[^=&]*)=)(?P<value>[^&]*)")
# libpq key/value strings: `key = value`, the value quoted ('…', backslash escapes) or up to white space
_CONNINFO = re.compile(r"(?P<head>(?:\A|(?<=\s))(?P<key>[^\s=]+)\s*=\s*)"
                       r"(?P<value>'(?:[^'\\]|\\.)*(?:'|\Z)|(?:\\.|[^\s\\])*\\?)", re.DOTALL)
_SECRET_WORDS = ("password", "passwd", "secret", "token")


def is_secret_key(key: str) -> bool:
    """Whether a query argument or connection keyword holds a secret (`password`, `SSLPassword`, `pass%77ord`)."""
    name = unquote(key).strip().lower()
    return name == "pwd" or any(word in name for word in _SECRET_WORDS)


def _masked(match: re.Match[str]) -> str:
    if not is_secret_key(match.group("key")) or not match.group("value"):
        return match.group(0)
    return match.group("head") + MASK


def mask_credentials(text: str) -> str:
    """`text` (a URL or a libpq key/value string) with every password and other secret replaced by `***`;
    everything else is kept as given."""
    if "://" in text:
        masked = _USERINFO.sub(lambda m: m.group("head") + (MASK if m.group("secret") else ""), text, count=1)
        return _QUERY.sub(_masked, masked)
    return _CONNINFO.sub(_masked, text)


def _secrets(url: str) -> set[str]:
    """Every secret of `url` as written, percent-decoded and (in a connection string) unquoted."""
    found: set[str] = set()
    if "://" in url:
        user = _USERINFO.search(url)
        if user is not None and user.group("secret"):
            found.add(user.group("secret"))
        pairs = [(m.group("key"), m.group("value")) for m in _QUERY.finditer(url)]
    else:
        pairs = [(m.group("key"), m.group("value")) for m in _CONNINFO.finditer(url)]
        pairs += [(k, re.sub(r"\\(.)", r"\1", v[1:-1] if v[:1] == "'" and v[-1:] == "'" and len(v) > 1 else v))
                  for k, v in pairs]
    found.update(v for k, v in pairs if v and is_secret_key(k))
    found.update({unquote(v) for v in found} | {unquote(v.replace("+", " ")) for v in found})
    return {v for v in found if v}


def scrub(text: str, url: str) -> str:
    """`text` (an error message, a log line) with every secret of `url` masked wherever it appears, longest
    first; `url` itself, when it appears, is masked as `mask_credentials` masks it."""
    masked = text.replace(url, mask_credentials(url)) if url else text
    for secret in sorted(_secrets(url), key=len, reverse=True):
        masked = masked.replace(secret, MASK)
    return masked
