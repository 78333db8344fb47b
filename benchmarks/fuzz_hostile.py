"""A seeded generator in, hostile inputs for every front door out, and the check of each (the fuzz campaign's
`hostile-*` sources).

The grammar-aware and byte-level inputs of `fuzz_campaign.py` reach the compiler through
bytes.  The families here are the ones that did not come from there, each run through the door
it attacks; every outcome but a diagnostic, a documented error or success is a finding:

- `hostile-wf`: valid programs with NUL characters, lone surrogates (as escapes and raw) and
  long strings put into their string literals: a located diagnostic, never an exception;
- `hostile-fs`: files that are not regular or not in their folder — a `use` of a symlink out of
  the folder, a FIFO, `/dev/zero`, a folder named `.wf`, a `use` cycle, a long `use` chain — read
  by `interlock check` in process: exit 0/1/2 with a message, never a hang or a traceback;
- `hostile-yaml`: scenario files with alias bombs, deep nesting, huge numbers, duplicate keys and
  NUL: a `ScenarioError`, within a time and memory bound;
- `hostile-ids`: runtime calls with ids of any length and content (NUL, lone surrogates, astral
  characters, 10 kB) and arguments of the wrong type, on a `MemoryStore`: a result or a
  `RuntimeFault`, never another exception.

Each input is bytes (so findings are saved like the others): for the last three families a small
JSON document naming the case, produced and consumed here.
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import random
import tempfile
from pathlib import Path
from typing import Any

__all__ = ["FAMILIES", "hostile_inputs", "run_hostile"]

FAMILIES = ("hostile-wf", "hostile-fs", "hostile-yaml", "hostile-ids")

_BAD_TEXT = ["\\u0000", "\\ud800", "\\udfff", "\\ud83d", "\x00", "\\u0000\\ud800", "🙂" * 3, "x" * 5000]
_FS_CASES = ("symlink-out", "fifo", "dev-zero", "folder", "use-self", "use-pair", "use-chain", "dangling")
_YAML_CASES = ("alias-bomb", "deep", "digits", "duplicate", "nul", "deep-flow")
_ID_SHAPES = ("nul", "surrogate", "astral", "long", "list", "dict", "int", "empty", "bytes")


def hostile_inputs(rng: random.Random, count: int, valid: list[bytes]) -> list[tuple[str, bytes]]:
    """`count` hostile inputs drawn with `rng`; `valid` are valid programs to corrupt."""
    out: list[tuple[str, bytes]] = []
    for _ in range(count):
        family = rng.choice(FAMILIES)
        if family == "hostile-wf" and valid:
            out.append((family, _poison_strings(rng.choice(valid), rng)))
        elif family == "hostile-fs":
            out.append((family, json.dumps({"case": rng.choice(_FS_CASES), "n": rng.randint(2, 1200)}).encode()))
        elif family == "hostile-yaml":
            out.append((family, json.dumps({"case": rng.choice(_YAML_CASES), "n": rng.randint(2, 6000)}).encode()))
        else:
            out.append(("hostile-ids", json.dumps({"shape": rng.choice(_ID_SHAPES), "call": rng.randrange(6),
                                                   "n": rng.randint(1, 12_000)}).encode()))
    return out


def _poison_strings(program: bytes, rng: random.Random) -> bytes:
    """`program` with a hostile piece put at the start of some of its string literals."""
    text = program.decode("utf-8")
    parts = text.split('"')
    for i in range(1, len(parts), 2):  # the insides of string literals
        if rng.random() < 0.5:
            parts[i] = rng.choice(_BAD_TEXT) + parts[i]
    return '"'.join(parts).encode("utf-8", "surrogatepass")


def run_hostile(source: str, data: bytes) -> tuple[str, tuple[str, ...], str]:
    """('ok', codes, '') when the door answered as documented, ('exception', (), what happened) otherwise."""
    import traceback

    try:
        if source == "hostile-wf":
            return _run_wf(data)
        case = json.loads(data)
        if source == "hostile-fs":
            return _run_fs(case)
        if source == "hostile-yaml":
            return _run_yaml(case)
        return _run_ids(case)
    except Exception:
        return "exception", (), traceback.format_exc()


def _run_wf(data: bytes) -> tuple[str, tuple[str, ...], str]:
    from interlock.compiler import compile_bytes
    from interlock.runtime.plan import dump_plan, load_plan

    result = compile_bytes("hostile.wf", data)
    if result.plan is not None:
        text = dump_plan(result.plan)
        text.encode("utf-8")  # a plan is always storable text
        if "\\u0000" in text or "\x00" in text:
            return "exception", (), "a plan carries a NUL"
        load_plan(text)
    return "ok", tuple(d.code for d in result.diagnostics), ""


def _check_cli(args: list[str]) -> tuple[int, str]:
    from interlock.cli import main

    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main(args)
    return code, out.getvalue() + err.getvalue()


def _run_fs(case: dict[str, Any]) -> tuple[str, tuple[str, ...], str]:
    kind, n = case["case"], int(case["n"])
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        main = root / "main.wf"
        body = 'workflow w "W" { step a "A" { start } }\n'
        target: Path = main
        if kind == "symlink-out":
            outside = root.parent / f"{root.name}-outside.wf"
            outside.write_text("secret token here\n", encoding="utf-8")
            (root / "secrets.wf").symlink_to(outside)
            main.write_text("use secrets\n" + body, encoding="utf-8")
        elif kind == "fifo":
            target = root / "pipe.wf"
            os.mkfifo(target)
        elif kind == "dev-zero":
            (root / "zero.wf").symlink_to("/dev/zero")
            target = root / "zero.wf"
        elif kind == "folder":
            target = root / "dir.wf"
            target.mkdir()
            (target / "inner.wf").write_text(body, encoding="utf-8")
        elif kind == "use-self":
            main.write_text("use main\n" + body, encoding="utf-8")
        elif kind == "use-pair":
            (root / "other.wf").write_text("use main\n", encoding="utf-8")
            main.write_text("use other\n" + body, encoding="utf-8")
        elif kind == "use-chain":
            for i in range(n):
                (root / f"m{i}.wf").write_text(f"use m{i + 1}\n" if i + 1 < n else "role r\n", encoding="utf-8")
            main.write_text("use m0\n" + body, encoding="utf-8")
        else:  # dangling
            main.write_text("use nowhere\n" + body, encoding="utf-8")
            (root / "nowhere.wf").symlink_to(root / "gone.wf")
        try:
            code, text = _check_cli(["check", "--format", "concise", str(target)])
        finally:
            if kind == "symlink-out":
                (root.parent / f"{root.name}-outside.wf").unlink()
        if code not in (0, 1, 2) or "Traceback" in text or "internal error" in text.lower():
            return "exception", (), f"{kind}: exit {code}\n{text}"
        if kind == "symlink-out" and "secret token" in text:
            return "exception", (), f"{kind}: the file outside the folder was read\n{text}"
        return "ok", (f"exit{code}",), ""


def _yaml_text(kind: str, n: int) -> str:
    if kind == "alias-bomb":
        lines = ['a0: &a0 ["x", "x", "x", "x", "x", "x", "x", "x", "x", "x"]']
        for i in range(1, 9):
            refs = ", ".join([f"*a{i - 1}"] * 10)
            lines.append(f"a{i}: &a{i} [{refs}]")
        return "\n".join(lines) + "\nworkflow: w.wf\nevents: []\n"
    if kind == "deep":
        return "workflow: w.wf\nevents:\n" + "".join("  " * (i + 1) + "- \n" for i in range(min(n, 3000)))
    if kind == "deep-flow":
        return "workflow: w.wf\nevents: " + "[" * n + "]" * n + "\n"
    if kind == "digits":
        return f"workflow: w.wf\ntasks: {{T1: {{workflow: w, step: a, position: {'9' * n}}}}}\nevents: []\n"
    if kind == "duplicate":
        return "workflow: w.wf\nworkflow: x.wf\nevents: []\n"
    return "workflow: \"w\\0.wf\"\nevents: []\n"


def _run_yaml(case: dict[str, Any]) -> tuple[str, tuple[str, ...], str]:
    import time

    from interlock.runtime.scenario import ScenarioError, parse_scenario

    text = _yaml_text(case["case"], int(case["n"]))
    started = time.perf_counter()
    try:
        parse_scenario(text, "hostile.yaml")
        outcome = "parsed"
    except ScenarioError:
        outcome = "refused"
    elapsed = time.perf_counter() - started
    if elapsed > 2.0:
        return "exception", (), f"{case['case']}: took {elapsed:.1f} s"
    return "ok", (outcome,), ""


_IDS_PLAN: Any = None


def _ids_plan() -> Any:
    global _IDS_PLAN
    if _IDS_PLAN is None:
        from interlock.compiler import compile_source
        from interlock.dsl import SourceFile

        result = compile_source(SourceFile("ids.wf", 'workflow w "W" { step a "A" { start manual_move '
                                           'on on_comment { queue_run(target: primary, reason: "c") } } '
                                           'step b "B" { manual_move } }'))
        _IDS_PLAN = result.plan
    return _IDS_PLAN


def _hostile_id(shape: str, n: int) -> Any:
    return {"nul": "id\x00" * (n % 50 + 1), "surrogate": "id\ud800", "astral": "🙂" * (n % 300 + 1),
            "long": "x" * n, "list": ["T"], "dict": {"id": "T"}, "int": n, "empty": "",
            "bytes": b"T"}[shape]


def _run_ids(case: dict[str, Any]) -> tuple[str, tuple[str, ...], str]:
    from interlock.runtime import Runtime, RuntimeFault
    from interlock.stores import MemoryStore

    rt = Runtime(_ids_plan(), MemoryStore(), sinks=[], executor_timeout=None)
    rt.create_task("T", "w")
    bad = _hostile_id(case["shape"], int(case["n"]))
    comment = {"comment_id": "c", "author_id": "u", "body": "b"}
    calls = [
        lambda: rt.create_task(bad, "w"),
        lambda: rt.fire("on_comment", bad, payload=comment),
        lambda: rt.fire("on_comment", "T", payload=comment, operation_id=bad),
        lambda: rt.move("T", "b", session_id=bad),
        lambda: rt.record_decision("T", user=bad, verdict="rejected"),
        lambda: rt.dispatch_entry(bad),
    ]
    try:
        calls[int(case["call"]) % len(calls)]()
        outcome = "accepted"
    except RuntimeFault:
        outcome = "refused"
    return "ok", (outcome,), ""
