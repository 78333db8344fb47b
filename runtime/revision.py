"""A plan in, a revision out: the plan's digest, its index, the run-key digests of its actions and the recorder that
names it; and the revisions of a store, loaded by digest when an entry began under another plan.

A deployment runs several revisions at once (docs/runtime.md, "Deployments"; ADR 0037).  Each runtime
decides new deliveries with its own plan, keeps that plan in the store under its digest, and stamps
the digest on every ledger row it writes.  An entry finishes under the revision on its row, whoever
finishes it: `Revisions.of(digest)` gives that revision, loading the plan the store kept.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Callable

from .index import PlanIndex
from .plan import Plan, PlanError, dump_plan, load_plan, plan_digest
from .recorder import Recorder
from .store import Store

__all__ = ["Revision", "Revisions", "digest_of"]


def digest_of(plan: Plan) -> str:
    """The plan's revision: its digest (computed when the plan was built in process and carries none)."""
    if plan.digest:
        return plan.digest
    return plan_digest(plan.model_dump(mode="json", exclude={"digest"}))


class Revision:
    """One plan revision as a runtime runs it."""

    __slots__ = ("digest", "index", "plan", "recorder")

    def __init__(self, plan: Plan, recorder: Recorder, digest: str | None = None) -> None:
        self.plan = plan
        self.digest = digest or digest_of(plan)
        self.index = PlanIndex(plan)
        self.recorder = recorder.naming(self.digest)

    def __repr__(self) -> str:
        return f"Revision({self.digest[:19]})"


class Revisions:
    """The runtime's own revision and the others its store kept, loaded on demand (a few, most recent first)."""

    KEEP = 8

    def __init__(self, own: Revision, store: Store, recorder: Recorder,
                 on_load: Callable[[Revision], None] | None = None) -> None:
        self.own = own
        self.store = store
        self.recorder = recorder
        self.on_load = on_load
        self._others: OrderedDict[str, Revision] = OrderedDict()
        self._guard = threading.Lock()

    def keep_own(self) -> None:
        """Keep the own plan in the store (so that runtimes of other revisions can finish its entries)."""
        self.store.save_plan(self.own.digest, dump_plan(self.own.plan))

    def of(self, digest: str | None) -> Revision:
        """The revision `digest` names (the own one for None: a row no runtime has taken up yet).  `PlanError` if
        the store does not have it, or it does not load."""
        if digest is None or digest == self.own.digest:
            return self.own
        with self._guard:
            found = self._others.get(digest)
            if found is not None:
                self._others.move_to_end(digest)
                return found
        text = self.store.plan_text(digest)
        if text is None:
            raise PlanError(f"plan revision {digest} is not in the store")
        revision = Revision(load_plan(text), self.recorder, digest)
        with self._guard:
            self._others[digest] = revision
            while len(self._others) > self.KEEP:
                self._others.popitem(last=False)
        if self.on_load is not None:
            self.on_load(revision)
        return revision
