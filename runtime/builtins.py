"""Store-backed executors for the kinds whose effect is ours: clear_decisions, ensure_seats,
queue_run and queue_run_for_each_participant (args + context in, effects written to the store).

They run inside the unit that writes the action's durable marker, so on step entry each
takes effect exactly once per arrival.  Queued runs carry an idempotency key built from
the entry identity (or operation id), step, task, declared position, agent and a digest of
the action's configuration; a run whose key exists is not queued again.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping, Sequence
from typing import Any

from . import keys
from .errors import ActionFailed
from .executors import ActionContext, Effect, ExecutorRegistry, StaticDirectory
from .frozen import builder
from .keys import operation_ident
from .store import Participant, QueuedRun, Store

_queued_run = builder(QueuedRun)  # the hot path's constructor (frozen.builder)

__all__ = ["register_builtins", "BUILTIN_KINDS", "QUEUEING_KINDS", "config_digest", "run_key", "merged_participants"]

BUILTIN_KINDS = ("clear_decisions", "ensure_seats", "queue_run", "queue_run_for_each_participant")


def _store(ctx: ActionContext) -> Store:
    if ctx.store is None:
        raise ActionFailed(f"{ctx.kind} needs the runtime's store")
    return ctx.store


QUEUEING_KINDS = frozenset({"queue_run", "queue_run_for_each_participant"})
"""The kinds whose runs carry a digest of the action's configuration in their key."""


def config_digest(kind: str, args: Mapping[str, Any]) -> str:
    """The digest of an action's configuration (its kind and arguments): part of its runs' keys."""
    body = json.dumps({"kind": kind, **args}, sort_keys=True, separators=(",", ":"), default=str)
    return hashlib.sha256(body.encode()).hexdigest()[:16]


def run_key(ctx: ActionContext, task_id: str, step_id: str, agent: str, args: Mapping[str, Any]) -> str | None:
    """The delivery's key, the action's declared position, the step, task and agent (escaped) and the digest of the
    action's configuration (`keys.run_key`); None when the delivery has no identity."""
    base = ctx.delivery_key
    if base is None:
        if ctx.operation_id:  # a context built by hand (a host calling a built-in itself)
            base = operation_ident(ctx.operation_id)
        else:
            return None
    digest = ctx.config_digest or config_digest(ctx.kind, args)  # the runtime computes the plan's once
    return keys.run_key(base, ctx.position, step_id, task_id, agent, digest)


def merged_participants(store: Store, task_id: str, step_id: str) -> list[Participant]:
    """Template + per-task rows of one step; a per-task row beats a template row for the same (role, agent)."""
    rows = [p for p in store.participants(task_id, (step_id,)) if p.step_id == step_id]
    per_task = {(p.role, p.agent) for p in rows if p.task_id}
    kept = [p for p in rows if p.task_id or (p.role, p.agent) not in per_task]
    kept.sort(key=lambda p: (p.role, p.position, p.agent, p.id))
    return kept


def _enqueue(ctx: ActionContext, store: Store, task_id: str, step_id: str, agent: str, reason: str,
             payload: Mapping[str, Any], args: Mapping[str, Any], kind: str) -> Effect | None:
    key = run_key(ctx, task_id, step_id, agent, args)
    if key is None:  # no identity: never deduplicated, but still unique per call
        import uuid

        key = f"anon:{uuid.uuid4().hex}"
    run = _queued_run(key, task_id, step_id, agent, reason, dict(payload),
                      ctx.entry_id if task_id == ctx.task.id else None, ctx.operation_id)
    if not store.enqueue_run(run):
        return None
    return {"kind": kind, "agent": agent, "reason": reason, "key": key, "target_task": task_id}


def clear_decisions(args: Mapping[str, Any], ctx: ActionContext) -> Sequence[Effect]:
    cleared = _store(ctx).clear_decisions(ctx.task.id, ctx.step_id)
    return [{"kind": "clear_decisions", "cleared": cleared}]


def ensure_seats(args: Mapping[str, Any], ctx: ActionContext) -> Sequence[Effect]:
    store = _store(ctx)
    role = args.get("role")
    if not role:
        raise ActionFailed("ensure_seats: no role")
    steps = ctx.workflow_steps or (ctx.step_id,)
    if any(p.role == role for p in store.participants(ctx.task.id, steps)):
        return []  # the role has a seat somewhere in the workflow (a template or a per-task row)
    directory = ctx.directory or StaticDirectory()
    candidates = list(directory.seat_candidates(ctx.task, role))
    seated = {p.agent for p in store.participants(ctx.task.id, ctx.workflow_steps or (ctx.step_id,)) if p.task_id}
    preferred = [a for a in candidates if a not in seated] or candidates
    if not preferred:
        raise ActionFailed(f"ensure_seats: no agent can fill a {role} seat")
    if not store.ensure_seat(ctx.task.id, ctx.step_id, role, preferred[0], steps):
        return []
    return [{"kind": "ensure_seats", "role": role, "agent": preferred[0]}]


def _payload(ctx: ActionContext, args: Mapping[str, Any]) -> dict[str, Any]:
    payload: dict[str, Any] = {}
    if ctx.trigger == "on_comment":
        for name in ("comment_id", "author_id"):
            if ctx.payload.get(name):
                payload[name] = ctx.payload[name]
    payload.update(args.get("payload") or {})
    return payload


def queue_run(args: Mapping[str, Any], ctx: ActionContext) -> Sequence[Effect]:
    store = _store(ctx)
    directory = ctx.directory or StaticDirectory()
    task_ref = args.get("task") or "this"
    task = ctx.task if task_ref in ("this", "", ctx.task.id) else store.get_task(task_ref)
    if task is None:
        raise ActionFailed(f"queue_run: no task `{task_ref}`")
    step_id = ctx.step_id if task.id == ctx.task.id else (task.step_id or "")
    if not step_id:
        raise ActionFailed(f"queue_run: task `{task.id}` is at no step")
    target = (args.get("target") or "primary").strip()
    reason = args.get("reason") or ctx.trigger
    payload = _payload(ctx, args)
    if task.id != ctx.task.id:
        payload["source_task_id"] = ctx.task.id
    if target == "primary":
        agents = [directory.primary_agent(task)]
        if agents[0] is None:
            raise ActionFailed("queue_run: no primary agent profile")
    elif target == "workspace.ceo_agent":
        agents = [directory.ceo_agent()]
        if agents[0] is None:
            raise ActionFailed("queue_run: workspace has no CEO agent")
    elif target.startswith("participant_role:"):
        role = target.split(":", 1)[1]
        agents = [p.agent for p in merged_participants(store, task.id, step_id) if p.role == role]
        if not agents:
            raise ActionFailed(f"queue_run: no participants with role {role}")
    elif target.startswith("agent_profile_id:") and target.split(":", 1)[1]:
        agents = [target.split(":", 1)[1]]
    else:
        raise ActionFailed(f"queue_run: unsupported target `{target}`")
    effects = []
    for agent in agents:
        assert agent is not None
        effect = _enqueue(ctx, store, task.id, step_id, agent, reason, payload, args, "queue_run")
        if effect is not None:
            effects.append(effect)
    return effects


def queue_run_for_each_participant(args: Mapping[str, Any], ctx: ActionContext) -> Sequence[Effect]:
    store = _store(ctx)
    role = args.get("role")
    if not role:
        raise ActionFailed("queue_run_for_each_participant: no role")
    reason = args.get("reason") or ctx.trigger
    payload = _payload(ctx, args)
    seen: set[str] = set()
    effects = []
    for p in merged_participants(store, ctx.task.id, ctx.step_id):
        if p.role != role or p.agent in seen:
            continue
        seen.add(p.agent)
        if not p.agent:
            raise ActionFailed(f"queue_run_for_each_participant: a {role} seat has no agent")
        effect = _enqueue(ctx, store, ctx.task.id, ctx.step_id, p.agent, reason, payload,
                          {**args, "agent": p.agent}, "queue_run_for_each_participant")
        if effect is not None:
            effects.append(effect)
    return effects


def register_builtins(registry: ExecutorRegistry) -> ExecutorRegistry:
    """Register the store-backed executors (transactional and replayable: their effects are their store writes)
    on `registry` and return it."""
    registry.register("clear_decisions", clear_decisions, transactional=True, replayable=True)
    registry.register("ensure_seats", ensure_seats, transactional=True, replayable=True)
    registry.register("queue_run", queue_run, transactional=True, replayable=True)
    registry.register("queue_run_for_each_participant", queue_run_for_each_participant, transactional=True,
                      replayable=True)
    return registry
