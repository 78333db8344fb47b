"""Scenario YAML in, a validated `Scenario` out (RUNTIME.md §5), with errors that name the line.

The format is fixed by the simulator contract; extensions (marked below) only add keys.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Literal

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

__all__ = ["Scenario", "ScenarioError", "load_scenario", "parse_scenario", "EVENT_KINDS"]

EVENT_KINDS = ("turn_complete", "move", "decide", "fire", "dispatch", "redeliver", "restart",
               "crash_after_commit", "recover", "create")


class ScenarioError(Exception):
    """A scenario file that cannot be run; the message names file:line where possible."""


class _M(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class TaskSpec(_M):
    workflow: str
    step: str
    description: str = ""
    office: bool = False
    ephemeral: bool = False
    archived: bool = False
    fail_load: bool = False  # extension: the task loader raises for this task


class SessionSpec(_M):
    task: str
    agent_profile: str = ""
    state: str = "running"
    fail_load: bool = False  # extension: the session loader raises for this session


class ParticipantSpec(_M):
    task: str = ""  # "" (or omitted): a template row of the step
    step: str
    role: str
    agent: str
    decision_required: bool = True
    position: int = 0


class ExecutorFault(_M):
    fail: int = 0
    panic: int = 0
    hang: int = 0  # extension: the first N calls sleep `seconds` (exercises the executor timeout)
    seconds: float = 1.0
    error: str | None = None


class Agents(_M):
    primary: str | None = "primary"
    ceo: str | None = None


class ExpectTask(_M):
    step: str


class ExpectRun(_M):
    task: str
    agent: str
    reason: str


class Expect(_M):
    tasks: dict[str, ExpectTask] = {}
    runs: list[ExpectRun] | None = None
    counters: dict[str, Any] = {}  # extension: a subset of the summary counters
    records: list[dict[str, Any]] = []  # extension: records that must appear, in this order (field subsets)


class Scenario(_M):
    workflow: str | None = None
    source: str | None = None
    tasks: dict[str, TaskSpec] = {}
    sessions: dict[str, SessionSpec] = {}
    participants: list[ParticipantSpec] = []
    agents: Agents = Agents()
    host: dict[str, Any] = Field(default_factory=lambda: {"engine_ready": True})
    executors: dict[str, Literal["missing"] | ExecutorFault] = {}
    executor_timeout: float | None = 5.0  # extension
    events: list[dict[str, Any]] = []
    expect: Expect | None = None

    @model_validator(mode="after")
    def _one_source(self) -> Scenario:
        if (self.workflow is None) == (self.source is None):
            raise ValueError("give exactly one of `workflow: FILE.wf` or `source: |` (inline .wf text)")
        return self

    @field_validator("events", mode="before")
    @classmethod
    def _events(cls, events: Any) -> list[Any]:
        if events is None:
            return []
        if not isinstance(events, list):
            raise ValueError("`events` is a list")
        normalised = []
        for i, event in enumerate(events, start=1):
            if isinstance(event, str):
                if event not in ("restart", "recover"):
                    raise ValueError(f"event {i}: `{event}` is not an event (bare events: restart, recover)")
                event = {event: {}}
            if not isinstance(event, dict) or len(event) != 1:
                raise ValueError(f"event {i}: an event is a mapping with exactly one key, e.g. `move: {{...}}`")
            (kind, body), = event.items()
            if kind not in EVENT_KINDS:
                raise ValueError(f"event {i}: unknown event `{kind}` (events: {', '.join(EVENT_KINDS)})")
            if kind == "redeliver":
                if not isinstance(body, int) or not 1 <= body < i:
                    raise ValueError(f"event {i}: `redeliver: N` names an earlier event (1..{i - 1})")
            elif body is None:
                body = {}
            elif not isinstance(body, dict):
                raise ValueError(f"event {i}: `{kind}` takes a mapping of fields")
            normalised.append({kind: body})
        return normalised


def _line_of(node: yaml.Node | None, loc: tuple[Any, ...]) -> int | None:
    """The 1-based line of the YAML node at a pydantic error location."""
    line = None
    for part in loc:
        if node is None:
            break
        line = node.start_mark.line + 1
        if isinstance(node, yaml.MappingNode):
            node = next((v for k, v in node.value if k.value == part), None)
        elif isinstance(node, yaml.SequenceNode) and isinstance(part, int) and part < len(node.value):
            node = node.value[part]
        else:
            break
    if node is not None:
        line = node.start_mark.line + 1
    return line


def parse_scenario(text: str, name: str = "<scenario>") -> Scenario:
    try:
        root = yaml.compose(text, Loader=yaml.SafeLoader)
        data = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f"{name}:{mark.line + 1}:{mark.column + 1}" if mark else name
        raise ScenarioError(f"{where}: not valid YAML: {getattr(exc, 'problem', None) or exc}") from None
    if not isinstance(data, dict):
        raise ScenarioError(f"{name}:1: a scenario is a YAML mapping (workflow:, tasks:, events:, expect:)")
    try:
        return Scenario.model_validate(data)
    except ValidationError as exc:
        lines = []
        for err in exc.errors()[:8]:
            loc = tuple(err["loc"])
            msg_text = str(err["msg"]).removeprefix("Value error, ")
            if loc == ("events",) and msg_text.startswith("event "):  # point at the event, not the list
                number = msg_text.split(":", 1)[0].removeprefix("event ")
                if number.isdigit():
                    loc = ("events", int(number) - 1)
            line = _line_of(root, loc)
            path = ".".join(str(p) for p in loc) or "(top)"
            msg = err["msg"].removeprefix("Value error, ")
            lines.append(f"{name}:{line or 1}: {path}: {msg}")
        raise ScenarioError("\n".join(lines)) from None


def load_scenario(path: Path) -> Scenario:
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise ScenarioError(f"{path}: cannot read scenario: {exc}") from None
    return parse_scenario(text, str(path))
