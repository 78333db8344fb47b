"""Complete, trusted field dicts in, frozen pydantic instances out: the lowerings' unvalidated fast path.

`model_construct` looks up aliases and defaults field by field, which made it most of the
cost of lowering a large file (ADR 0003).  The IR and plan lowerings already hold every
field's final value, so `construct` installs the dict as the instance's `__dict__`
directly.  The instances are ordinary pydantic models: equality, hashing, pickling,
`model_dump`, `model_copy` and validation on load behave as for `model_construct`'s
(the property tests round-trip IR and plans through them).
"""

from __future__ import annotations

from typing import Any, TypeVar

from pydantic import BaseModel

__all__ = ["construct"]

M = TypeVar("M", bound=BaseModel)

_new = object.__new__
_slots = BaseModel.__dict__
# The slot descriptors themselves: one C call each, no attribute lookup through the MRO.
_set_dict = _slots["__dict__"].__set__
_set_fields_set = _slots["__pydantic_fields_set__"].__set__
_set_extra = _slots["__pydantic_extra__"].__set__
_set_private = _slots["__pydantic_private__"].__set__

# One shared "every field was given" set per class: `construct` always receives every
# field, and pydantic copies the set before it changes it (`model_copy(update=…)`).
_FIELDS_SET: dict[type[BaseModel], set[str]] = {}


def _fields_set(cls: type[BaseModel]) -> set[str]:
    if cls.__pydantic_post_init__ or cls.__private_attributes__ or cls.model_config.get("extra") == "allow":
        raise TypeError(f"{cls.__name__}: `construct` only builds plain data models")
    names = set(cls.model_fields)
    _FIELDS_SET[cls] = names
    return names


def construct(cls: type[M], values: dict[str, Any]) -> M:
    """An instance of `cls` holding `values` as is.

    `values` must name every field of `cls` (defaults and `kind` tags included) with a
    value of the declared type: nothing is checked, filled in or copied.
    """
    node = _new(cls)
    _set_dict(node, values)
    _set_fields_set(node, _FIELDS_SET.get(cls) or _fields_set(cls))
    _set_extra(node, None)
    _set_private(node, None)
    return node
