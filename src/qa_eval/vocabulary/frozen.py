"""Dataclasses whose ``__init__`` is written in the class body: ``frozen`` (with ``Frozen``),
``mutable`` and ``slotted`` (with ``Mutable``).

``@dataclass`` writes its methods (``__init__``, ``__repr__``, ``__eq__``, and for a frozen one
``__hash__``, ``__setattr__``, ``__delattr__``) as source text and compiles them each time a
process defines the class: 0.3-1 ms a class, which a fresh process's first ``run_evaluation``
paid for every class it reads (issue 36). A class made with ``@frozen``, ``@mutable`` or
``@slotted`` (``slots=True``) is the same dataclass to its users (``dataclasses.fields``,
``replace``, ``asdict``, ``is_dataclass``; its ``__dataclass_params__`` say init, repr and eq,
and frozen for ``@frozen``), but its ``__init__`` is in its source, compiled once into its
bytecode, and the base class gives the rest from its fields: the repr and equality a dataclass
has, and for ``Frozen`` its hash and the same ``FrozenInstanceError`` on assignment (a
``Mutable`` is unhashable, as a dataclass with eq and not frozen). ``tests/test_frozen.py``
compares each such class with the dataclass ``@dataclass`` makes of the same fields.
"""

from __future__ import annotations

import dataclasses
import inspect
import threading
from typing import Any, ClassVar, TypeVar

__all__ = ["FACTORY", "Frozen", "Mutable", "frozen", "mutable", "slotted"]


class _Factory:
    """The default an ``__init__`` parameter has when its field has a ``default_factory``."""

    __slots__ = ()

    def __repr__(self) -> str:
        return "<factory>"  # as a dataclass's signature shows it


FACTORY: Any = _Factory()
"""A parameter's default meaning "call the field's ``default_factory``" (shown ``<factory>``)."""

_REPR_RUNNING: set[tuple[int, int]] = set()


class Mutable:
    """The methods ``@dataclass`` generates but ``__init__``, from the fields: repr and eq."""

    __slots__ = ()
    __dataclass_fields__: ClassVar[dict[str, dataclasses.Field[Any]]]  # set by the decorator
    _repr_fields: tuple[str, ...] = ()
    _compare_fields: tuple[str, ...] = ()
    _hash_fields: tuple[str, ...] = ()
    _field_names: frozenset[str] = frozenset()
    _made_class: type | None = None

    def __repr__(self) -> str:
        key = id(self), threading.get_ident()
        if key in _REPR_RUNNING:
            return "..."
        _REPR_RUNNING.add(key)
        try:
            shown = ", ".join(f"{name}={getattr(self, name)!r}" for name in self._repr_fields)
            return f"{self.__class__.__qualname__}({shown})"
        finally:
            _REPR_RUNNING.discard(key)

    def __eq__(self, other: object) -> bool:
        if other.__class__ is self.__class__:
            names = self._compare_fields
            return tuple(getattr(self, n) for n in names) == tuple(getattr(other, n) for n in names)
        return NotImplemented

    __hash__ = None  # type: ignore[assignment]  # as a dataclass with eq and not frozen


class Frozen(Mutable):
    """``Mutable``'s methods, and those of a frozen dataclass: hash, no assignment."""

    __slots__ = ()

    def __hash__(self) -> int:  # type: ignore[override]  # Mutable's is None
        return hash(tuple(getattr(self, n) for n in self._hash_fields))

    def __setattr__(self, name: str, value: Any) -> None:
        if type(self) is self._made_class or name in self._field_names:
            raise dataclasses.FrozenInstanceError(f"cannot assign to field {name!r}")
        super().__setattr__(name, value)

    def __delattr__(self, name: str) -> None:
        if type(self) is self._made_class or name in self._field_names:
            raise dataclasses.FrozenInstanceError(f"cannot delete field {name!r}")
        super().__delattr__(name)


M = TypeVar("M", bound=Mutable)


def mutable(cls: type[M]) -> type[M]:
    """``cls`` (a ``Mutable`` with its own ``__init__``) made a dataclass without generated
    code: its fields recorded, the rest from ``Mutable``."""
    made = _dataclass(cls)
    fields = dataclasses.fields(made)
    made._repr_fields = tuple([f.name for f in fields if f.repr])
    made._compare_fields = tuple([f.name for f in fields if f.compare])
    made._hash_fields = tuple([f.name for f in fields if (f.compare if f.hash is None else f.hash)])
    made._field_names = frozenset([f.name for f in fields])
    made._made_class = made
    params = made.__dataclass_params__  # type: ignore[attr-defined]
    params.init = params.repr = params.eq = True  # what it behaves as
    return made


_NOT_A_FIELD = ("ClassVar", "InitVar", "KW_ONLY")
"""Names in an annotation that ``@dataclass`` may not take for a plain field."""


def _all_plain(annotations: dict[str, Any]) -> bool:
    """Whether every annotation is text naming none of ``_NOT_A_FIELD`` (so: a plain field)."""
    try:
        text = "\n".join(annotations.values())  # (one pass in C; TypeError for a type)
    except TypeError:
        return False
    return not any([name in text for name in _NOT_A_FIELD])


def _dataclass(cls: type[M]) -> type[M]:
    """``dataclasses.dataclass(init=False, repr=False, eq=False)(cls)``. Written as text (``from
    __future__ import annotations``), each annotation would be parsed three times to find out
    whether it is a ``ClassVar``, an ``InitVar`` or ``KW_ONLY`` (a regular expression and
    look-ups: two thirds of the decorator's time, in a fresh process's first ``run_evaluation``
    too); when none of them can be, the decorator is shown a plain type instead, and each
    field's ``type`` is set back to its annotation's text, as the decorator would have left it."""
    decorate = dataclasses.dataclass(init=False, repr=False, eq=False)
    annotations = inspect.get_annotations(cls)
    if not _all_plain(annotations):
        return decorate(cls)
    cls.__annotations__ = dict.fromkeys(annotations, object)
    try:
        made = decorate(cls)
    finally:
        cls.__annotations__ = annotations
    fields = made.__dataclass_fields__  # type: ignore[attr-defined]
    for name, annotation in annotations.items():  # (a base's fields keep their own)
        fields[name].type = annotation
    return made


def slotted(cls: type[M]) -> type[M]:
    """``mutable`` with ``__slots__``, as ``@dataclass(slots=True)``: the class made again with
    a slot per field (and without the defaults in its dictionary: the fields keep them)."""
    made = mutable(cls)
    names = tuple(f.name for f in dataclasses.fields(made))
    namespace = dict(made.__dict__)
    for name in (*names, "__dict__", "__weakref__"):
        namespace.pop(name, None)
    namespace["__slots__"] = names
    remade: type[M] = type(made.__name__, made.__bases__, namespace)
    remade.__qualname__ = made.__qualname__
    remade._made_class = remade
    return remade


F = TypeVar("F", bound=Frozen)


def frozen(cls: type[F]) -> type[F]:
    """``cls`` (a ``Frozen`` with its own ``__init__``) made a frozen dataclass without
    generated code: its fields recorded, the rest from ``Frozen``."""
    made = mutable(cls)
    made.__dataclass_params__.frozen = True  # type: ignore[attr-defined]
    return made
