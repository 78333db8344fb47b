"""The language's string escapes live in one place (`interlock.dsl.escapes`): what `quote` writes, the lexer and
the lowering read back as exactly the text quoted, and every printer of `.wf` text uses that one `quote`."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from interlock.dsl import SourceFile, ir, parse_source
from interlock.dsl.escapes import quote, unescape


@given(st.text())
def test_quote_and_unescape_are_inverses(text: str) -> None:
    literal = quote(text)
    assert literal.startswith('"') and literal.endswith('"')
    assert unescape(literal[1:-1]) == (text, None)


@settings(max_examples=50)
@given(st.text())
def test_the_parser_reads_back_what_quote_wrote(text: str) -> None:
    source = f"trigger t(x: str = {quote(text)})\n"
    module, diagnostics = parse_source(SourceFile("q.wf", source))
    assert diagnostics == [] and module is not None
    decl = module.decls[0]
    assert isinstance(decl, ir.TriggerDecl)
    default = decl.params[0].default
    assert isinstance(default, ir.StrLit) and default.value == text


def test_every_printer_of_wf_text_uses_the_one_quote() -> None:
    """The bridge's actions and the language server's hovers are the IR printer's text (ADR 0055); the parts of the
    bridge that still write `.wf` lines themselves quote with the same function."""
    from interlock.compiler import guard_text
    from interlock.dsl import printer
    from interlock.kandev import importer, placing, steps

    for module in (printer, guard_text, importer, placing, steps):
        assert module.quote is quote, module.__name__
