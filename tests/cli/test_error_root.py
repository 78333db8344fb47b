"""One root for the user's errors (`interlock.errors.InterlockError`): each error that is the user's input derives
from it and stays importable where it was, and the CLI reports any of them as `interlock: error: …` (exit 2), never
as an internal error, whichever module raised it and whether or not the CLI knew that module."""

from __future__ import annotations

import importlib

import pytest

from interlock.cli import main
from interlock.errors import InterlockError

USER_ERRORS = [
    ("interlock.cmdline", "UsageError"),
    ("interlock.cli", "UsageError"),
    ("interlock.commands", "CommandError"),
    ("interlock.config", "ConfigError"),
    ("interlock.walk", "NothingFound"),
    ("interlock.runner.select", "SelectError"),
    ("interlock.tools.diff", "DiffUsageError"),
    ("interlock.tools.migrate", "MigrateUsageError"),
    ("interlock.kandev.yamlread", "YamlError"),
    ("interlock.diagrams", "GraphError"),
    ("interlock.runtime.plan", "PlanError"),
    ("interlock.runtime", "PlanError"),
    ("interlock.runtime.scenario", "ScenarioError"),
    ("interlock.runtime.store", "StoreError"),
    ("interlock.runtime.errors", "RuntimeFault"),
    ("interlock.runtime.errors", "PayloadError"),
    ("interlock.runtime.errors", "UnknownTaskError"),
    ("interlock.stores.inflight", "InflightError"),
]
FAULTS = [("interlock.dsl.diagnostics", "InternalCompilerError"), ("interlock.dsl.format", "FormatError")]


def _class(module: str, name: str) -> type[Exception]:
    found: type[Exception] = getattr(importlib.import_module(module), name)
    return found


@pytest.mark.parametrize(("module", "name"), USER_ERRORS)
def test_each_user_error_derives_from_the_root(module: str, name: str) -> None:
    assert issubclass(_class(module, name), InterlockError)


@pytest.mark.parametrize(("module", "name"), FAULTS)
def test_a_fault_of_interlock_is_not_a_user_error(module: str, name: str) -> None:
    assert not issubclass(_class(module, name), InterlockError)


@pytest.mark.parametrize(("module", "name"), USER_ERRORS)
def test_the_cli_reports_any_user_error_without_a_traceback(module: str, name: str, monkeypatch: pytest.MonkeyPatch,
                                                            capsys: pytest.CaptureFixture[str]) -> None:
    error = _class(module, name)

    def run(_args: object) -> int:
        raise error("the message names what was wrong")

    monkeypatch.setattr("interlock.tools.explain.run", run)
    assert main(["explain", "IL102"]) == 2
    err = capsys.readouterr().err
    assert err == "interlock: error: the message names what was wrong\n"


def test_a_fault_is_reported_as_internal(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.delenv("INTERLOCK_DEBUG", raising=False)

    def run(_args: object) -> int:
        raise _class(*FAULTS[1])("lost a comment")

    monkeypatch.setattr("interlock.tools.explain.run", run)
    assert main(["explain", "IL102"]) == 2
    assert "interlock: internal error: FormatError: lost a comment" in capsys.readouterr().err
