"""A host process of a deployment, for tests/runtime/test_fleet.py (run as a script, imported by name).

    python fleet_worker.py SPEC.json

SPEC names the store URL, the plan file (JSON), the journal file and what to do:

- `"do": "move"` — move `task` to `to`; the host action `notify` journals its call and then, when
  `block_on` names it, writes `blocked` and waits for ever (the parent SIGKILLs the process there);
- `"do": "fire"` — deliver `on_comment` with `operation` the same way (its `notify` blocks until the
  file `release` exists);
- `"do": "recover"` — `recover()`, then (with `fire`) deliver that operation once; the result as JSON.

Every executor call is one journal line `X <kind> <key> <attempt> <plan>`: the parent counts calls per
(entry, action) across processes.  `O <owner id>` names the process's runtime owner.
"""

from __future__ import annotations

import json
import os
import sys
import time
from pathlib import Path
from typing import Any

COMMENT = {"comment_id": "c1", "author_id": "u1", "body": "hi"}


def _journal(path: str, line: str) -> None:
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
    try:
        os.write(fd, (line + "\n").encode())
        os.fsync(fd)
    finally:
        os.close(fd)


def main(spec_path: str) -> int:
    from interlock.runtime import ExecutorRegistry, Runtime, load_plan
    from interlock.stores import open_store

    spec: dict[str, Any] = json.loads(Path(spec_path).read_text())
    journal = spec["journal"]
    store = open_store(spec["url"], create=False)
    plan = load_plan(Path(spec["plan"]).read_text())

    def executor(kind: str) -> Any:
        def run(args: Any, ctx: Any) -> None:
            _journal(journal, f"X {kind} {ctx.idempotency_key} {ctx.attempt} {ctx.plan}")
            if spec.get("block_on") == kind:
                _journal(journal, "blocked")
                release = spec.get("release")
                while release is None or not os.path.exists(release):
                    time.sleep(0.01)  # the parent kills the process here, or releases it
        return run

    registry = ExecutorRegistry()
    for kind in ("notify", "page"):
        registry.register(kind, executor(kind))
    rt = Runtime(plan, store, executors=registry, sinks=[], executor_timeout=None,
                 operation_lease=float(spec.get("lease", 60.0)))
    _journal(journal, f"O {rt.owner_id}")
    result: dict[str, Any] = {}
    if spec["do"] == "move":
        moved = rt.move(spec["task"], spec["to"])
        result = {"status": moved.status, "entry": moved.entry.status if moved.entry else None}
    elif spec["do"] == "fire":
        fired = rt.fire("on_comment", spec["task"], session_id="S1", payload=COMMENT, operation_id=spec["operation"])
        result = {"result": fired.result}
    elif spec["do"] == "recover":
        recovered = rt.recover()
        result = {"dispatched": recovered.dispatched, "released": list(recovered.operations_released),
                  "entries": [e.status for e in recovered.entries]}
        if spec.get("operation"):
            result["fire"] = rt.fire("on_comment", spec["task"], session_id="S1", payload=COMMENT,
                                     operation_id=spec["operation"]).result
    _journal(journal, "R " + json.dumps(result))
    rt.close()
    store.close()  # type: ignore[attr-defined]
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
