"""The deployment modes of the crash campaign: real processes of two plan revisions, or with skewed clocks, on one store.

Imported by name (benchmarks/crash_campaign.py, tests/runtime/test_fleet_campaign.py); run as a script it is the
zygote (`python fleet_campaign.py serve V1.json V2.json`): it imports everything and loads both plans once, then
forks one worker per request, so a process of a trial costs a fork.

Every worker journals its executor calls (`X <kind> <key> <attempt> <plan> <owner>`), its owner (`O <id>`), `blocked`
when it is inside the action it was told to block in, and its result (`R <json>`).  Handshakes, never sleeps: the
parent acts when a worker says `blocked`.

- **mixed-revision**: v2 of the workflow puts `page` in front of review's entry (`clear_decisions, page, notify`;
  v1: `clear_decisions, notify`).  A worker of one revision moves a task into review and is SIGKILLed inside a host
  action (or, in a fifth of the trials, after a seeded delay anywhere before that); its owner is stopped by the
  supervisor, or (a fifth) left to run out its lease on the store's clock; a worker of the *other* revision calls
  `recover()`.  Invariants: no (entry, action) executed with two different keys; every call of an entry under the
  entry's own revision; positions run in order; no marker `done` and no action in the entry record that did not
  run; the entry recorded in the end with every action of its revision attempted and none failed.
- **clock-skew**: worker A (its clock maybe hours off) blocks inside `notify` of an entry or of an operation (a fire
  with an operation id); worker B, whose clock is hours ahead or behind (`time.time` patched in the process: the
  clock a runtime would have used), calls `recover()` and delivers the same work again.  Invariant: nothing of a
  live owner is taken over (B releases nothing, takes up no entry, its fire answers `in_progress`, it calls no
  executor).  Then A is released (its call the only one), or SIGKILLed and left to die by its lease, and a worker
  whose clock is hours behind recovers: the dead owner's work is taken up (the same key again), never kept.
"""

from __future__ import annotations

import contextlib
import json
import os
import random
import signal
import subprocess
import sys
import time
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

V1 = """
task notify(text: str = "") on on_enter, on_comment
task page(text: str = "") on on_enter
entry { dispatch notify, page }
workflow flow "Flow" {
  step work "Work" {
    start
    manual_move
    on on_comment { notify }
  }
  step review "Review" {
    manual_move
    on on_enter { clear_decisions  notify }
  }
  step done "Done" { manual_move  terminal }
}
"""
V2 = V1.replace("on on_enter { clear_decisions  notify }", "on on_enter { clear_decisions  page  notify }")
REVIEW_ENTRY = {"v1": ("clear_decisions", "notify"), "v2": ("clear_decisions", "page", "notify")}
HOST_KINDS = ("notify", "page")
COMMENT = {"comment_id": "c1", "author_id": "u1", "body": "hi"}
WAIT = 60.0
SKEWS = (11 * 60.0, 3 * 3600.0, -3 * 3600.0, 26 * 3600.0, -26 * 3600.0)
"""Host clock offsets (seconds) of the clock-skew mode: 11 minutes ahead (issue 19's), hours ahead and behind."""


def plan_files(folder: Path) -> dict[str, Path]:
    """Both revisions compiled to plan JSON in `folder`."""
    from interlock.compiler import compile_source
    from interlock.dsl import SourceFile
    from interlock.runtime import dump_plan

    out = {}
    for name, text in (("v1", V1), ("v2", V2)):
        result = compile_source(SourceFile(f"{name}.wf", text))
        assert result.plan is not None, result.diagnostics
        out[name] = folder / f"{name}.json"
        out[name].write_text(dump_plan(result.plan))
    return out


# ---- the worker ---------------------------------------------------------------------------------------------


def _journal(path: str, line: str) -> None:
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
    try:
        os.write(fd, (line + "\n").encode())
    finally:
        os.close(fd)


def _skew(seconds: float) -> None:
    """This process's clock `seconds` off: what a runtime would read if it judged leases by the host's clock."""
    if seconds:
        real, real_ns = time.time, time.time_ns
        time.time = lambda: real() + seconds  # type: ignore[assignment]
        time.time_ns = lambda: real_ns() + int(seconds * 1e9)  # type: ignore[assignment]


def worker(spec: Mapping[str, Any], plans: Mapping[str, Any]) -> int:
    """One process of a trial: `move`, `fire`, or `recover` (then, with `redeliver`, the same work again)."""
    from interlock.runtime import ExecutorRegistry, Runtime
    from interlock.stores import open_store

    journal = spec["journal"]
    _skew(float(spec.get("skew", 0.0)))
    store = open_store(spec["url"], create=False)
    owner: list[str] = []

    def executor(kind: str) -> Any:
        def run(args: Any, ctx: Any) -> None:
            _journal(journal, f"X {kind} {ctx.idempotency_key} {ctx.attempt} {ctx.plan} {owner[0]}")
            if spec.get("block_on") == kind:
                _journal(journal, "blocked")
                release = spec.get("release")
                while release is None or not os.path.exists(release):
                    time.sleep(0.005)  # the parent kills the process here, or releases it
        return run

    registry = ExecutorRegistry()
    for kind in HOST_KINDS:
        registry.register(kind, executor(kind))
    rt = Runtime(plans[spec["rev"]], store, executors=registry, sinks=[], executor_timeout=None,
                 operation_lease=float(spec.get("lease", 60.0)))
    owner.append(rt.owner_id)
    _journal(journal, f"O {rt.owner_id}")
    result: dict[str, Any] = {}
    task, operation = spec["task"], spec.get("operation")
    if spec["do"] == "move":
        moved = rt.move(task, "review")
        result = {"status": moved.status, "entry": moved.entry.status if moved.entry else None}
    elif spec["do"] == "fire":
        result = {"fire": rt.fire("on_comment", task, session_id="S1", payload=COMMENT, operation_id=operation).result}
    else:
        recovered = rt.recover()
        result = {"dispatched": recovered.dispatched, "released": list(recovered.operations_released),
                  "entries": [e.status for e in recovered.entries]}
        if spec.get("redeliver") == "fire":
            result["fire"] = rt.fire("on_comment", task, session_id="S1", payload=COMMENT,
                                     operation_id=operation).result
        elif spec.get("redeliver") == "entry":
            result["entry"] = rt.dispatch_entry(int(spec["entry_id"])).status
    _journal(journal, "R " + json.dumps(result))
    rt.close()
    store.close()  # type: ignore[attr-defined]
    return 0


def serve(v1: str, v2: str) -> int:
    """The zygote: imports and plans loaded once, one fork per request line (a spec → `{"pid": N}`; `{"wait": N}` →
    `{"pid": N, "code": C}`, C negative when killed by that signal)."""
    import interlock.runtime.api
    import interlock.stores.sql  # noqa: F401 - imported before forking
    from interlock.runtime import load_plan

    with contextlib.suppress(ImportError):
        import psycopg  # noqa: F401
    plans = {"v1": load_plan(Path(v1).read_text()), "v2": load_plan(Path(v2).read_text())}
    out = sys.stdout
    out.write(json.dumps({"ready": os.getpid()}) + "\n")
    out.flush()
    for line in sys.stdin:
        request = json.loads(line)
        if "wait" in request:
            pid, status = os.waitpid(int(request["wait"]), 0)
            out.write(json.dumps({"pid": pid, "code": os.waitstatus_to_exitcode(status)}) + "\n")
        else:
            pid = os.fork()
            if pid == 0:
                code = 3
                try:
                    code = worker(request, plans)
                except BaseException as exc:
                    _journal(request["journal"], "E " + json.dumps(f"{type(exc).__name__}: {exc}"))
                finally:
                    os._exit(code)
            out.write(json.dumps({"pid": pid}) + "\n")
        out.flush()
    return 0


class Zygote:
    """The parent's handle on a zygote process."""

    def __init__(self, plans: Mapping[str, Path]) -> None:
        env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
        self.proc = subprocess.Popen([sys.executable, str(Path(__file__).resolve()), "serve", str(plans["v1"]),
                                      str(plans["v2"])], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
                                     bufsize=1, env=env)
        self._read()

    def _read(self) -> dict[str, Any]:
        assert self.proc.stdout is not None
        line = self.proc.stdout.readline()
        if not line:
            self.proc.wait(10)
            raise RuntimeError(f"the fleet zygote exited with {self.proc.returncode}")
        answer: dict[str, Any] = json.loads(line)
        return answer

    def _ask(self, request: Mapping[str, Any]) -> dict[str, Any]:
        assert self.proc.stdin is not None
        self.proc.stdin.write(json.dumps(request) + "\n")
        self.proc.stdin.flush()
        return self._read()

    def spawn(self, spec: Mapping[str, Any]) -> int:
        return int(self._ask(spec)["pid"])

    def wait(self, pid: int) -> int:
        return int(self._ask({"wait": pid})["code"])

    def close(self) -> None:
        if self.proc.stdin is not None:
            self.proc.stdin.close()
        try:
            self.proc.wait(20)
        except subprocess.TimeoutExpired:  # pragma: no cover
            self.proc.kill()
            self.proc.wait(5)
        if self.proc.stdout is not None:
            self.proc.stdout.close()


class Unavailable(Exception):
    """A worker could not reach the store (e.g. PostgreSQL's `too many clients`): the trial is run again, not
    judged."""


_UNREACHABLE = ("too many clients", "could not open the connection", "connection failed")


def _unreachable(error: str | None) -> bool:
    return error is not None and any(text in error for text in _UNREACHABLE)


# ---- reading a journal --------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Call:
    kind: str
    key: str
    attempt: int
    plan: str
    owner: str


class Journal:
    def __init__(self, path: Path) -> None:
        self.path = path

    def lines(self) -> list[str]:
        return self.path.read_text().splitlines() if self.path.exists() else []

    def calls(self) -> list[Call]:
        out = []
        for line in self.lines():
            if line.startswith("X "):
                kind, key, attempt, plan, owner = line[2:].split(" ")
                out.append(Call(kind, key, int(attempt), plan, owner))
        return out

    def owner(self) -> str | None:
        found = [line[2:] for line in self.lines() if line.startswith("O ")]
        return found[0] if found else None

    def result(self) -> dict[str, Any] | None:
        found = [line for line in self.lines() if line.startswith("R ")]
        return dict(json.loads(found[0][2:])) if found else None

    def error(self) -> str | None:
        found = [line for line in self.lines() if line.startswith("E ")]
        return found[0][2:] if found else None

    def wait_for(self, text: str) -> None:
        deadline = time.monotonic() + WAIT
        while text not in self.lines():
            if _unreachable(self.error()):
                raise Unavailable(str(self.error()))
            if self.error() is not None or self.result() is not None:
                raise AssertionError(f"the worker ended before `{text}`: {self.lines()}")
            if time.monotonic() > deadline:
                raise AssertionError(f"no `{text}` from the worker: {self.lines()}")
            time.sleep(0.002)


# ---- the trials ---------------------------------------------------------------------------------------------


@dataclass
class Trial:
    mode: str
    seed: int
    shape: str = ""
    kind: str = ""  # the shape without its particulars: what the summary counts
    retries: int = 0  # attempts abandoned because a worker could not reach the store
    problems: list[str] = field(default_factory=list)

    def describe(self) -> str:
        return f"{self.mode} seed {self.seed}: {self.shape}"


class Fleet:
    """A campaign's store, plans, zygote and the parent's own runtime (it creates the tasks)."""

    def __init__(self, url: str, workdir: Path) -> None:
        from interlock.runtime import ExecutorRegistry, Runtime
        from interlock.stores import open_store

        self.url, self.workdir = url, workdir
        self.plans = plan_files(workdir)
        self.digests = {rev: json.loads(path.read_text())["digest"] for rev, path in self.plans.items()}
        self.store = open_store(url, create=False)
        from interlock.runtime import load_plan

        self.rt = Runtime(load_plan(self.plans["v1"].read_text()), self.store, executors=ExecutorRegistry(),
                          sinks=[])
        self.zygote = Zygote(self.plans)
        self.timed: list[float] = []  # seconds from spawn to `blocked`: the range of the timed kills
        self._live: set[int] = set()  # the pids of the trial running
        self._journals: list[Journal] = []

    def close(self) -> None:
        self.zygote.close()
        self.rt.close()
        self.store.close()  # type: ignore[attr-defined]

    def _spawn(self, trial: Trial, name: str, spec: dict[str, Any]) -> tuple[int, Journal]:
        journal = Journal(self.workdir / f"{trial.mode}-{trial.seed}-{name}.journal")
        with contextlib.suppress(FileNotFoundError):
            journal.path.unlink()  # left by an abandoned attempt
        spec = {"url": self.url, "journal": str(journal.path), **spec}
        pid = self.zygote.spawn(spec)
        self._live.add(pid)
        self._journals.append(journal)
        return pid, journal

    def _finish(self, pid: int, journal: Journal, trial: Trial, name: str) -> dict[str, Any]:
        code = self.zygote.wait(pid)
        self._live.discard(pid)
        if _unreachable(journal.error()):
            raise Unavailable(str(journal.error()))
        result = journal.result()
        if code != 0 or result is None:
            trial.problems.append(f"{name} exited {code}: {journal.error() or journal.lines()[-3:]}")
            return {}
        return result

    def _kill(self, pid: int) -> None:
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)
        self.zygote.wait(pid)
        self._live.discard(pid)

    def run(self, mode: str, seed: int, attempts: int = 5) -> Trial:
        """Trial `seed` of `mode` (`mixed-revision`, `clock-skew`); a trial whose worker could not reach the store
        is abandoned (its processes killed, their owners stopped) and run again on a fresh task."""
        for attempt in range(attempts):
            self._live, self._journals = set(), []
            try:
                trial = (self.mixed if mode == "mixed-revision" else self.skew)(seed, attempt)
                trial.retries = attempt
                return trial
            except Unavailable as exc:
                for pid in list(self._live):
                    self._kill(pid)
                for journal in self._journals:
                    owner = journal.owner()
                    if owner is not None:
                        self.store.stop_owner(owner)
                    self._cleanup(journal)
                with contextlib.suppress(Exception):  # the abandoned work taken up here, not by a later trial
                    self.rt.recover()
                if attempt == attempts - 1:
                    raise RuntimeError(f"{mode} seed {seed}: the store stayed unreachable: {exc}") from None
                time.sleep(1.0 + attempt)
        raise AssertionError("unreachable")

    def _owner_dead(self, owner: str) -> None:
        """Until the store's clock says `owner` is dead (its heartbeat stopped with its process)."""
        deadline = time.monotonic() + WAIT
        while any(o.owner_id == owner and o.alive for o in self.store.owners()):
            if time.monotonic() > deadline:
                raise AssertionError(f"owner {owner} never died")
            time.sleep(0.02)

    def _cleanup(self, *journals: Journal) -> None:
        for j in journals:
            with contextlib.suppress(FileNotFoundError):
                j.path.unlink()

    # -- mixed revisions --------------------------------------------------------------------------------------
    def mixed(self, seed: int, attempt: int = 0) -> Trial:
        rng = random.Random(seed)
        trial = Trial("mixed-revision", seed)
        task = f"M{seed}" + (f"r{attempt}" if attempt else "")
        self.rt.create_task(task, "flow")
        killed = rng.choice(("v1", "v2"))
        other = "v2" if killed == "v1" else "v1"
        block = rng.choice(("page", "notify")) if killed == "v2" else "notify"
        timed = rng.random() < 0.2 and len(self.timed) >= 3
        lease_path = rng.random() < 0.2
        trial.shape = (f"{killed} killed {'after a delay' if timed else 'inside ' + block}, "
                       f"{'lease ran out' if lease_path else 'owner stopped'}, {other} recovers")
        trial.kind = trial.shape
        pid, journal = self._spawn(trial, "killed", {"rev": killed, "do": "move", "task": task, "block_on": block,
                                                     "lease": 1.0})
        began = time.monotonic()
        if timed:
            time.sleep(rng.uniform(0.0, max(self.timed) * 1.2))
            self._kill(pid)
        else:
            journal.wait_for("blocked")
            self.timed.append(time.monotonic() - began)
            self._kill(pid)
        owner = journal.owner()
        if owner is not None:
            if lease_path:
                self._owner_dead(owner)
            else:
                self.store.stop_owner(owner)  # the supervisor saw its worker die
        pid2, journal2 = self._spawn(trial, "recover", {"rev": other, "do": "recover", "task": task})
        self._finish(pid2, journal2, trial, "recover")
        trial.problems += self.check_mixed(task, journal.calls() + journal2.calls(), killed)
        if journal.owner() is None or not any(c for c in journal.calls()):
            trial.shape += " [killed before its first action]"
        self._cleanup(journal, journal2)
        return trial

    def check_mixed(self, task: str, calls: list[Call], killed: str) -> list[str]:
        problems: list[str] = []
        rows = [r for r in self.store.ledger(task) if r.to_step_id == "review"]
        if not rows:
            if calls:
                problems.append(f"no arrival in review, yet actions ran: {calls}")
            return problems
        (row,) = rows
        revision = {d: rev for rev, d in self.digests.items()}.get(row.plan or "")
        if revision != killed:
            problems.append(f"the arrival's revision is {row.plan}, not the killed worker's ({killed})")
            return problems
        mine = [c for c in calls if c.key.startswith(f"entry:{row.id}:")]
        keys: dict[tuple[int, str], set[str]] = {}
        for c in mine:
            position = int(c.key.split(":")[2])
            keys.setdefault((position, c.kind), set()).add(c.key)
            if c.plan != row.plan:
                problems.append(f"{c.kind} ran under {c.plan}, not the entry's revision {row.plan}")
        problems += [f"{kind} at {pos} ran with {len(k)} keys: {sorted(k)}" for (pos, kind), k in keys.items()
                     if len(k) > 1]
        order = [int(c.key.split(":")[2]) for c in mine]
        if order != sorted(order):
            problems.append(f"positions ran out of order: {[(c.kind, c.key, c.attempt) for c in mine]}")
        expected = REVIEW_ENTRY[killed]
        ran = {(int(c.key.split(":")[2]), c.kind) for c in mine}
        for position, marker in self.store.markers(row.id).items():
            if marker.kind in HOST_KINDS and marker.state == "done" and (position, marker.kind) not in ran:
                problems.append(f"marker {position} ({marker.kind}) recorded done, never ran")
            if position >= len(expected) or expected[position] != marker.kind:
                problems.append(f"marker {position} ({marker.kind}) is not an action of {killed}'s entry")
        record = self.store.entry_record(row.id)
        if record is None:
            problems.append("the entry has no record after recover")
        else:
            if tuple(record.attempted) != expected or record.failed:
                problems.append(f"entry record {record.attempted} failed {record.failed}, expected {expected}")
            missing = [(p, k) for p, k in enumerate(expected) if k in HOST_KINDS and (p, k) not in ran]
            if missing:
                problems.append(f"recorded as attempted but never ran: {missing}")
        return problems

    # -- clock skew -------------------------------------------------------------------------------------------
    def skew(self, seed: int, attempt: int = 0) -> Trial:
        rng = random.Random(seed)
        trial = Trial("clock-skew", seed)
        task = f"K{seed}" + (f"r{attempt}" if attempt else "")
        self.rt.create_task(task, "flow")
        path = rng.choice(("entry", "fire"))
        kill = rng.random() < 0.25
        skew_a, skew_b = rng.choice((0.0, *SKEWS)), rng.choice(SKEWS)
        skew_c = -abs(rng.choice(SKEWS))  # the recovering host's clock is behind: it must not keep the dead claim
        operation = f"comment:{task}"
        trial.shape = (f"{path}, holder {skew_a / 3600:+.2f} h, contender {skew_b / 3600:+.2f} h, "
                       + (f"holder killed, recover at {skew_c / 3600:+.2f} h" if kill else "holder released"))
        trial.kind = f"{path}, holder {'killed (lease ran out)' if kill else 'released'}"
        release = self.workdir / f"release-{task}"
        spec = {"rev": "v1", "do": "move" if path == "entry" else "fire", "task": task, "operation": operation,
                "block_on": "notify", "release": str(release), "skew": skew_a, "lease": 1.5 if kill else 10.0}
        pid, journal = self._spawn(trial, "holder", spec)
        journal.wait_for("blocked")
        entry_id = self.rt.current_entry(task) if path == "entry" else None
        pid2, journal2 = self._spawn(trial, "contender", {
            "rev": "v1", "do": "recover", "task": task, "operation": operation, "skew": skew_b, "redeliver": path,
            "entry_id": entry_id})
        got = self._finish(pid2, journal2, trial, "contender")
        want = {"dispatched": 0, "released": [], "entries": [], path: "in_progress"}
        if got and got != want:
            trial.problems.append(f"a host {skew_b / 3600:+.2f} h off took over a live owner's claim: {got}")
        if journal2.calls():
            trial.problems.append(f"the contender ran an executor while the holder lived: {journal2.calls()}")
        journals = [journal, journal2]
        if kill:
            self._kill(pid)
            owner = journal.owner()
            assert owner is not None
            self._owner_dead(owner)  # the lease runs out on the store's clock, whatever the hosts' clocks say
            pid3, journal3 = self._spawn(trial, "recover", {
                "rev": "v1", "do": "recover", "task": task, "operation": operation, "skew": skew_c,
                "redeliver": path, "entry_id": entry_id})
            got = self._finish(pid3, journal3, trial, "recover")
            journals.append(journal3)
            taken = got.get("entries") == ["dispatched"] if path == "entry" else (
                got.get("released") == [operation] and got.get("fire") == "dispatched")
            if got and not taken:
                trial.problems.append(f"a dead owner's claim was kept by a host {skew_c / 3600:+.2f} h off: {got}")
            calls = journal.calls() + journal3.calls()
            if len({c.key for c in calls}) != 1 or len(calls) != 2:
                trial.problems.append(f"expected the holder's call and one more with its key: {calls}")
        else:
            release.write_text("go")
            got = self._finish(pid, journal, trial, "holder")
            if got and got.get("status", got.get("fire")) not in ("moved", "dispatched"):
                trial.problems.append(f"the holder's delivery: {got}")
            if len(journal.calls()) != 1:
                trial.problems.append(f"the holder's action ran {len(journal.calls())} times")
        if self.store.claimed_operations() != []:
            trial.problems.append(f"claims left: {self.store.claimed_operations()}")
        self._cleanup(*journals)
        with contextlib.suppress(FileNotFoundError):
            release.unlink()
        return trial


@contextlib.contextmanager
def fleet(url: str, workdir: Path) -> Iterator[Fleet]:
    f = Fleet(url, workdir)
    try:
        yield f
    finally:
        f.close()


if __name__ == "__main__":
    if len(sys.argv) == 4 and sys.argv[1] == "serve":
        sys.exit(serve(sys.argv[2], sys.argv[3]))
    print(__doc__, file=sys.stderr)
    sys.exit(2)
