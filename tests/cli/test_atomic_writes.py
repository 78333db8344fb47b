"""Every command that writes a file writes it through `interlock.atomic.write_atomic`: a symlink planted at a
temporary name (the old fixed `OUT.tmp`, or any other) is never followed, OUT ends a regular file with the
whole content, a symlink at OUT itself is replaced rather than written through, and a device, FIFO or `/dev`
name is refused before anything is written."""

from __future__ import annotations

import os
import shutil
import stat
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pytest

from interlock.atomic import refusal, write_atomic
from interlock.cli import main

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = ROOT / "examples" / "pr_review.wf"
KANDEV = ROOT / "tests" / "kandev" / "fixtures" / "template-all-fields.yml"
SCENARIO = ROOT / "examples" / "scenarios" / "agent_error_guards.yaml"
VICTIM = "precious: must never change\n"
UNFORMATTED = "role   reviewer\n\n\n\nworkflow w {\n      step a { start }\n}\n"


@dataclass(frozen=True)
class Command:
    """How to run one writing command into `out` (in `tmp`), and the same command to standard output."""

    name: str
    to_file: Callable[[Path, Path], list[str]]
    to_stdout: Callable[[Path], list[str]] | None
    out_name: str


def _wf(tmp: Path) -> Path:
    target = tmp / "in.wf"
    if not target.exists():
        shutil.copy(EXAMPLE, target)
    return target


COMMANDS = [
    Command("compile", lambda t, o: ["compile", str(_wf(t)), "-o", str(o)], lambda t: ["compile", str(_wf(t))],
            "plan.json"),
    Command("graph", lambda t, o: ["graph", str(_wf(t)), "-o", str(o)], lambda t: ["graph", str(_wf(t))],
            "diagram.mmd"),
    Command("schema", lambda t, o: ["schema", "plan", "-o", str(o)], lambda t: ["schema", "plan"],
            "plan.schema.json"),
    Command("export", lambda t, o: ["export", str(_wf(t)), "-o", str(o), "-q"],
            lambda t: ["export", str(_wf(t)), "-q"], "workflow.yml"),
    Command("import", lambda t, o: ["import", str(KANDEV), "-o", str(o), "-q"],
            lambda t: ["import", str(KANDEV), "-q"], "workflow.wf"),
    Command("fmt", lambda t, o: ["fmt", "-q", str(o)], None, "messy.wf"),
    Command("test", lambda t, o: ["test", str(SCENARIO), "-o", str(o)], lambda t: ["test", str(SCENARIO)],
            "report.txt"),
]


def _expected(cmd: Command, tmp: Path, capsys: pytest.CaptureFixture[str]) -> bytes:
    if cmd.to_stdout is None:  # fmt: the formatted text of the file as it stands
        from interlock.dsl.format import format_source

        return format_source(UNFORMATTED, "messy.wf").text.encode()
    capsys.readouterr()
    assert main(cmd.to_stdout(tmp)) == 0
    return capsys.readouterr().out.encode()


def _planted_names(out: Path) -> list[Path]:
    """The temporary names the commands used to write through before: `OUT.tmp` (compile, graph) and
    `.OUT.PID.tmp` (schema, in this process)."""
    return [out.with_name(out.name + ".tmp"), out.with_name(f".{out.name}.{os.getpid()}.tmp")]


@pytest.mark.parametrize("cmd", COMMANDS, ids=lambda c: c.name)
def test_a_symlink_planted_at_a_temporary_name_is_never_followed(cmd: Command, tmp_path: Path,
                                                                 capsys: pytest.CaptureFixture[str]) -> None:
    expected = _expected(cmd, tmp_path, capsys)
    victim = tmp_path / "victim.txt"
    victim.write_text(VICTIM)
    out = tmp_path / cmd.out_name
    if cmd.name == "fmt":
        out.write_text(UNFORMATTED)
    for planted in _planted_names(out):
        planted.symlink_to(victim)
    assert main(cmd.to_file(tmp_path, out)) == 0, capsys.readouterr()
    assert victim.read_text() == VICTIM
    assert stat.S_ISREG(os.lstat(out).st_mode)
    assert out.read_bytes() == expected
    leftovers = {p.name for p in tmp_path.iterdir()} - {"in.wf", "victim.txt", out.name}
    assert leftovers == {p.name for p in _planted_names(out)}  # nothing of ours left behind


@pytest.mark.parametrize("cmd", [c for c in COMMANDS if c.name != "fmt"], ids=lambda c: c.name)
def test_a_symlink_at_out_is_replaced_not_written_through(cmd: Command, tmp_path: Path,
                                                          capsys: pytest.CaptureFixture[str]) -> None:
    expected = _expected(cmd, tmp_path, capsys)
    victim = tmp_path / "victim.txt"
    victim.write_text(VICTIM)
    out = tmp_path / cmd.out_name
    out.symlink_to(victim)
    assert main(cmd.to_file(tmp_path, out)) == 0
    assert victim.read_text() == VICTIM
    assert not out.is_symlink() and out.read_bytes() == expected


@pytest.mark.parametrize("cmd", [c for c in COMMANDS if c.name != "fmt"], ids=lambda c: c.name)
def test_special_targets_are_refused_before_anything_is_written(cmd: Command, tmp_path: Path,
                                                                capsys: pytest.CaptureFixture[str]) -> None:
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    for out, why in ((fifo, "is a FIFO (named pipe), not a file"), (Path("/dev/stdout"), "a device or a stream"),
                     (Path("/dev/null"), "a device or a stream")):
        capsys.readouterr()
        assert main(cmd.to_file(tmp_path, out)) == 2
        assert why in capsys.readouterr().err
    assert stat.S_ISFIFO(os.lstat(fifo).st_mode)


def test_an_existing_files_mode_is_kept_and_a_new_file_follows_the_umask(tmp_path: Path) -> None:
    kept = tmp_path / "kept.json"
    kept.write_text("old")
    kept.chmod(0o640)
    write_atomic(kept, "new")
    assert kept.read_text() == "new" and stat.S_IMODE(kept.stat().st_mode) == 0o640
    old = os.umask(0o027)
    try:
        write_atomic(tmp_path / "fresh.json", b"x")
    finally:
        os.umask(old)
    assert stat.S_IMODE((tmp_path / "fresh.json").stat().st_mode) == 0o640


def test_a_failed_write_leaves_the_old_file_and_no_temporary(tmp_path: Path,
                                                             monkeypatch: pytest.MonkeyPatch) -> None:
    target = tmp_path / "plan.json"
    target.write_text("old")

    def full_disk(fd: int) -> None:
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(os, "fsync", full_disk)
    with pytest.raises(OSError, match="No space"):
        write_atomic(target, b"new")
    assert target.read_text() == "old"
    assert [p.name for p in tmp_path.iterdir()] == ["plan.json"]


def test_refusal_names_what_the_target_is(tmp_path: Path) -> None:
    assert refusal(tmp_path / "absent") is None
    assert refusal(tmp_path) == "is a folder: give the name of a file in it"
    (tmp_path / "link").symlink_to(tmp_path / "absent")
    assert refusal(tmp_path / "link") is None  # a symlink is replaced, never followed
