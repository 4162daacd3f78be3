"""Frozen dataclasses whose ``__init__`` is written in the class body (``frozen``, ``Frozen``).

``@dataclass(frozen=True)`` writes six methods as source text and compiles them each time a
process defines the class: 0.4-1 ms a class, which a fresh process's first ``run_evaluation``
paid for every settings class it reads (issue 36). A class made with ``@frozen`` is the same
dataclass to its users (``dataclasses.fields``, ``replace``, ``asdict``, ``is_dataclass``, its
``__dataclass_params__`` say frozen with init, repr and eq), but its ``__init__`` is in its
source, compiled once into its bytecode, and ``Frozen`` gives the rest from its fields: the repr,
equality and hash a frozen dataclass has, and the same ``FrozenInstanceError`` on assignment.
``tests/test_frozen.py`` compares each such class with the dataclass ``@dataclass(frozen=True)``
makes of the same fields.
"""

from __future__ import annotations

import dataclasses
import threading
from typing import Any, ClassVar, TypeVar

__all__ = ["FACTORY", "Frozen", "frozen"]


F = TypeVar("F", bound="Frozen")


class _Factory:
    """The default an ``__init__`` parameter has when its field has a ``default_factory``."""

    __slots__ = ()

    def __repr__(self) -> str:
        return "<factory>"  # as a dataclass's signature shows it


FACTORY: Any = _Factory()
"""A parameter's default meaning "call the field's ``default_factory``" (shown ``<factory>``)."""

_REPR_RUNNING: set[tuple[int, int]] = set()


class Frozen:
    """The methods ``@dataclass(frozen=True)`` generates but ``__init__``, from the fields."""

    __slots__ = ()
    __dataclass_fields__: ClassVar[dict[str, dataclasses.Field[Any]]]  # set by ``frozen``
    _repr_fields: tuple[str, ...] = ()
    _compare_fields: tuple[str, ...] = ()
    _hash_fields: tuple[str, ...] = ()
    _field_names: frozenset[str] = frozenset()
    _frozen_class: type | None = None

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

    def __hash__(self) -> int:
        return hash(tuple(getattr(self, n) for n in self._hash_fields))

    def __setattr__(self, name: str, value: Any) -> None:
        if type(self) is self._frozen_class or name in self._field_names:
            raise dataclasses.FrozenInstanceError(f"cannot assign to field {name!r}")
        super().__setattr__(name, value)

    def __delattr__(self, name: str) -> None:
        if type(self) is self._frozen_class or name in self._field_names:
            raise dataclasses.FrozenInstanceError(f"cannot delete field {name!r}")
        super().__delattr__(name)


def frozen(cls: type[F]) -> type[F]:
    """``cls`` (a ``Frozen`` with its own ``__init__``) made a frozen dataclass without
    generated code: its fields recorded, the rest from ``Frozen``."""
    made = dataclasses.dataclass(init=False, repr=False, eq=False)(cls)
    fields = dataclasses.fields(made)
    made._repr_fields = tuple(f.name for f in fields if f.repr)
    made._compare_fields = tuple(f.name for f in fields if f.compare)
    made._hash_fields = tuple(f.name for f in fields if (f.compare if f.hash is None else f.hash))
    made._field_names = frozenset(f.name for f in fields)
    made._frozen_class = made
    params = made.__dataclass_params__  # type: ignore[attr-defined]
    params.init = params.repr = params.eq = params.frozen = True  # what it behaves as
    return made
