"""The language's string escapes (docs/language.md §1), both ways and in one place: a string literal's body in, its
text (and where its first bad escape is) out (`unescape`, for every string the lowering builds); a text in, the
literal the lexer reads back as exactly that text out (`quote`, for everything that prints `.wf`: the IR printer,
the kandev bridge, the diagrams' guard labels)."""

from __future__ import annotations

__all__ = ["unescape", "quote"]

_ESCAPES = {'"': '"', "\\": "\\", "n": "\n", "t": "\t", "r": "\r", "0": "\0", "/": "/"}
_SIMPLE_ESCAPES = {'"': '\\"', "\\": "\\\\", "\n": "\\n", "\t": "\\t", "\r": "\\r"}


def unescape(body: str) -> tuple[str, int | None]:
    """Decode a string literal's body; returns (text, offset of first bad escape or None)."""
    if "\\" not in body:
        return body, None
    out: list[str] = []
    i, n = 0, len(body)
    while i < n:
        c = body[i]
        if c != "\\":
            out.append(c)
            i += 1
            continue
        nxt = body[i + 1] if i + 1 < n else ""
        if nxt in _ESCAPES:
            out.append(_ESCAPES[nxt])
            i += 2
        elif nxt == "u" and i + 6 <= n and all(ch in "0123456789abcdefABCDEF" for ch in body[i + 2:i + 6]):
            code = int(body[i + 2:i + 6], 16)
            i += 6
            low = body[i + 2:i + 6] if 0xD800 <= code <= 0xDBFF and body.startswith("\\u", i) else ""
            if len(low) == 4 and all(ch in "0123456789abcdefABCDEF" for ch in low) and 0xDC00 <= int(low, 16) <= 0xDFFF:
                # a surrogate pair, as JSON writes a character beyond U+FFFF: one character
                code = 0x10000 + ((code - 0xD800) << 10) + (int(low, 16) - 0xDC00)
                i += 6
            out.append(chr(code))
        else:
            return "".join(out), i
    return "".join(out), None


def quote(text: str) -> str:
    """`text` as a `.wf` string literal, escaped so that the lexer reads back exactly `text` (`unescape`)."""
    import unicodedata  # here: the lowering, on every `interlock check`, needs `unescape` alone

    out = ['"']
    for c in text:
        simple = _SIMPLE_ESCAPES.get(c)
        if simple is not None:
            out.append(simple)
        elif ord(c) <= 0xFFFF and unicodedata.category(c) in ("Cc", "Cf", "Cs", "Zl", "Zp"):
            out.append(f"\\u{ord(c):04x}")  # \uXXXX covers the BMP only; astral characters are written as themselves
        else:
            out.append(c)
    out.append('"')
    return "".join(out)
