"""`due_row` (runtime/store_due.py): the SQL stores' way to build a `DueRow` without its frozen `__init__` builds the
very row `DueRow(*values)` does, and keeps up with the dataclass's fields (ADR 0058)."""

from __future__ import annotations

import dataclasses
import pickle

import pytest

from interlock.runtime.store_due import DueRow, due_row

VALUES = (7, "T1", 3, "office", "work", "every", "every 30m", 1, 1800, 1.8e9, 2, 1.8e9 + 3600, "rev1", "op", "fire",
          '{"n": 1}', "S1")


def test_due_row_is_the_row_init_builds() -> None:
    row, built = due_row(VALUES), DueRow(*VALUES)
    assert type(row) is DueRow
    assert row == built and vars(row) == vars(built) and hash(row) == hash(built) and repr(row) == repr(built)
    assert list(vars(row)) == [f.name for f in dataclasses.fields(DueRow)]  # a new field must be added to due_row
    assert pickle.loads(pickle.dumps(row)) == built
    assert dataclasses.replace(row, slot=3) == dataclasses.replace(built, slot=3)
    with pytest.raises(dataclasses.FrozenInstanceError):
        row.slot = 3  # type: ignore[misc]


def test_due_row_of_another_length_raises() -> None:
    with pytest.raises(ValueError):
        due_row(VALUES[:-1])
    with pytest.raises(ValueError):
        due_row((*VALUES, None))
