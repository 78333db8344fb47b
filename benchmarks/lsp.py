"""`interlock lsp` figures, ratios in one run (issue 13):

- diagnostics after an edit of a 2,000-line file (generated as for compile-20k), from the change
  notification to the publish less the debounce, vs an in-process `compile_source` of the same text
  (target: p95 ratio <= 2);
- hover, definition and completion on that file from the cached analysis (target: p95 <= 50 ms);
- `initialize` answered (process start included) vs `python -c "import pygls.lsp.server"` (target <= 1.5x).

    python benchmarks/lsp.py [--repeat N] [--json]

Exit status 0; 1 when a target is missed; 2 when the benchmark could not run.
"""

from __future__ import annotations

import argparse
import asyncio
import importlib.util
import json
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
LINES = 2_000
INTERLOCK = str(Path(sys.executable).with_name("interlock"))


def _generate(lines: int) -> str:
    spec = importlib.util.spec_from_file_location("bench_run", ROOT / "benchmarks" / "run.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["bench_run"] = module
    spec.loader.exec_module(module)
    text: str = module.generate_wf(lines)
    return text


def p95(values: list[float]) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(0.95 * (len(ordered) - 1)))]


async def _session(text: str, path: Path, repeat: int) -> dict[str, Any]:
    from lsprotocol import types as lsp
    from pytest_lsp import client_capabilities
    from pytest_lsp.client import make_test_lsp_client

    from interlock.lsp.server import DEBOUNCE

    client = make_test_lsp_client()
    arrived: dict[int, float] = {}
    default = client.protocol.fm.features[lsp.TEXT_DOCUMENT_PUBLISH_DIAGNOSTICS]

    def published(params: lsp.PublishDiagnosticsParams) -> None:
        if params.version is not None:
            arrived[params.version] = time.perf_counter()
        default(params)

    client.protocol.fm.features[lsp.TEXT_DOCUMENT_PUBLISH_DIAGNOSTICS] = published
    started = time.perf_counter()
    await client.start_io(INTERLOCK, "lsp")
    await client.initialize_session(lsp.InitializeParams(capabilities=client_capabilities("visual-studio-code")))
    initialize = time.perf_counter() - started
    uri = path.as_uri()
    client.text_document_did_open(lsp.DidOpenTextDocumentParams(text_document=lsp.TextDocumentItem(
        uri=uri, language_id="interlock", version=1, text=text)))
    while 1 not in arrived:
        await asyncio.sleep(0.005)
    lines = text.split("\n")
    edit_line = next(i for i, line in enumerate(lines) if "move_to_step(" in line)
    diag: list[float] = []
    for version in range(2, repeat + 2):
        sent = time.perf_counter()
        client.text_document_did_change(lsp.DidChangeTextDocumentParams(
            text_document=lsp.VersionedTextDocumentIdentifier(uri=uri, version=version),
            content_changes=[lsp.TextDocumentContentChangePartial(
                range=lsp.Range(start=lsp.Position(line=edit_line, character=0),
                                end=lsp.Position(line=edit_line, character=0)), text=" " if version % 2 else "")]))
        while version not in arrived:
            await asyncio.sleep(0.001)
        diag.append(arrived[version] - sent - DEBOUNCE)
    kind_line = next(i for i, line in enumerate(lines) if "on on_enter" in line)
    col = lines[kind_line].index("{") + 2
    where = lsp.TextDocumentPositionParams(text_document=lsp.TextDocumentIdentifier(uri=uri),
                                           position=lsp.Position(line=kind_line, character=col))
    requests: dict[str, list[float]] = {"hover": [], "definition": [], "completion": []}
    for _ in range(repeat):
        for name, call in (("hover", client.text_document_hover_async(lsp.HoverParams(
                text_document=where.text_document, position=where.position))),
                ("definition", client.text_document_definition_async(lsp.DefinitionParams(
                    text_document=where.text_document, position=where.position))),
                ("completion", client.text_document_completion_async(lsp.CompletionParams(
                    text_document=where.text_document, position=where.position)))):
            t = time.perf_counter()
            await call
            requests[name].append(time.perf_counter() - t)
    await client.shutdown_session()
    await client.stop()  # type: ignore[no-untyped-call]
    return {"initialize": initialize, "diagnostics": diag, **requests}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeat", type=int, default=30)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args(argv)
    from interlock.compiler import compile_source
    from interlock.dsl import SourceFile

    text = _generate(LINES)
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "bench_2k.wf"
        path.write_text(text)
        compile_times = []
        for _ in range(args.repeat):
            t = time.perf_counter()
            compile_source(SourceFile(str(path), text), search_dir=path.parent)
            compile_times.append(time.perf_counter() - t)
        got = asyncio.run(_session(text, path, args.repeat))
    imports = []
    for _ in range(5):
        t = time.perf_counter()
        subprocess.run([sys.executable, "-c", "import pygls.lsp.server"], check=True)
        imports.append(time.perf_counter() - t)
    base = statistics.median(imports)
    rows = {
        "diagnostics-after-edit": (p95(got["diagnostics"]), p95(compile_times), 2.0),
        "initialize": (got["initialize"], base, 1.5),
    }
    result: dict[str, Any] = {name: {"p95_s": v, "reference_s": ref, "ratio": v / ref, "target_ratio": tgt,
                                     "ok": v / ref <= tgt} for name, (v, ref, tgt) in rows.items()}
    for name in ("hover", "definition", "completion"):
        v = p95(got[name])
        result[name] = {"p95_s": v, "target_s": 0.05, "ok": v <= 0.05}
    if args.json:
        print(json.dumps(result, indent=2))
    else:
        for name, row in result.items():
            ref = f"  vs {row['reference_s'] * 1e3:7.1f} ms  ratio {row['ratio']:.2f} (<= {row['target_ratio']})" \
                if "ratio" in row else f"  (<= {row['target_s'] * 1e3:.0f} ms)"
            print(f"{name:24} {row['p95_s'] * 1e3:7.1f} ms{ref}  {'ok' if row['ok'] else 'MISSED'}")
    return 0 if all(row["ok"] for row in result.values()) else 1


if __name__ == "__main__":
    sys.exit(main())
