"""Plan JSON in, its meaning and its layout apart out, and the canonical digest of a JSON value (ADR 0040).

A plan's `digest` is its revision: hosts and stores key plan revisions by it, so it must change
when, and only when, the rules change.  It hashes the plan's *meaning*: everything but its layout,
which is where the rules were written (every `SourceRef`-typed field, at any depth), the
`sources` file list and the `compiler` that wrote it.  Reformatting, re-commenting, renaming the
file or recompiling with another interlock version leaves the digest alone.  The layout keeps a
digest of its own, `layout_digest`, so a hand edit of a source position is still refused on load.

The split is driven by the plan models' own field types (`typing.get_type_hints`), never by key
names: an action argument that happens to be called `source` is meaning.  It works on raw JSON
data, before validation, so `load_plan` can check both digests of any JSON object.  runtime/plan.py
names the models (`Plan`, `SourceRef`) and computes the two digests.
"""

from __future__ import annotations

import dataclasses
import functools
import hashlib
import json
import types
import typing
from typing import Annotated, Any, Literal, Union, get_args, get_origin

from pydantic import BaseModel

__all__ = ["DIGEST_FIELDS", "PLAN_LAYOUT_FIELDS", "split_layout", "sha256_of", "layout_fields", "meaning_of"]

DIGEST_FIELDS = ("digest", "layout_digest")
"""The plan's own digests: in neither part."""

PLAN_LAYOUT_FIELDS = ("compiler", "sources")
"""Top-level fields of a plan that are layout (besides every `SourceRef`-typed field)."""

Path = tuple[str | int, ...]


def sha256_of(value: Any) -> str:
    """`sha256:` + hex digest of a JSON value's canonical text (sorted keys, compact, UTF-8)."""
    text = json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return "sha256:" + hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()


def split_layout(data: Any, root: type[BaseModel], layout: type[BaseModel]) -> tuple[Any, list[tuple[Path, Any]]]:
    """Plan data read as `root` (the `Plan` model), without its layout and digests; and the layout as `(path,
    value)` pairs in document order: every field typed `layout` (`SourceRef`), and `PLAN_LAYOUT_FIELDS`.

    Keys the models do not declare stay in the meaning (a plan holding one is refused by validation
    anyway); values of an unexpected shape are kept as they are.  (The models are parameters, not imports:
    runtime/plan.py imports this module.)"""
    found: list[tuple[Path, Any]] = []
    if not isinstance(data, dict):
        return data, found
    meaning: dict[str, Any] = {}
    hints = _hints(root)
    for key, value in data.items():
        if key in DIGEST_FIELDS:
            continue
        if key in PLAN_LAYOUT_FIELDS:
            found.append(((key,), value))
            continue
        meaning[key] = value if key not in hints else _walk(value, hints[key], (key,), found, layout)
    return meaning, found


def meaning_of(model: BaseModel, layout: type[BaseModel]) -> Any:
    """A plan model's JSON data without its layout fields, at any depth (what `interlock diff` compares)."""
    return _walk(model.model_dump(mode="json"), type(model), (), [], layout)


def layout_fields(model: type[BaseModel], layout: type[BaseModel]) -> frozenset[str]:
    """The fields of a plan model that are layout: those typed `layout` (optional or not)."""
    return frozenset(name for name, hint in _hints(model).items() if layout in _members(hint))


@functools.cache
def _hints(model: type[BaseModel]) -> dict[str, Any]:
    """The resolved type of each field of `model` (forward references such as `PlanExpr` resolved)."""
    hints = typing.get_type_hints(model, include_extras=True)
    return {name: hints[name] for name in model.model_fields}


def _unwrap(hint: Any) -> Any:
    while get_origin(hint) is Annotated:
        hint = get_args(hint)[0]
    return hint


def _members(hint: Any) -> tuple[Any, ...]:
    """The alternatives of a union type (Annotated stripped, nested unions such as `PlanExpr | None` flattened), or
    the type itself."""
    hint = _unwrap(hint)
    if get_origin(hint) in (Union, types.UnionType):
        return tuple(m for a in get_args(hint) for m in _members(a))
    return (hint,)


@dataclasses.dataclass(frozen=True)
class _Shape:
    """What `_walk` needs to know of a field type, worked out once per type: the plan models that may read a
    mapping (each with its discriminating `Literal` fields), and the container it may be (`dict`, `list`) with
    the type of its items."""

    models: tuple[tuple[type[BaseModel], tuple[tuple[str, tuple[Any, ...]], ...]], ...]
    container: type | None
    item: Any


def _shape(hint: Any) -> _Shape:
    try:
        return _cached_shape(hint)
    except TypeError:  # an unhashable type annotation: worked out each time
        return _make_shape(hint)


def _make_shape(hint: Any) -> _Shape:
    members = _members(hint)
    models = tuple((m, tuple((k, get_args(h)) for k, h in _hints(m).items() if get_origin(_unwrap(h)) is Literal))
                   for m in members if isinstance(m, type) and issubclass(m, BaseModel))
    container = next((m for m in members if get_origin(m) in (tuple, list, dict)), None)
    if container is None:
        return _Shape(models, None, None)
    args = get_args(container)
    if get_origin(container) is dict:
        return _Shape(models, dict, args[1]) if len(args) == 2 else _Shape(models, None, None)
    return _Shape(models, list, args[0]) if args else _Shape(models, None, None)


_cached_shape = functools.cache(_make_shape)


@functools.cache
def _fields(model: type[BaseModel], layout: type[BaseModel]) -> tuple[dict[str, Any], frozenset[str]]:
    return _hints(model), layout_fields(model, layout)


def _model_of(value: dict[str, Any], shape: _Shape) -> type[BaseModel] | None:
    """Which plan model reads `value`: the only model of the union, or the one whose `Literal` fields (the
    discriminator: `op`, `step`) accept the value's."""
    if len(shape.models) <= 1:
        return shape.models[0][0] if shape.models else None
    for model, literals in shape.models:
        if all(k in value and value[k] in allowed for k, allowed in literals):
            return model
    return None


def _walk(value: Any, hint: Any, path: Path, found: list[tuple[Path, Any]], layout: type[BaseModel]) -> Any:
    shape = _shape(hint)
    if isinstance(value, dict):
        model = _model_of(value, shape)
        if model is not None:
            hints, skip = _fields(model, layout)
            out: dict[str, Any] = {}
            for key, item in value.items():
                if key in skip:
                    found.append(((*path, key), item))
                elif key in hints:
                    out[key] = _walk(item, hints[key], (*path, key), found, layout)
                else:
                    out[key] = item
            return out
        if shape.container is dict:
            return {k: _walk(v, shape.item, (*path, k), found, layout) for k, v in value.items()}
        return value
    if shape.container is list and isinstance(value, list):
        return [_walk(v, shape.item, (*path, i), found, layout) for i, v in enumerate(value)]
    return value
