"""A frozen dataclass in, the same class with a cheaper `__init__` out.

A frozen dataclass's generated `__init__` stores each field through `object.__setattr__`
(about 0.1 µs a field).  The runtime builds several such records per call (ledger rows,
entry records, contexts, results), so `fast_init` replaces it with one that stores the
fields straight into the instance dict (no `__setattr__`; the dict keeps sharing its keys with the
class's other instances).  Everything else the dataclass generated stays: the
signature (defaults, default factories, keyword-only fields), `__eq__`, `__hash__`,
`__repr__`, `dataclasses.replace`, immutability after construction (ADR 0011).

`builder(cls)` is a second constructor for the runtime's hot paths, with the same parameters:
it builds a plain twin class's instance with ordinary attribute stores (the fast kind: no
frozen `__setattr__` in the way) and then makes it an instance of `cls` by assigning its
`__class__` — which CPython allows between two classes of the same layout.  What it returns
is indistinguishable from what `cls(...)` returns (same type, dict, equality, hash, frozenness).
"""

from __future__ import annotations

import dataclasses
import inspect
from collections.abc import Callable
from typing import Any, TypeVar, cast

__all__ = ["fast_init", "builder"]

T = TypeVar("T")

_NO_DEFAULT = object()


def fast_init(cls: type[T]) -> type[T]:
    """Replace a frozen, dict-backed dataclass's `__init__` by one that stores all fields at once."""
    params = getattr(cls, "__dataclass_params__", None)
    if params is None or not params.frozen or not params.init:
        raise TypeError(f"fast_init: {cls.__name__} is not a frozen dataclass with a generated __init__")
    if "__slots__" in cls.__dict__ or hasattr(cls, "__post_init__"):
        raise TypeError(f"fast_init: {cls.__name__} has slots or a __post_init__")
    fields = dataclasses.fields(cls)  # type: ignore[arg-type]
    original = cls.__init__
    given = list(inspect.signature(original).parameters)[1:]
    if any(not f.init for f in fields) or given != [f.name for f in fields]:  # InitVar, a field outside __init__
        raise TypeError(f"fast_init: {cls.__name__}'s __init__ takes other parameters than its fields")
    reserved = [f.name for f in fields
                if f.name in ("self", "_fast_d", "_fast_cls", "_NO_DEFAULT", "_Builder") or f.name[:3] in ("_d_", "_f_")]
    if reserved:
        raise TypeError(f"fast_init: {cls.__name__} has fields named like the generated code's own names: {reserved}")
    names: dict[str, Any] = {"_NO_DEFAULT": _NO_DEFAULT}
    positional: list[str] = []
    keyword: list[str] = []
    values: list[str] = []
    for f in fields:
        if f.default is not dataclasses.MISSING:
            names[f"_d_{f.name}"] = f.default
            param = f"{f.name}=_d_{f.name}"
            value = f.name
        elif f.default_factory is not dataclasses.MISSING:
            names[f"_f_{f.name}"] = f.default_factory
            param = f"{f.name}=_NO_DEFAULT"
            value = f"_f_{f.name}() if {f.name} is _NO_DEFAULT else {f.name}"
        else:
            param = value = f.name
        (keyword if f.kw_only else positional).append(param)
        values.append(f"{f.name!r}: {value}")
    signature = ", ".join(["self", *positional, *(["*", *keyword] if keyword else [])])
    body = "".join(f"\n    _fast_d[{v.split(':', 1)[0]}] ={v.split(':', 1)[1]}" for v in values)
    source = f"def __init__({signature}) -> None:\n    _fast_d = self.__dict__{body}\n"
    # the builder: a plain class (no __setattr__ of its own, the same layout as `cls` when `cls` derives from
    # object alone) whose __init__ stores the fields and then hands the instance to `cls`
    stores = "".join(f"\n        self.{v.split(':', 1)[0][1:-1]} ={v.split(':', 1)[1]}" for v in values)
    source += (f"class _Builder:\n    def __init__({signature}) -> None:{stores}\n"
               f"        self.__class__ = _fast_cls\n")
    names["_fast_cls"] = cls
    exec(source, names)  # generated from the dataclass's own field names, as `dataclasses` does
    init = names["__init__"]
    init.__qualname__ = f"{cls.__qualname__}.__init__"
    init.__module__ = cls.__module__
    init.__doc__ = original.__doc__
    init.__annotations__ = dict(original.__annotations__)
    init.__signature__ = inspect.signature(original)  # defaults shown as the dataclass shows them
    cls.__init__ = init  # type: ignore[method-assign]
    if cls.__bases__ == (object,):  # the same layout as `cls`: the twin's instances can become `cls`'s
        build = names["_Builder"]
        build.__qualname__ = build.__name__ = f"{cls.__qualname__}._builder"
        build.__module__ = cls.__module__
        build.__init__.__qualname__ = f"{cls.__qualname__}.__init__"  # what a TypeError for a bad call names
    else:  # another base: no twin, the class itself (its fast_init __init__)
        build = cls
    type.__setattr__(cls, "_fast_builder", build)
    return cls


def builder(cls: type[T]) -> Callable[..., T]:
    """The fast constructor of a `fast_init` class: the same parameters, the same result as `cls(...)`."""
    build = cls.__dict__.get("_fast_builder")
    if build is None:
        raise TypeError(f"builder: {cls.__name__} is not a fast_init class")
    return cast("Callable[..., T]", build)
