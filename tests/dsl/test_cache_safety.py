"""The on-disk caches never run planted code: a pickle is read only from a folder the user owns and
nobody else can write, only from a regular file of theirs there, and never from the shared temp
directory; anywhere else the parser and prelude are rebuilt in memory and nothing is written."""

from __future__ import annotations

import os
import pickle
import tempfile
from collections.abc import Iterator
from pathlib import Path

import lark
import pytest

from interlock.compiler import compile_source
from interlock.compiler import program as prog
from interlock.dsl import SourceFile
from interlock.dsl import parser as P

AS_ROOT = hasattr(os, "geteuid") and os.geteuid() == 0
CLEAN = 'workflow w "W" { step s "S" { start terminal } }\n'


class _Plant:
    """Unpickling this makes the folder `marker`: proof that the planted file was loaded."""

    def __init__(self, marker: Path) -> None:
        self.marker = marker

    def __reduce__(self) -> tuple[object, ...]:
        return os.mkdir, (str(self.marker),)


def _names() -> list[str]:
    """Every file name the caches are (or, with Lark's own cache, were) read from."""
    import hashlib

    text = P.grammar_text()
    prelude = prog._prelude_text(prog.PRELUDE_NAME)
    assert prelude is not None
    lark_cache = "wf-" + hashlib.sha256((text + lark.__version__).encode()).hexdigest()[:16] + ".lark-cache"
    return [P.parser_cache_name(lark.__version__), prog._cache_name(prog.PRELUDE_NAME, prelude), lark_cache]


def _plant(folder: Path, marker: Path) -> None:
    for name in _names():
        (folder / name).write_bytes(pickle.dumps(_Plant(marker)))
        (folder / name).chmod(0o600)


def _compile_fresh() -> None:
    P._parser.cache_clear()
    prog.prelude_module.cache_clear()
    result = compile_source(SourceFile("clean.wf", CLEAN))
    assert result.ok and result.plan is not None


def _listing(folder: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in folder.iterdir() if p.is_file()}


@pytest.fixture
def caches(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """A private XDG cache home; afterwards the parser and prelude are loaded again as usual."""
    home = tmp_path / "xdg"
    home.mkdir(mode=0o700)
    monkeypatch.setenv("XDG_CACHE_HOME", str(home))
    yield home
    P._parser.cache_clear()
    prog.prelude_module.cache_clear()


def test_a_plant_in_a_safe_folder_is_loaded_so_the_other_tests_plant_at_the_right_names(
        caches: Path, tmp_path: Path) -> None:
    folder = caches / "interlock"
    folder.mkdir(mode=0o700)
    _plant(folder, tmp_path / "ran")
    _compile_fresh()
    assert (tmp_path / "ran").exists()


@pytest.mark.parametrize("mode", [0o777, 0o775, 0o757, 0o770, 0o1777])
def test_a_folder_others_can_write_is_never_read_nor_written(caches: Path, tmp_path: Path, mode: int) -> None:
    folder = caches / "interlock"
    folder.mkdir()
    folder.chmod(mode)
    _plant(folder, tmp_path / "ran")
    before = _listing(folder)
    _compile_fresh()
    assert not (tmp_path / "ran").exists()
    assert _listing(folder) == before, "nothing is written to an unsafe cache folder"
    assert folder.stat().st_mode & 0o7777 == mode


@pytest.mark.skipif(not AS_ROOT, reason="giving a folder to another user needs root")
def test_a_folder_of_another_user_is_never_read(caches: Path, tmp_path: Path) -> None:
    folder = caches / "interlock"
    folder.mkdir(mode=0o700)
    _plant(folder, tmp_path / "ran")
    os.chown(folder, 4242, 4242)
    before = _listing(folder)
    _compile_fresh()
    assert not (tmp_path / "ran").exists()
    assert _listing(folder) == before


def test_a_symlinked_cache_folder_is_never_read(caches: Path, tmp_path: Path) -> None:
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir(mode=0o700)
    _plant(elsewhere, tmp_path / "ran")
    (caches / "interlock").symlink_to(elsewhere)
    _compile_fresh()
    assert not (tmp_path / "ran").exists()


def test_the_home_cache_with_wrong_permissions_is_never_read(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                            caches: Path) -> None:
    monkeypatch.delenv("XDG_CACHE_HOME")
    monkeypatch.setenv("HOME", str(tmp_path))
    folder = tmp_path / ".cache" / "interlock"
    folder.mkdir(parents=True)
    folder.chmod(0o777)
    _plant(folder, tmp_path / "ran")
    assert P.cache_dir() == str(folder)
    _compile_fresh()
    assert not (tmp_path / "ran").exists()


def test_the_temp_dir_is_never_a_fallback(caches: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    blocker = tmp_path / "not-a-folder"
    blocker.write_text("")
    monkeypatch.setenv("XDG_CACHE_HOME", str(blocker))  # the user cache cannot be created
    shared = tmp_path / "tmp"
    shared.mkdir(mode=0o700)  # even a temp dir that looks private: a temp dir is shared by design
    monkeypatch.setattr(tempfile, "tempdir", str(shared))
    _plant(shared, tmp_path / "ran")
    before = _listing(shared)
    _compile_fresh()
    assert not (tmp_path / "ran").exists()
    assert _listing(shared) == before


@pytest.mark.parametrize("damage", ["others-writable", "group-writable", "symlink", "fifo", "folder",
                                    *(["foreign-owner"] if AS_ROOT else [])])
def test_a_cache_file_that_is_not_the_users_own_regular_file_is_never_read(
        caches: Path, tmp_path: Path, damage: str) -> None:
    folder = caches / "interlock"
    folder.mkdir(mode=0o700)
    marker = tmp_path / "ran"
    for name in _names():
        path = folder / name
        payload = pickle.dumps(_Plant(marker))
        if damage == "symlink":
            target = tmp_path / f"target-{name}"
            target.write_bytes(payload)
            target.chmod(0o600)
            path.symlink_to(target)
        elif damage == "fifo":
            os.mkfifo(path, 0o600)
        elif damage == "folder":
            path.mkdir(mode=0o700)
        else:
            path.write_bytes(payload)
            path.chmod({"others-writable": 0o606, "group-writable": 0o660}.get(damage, 0o600))
            if damage == "foreign-owner":
                os.chown(path, 4242, 4242)
    _compile_fresh()
    assert not marker.exists()


def test_a_fresh_cache_folder_is_private(caches: Path) -> None:
    _compile_fresh()
    folder = caches / "interlock"
    assert folder.stat().st_mode & 0o777 == 0o700
    files = list(folder.iterdir())
    assert files and all(p.stat().st_mode & 0o077 == 0 for p in files)
    # and what was written is read back
    P._parser.cache_clear()
    prog.prelude_module.cache_clear()
    assert P._load_parser(P.parser_cache_name(lark.__version__), P._parser_key(P.grammar_text(),
                                                                             lark.__version__)) is not None
