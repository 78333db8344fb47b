"""The tests that read kandev's reference templates skip in a fresh clone without them, saying exactly what to put
where, and fail instead under CI=true (CI has the folder: a skip there would hide that they never ran)."""

from __future__ import annotations

from pathlib import Path

import pytest
from support import kandev


@pytest.fixture
def absent(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Path:
    missing = tmp_path / "shared" / "reference" / "kandev-workflows"
    monkeypatch.setattr(kandev, "REFERENCE", missing)
    return missing


@pytest.mark.parametrize("ci", ["", "false"])
def test_without_ci_the_skip_says_what_to_put_where(absent: Path, ci: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CI", ci)
    for ask in (kandev.reference_folder, lambda: kandev.reference("kanban")):
        with pytest.raises(pytest.skip.Exception) as info:
            ask()
        message = str(info.value)
        assert f"in {absent} (a folder beside this checkout" in message
        assert "architecture.yml" in message and "routine.yml" in message


@pytest.mark.parametrize("ci", ["true", "1", "TRUE"])
def test_under_ci_a_missing_folder_fails(absent: Path, ci: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CI", ci)
    with pytest.raises(pytest.fail.Exception, match="CI=true"):
        kandev.reference_folder()
    with pytest.raises(pytest.fail.Exception, match="kandev-workflows is missing"):
        kandev.reference("kanban")
