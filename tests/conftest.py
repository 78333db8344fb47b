"""Shared pytest options and fixtures for the interlock test suite.

`sqlite_template` is the suite's one migrated SQLite file: tests that need a SQLite store copy it
(`sqlite_url`) instead of migrating a database of their own.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from interlock.stores import upgrade


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption("--update-golden", action="store_true", default=False,
                     help="rewrite the expected files of the golden tests instead of comparing against them")


@pytest.fixture(scope="session")
def sqlite_template(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A migrated SQLite file, copied for each test (cheaper than migrating each time); never written to."""
    path = tmp_path_factory.mktemp("template") / "template.db"
    upgrade(f"sqlite:///{path}")
    return path


@pytest.fixture()
def sqlite_url(sqlite_template: Path, tmp_path: Path) -> str:
    """A fresh, migrated SQLite file of the test's own."""
    path = tmp_path / "store.db"
    shutil.copyfile(sqlite_template, path)
    return f"sqlite:///{path}"
