"""Scenario YAML in, a validated `Scenario` out (docs/runtime.md §5), every error naming file:line:col.

The YAML is read defensively (`interlock.runtime.scenario_yaml`: nesting depth, alias expansion, integer
size and file size bounded, a key given twice an error); messages use the scenario's own words (with a
did-you-mean for misspelt keys), never the validator's internals.  The format is fixed by the simulator contract;
extensions (ADR 0009) only add keys.
"""

from __future__ import annotations

import difflib
import types
import typing
from dataclasses import dataclass, field
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, PrivateAttr, StringConstraints, ValidationError, model_validator

from .durations import duration_problem, duration_seconds
from .scenario_yaml import MAX_ALIAS_VALUES, MAX_BYTES, MAX_DEPTH, ScenarioError, YamlReader, inline_source

__all__ = ["Scenario", "ScenarioError", "Event", "Origin", "load_scenario", "parse_scenario", "EVENT_KINDS",
           "BARE_EVENTS", "Advance", "Redrive",
           "ROUTES", "VERDICTS", "MAX_BYTES", "MAX_DEPTH", "MAX_ALIAS_VALUES", "did_you_mean"]

EVENT_KINDS = ("turn_complete", "move", "decide", "fire", "dispatch", "redeliver", "restart",
               "crash_after_commit", "recover", "create", "advance", "tick", "redrive")
BARE_EVENTS = ("restart", "recover", "tick")
"""Events written as a bare word (`- tick`)."""
ROUTES = ("creation", "manual_move", "engine_transition", "decision", "workflow_switch", "queue_promotion")
VERDICTS = ("approved", "rejected", "changes_requested")

_MAX_ERRORS = 10


def did_you_mean(word: str, choices: typing.Iterable[str]) -> str:
    """` (did you mean `x`?)` for the closest choice, or ``."""
    close = difflib.get_close_matches(word, list(choices), n=1, cutoff=0.6)
    return f" (did you mean `{close[0]}`?)" if close else ""


# ---- the models ---------------------------------------------------------------------------------------
Id = Annotated[str, StringConstraints(min_length=1)]
Count = Annotated[int, Field(ge=0)]


class _Strict(BaseModel):
    """A scenario model: unknown fields are errors, values immutable."""

    model_config = ConfigDict(extra="forbid", frozen=True)


class TaskSpec(_Strict):
    workflow: Id
    step: str  # "": the task stands on no step (docs/runtime.md §5)
    description: str = ""
    office: bool = False
    ephemeral: bool = False
    archived: bool = False
    fail_load: bool = False  # extension: the task loader raises for this task


class SessionSpec(_Strict):
    task: Id
    agent_profile: str = ""
    state: str = "running"
    fail_load: bool = False  # extension: the session loader raises for this session


class ParticipantSpec(_Strict):
    task: str = ""  # "" (or omitted): a template row of the step
    step: Id
    role: Id
    agent: Id
    decision_required: bool = True
    position: Annotated[int, Field(ge=0, le=2**31 - 1)] = 0


class ExecutorFault(_Strict):
    fail: Count = 0
    panic: Count = 0
    hang: Count = 0  # extension: the first N calls sleep `seconds` (exercises the executor timeout)
    seconds: Annotated[float, Field(ge=0, le=3600, allow_inf_nan=False)] = 1.0
    error: str | None = None
    missing: bool = False  # `KIND: missing` (no executor at all)

    @model_validator(mode="before")
    @classmethod
    def _word(cls, value: Any) -> Any:
        if isinstance(value, str):
            if value == "missing":
                return {"missing": True}
            raise ValueError(f"`{value}` is not an executor setting: write `missing` (no executor) or a "
                             "mapping such as `{fail: 1, error: \"...\"}` (keys: fail, panic, hang, seconds, error)")
        return value


class Agents(_Strict):
    primary: str | None = "primary"
    ceo: str | None = None


class ExpectTask(_Strict):
    step: str


class ExpectRun(_Strict):
    task: str
    agent: str
    reason: str


class Expect(_Strict):
    tasks: dict[str, ExpectTask] = {}
    runs: list[ExpectRun] | None = None
    counters: dict[str, Any] = {}  # extension: a subset of the summary counters
    records: list[dict[str, Any]] = []  # extension: records that must appear, in this order (field subsets)


EntryId = Annotated[int, Field(ge=1, le=2**63 - 1)]


class TurnComplete(_Strict):
    task: Id
    session: Id
    operation: Id | None = None
    entry: EntryId | None = None  # the activation the turn belongs to (docs/runtime.md §6): stale ones are discarded


class Move(_Strict):
    task: Id
    to: Id
    route: Literal["creation", "manual_move", "engine_transition", "decision", "workflow_switch",
                   "queue_promotion"] = "manual_move"
    session: Id | None = None
    options: dict[str, Any] | None = None  # the arrival's one-shot entry options (ADR 0043)


class CrashAfterCommit(Move):
    route: Literal["creation", "manual_move", "engine_transition", "decision", "workflow_switch",
                   "queue_promotion"] = "engine_transition"


class Create(_Strict):
    task: Id
    workflow: Id
    step: str | None = None
    description: str = ""
    session: Id | None = None
    options: dict[str, Any] | None = None
    operation: Id | None = None  # a creation delivered again with it writes nothing more


class Redrive(_Strict):
    task: Id  # every open incident of the task is redriven (docs/runtime.md §7)


class Advance(_Strict):
    """`advance: 4h`: the simulator's clock moves on, then it ticks."""

    seconds: int


class Decide(_Strict):
    task: Id
    verdict: Literal["approved", "rejected", "changes_requested"]
    agent: Id | None = None
    user: Id | None = None
    role: str = ""
    session: Id | None = None
    entry: EntryId | None = None  # the round (activation) the decision was made in

    @model_validator(mode="after")
    def _who(self) -> Decide:
        if (self.agent is None) == (self.user is None):
            raise ValueError("give exactly one of `agent` (with its `role`) or `user`")
        if self.agent is not None and not self.role:
            raise ValueError("an agent's decision names its `role`")
        return self


class Fire(_Strict):
    trigger: Id
    task: Id
    session: Id | None = None
    operation: Id | None = None
    payload: dict[str, Any] = {}
    entry: EntryId | None = None


class Dispatch(_Strict):
    sequence: Id
    event: dict[str, Any]
    host: dict[str, Any] | None = None


_BODIES: dict[str, type[_Strict]] = {"turn_complete": TurnComplete, "move": Move, "crash_after_commit": CrashAfterCommit,
                                "create": Create, "decide": Decide, "fire": Fire, "dispatch": Dispatch,
                                "redrive": Redrive}


@dataclass(frozen=True)
class Event:
    """One scenario event: its 1-based index, kind, validated body (an int for `redeliver`) and location."""

    index: int
    kind: str
    body: Any
    where: str


@dataclass
class Origin:
    """Where a scenario came from: its display name, the folder relative paths start from, and node positions."""

    name: str
    base: Path
    where: dict[tuple[Any, ...], tuple[int, int]] = field(default_factory=dict)
    source_text: str | None = None  # the inline `source:` block at its own lines of the YAML file

    def at(self, *loc: Any) -> str:
        """`name:line:col` of the longest prefix of `loc` that is in the file (`name` alone if none is)."""
        for end in range(len(loc), -1, -1):
            hit = self.where.get(tuple(loc[:end]))
            if hit is not None:
                return f"{self.name}:{hit[0]}:{hit[1]}"
        return self.name


class Scenario(_Strict):
    workflow: Id | None = None
    source: str | None = None
    tasks: dict[str, TaskSpec] = {}
    sessions: dict[str, SessionSpec] = {}
    participants: list[ParticipantSpec] = []
    agents: Agents = Agents()
    host: dict[str, Any] = Field(default_factory=lambda: {"engine_ready": True})
    executors: dict[str, ExecutorFault] = {}
    executor_timeout: Annotated[float, Field(gt=0, le=3600, allow_inf_nan=False)] | None = 5.0  # extension
    events: tuple[Any, ...] = ()  # `Event`s: validated apart (see `_events`), so the model never sees them raw
    expect: Expect | None = None
    _origin: Origin = PrivateAttr(default_factory=lambda: Origin("<scenario>", Path.cwd()))

    @model_validator(mode="after")
    def _one_source(self) -> Scenario:
        if (self.workflow is None) == (self.source is None):
            raise ValueError("give exactly one of `workflow: FILE.wf` or `source: |` (inline .wf text)")
        return self

    @property
    def origin(self) -> Origin:
        """Where the scenario came from (name, base folder, node positions)."""
        return self._origin

    def at(self, *loc: Any) -> str:
        """`file:line:col` of a key path of the scenario."""
        return self._origin.at(*loc)


# ---- validation ----------------------------------------------------------------------------------------
def _describe(value: Any) -> str:
    if isinstance(value, dict):
        return "a mapping"
    if isinstance(value, list):
        return "a list"
    if value is None:
        return "nothing (null)"
    if isinstance(value, bool):
        return f"`{str(value).lower()}`"
    text = str(value)
    return f"`{text[:40]}…`" if len(text) > 40 else f"`{text}`"


def _fields_at(model: Any, loc: tuple[Any, ...]) -> list[str]:
    """The keys the model allows at a key path (for a did-you-mean)."""
    current: Any = model
    for part in loc:
        current = _unwrap(current)
        if isinstance(current, type) and issubclass(current, BaseModel):
            info = current.model_fields.get(str(part))
            if info is None:
                return []
            current = info.annotation
        elif typing.get_origin(current) in (dict, list, tuple):
            args = typing.get_args(current)
            current = args[-1] if args else Any
        else:
            return []
    current = _unwrap(current)
    if isinstance(current, type) and issubclass(current, BaseModel):
        return list(current.model_fields)
    return []


def _unwrap(tp: Any) -> Any:
    """`X | None` and `Annotated[X, ...]` -> X."""
    while True:
        origin = typing.get_origin(tp)
        if origin is Annotated:
            tp = typing.get_args(tp)[0]
        elif origin in (typing.Union, types.UnionType):
            args = [a for a in typing.get_args(tp) if a is not type(None)]
            if len(args) != 1:
                return tp
            tp = args[0]
        else:
            return tp


_RANGES = {"greater_than_equal": ("at least", "ge"), "greater_than": ("more than", "gt"),
           "less_than_equal": ("at most", "le"), "less_than": ("less than", "lt")}


def _message(err: Any, model: Any, loc: tuple[Any, ...]) -> str:
    kind, value, ctx = err["type"], err.get("input"), err.get("ctx") or {}
    if kind == "extra_forbidden":
        key = str(loc[-1])
        allowed = _fields_at(model, loc[:-1])
        hint = did_you_mean(key, allowed)
        return f"unknown key `{key}`" + (hint or (f" (keys here: {', '.join(allowed)})" if allowed else ""))
    if kind == "missing":
        return f"missing `{loc[-1]}`"
    if kind == "string_type":
        return f"expected text, got {_describe(value)}"
    if kind == "string_too_short":
        return "must not be empty"
    if kind in ("int_type", "int_parsing", "int_from_float"):
        return f"expected a whole number, got {_describe(value)}"
    if kind in ("float_type", "float_parsing", "finite_number"):
        return f"expected a number, got {_describe(value)}"
    if kind in ("bool_type", "bool_parsing"):
        return f"expected true or false, got {_describe(value)}"
    if kind in ("dict_type", "model_type", "model_attributes_type"):
        return f"expected a mapping (`key: value`), got {_describe(value)}"
    if kind in ("list_type", "tuple_type"):
        return f"expected a list, got {_describe(value)}"
    if kind == "literal_error":
        return f"expected {ctx.get('expected', 'one of the listed words')}, got {_describe(value)}"
    if kind in _RANGES:
        words, key = _RANGES[kind]
        return f"{_describe(value)} is out of range: must be {words} {ctx.get(key)}"
    if kind == "value_error":
        return str(ctx.get("error", err["msg"]))
    return str(err["msg"])


def _path(loc: tuple[Any, ...]) -> str:
    return ".".join(str(p) for p in loc)


def _errors(exc: ValidationError, model: Any, origin: Origin, prefix: tuple[Any, ...], label: str) -> list[str]:
    out = []
    for err in exc.errors():
        loc = tuple(err["loc"])
        where = origin.at(*prefix, *loc)
        path = _path(loc)
        head = f"{label}: " if label else ""
        out.append(f"{where}: {head}{path + ': ' if path else ''}{_message(err, model, loc)}")
    return out


def _events(raw: Any, origin: Origin) -> tuple[list[Event], list[str]]:
    if raw is None:
        return [], []
    if not isinstance(raw, list):
        return [], [f"{origin.at('events')}: events: expected a list of events, got {_describe(raw)}"]
    events: list[Event] = []
    problems: list[str] = []
    for i, item in enumerate(raw):
        where = origin.at("events", i)
        number = i + 1
        if isinstance(item, str):
            kind, body = item, None
            if item not in BARE_EVENTS:
                hint = did_you_mean(item, EVENT_KINDS)
                problems.append(f"{where}: event {number}: `{item}` is not an event{hint} (bare events: "
                                f"{', '.join(BARE_EVENTS)}; the others are mappings such as `move: {{task: T1, to: "
                                "review}`)")
                continue
        elif isinstance(item, dict) and len(item) == 1:
            (kind, body), = item.items()
        else:
            got = f"a mapping with keys {', '.join(item)}" if isinstance(item, dict) else _describe(item)
            problems.append(f"{where}: event {number}: an event is a mapping with exactly one key, e.g. "
                            f"`move: {{task: T1, to: review}}`; got {got}")
            continue
        label = f"event {number} (`{kind}`)"
        if kind not in EVENT_KINDS:
            problems.append(f"{where}: event {number}: unknown event `{kind}`{did_you_mean(kind, EVENT_KINDS)} "
                            f"(events: {', '.join(EVENT_KINDS)})")
            continue
        where = origin.at("events", i, kind)
        if kind == "redeliver":
            if isinstance(body, bool) or not isinstance(body, int) or not 1 <= body < number:
                span = f"1..{number - 1}" if number > 1 else "none: it is the first event"
                problems.append(f"{where}: {label}: `redeliver: N` names an earlier event ({span}), "
                                f"got {_describe(body)}")
                continue
        elif kind in BARE_EVENTS:
            if body not in (None, {}):
                problems.append(f"{where}: {label}: `{kind}` takes no fields")
                continue
            body = None
        elif kind == "advance":
            problem = duration_problem(body) if isinstance(body, str) else \
                f"expected a duration such as `4h` or `90s`, got {_describe(body)}"
            if problem is not None or not isinstance(body, str):
                problems.append(f"{where}: {label}: {problem}")
                continue
            body = Advance(seconds=duration_seconds(body))
        else:
            model = _BODIES[kind]
            if not isinstance(body, dict):
                fields = ", ".join(model.model_fields)
                problems.append(f"{where}: {label}: expected a mapping of fields ({fields}), got {_describe(body)}")
                continue
            try:
                body = model.model_validate(body)
            except ValidationError as exc:
                problems.extend(_errors(exc, model, origin, ("events", i, kind), label))
                continue
        events.append(Event(number, kind, body, where))
    return events, problems


def parse_scenario(text: str, name: str = "<scenario>", base: Path | None = None) -> Scenario:
    """Validate scenario text; `name` is what errors print, `base` the folder `workflow:` is relative to
    (default: the current folder).  Raises `ScenarioError` listing every problem found."""
    reader = YamlReader(name)
    data, root = reader.read(text)
    origin = Origin(name, base if base is not None else Path.cwd(), reader.where)
    if not isinstance(data, dict):
        raise ScenarioError(f"{name}:1:1: a scenario is a YAML mapping (workflow: or source:, tasks:, events:, "
                            f"expect:), got {_describe(data)}")
    raw_events = data.pop("events", None)
    problems: list[str] = []
    scenario = None
    try:
        scenario = Scenario.model_validate(data)
    except ValidationError as exc:
        problems.extend(_errors(exc, Scenario, origin, (), ""))
    events, event_problems = _events(raw_events, origin)
    problems.extend(event_problems)
    if problems or scenario is None:
        more = len(problems) - _MAX_ERRORS
        raise ScenarioError("\n".join(problems[:_MAX_ERRORS] + ([f"{name}: ... and {more} more"] if more > 0 else [])))
    if scenario.source is not None and root is not None:
        origin.source_text = inline_source(text, root)
    scenario = scenario.model_copy(update={"events": tuple(events)})
    scenario._origin = origin
    return scenario


def load_scenario(path: Path, name: str | None = None) -> Scenario:
    """Read and validate a scenario file (at most `MAX_BYTES`); `workflow:` is relative to its folder."""
    shown = name or str(path)
    try:
        with path.open("rb") as fh:
            data = fh.read(MAX_BYTES + 1)
    except OSError as exc:
        raise ScenarioError(f"{shown}: cannot read the scenario: {exc.strerror or exc}") from None
    return parse_scenario(decode(data, shown), shown, path.parent)


def decode(data: bytes, name: str) -> str:
    """Scenario bytes as text: at most `MAX_BYTES`, UTF-8 (the error names line:col of a bad byte)."""
    if len(data) > MAX_BYTES:
        raise ScenarioError(f"{name}: larger than {MAX_BYTES // 1024} KiB: not a scenario")
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        head = data[:exc.start]
        line = head.count(b"\n") + 1
        col = exc.start - (head.rfind(b"\n") + 1) + 1
        raise ScenarioError(f"{name}:{line}:{col}: not UTF-8 text (byte 0x{data[exc.start]:02x})") from None
