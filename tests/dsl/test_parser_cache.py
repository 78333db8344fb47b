"""The pickled parser (`interlock.dsl.parser`'s cache) loads, parses exactly like a freshly built
one, and a damaged cache file only costs a rebuild."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import lark
import pytest

from interlock.dsl import SourceFile, parse_source
from interlock.dsl import parser as P

ROOT = Path(__file__).resolve().parents[2]
FILES = sorted((ROOT / "examples").glob("*.wf"))
BROKEN = ["workflow {", "workflow w { step s { on t { a(x: [1, 2) } } }", 'trigger t "x"', "entry { exclude }",
          "dispatch d on t { skip s silent when a == }", "role a,, b", "workflow w { step s { position x } }", "é"]


@pytest.fixture
def fresh_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    P._parser.cache_clear()
    yield tmp_path / "interlock"
    P._parser.cache_clear()  # later tests load the parser from the usual cache again


def _results() -> list[object]:
    out: list[object] = []
    for path in FILES:
        module, diagnostics = parse_source(SourceFile(path.name, path.read_text(encoding="utf-8")))
        assert module is not None and not diagnostics
        out.append(module.model_dump())
    for text in BROKEN:
        module, diagnostics = parse_source(SourceFile("broken.wf", text))
        out.append((module, [(d.code, d.span, d.message, d.help) for d in diagnostics]))
    return out


def _pickled(cache: Path) -> Path:
    (found,) = cache.glob("wf-parser-*.pickle")
    return found


def test_the_cached_parser_loads_and_parses_like_a_fresh_one(fresh_cache: Path) -> None:
    built = _results()  # builds the parser and writes the cache
    key = P._parser_key(P.grammar_text(), lark.__version__)
    assert P._load_parser(_pickled(fresh_cache).name, key) is not None, "the parser cache does not load"
    P._parser.cache_clear()
    assert _results() == built


def test_a_damaged_or_stale_cache_is_rebuilt(fresh_cache: Path) -> None:
    built = _results()
    pickled = _pickled(fresh_cache)
    key = P._parser_key(P.grammar_text(), lark.__version__)
    assert P._load_parser(pickled.name, (*key[:-1], "another interpreter")) is None
    for damage in (b"", pickled.read_bytes()[:500], b"not a pickle at all"):
        pickled.write_bytes(damage)
        P._parser.cache_clear()
        assert _results() == built
        assert P._load_parser(_pickled(fresh_cache).name, key) is not None  # and written again


@pytest.mark.skipif(not P._PRECOMPILED, reason="compiled patterns are cached on CPython only")
def test_every_lexer_state_is_compiled_before_it_is_cached(fresh_cache: Path) -> None:
    _results()
    loaded = P._load_parser(_pickled(fresh_cache).name, P._parser_key(P.grammar_text(), lark.__version__))
    assert loaded is not None
    lexer = loaded[0].parser.lexer
    assert all(basic._scanner is not None for basic in lexer.lexers.values())


def test_parses_in_threads_do_not_share_lowering_state() -> None:
    from concurrent.futures import ThreadPoolExecutor

    texts = [p.read_text(encoding="utf-8") for p in FILES] * 4 + BROKEN * 4
    serial = [parse_source(SourceFile(f"f{i}.wf", t)) for i, t in enumerate(texts)]
    with ThreadPoolExecutor(max_workers=4) as pool:
        threaded = list(pool.map(lambda it: parse_source(SourceFile(f"f{it[0]}.wf", it[1])), enumerate(texts)))
    assert [(m.model_dump() if m else None, d) for m, d in threaded] == \
        [(m.model_dump() if m else None, d) for m, d in serial]
