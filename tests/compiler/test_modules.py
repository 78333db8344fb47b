"""Loading a program from disk: `use` stays in its folder and reads only regular files, cycles are
reported as cycles, chains of any length load, and no route (check, compile, `use`) reads a FIFO or
a device."""

from __future__ import annotations

import io
import os
import threading
from collections.abc import Callable, Iterator
from contextlib import redirect_stderr, redirect_stdout
from pathlib import Path

import pytest

from interlock.cli import main
from interlock.compiler import CompileResult, compile_bytes, compile_path
from interlock.dsl.parser import read_limited

WORKFLOW = 'workflow w "W" { step s "S" { start terminal } }\n'


def _codes(result: CompileResult) -> list[tuple[str, str, int, int]]:
    return [(d.code, Path(d.file).name, d.span.line, d.span.col) for d in result.diagnostics]


def _soon(call: Callable[[], object], seconds: float = 20.0) -> object:
    """`call()`, failing (instead of hanging the suite) when it blocks, as a FIFO read would."""
    box: list[object] = []
    worker = threading.Thread(target=lambda: box.append(call()), daemon=True)
    worker.start()
    worker.join(seconds)
    assert not worker.is_alive(), "blocked (reading a FIFO?)"
    return box[0]


def _cli(*argv: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with redirect_stdout(out), redirect_stderr(err):
        code = main(list(argv))
    return code, out.getvalue(), err.getvalue()


# ---- `use` stays in its folder ---------------------------------------------------------------------


def test_a_symlink_out_of_the_folder_is_refused_at_the_use_line_and_never_read(tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    secret = outside / "secret.txt"
    secret.write_text("hunter2:x:0:0\n")
    work = tmp_path / "work"
    work.mkdir()
    (work / "secrets.wf").symlink_to(secret)
    (work / "main.wf").write_text("role r\n\nuse secrets\n" + WORKFLOW)
    result = compile_path(work / "main.wf")
    assert _codes(result) == [("IL011", "main.wf", 3, 5)]
    (d,) = result.diagnostics
    assert "hunter2" not in d.message + (d.help or "") and "outside" in d.message
    assert str(secret) not in result.sources


def test_etc_passwd_through_a_symlink_is_not_shown(tmp_path: Path) -> None:
    if not Path("/etc/passwd").is_file():
        pytest.skip("no /etc/passwd")
    (tmp_path / "secrets.wf").symlink_to("/etc/passwd")
    (tmp_path / "main.wf").write_text("use secrets\n" + WORKFLOW)
    code, out, _ = _cli("check", "--format", "concise", str(tmp_path / "main.wf"))
    assert code == 1
    assert out.splitlines()[0] == (f"{tmp_path / 'main.wf'}:1:5: error[IL011] `secrets.wf` leads outside the folder "
                                   f"of {tmp_path / 'main.wf'} (it is a symlink), so it is not read (help: put the "
                                   f"module itself next to {tmp_path / 'main.wf'}, or use a prelude)")
    first = Path("/etc/passwd").read_text().split(":")[0]
    assert f"`{first}`" not in out


def test_a_symlink_into_a_subfolder_is_outside_too(tmp_path: Path) -> None:
    (tmp_path / "lib").mkdir()
    (tmp_path / "lib" / "helpers.wf").write_text("role helper\n")
    (tmp_path / "helpers.wf").symlink_to(tmp_path / "lib" / "helpers.wf")
    (tmp_path / "main.wf").write_text("use helpers\n" + WORKFLOW)
    assert _codes(compile_path(tmp_path / "main.wf")) == [("IL011", "main.wf", 1, 5)]


def test_a_symlink_within_the_folder_is_followed(tmp_path: Path) -> None:
    (tmp_path / "real.wf").write_text("role helper\n")
    (tmp_path / "helpers.wf").symlink_to("real.wf")
    (tmp_path / "main.wf").write_text("use helpers\n" + WORKFLOW)
    result = compile_path(tmp_path / "main.wf")
    assert result.ok and result.plan is not None and "helper" in result.plan.roles


@pytest.mark.parametrize("kind", ["fifo", "folder", "device"])
def test_a_module_that_is_not_a_regular_file_is_refused_unread(tmp_path: Path, kind: str) -> None:
    target = tmp_path / "odd.wf"
    if kind == "fifo":
        os.mkfifo(target)
    elif kind == "folder":
        target.mkdir()
    else:
        if not Path("/dev/zero").exists():
            pytest.skip("no /dev/zero")
        # a device inside the folder: a device node needs root, a symlink to one leaves the folder
        (tmp_path / "devices").mkdir()
        target = tmp_path / "devices" / "odd.wf"
        target.symlink_to("/dev/zero")
        tmp_path = tmp_path / "devices"
    (tmp_path / "main.wf").write_text("use odd\n" + WORKFLOW)
    result = _soon(lambda: compile_path(tmp_path / "main.wf"))
    assert isinstance(result, CompileResult)
    assert _codes(result) == [("IL011", "main.wf", 1, 5)]


def test_a_missing_module_and_a_broken_symlink_are_unknown_modules(tmp_path: Path) -> None:
    (tmp_path / "gone.wf").symlink_to(tmp_path / "nowhere.wf")
    (tmp_path / "main.wf").write_text("use absent\nuse gone\n" + WORKFLOW)
    result = compile_path(tmp_path / "main.wf")
    assert _codes(result) == [("IL006", "main.wf", 1, 5), ("IL006", "main.wf", 2, 5)]
    assert "broken symlink" in result.diagnostics[1].message


# ---- cycles ----------------------------------------------------------------------------------------


def test_a_file_that_uses_itself_is_a_cycle_not_a_duplicate(tmp_path: Path) -> None:
    (tmp_path / "a.wf").write_text("use a\n" + WORKFLOW)
    result = compile_path(tmp_path / "a.wf")
    assert _codes(result) == [("IL012", "a.wf", 1, 5)]
    assert result.diagnostics[0].message == f"`use a` makes {tmp_path / 'a.wf'} use itself"


def test_two_files_using_each_other_name_the_cycle(tmp_path: Path) -> None:
    (tmp_path / "a.wf").write_text("use b\n" + WORKFLOW)
    (tmp_path / "b.wf").write_text("role rb\nuse a\n")
    result = compile_path(tmp_path / "a.wf", display="a.wf")
    assert _codes(result) == [("IL012", "b.wf", 2, 5)]
    assert result.diagnostics[0].message == f"`use a` closes a cycle of `use` lines: a.wf -> {tmp_path / 'b.wf'} -> a.wf"


def test_a_longer_cycle_that_does_not_pass_through_the_main_file(tmp_path: Path) -> None:
    (tmp_path / "main.wf").write_text("use x\n" + WORKFLOW)
    (tmp_path / "x.wf").write_text("use y\n")
    (tmp_path / "y.wf").write_text("use z\n")
    (tmp_path / "z.wf").write_text("use x\n")
    result = compile_path(tmp_path / "main.wf")
    assert _codes(result) == [("IL012", "z.wf", 1, 5)]
    assert result.diagnostics[0].message.endswith(
        " -> ".join(str(tmp_path / f"{n}.wf") for n in ("x", "y", "z", "x")))


def test_a_cycle_through_a_second_name_for_the_main_file(tmp_path: Path) -> None:
    (tmp_path / "a.wf").write_text("use alias\n" + WORKFLOW)
    (tmp_path / "alias.wf").symlink_to("a.wf")
    assert _codes(compile_path(tmp_path / "a.wf")) == [("IL012", "a.wf", 1, 5)]


def test_a_diamond_is_not_a_cycle(tmp_path: Path) -> None:
    (tmp_path / "main.wf").write_text("use left\nuse right\n" + WORKFLOW)
    (tmp_path / "left.wf").write_text("use base\nrole left\n")
    (tmp_path / "right.wf").write_text("use base\nrole right\n")
    (tmp_path / "base.wf").write_text("role base\n")
    result = compile_path(tmp_path / "main.wf")
    assert result.ok and result.plan is not None
    assert [Path(s).name for s in result.plan.sources] == ["<prelude:std>", "base.wf", "left.wf", "right.wf",
                                                           "main.wf"]


# ---- long chains -----------------------------------------------------------------------------------


@pytest.mark.parametrize("length", [1_000, 5_000])
def test_a_long_chain_of_use_lines_loads(tmp_path: Path, length: int) -> None:
    for i in range(length):
        (tmp_path / f"m{i}.wf").write_text((f"use m{i + 1}\n" if i + 1 < length else "") + f"role r{i}\n")
    (tmp_path / "main.wf").write_text("use m0\n" + WORKFLOW)
    result = compile_path(tmp_path / "main.wf")
    assert result.diagnostics == ()
    assert result.plan is not None and len(result.plan.roles) == 5 + length
    assert Path(result.plan.sources[1]).name == f"m{length - 1}.wf"  # dependencies first


# ---- files that are not regular files --------------------------------------------------------------


@pytest.fixture
def fifo(tmp_path: Path) -> Iterator[Path]:
    path = tmp_path / "pipe.wf"
    os.mkfifo(path)
    yield path


def test_read_limited_refuses_a_fifo_without_opening_it_for_a_blocking_read(fifo: Path) -> None:
    source, problems = _soon(lambda: read_limited(fifo))  # type: ignore[misc]
    assert source is None
    assert [(d.code, d.span.line, d.message) for d in problems] == [
        ("IL008", 1, "cannot read file: it is a FIFO (named pipe), not a regular file")]


@pytest.mark.skipif(not Path("/dev/zero").exists(), reason="no /dev/zero")
def test_read_limited_refuses_dev_zero_instead_of_reading_it_forever() -> None:
    source, problems = read_limited(Path("/dev/zero"))
    assert source is None
    assert [(d.code, d.file, d.message) for d in problems] == [
        ("IL008", "/dev/zero", "cannot read file: it is a character device, not a regular file")]


def test_read_limited_refuses_a_folder(tmp_path: Path) -> None:
    source, problems = read_limited(tmp_path)
    assert source is None and problems[0].message == "cannot read file: it is a folder, not a regular file"


def test_check_on_a_fifo_reports_it_and_exits_1(fifo: Path) -> None:
    result = _soon(lambda: _cli("check", "--format", "concise", str(fifo)))
    assert result == (1, f"{fifo}:1:1: error[IL008] cannot read file: it is a FIFO (named pipe), not a regular "
                         "file (help: `.wf` sources are regular files)\n1 file checked: 1 error\n", "")


@pytest.mark.skipif(not Path("/dev/zero").exists(), reason="no /dev/zero")
def test_check_on_a_symlink_to_dev_zero_exits_1(tmp_path: Path) -> None:
    link = tmp_path / "zero.wf"
    link.symlink_to("/dev/zero")
    code, out, _ = _soon(lambda: _cli("check", "--format", "concise", str(link)))  # type: ignore[misc]
    assert code == 1 and "error[IL008] cannot read file: it is a character device" in out


def test_compile_on_a_fifo_exits_2_without_reading_it(fifo: Path) -> None:
    code, out, err = _soon(lambda: _cli("compile", str(fifo)))  # type: ignore[misc]
    assert (code, out) == (2, "") and "not a file" in err


def test_stdin_may_use_a_module_but_not_a_fifo(tmp_path: Path) -> None:
    os.mkfifo(tmp_path / "pipe.wf")
    result = _soon(lambda: compile_bytes("<stdin>", b"use pipe\n" + WORKFLOW.encode(), search_dir=tmp_path))
    assert isinstance(result, CompileResult)
    assert _codes(result) == [("IL011", "<stdin>", 1, 5)]


# ---- file names that are not UTF-8 ------------------------------------------------------------------


@pytest.mark.skipif(os.name != "posix", reason="POSIX file names are bytes")
def test_a_file_name_that_is_not_utf8_never_reaches_the_plan_as_a_lone_surrogate(tmp_path: Path) -> None:
    from interlock.runtime.plan import dump_plan, load_plan

    folder = Path(os.fsdecode(os.fsencode(str(tmp_path)) + b"/caf\xe9"))
    folder.mkdir()
    (folder / "helpers.wf").write_text("role helper\n")
    (folder / "main.wf").write_text("use helpers\n" + WORKFLOW)
    result = compile_path(folder / "main.wf")
    assert result.ok and result.plan is not None
    text = dump_plan(result.plan)
    text.encode("utf-8")  # no lone surrogate
    assert "caf\\\\xe9" in text
    assert load_plan(text) == result.plan
