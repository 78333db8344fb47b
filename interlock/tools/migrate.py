"""`interlock migrate NEW.wf --store URL [--map WF.OLD=NEW …] [--enter] [--apply]`: the tasks a new plan strands, and
their move onto its steps.

A task is stranded when it stands on a step the new plan does not have (docs/runtime.md, "Deployments"): a
delivery for it changes nothing and says `task_stranded`.  Without `--apply` the command lists what it would
do and writes nothing (the store is opened read-only); with it, each mapped task is moved by one ledger row
with route `migration` (a compare-and-swap on the task's activation), its destination's entry dispatched only
with `--enter`.  Running it again moves nothing: the tasks it moved are no longer stranded.
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

from interlock.errors import InterlockError

__all__ = ["HELP", "DESCRIPTION", "EPILOG", "add_arguments", "run"]

HELP = "move the tasks a new plan strands (on steps it lacks) onto its steps"
DESCRIPTION = """\
List the tasks of a store that stand on a step NEW.wf does not have, and where each would go; with
--apply, move them there (one ledger row each, route `migration`).

  interlock migrate office.wf --store postgresql://…/orchestrator \\
      --map office_default.qa=review --map office_default.triage=work
  interlock migrate office.wf --store postgresql://…/orchestrator --map office_default.qa=review --apply

--map WORKFLOW.OLD=NEW maps a step the plan lacks to a step of the same workflow (NEW) or of another one
(WF2.NEW); WORKFLOW.*=NEW maps every stranded step of a workflow.  A task with no mapping is listed and left
where it is.  The destination's entry actions run only with --enter (default: not, since the task did not
arrive there by the rules).  (docs/runtime.md, "Deployments")"""
EPILOG = ("Exit status: 0 nothing is (or, with --apply, is left) stranded without a mapping; 1 a stranded task has "
          "no mapping, a move was refused, or NEW.wf does not compile; 2 usage error (a bad --map, a store that "
          "cannot be read).")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("file", metavar="NEW.wf", help="the new workflow file (or a compiled plan)")
    parser.add_argument("--store", required=True, metavar="URL", help="the store the runtimes use")
    parser.add_argument("--map", dest="maps", action="append", default=[], metavar="WORKFLOW.OLD=NEW",
                        help="where the tasks on a stranded step go (repeatable); WORKFLOW.*=NEW for every one")
    enter = parser.add_mutually_exclusive_group()
    enter.add_argument("--enter", dest="enter", action="store_true", default=False,
                       help="dispatch each destination's entry actions")
    enter.add_argument("--no-enter", dest="enter", action="store_false", help="(the default) record the arrival only")
    parser.add_argument("--apply", action="store_true", help="move the tasks (without it nothing is written)")
    parser.add_argument("--format", choices=("text", "json"), default="text", help="output format")


class MigrateUsageError(InterlockError):
    """A usage error of `interlock migrate` (exit 2)."""


def _maps(raw: list[str]) -> dict[tuple[str, str], tuple[str | None, str]]:
    """`WF.OLD=NEW` / `WF.OLD=WF2.NEW` / `WF.*=…` as {(wf, old or "*"): (workflow or None, step)}."""
    out: dict[tuple[str, str], tuple[str | None, str]] = {}
    for item in raw:
        source, sep, target = item.partition("=")
        wf, dot, old = source.partition(".")
        if not (sep and dot and wf and old and target) or target.count(".") > 1:
            raise MigrateUsageError(f"--map {item!r}: write WORKFLOW.OLD_STEP=NEW_STEP (or WORKFLOW.OLD=WF2.NEW)")
        to_wf, _, to_step = target.rpartition(".")
        out[(wf, old)] = (to_wf or None, to_step)
    return out


class _NoPlan(Exception):
    """The file does not compile (its diagnostics are printed): exit 1."""


def _plan(name: str) -> Any:
    """The new plan: a compiled `.json` plan, or the `.wf` file compiled (its diagnostics on standard error)."""
    from pathlib import Path

    path = Path(name)
    if not path.is_file():
        raise MigrateUsageError(f"no such file: {name}" if not path.exists() else f"not a file: {name}")
    if path.suffix.lower() == ".json":
        from interlock.runtime.plan import PlanError, load_plan

        try:
            return load_plan(path.read_bytes())
        except PlanError as exc:
            raise MigrateUsageError(f"{name}: {exc}") from None
    from interlock.compiler import compile_path
    from interlock.dsl import render

    result = compile_path(path, want_plan=True)
    if result.diagnostics:
        sys.stderr.write(render.render_full(result.diagnostics, result.sources) + "\n")
    if result.plan is None:
        raise _NoPlan(f"{name}: does not compile ({result.errors} error(s)): nothing migrated")
    return result.plan


def _destinations(stranded: list[Any], maps: dict[tuple[str, str], tuple[str | None, str]],
                  plan: Any) -> list[dict[str, Any]]:
    steps = {(wf.id, s.id) for wf in plan.workflows for s in wf.steps}
    out = []
    for s in stranded:
        target = maps.get((s.workflow, s.step)) or maps.get((s.workflow, "*"))
        item: dict[str, Any] = {"task": s.task_id, "workflow": s.workflow, "step": s.step, "to_workflow": None,
                                "to_step": None, "action": "unmapped"}
        if target is not None:
            wf = target[0] or s.workflow
            if (wf, target[1]) not in steps:
                raise MigrateUsageError(f"--map {s.workflow}.{s.step}={target[1]}: the new plan has no step "
                                        f"`{wf}.{target[1]}`")
            item.update(to_workflow=wf, to_step=target[1], action="move")
        out.append(item)
    return out


def _apply(url: str, plan: Any, items: list[dict[str, Any]], enter: bool) -> None:
    from interlock.runtime import Runtime
    from interlock.stores import open_store

    store = open_store(url, create=False)
    rt = Runtime(plan, store, sinks=[], executor_timeout=60.0)
    try:
        for item in items:
            if item["action"] != "move":
                continue
            result = rt.migrate_task(item["task"], item["to_workflow"], item["to_step"], enter=enter)
            item["action"] = "moved" if result.status == "moved" else f"refused ({result.reason or result.status})"
            item["ledger_id"] = result.ledger_id
    finally:
        rt.close()
        store.close()  # type: ignore[attr-defined]


def run(args: argparse.Namespace) -> int:
    from interlock.stores.inflight import InflightError, stranded_tasks
    from interlock.stores.masking import mask_credentials

    try:
        maps = _maps(args.maps)
        plan = _plan(args.file)
        try:
            stranded = stranded_tasks(args.store, plan)
        except InflightError as exc:
            raise MigrateUsageError(str(exc)) from None
        items = _destinations(stranded, maps, plan)
    except MigrateUsageError as exc:
        sys.stderr.write(f"interlock migrate: error: {exc}\n")
        return 2
    except _NoPlan as exc:
        sys.stderr.write(f"interlock migrate: {exc}\n")
        return 1
    if args.apply:
        _apply(args.store, plan, items, args.enter)
    left = [i for i in items if i["action"] not in ("moved", "move")]
    if args.format == "json":
        sys.stdout.write(json.dumps({"migrate_version": 1, "store": mask_credentials(args.store), "applied": args.apply,
                                     "enter": args.enter, "tasks": items,
                                     "summary": {"stranded": len(items), "left": len(left)}}, indent=2) + "\n")
    else:
        sys.stdout.write(_text(items, args.apply, args.enter))
    return 1 if left else 0


def _text(items: list[dict[str, Any]], applied: bool, enter: bool) -> str:
    if not items:
        return "nothing stranded: every task stands on a step of the plan\n"
    lines = []
    for i in items:
        where = f"{i['workflow']}.{i['step']}"
        if i["action"] == "unmapped":
            lines.append(f"  {i['task']}: on {where}, no --map for it: left where it is")
        else:
            verb = "would move" if i["action"] == "move" else i["action"]
            lines.append(f"  {i['task']}: {where} -> {i['to_workflow']}.{i['to_step']}: {verb}")
    moved = sum(1 for i in items if i["action"] == "moved")
    head = (f"{len(items)} stranded task(s); {moved} moved (route `migration`, entry "
            f"{'dispatched' if enter else 'not dispatched'})" if applied else
            f"{len(items)} stranded task(s) (dry run: nothing written; --apply moves them)")
    return head + "\n" + "\n".join(lines) + "\n"
