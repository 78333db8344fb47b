"""A store URL, two plans and their diff in, the in-flight work the change strands out (`interlock diff --store`).

Read-only by construction: a SQLite file is opened with `mode=ro` (a missing file is an
error, never created), a PostgreSQL session is put in read-only mode, and only SELECTs run,
against the tables of `schema.py`.  What counts as stranded (docs/diff.md, "Stranded work"):

- `step_removed` — a task standing on a step the new plan does not have (the step, or its
  workflow, was removed or renamed), judged against the new plan itself, whatever the diff
  called the change.  Tasks are the unarchived rows of `interlock_tasks`; a task only the
  ledger knows (a host that keeps its own tasks table) stands where its latest ledger row put
  it.  The tasks are read in one pass (rows filtered by their (workflow, step) in the database)
  and the ledger-only ones through an anti-join: linear in the number of tasks.
- `dead_end` — a task on a non-terminal step that lost every way out.
- `entry_kind_removed` / `entry_kind_excluded` / `entry_step_removed` — an entry still in
  progress (a ledger row with no entry record, or a marker `in_progress`) whose remaining
  kinds — the old step's dispatched actions without a finished marker — were removed
  (from the plan or the entry policy) or moved to `exclude`, or whose step is gone.
- `seat_role_removed` / `decision_role_removed` — seats (participants) and active
  decisions of a role the new plan no longer declares.

Only what the change strands is reported: a task on a step neither plan knows (another
plan's workflow in a shared store) is not this change's doing.
"""

from __future__ import annotations

import contextlib
import json
import os
import sqlite3
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any, Protocol
from urllib.parse import quote

import sqlalchemy as sa
from sqlalchemy.engine import URL, Connection, Engine
from sqlalchemy.exc import DBAPIError
from sqlalchemy.pool import NullPool

from interlock.errors import InterlockError
from interlock.runtime.plan import Plan
from interlock.runtime.store import StoreError

from . import schema
from .engine import check_url, display_url, is_memory_url, store_error

__all__ = ["ChangeLike", "Stranded", "InflightError", "open_readonly", "stranded", "stranded_tasks", "REASONS"]

REASONS = ("step_removed", "dead_end", "entry_step_removed", "entry_kind_removed", "entry_kind_excluded",
           "seat_role_removed", "decision_role_removed")
"""Every `Stranded.reason`, in the order a task's reasons are listed."""

_CHUNK = 500  # ids per IN (…) list: well under SQLite's and PostgreSQL's parameter limits


class InflightError(InterlockError):
    """The store cannot be read: a bad URL, no such database, no interlock tables, a database error."""


class ChangeLike(Protocol):
    """What the analysis reads of a change record (`interlock.diffing.Change` has it)."""

    @property
    def code(self) -> str: ...

    @property
    def workflow(self) -> str | None: ...

    @property
    def step(self) -> str | None: ...

    @property
    def subject(self) -> str | None: ...

    @property
    def new(self) -> Any: ...


@dataclass(frozen=True)
class Stranded:
    """One piece of in-flight work the change strands.  `task_id` is None for a step's template seat."""

    reason: str
    task_id: str | None
    workflow: str | None
    step: str | None
    message: str
    entry_id: int | None = None
    role: str | None = None
    kinds: tuple[str, ...] = ()

    def to_json(self) -> dict[str, Any]:
        return {"reason": self.reason, "task": self.task_id, "workflow": self.workflow, "step": self.step,
                "entry_id": self.entry_id, "role": self.role, "kinds": list(self.kinds), "message": self.message}

    def sort_key(self) -> tuple[Any, ...]:
        return (self.task_id is None, self.task_id or "", REASONS.index(self.reason), self.entry_id or 0,
                self.workflow or "", self.step or "", self.role or "", self.kinds)


# ---- opening the store, read-only ---------------------------------------------------------------------


def open_readonly(url: str | URL) -> Engine:
    """A read-only engine on `url` (`InflightError` for a bad URL, an in-memory database or a missing SQLite
    file).  Nothing is created: SQLite opens the existing file with `mode=ro`; PostgreSQL sessions are read-only."""
    try:
        u = check_url(url)
    except StoreError as exc:
        raise InflightError(str(exc)) from None
    if u.get_backend_name() == "sqlite":
        if is_memory_url(u) or u.query.get("uri"):
            raise InflightError(f"`{display_url(u)}`: give a SQLite file (sqlite:///FILE.db); an in-memory database "
                                "holds no tasks")
        path = os.path.abspath(str(u.database))
        if not os.path.isfile(path):
            raise InflightError(f"no SQLite database at {path} (the diff never creates one)")
        target = f"file:{quote(path)}?mode=ro"
        return sa.create_engine("sqlite://", creator=lambda: sqlite3.connect(target, uri=True, check_same_thread=False),
                                poolclass=NullPool)
    return sa.create_engine(u, poolclass=NullPool, execution_options={"postgresql_readonly": True})


@contextmanager
def _reading(source: str | URL | Engine) -> Iterator[tuple[Connection, str]]:
    engine = source if isinstance(source, Engine) else open_readonly(source)
    where = display_url(engine.url) if isinstance(source, Engine) else display_url(source)
    try:
        with engine.connect() as conn:
            if conn.dialect.name == "postgresql":
                conn = conn.execution_options(postgresql_readonly=True)
            missing = [t for t in (schema.tasks, schema.step_transitions, schema.entry_markers, schema.participants,
                                   schema.decisions) if not sa.inspect(conn).has_table(t.name)]
            if missing:
                raise InflightError(f"{where} holds no interlock store (no table {missing[0].name}): is this the "
                                    "database the runtime uses?")
            yield conn, where
            conn.rollback()
    except DBAPIError as exc:
        raise InflightError(str(store_error(exc, engine.url, "reading the store"))) from None
    finally:
        if not isinstance(source, Engine):
            engine.dispose()


# ---- the analysis -------------------------------------------------------------------------------------


@dataclass(frozen=True)
class _Impact:
    removed_steps: dict[tuple[str, str], str | None]  # (workflow, step) -> what replaced it (a rename), or None
    removed_workflows: frozenset[str]
    new_steps: frozenset[tuple[str, str]]  # every (workflow, step) of the new plan
    known_workflows: frozenset[str]  # the workflows of either plan (a task elsewhere is not this change's doing)
    dead_ends: frozenset[tuple[str, str]]
    removed_kinds: frozenset[str]
    excluded_kinds: frozenset[str]
    removed_roles: frozenset[str]


def _impact(old: Plan, new: Plan, changes: Sequence[ChangeLike]) -> _Impact:
    removed_steps: dict[tuple[str, str], str | None] = {}
    removed_wfs: set[str] = set()
    dead: set[tuple[str, str]] = set()
    kinds: set[str] = set()
    excluded: set[str] = set()
    roles: set[str] = set()
    old_roles = set(old.roles)
    for c in changes:
        if c.code == "workflow.removed" and c.workflow is not None:
            removed_wfs.add(c.workflow)
            wf = old.workflow(c.workflow)
            for s in wf.steps if wf is not None else ():
                removed_steps[(c.workflow, s.id)] = None
        elif c.code in ("step.removed", "step.renamed") and c.workflow is not None and c.step is not None:
            removed_steps[(c.workflow, c.step)] = c.new if c.code == "step.renamed" else None
        elif c.code == "step.dead_end" and c.workflow is not None and c.step is not None:
            dead.add((c.workflow, c.step))
        elif c.code == "role.removed" and c.subject in old_roles:
            roles.add(c.subject)
    # the old dispatched kinds the new plan no longer dispatches: gone (from the plan or the policy), or excluded
    policy = new.entry_policy
    for kind in old.entry_policy.dispatch:
        if kind in policy.exclude:
            excluded.add(kind)
        elif kind not in policy.dispatch or kind not in {k.name for k in new.kinds}:
            kinds.add(kind)
    new_steps = frozenset((wf.id, st.id) for wf in new.workflows for st in wf.steps)
    known = frozenset(wf.id for plan in (old, new) for wf in plan.workflows)
    for wf in old.workflows:  # what the new plan lacks is removed, whatever the diff called it
        for st in wf.steps:
            if (wf.id, st.id) not in new_steps:
                removed_steps.setdefault((wf.id, st.id), None)
                if new.workflow(wf.id) is None:
                    removed_wfs.add(wf.id)
    return _Impact(removed_steps, frozenset(removed_wfs), new_steps, known, frozenset(dead), frozenset(kinds),
                   frozenset(excluded), frozenset(roles))


def _chunks(items: Sequence[Any]) -> Iterator[Sequence[Any]]:
    for i in range(0, len(items), _CHUNK):
        yield items[i:i + _CHUNK]


def _where_task(workflow: str, step: str, imp: _Impact) -> tuple[str, str] | None:
    key = (workflow, step)
    if key not in imp.new_steps and workflow in imp.known_workflows:
        renamed = imp.removed_steps.get(key)
        if workflow in imp.removed_workflows:
            return "step_removed", f"on step `{step}` of workflow `{workflow}`, which was removed"
        hint = f" (renamed to `{renamed}`; move the task there)" if renamed else ""
        return "step_removed", f"on step `{workflow}.{step}`, which no longer exists{hint}"
    if key in imp.dead_ends:
        return "dead_end", f"on step `{workflow}.{step}`, which lost every way out"
    return None


def _tasks(conn: Connection, imp: _Impact) -> list[Stranded]:
    t, lg = schema.tasks, schema.step_transitions
    groups = [(wf, step) for wf, step, _n in conn.execute(
        sa.select(t.c.workflow_id, t.c.step_id, sa.func.count()).where(t.c.archived == sa.false())
        .group_by(t.c.workflow_id, t.c.step_id))
        if wf is not None and step is not None and _where_task(wf, step, imp) is not None]
    rows: list[tuple[str, str | None, str | None]] = []
    for part in _chunks(groups):  # one pass over the tasks per chunk of stranded (workflow, step) places
        rows.extend(conn.execute(sa.select(t.c.id, t.c.workflow_id, t.c.step_id)
                                 .where(t.c.archived == sa.false(),
                                        sa.tuple_(t.c.workflow_id, t.c.step_id).in_(list(part)))
                                 .order_by(t.c.id)))
    # tasks only the ledger knows (a host keeping its own tasks table, ADR 0007): where their latest row put them
    alone = sa.select(lg.c.task_id).where(~sa.exists().where(t.c.id == lg.c.task_id)).distinct()
    loose = [task for (task,) in conn.execute(alone)]
    for part in _chunks(loose):
        latest = sa.select(sa.func.max(lg.c.id)).where(lg.c.task_id.in_(part)).group_by(lg.c.task_id)
        rows.extend(conn.execute(sa.select(lg.c.task_id, lg.c.to_workflow_id, lg.c.to_step_id)
                                 .where(lg.c.id.in_(latest))))
    out: list[Stranded] = []
    for task_id, workflow, step in rows:
        if workflow is None or step is None:
            continue
        found = _where_task(workflow, step, imp)
        if found is not None:
            reason, text = found
            out.append(Stranded(reason, task_id, workflow, step, f"task `{task_id}` stands {text}"))
    return out


def _entries(conn: Connection, old: Plan, imp: _Impact) -> list[Stranded]:
    if not (imp.removed_steps or imp.removed_kinds or imp.excluded_kinds):
        return []
    lg, mk = schema.step_transitions, schema.entry_markers
    workflows = sorted({w.id for w in old.workflows})
    # two reads through partial indexes (the few unrecorded rows, the few markers in progress), never a scan of the
    # ledger: a store of millions of finished tasks costs what its unfinished ones do
    columns = (lg.c.id, lg.c.task_id, lg.c.to_workflow_id, lg.c.to_step_id, lg.c.entry_recorded_at.is_(None))
    found = {int(r[0]): r for r in conn.execute(
        sa.select(*columns).where(lg.c.entry_recorded_at.is_(None), lg.c.to_step_id.is_not(None)))}
    pending = sorted({int(e) for (e,) in conn.execute(sa.select(mk.c.entry_id).where(mk.c.state == "in_progress"))}
                     - set(found))
    for part in _chunks(pending):
        found.update((int(r[0]), r) for r in conn.execute(sa.select(*columns).where(lg.c.id.in_(part))))
    rows = [r for _, r in sorted(found.items()) if r[2] in workflows]
    markers: dict[int, dict[int, tuple[str, str]]] = {}
    for part in _chunks([r[0] for r in rows]):
        for entry_id, position, kind, state in conn.execute(
                sa.select(mk.c.entry_id, mk.c.position, mk.c.kind, mk.c.state).where(mk.c.entry_id.in_(part))):
            markers.setdefault(int(entry_id), {})[int(position)] = (str(kind), str(state))
    steps = {(w.id, s.id): s for w in old.workflows for s in w.steps}
    out: list[Stranded] = []
    for entry_id, task_id, workflow, step_id, unrecorded in rows:
        step = steps.get((workflow, step_id))
        if step is None:
            continue  # a step the old plan does not know: not this change's doing
        marks = markers.get(int(entry_id), {})
        remaining: list[str] = [kind for _pos, (kind, state) in sorted(marks.items()) if state == "in_progress"]
        if unrecorded:
            remaining = [a.kind for a in step.entry_dispatch
                         if marks.get(a.position, ("", "in_progress"))[1] == "in_progress"]
        where = f"entry {entry_id} of task `{task_id}` into `{workflow}.{step_id}`"
        if (workflow, step_id) in imp.removed_steps:
            if remaining:
                out.append(Stranded("entry_step_removed", task_id, workflow, step_id,
                                    f"{where} is still in progress ({_kinds(remaining)} left to run) and its step no "
                                    "longer exists", int(entry_id), kinds=tuple(remaining)))
            continue
        removed = tuple(k for k in remaining if k in imp.removed_kinds)
        excluded = tuple(k for k in remaining if k in imp.excluded_kinds)
        if removed:
            out.append(Stranded("entry_kind_removed", task_id, workflow, step_id,
                                f"{where} is still in progress; {_kinds(removed)} left to run, no longer dispatched "
                                "(removed)", int(entry_id), kinds=removed))
        if excluded:
            out.append(Stranded("entry_kind_excluded", task_id, workflow, step_id,
                                f"{where} is still in progress; {_kinds(excluded)} left to run, moved to `exclude`: "
                                "the runtime no longer dispatches it and no arriving session will run it now",
                                int(entry_id), kinds=excluded))
    return out


def _kinds(kinds: Sequence[str]) -> str:
    names = ", ".join(f"`{k}`" for k in kinds)
    return f"kind {names}" if len(kinds) == 1 else f"kinds {names}"


def _roles(conn: Connection, imp: _Impact) -> list[Stranded]:
    if not imp.removed_roles:
        return []
    roles = sorted(imp.removed_roles)
    p, d = schema.participants, schema.decisions
    out: list[Stranded] = []
    for task_id, workflow, step, role, agent in conn.execute(
            sa.select(p.c.task_id, p.c.workflow_id, p.c.step_id, p.c.role, p.c.agent)
            .where(p.c.role.in_(roles)).order_by(p.c.id)):
        whose = f"task `{task_id}`" if task_id else "the step's template"
        out.append(Stranded("seat_role_removed", task_id or None, workflow or None, step,
                            f"seat of `{agent}` ({whose}, step `{step}`) has role `{role}`, which no longer exists",
                            role=role))
    for _id, task_id, step, role, decider_type, decider in conn.execute(
            sa.select(d.c.id, d.c.task_id, d.c.step_id, d.c.role, d.c.decider_type, d.c.decider_id)
            .where(d.c.role.in_(roles), d.c.superseded_at.is_(None)).order_by(d.c.id)):
        out.append(Stranded("decision_role_removed", task_id, None, step,
                            f"decision of {decider_type} `{decider}` on task `{task_id}` (step `{step}`) has role "
                            f"`{role}`, which no longer exists", role=role))
    return out


def stranded(source: str | URL | Engine, old: Plan, new: Plan, changes: Sequence[ChangeLike]) -> list[Stranded]:
    """The in-flight work in the store at `source` (a URL, or an engine the caller owns) that the change from `old`
    to `new` (`changes`: their diff) strands, sorted by task.  Raises `InflightError` when the store cannot be read."""
    imp = _impact(old, new, changes)
    with _reading(source) as (conn, _where):
        found = [*_tasks(conn, imp), *_entries(conn, old, imp), *_roles(conn, imp)]
    return sorted(found, key=Stranded.sort_key)


def stranded_tasks(source: str | URL | Engine, plan: Plan) -> list[Stranded]:
    """The tasks in the store at `source` that stand on a step `plan` does not have — in one of its workflows, or
    in a workflow of a plan revision the store kept (a workflow the plan dropped) — by task (what `interlock
    migrate` moves).  Read-only; `InflightError` when the store cannot be read."""
    with _reading(source) as (conn, _where):
        known = {wf.id for wf in plan.workflows}
        if sa.inspect(conn).has_table(schema.plans.name):
            for (text,) in conn.execute(sa.select(schema.plans.c.plan)):
                with contextlib.suppress(Exception):  # a revision this interlock cannot read: its workflows unknown
                    known.update(wf["id"] for wf in json.loads(text).get("workflows", ())
                                 if isinstance(wf, dict) and isinstance(wf.get("id"), str))
        imp = _Impact({}, frozenset(known - {wf.id for wf in plan.workflows}),
                      frozenset((wf.id, st.id) for wf in plan.workflows for st in wf.steps), frozenset(known),
                      frozenset(), frozenset(), frozenset(), frozenset())
        return sorted(_tasks(conn, imp), key=Stranded.sort_key)
