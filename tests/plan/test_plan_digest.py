"""The plan's digest is its meaning (ADR 0040): layout (source positions, file names, the compiler version) never
changes it, every field of the meaning does, and the layout keeps tamper evidence of its own.

- the examples keep their digest when reformatted, moved down a file and renamed (generated sources:
  tests/property/test_digest_properties.py);
- every leaf of an example plan: a change to a meaning leaf changes `digest`, a change to a layout leaf changes
  `layout_digest` only, and `load_plan` refuses both edits unless the digests are recomputed;
- the split follows the models' types, not key names: an action argument called `source` is meaning;
- a plan of format version 1 (written by the previous interlock, committed as a fixture) is refused with a
  message that says to recompile, by `load_plan` and by the commands that read plans.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from interlock.cli import main
from interlock.compiler import compile_path, compile_source
from interlock.dsl import SourceFile
from interlock.dsl.format import format_source
from interlock.runtime.plan import (
    PLAN_VERSION,
    PlanError,
    dump_plan,
    layout_digest,
    load_plan,
    plan_digest,
    plan_layout,
    seal_digests,
)

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = sorted((ROOT / "examples").glob("*.wf"))
V1_PLAN = Path(__file__).resolve().parent / "fixtures" / "plan_v1_kanban.json"


def compiled(text: str, name: str = "gen.wf") -> dict[str, Any]:
    result = compile_source(SourceFile(name, text))
    assert result.plan is not None, [d.message for d in result.diagnostics]
    data: dict[str, Any] = json.loads(dump_plan(result.plan))
    return data


def formatted(text: str) -> str:
    result = format_source(text, "gen.wf")
    assert result.ok, result.diagnostics
    return result.text


@pytest.mark.parametrize("example", EXAMPLES, ids=[p.stem for p in EXAMPLES])
def test_an_example_keeps_its_digest_when_reformatted_moved_or_renamed(example: Path, tmp_path: Path) -> None:
    text = example.read_text(encoding="utf-8")
    plan = json.loads(dump_plan(_plan(example)))
    (tmp_path / "moved.wf").write_text("# a new first line\n\n" + formatted_file(text, example), encoding="utf-8")
    for sibling in example.parent.glob("*.wf"):  # `use NAME` modules
        if sibling != example:
            (tmp_path / sibling.name).write_text(sibling.read_text(encoding="utf-8"), encoding="utf-8")
    moved = json.loads(dump_plan(_plan(tmp_path / "moved.wf")))
    assert moved["digest"] == plan["digest"]
    assert moved["layout_digest"] != plan["layout_digest"]  # the positions moved, and the file's name


def formatted_file(text: str, path: Path) -> str:
    result = format_source(text, str(path))
    assert result.ok
    return result.text


def _plan(path: Path) -> Any:
    result = compile_path(path, display=path.name)
    assert result.plan is not None
    return result.plan


# ---- every leaf of a plan -------------------------------------------------------------------------------------


def _leaves(obj: Any, prefix: tuple[Any, ...] = ()) -> Iterator[tuple[Any, ...]]:
    if isinstance(obj, dict):
        for k, v in obj.items():
            yield from _leaves(v, (*prefix, k))
    elif isinstance(obj, list) and obj:
        for i, v in enumerate(obj):
            yield from _leaves(v, (*prefix, i))
    else:
        yield prefix


def _other(value: Any) -> Any:
    if isinstance(value, bool):
        return not value
    if isinstance(value, int):
        return value + 1
    if isinstance(value, str):
        return value + "x"
    if value is None:
        return "x"
    return ["x"] if value == [] else {"x": 1}


def _set(data: dict[str, Any], path: tuple[Any, ...], value: Any) -> None:
    node: Any = data
    for p in path[:-1]:
        node = node[p]
    node[path[-1]] = value


OFFICE = json.loads(dump_plan(_plan(ROOT / "examples" / "office_default.wf")))
LAYOUT_PATHS = {path for path, _ in plan_layout(OFFICE)[1]}


def _is_layout(path: tuple[Any, ...]) -> bool:
    return any(path[:n] in LAYOUT_PATHS for n in range(1, len(path) + 1))


def test_the_layout_is_the_source_positions_the_file_list_and_the_compiler() -> None:
    names = {p[-1] for p in LAYOUT_PATHS}
    assert names == {"source", "sources", "compiler"}
    for path, value in plan_layout(OFFICE)[1]:
        if path[-1] == "source":
            assert set(value) == {"file", "line", "col"}, path
    assert "source" not in json.dumps(plan_layout(OFFICE)[0]).replace('"sources"', "")


def _one_leaf_per_field(plan: dict[str, Any]) -> list[tuple[Any, ...]]:
    """A leaf of every field the plan has: the first of the paths that differ only in list indexes (1,106 leaves of
    Office Default are 280 fields; mutating each leaf once took a minute and proved no more)."""
    by_field: dict[tuple[Any, ...], tuple[Any, ...]] = {}
    for path in _leaves(plan):
        if path[0] not in ("digest", "layout_digest"):
            by_field.setdefault(tuple("[]" if isinstance(p, int) else p for p in path), path)
    return list(by_field.values())


def test_every_leaf_is_covered_by_exactly_one_digest() -> None:
    leaves = _one_leaf_per_field(OFFICE)
    assert len(leaves) > 200  # every field of a real plan, not a handful
    assert any(_is_layout(p) for p in leaves) and any(not _is_layout(p) for p in leaves)
    for path in leaves:
        data = copy.deepcopy(OFFICE)
        node: Any = data
        for p in path:
            node = node[p]
        _set(data, path, _other(node))
        if _is_layout(path):
            assert plan_digest(data) == OFFICE["digest"], path
            assert layout_digest(data) != OFFICE["layout_digest"], path
        else:
            assert plan_digest(data) != OFFICE["digest"], path
        with pytest.raises(PlanError, match="plan version 3 is not supported" if path == ("plan_version",)
                           else "plan digest does not match its content"):
            load_plan(json.dumps(data))


def test_a_re_sealed_layout_edit_is_the_same_revision() -> None:
    data = copy.deepcopy(OFFICE)
    data["workflows"][0]["steps"][0]["source"]["line"] += 40
    data["compiler"] = "interlock 9.9.9"
    plan = load_plan(json.dumps(seal_digests(data)))
    assert plan.digest == OFFICE["digest"]
    assert plan.workflows[0].steps[0].source.line == OFFICE["workflows"][0]["steps"][0]["source"]["line"] + 40


def test_an_argument_named_source_is_meaning() -> None:
    text = ('task note(source: str, line: int = 0) on on_enter\nentry { dispatch note }\n'
            'workflow w { step a { start terminal on on_enter { note(source: "%s") } } }\n')
    one, two = compiled(text % "one"), compiled(text % "two")
    assert one["digest"] != two["digest"]
    assert one["layout_digest"] == two["layout_digest"]


# ---- plans of the previous format ---------------------------------------------------------------------------


def test_the_fixture_is_a_version_1_plan_as_the_previous_interlock_wrote_it() -> None:
    data = json.loads(V1_PLAN.read_text(encoding="utf-8"))
    assert data["plan_version"] == 1 and PLAN_VERSION == 2
    assert "layout_digest" not in data
    assert data["workflows"][0]["steps"][0]["source"]["line"] > 0


def test_a_version_1_plan_is_refused_with_a_message_to_recompile() -> None:
    with pytest.raises(PlanError) as info:
        load_plan(V1_PLAN.read_text(encoding="utf-8"))
    assert str(info.value) == ("plan version 1 is not supported: this runtime reads plan version 2; recompile the "
                               "workflow with `interlock compile` (the plan was written by an older interlock)")


@pytest.mark.parametrize("command", ["diff", "graph"])
def test_commands_that_read_plans_refuse_a_version_1_plan(command: str, capsys: pytest.CaptureFixture[str]) -> None:
    """Each with its documented status: `diff` 2 (the comparison cannot run), `graph` 1 (the plan cannot be used)."""
    if command == "diff":
        assert main(["diff", str(V1_PLAN), str(ROOT / "examples" / "kanban.wf")]) == 2
    else:
        assert main(["graph", str(V1_PLAN)]) == 1
    err = capsys.readouterr().err
    assert "plan version 1 is not supported" in err and "recompile the workflow with `interlock compile`" in err
    assert "Traceback" not in err


def test_compile_relocates_source_positions_by_type_not_by_key(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                               capsys: pytest.CaptureFixture[str]) -> None:
    """`interlock compile` makes every source path relative to the main file's folder; an action argument that is a
    `{file, line, col}` map is meaning, and is left as written."""
    folder = tmp_path / "flows"
    folder.mkdir()
    (folder / "w.wf").write_text(
        "task note(where: map) on on_enter\nentry { dispatch note }\n"
        'workflow w { step a { start terminal on on_enter { note(where: {file: "data.txt", line: 1, col: 2}) } } }\n',
        encoding="utf-8")
    monkeypatch.chdir(tmp_path)
    assert main(["compile", "flows/w.wf"]) == 0
    plan = load_plan(capsys.readouterr().out)
    action = plan.workflows[0].steps[0].handlers["on_enter"][0]
    assert action.args["where"] == {"file": "data.txt", "line": 1, "col": 2}
    assert action.source.file == "w.wf" and "w.wf" in plan.sources
