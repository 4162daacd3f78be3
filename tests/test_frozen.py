"""Each class made with ``qa_eval.vocabulary.frozen.frozen`` behaves as the dataclass that
``@dataclass(frozen=True)`` makes of the same fields: the same signature, fields, repr,
equality, hash, immutability and ``replace``."""

from __future__ import annotations

import dataclasses
import inspect
from typing import Any

import pytest

from qa_eval.config import EvalConfig
from qa_eval.judge.settings import EmbeddingConfig, GenerationConfig
from qa_eval.run.options import RunOptions
from qa_eval.vocabulary.frozen import FACTORY, Frozen, frozen
from qa_eval.vocabulary.model import Key, Metric, Option
from qa_eval.vocabulary.registry import METRICS


def _sample(cls: type) -> dict[str, Any]:
    """Init values for an instance of ``cls`` that need not be all defaults."""
    if cls is Metric:
        metric = METRICS["retrieval"] if "retrieval" in METRICS else next(iter(METRICS.values()))
        return {f.name: getattr(metric, f.name) for f in dataclasses.fields(Metric)}
    if cls is Key:
        return {"name": "k", "direction": "higher", "scale": "0-1", "labels": ("a",)}
    if cls is Option:
        return {"name": "o", "check": "number", "doc": "d"}
    if cls is GenerationConfig:
        return {"model": "m", "api_key": "sk-test-frozen-0123456789", "extra": {"seed": 1}}
    if cls is EmbeddingConfig:
        return {"provider": "openai", "model": "e"}
    if cls is EvalConfig:
        return {"generation": GenerationConfig(model="g"), "concurrency": 3, "metrics": {"x": 1}}
    if cls is RunOptions:
        return {"max_cost": 1.5, "disable": ("bertscore",), "workers": 2}
    raise AssertionError(cls)


def _twin(cls: type) -> type:
    """The dataclass ``@dataclass(frozen=True)`` makes of ``cls``'s fields (and its
    ``__post_init__``)."""
    specs = []
    for f in dataclasses.fields(cls):
        keywords: dict[str, Any] = {
            "init": f.init,
            "repr": f.repr,
            "hash": f.hash,
            "compare": f.compare,
            "metadata": f.metadata,
        }
        if f.default is not dataclasses.MISSING:
            keywords["default"] = f.default
        if f.default_factory is not dataclasses.MISSING:
            keywords["default_factory"] = f.default_factory
        specs.append((f.name, f.type, dataclasses.field(**keywords)))
    namespace = {"__post_init__": cls.__post_init__} if hasattr(cls, "__post_init__") else {}
    twin = dataclasses.make_dataclass(cls.__name__, specs, frozen=True, namespace=namespace)
    twin.__qualname__ = cls.__qualname__
    return twin


CLASSES = [Key, Option, Metric, GenerationConfig, EmbeddingConfig, EvalConfig, RunOptions]


@pytest.mark.parametrize("cls", CLASSES, ids=lambda c: c.__name__)
def test_a_frozen_class_is_the_dataclass_of_its_fields(cls: type) -> None:
    twin = _twin(cls)
    assert dataclasses.is_dataclass(cls)
    for flag in ("init", "repr", "eq", "order", "unsafe_hash", "frozen"):
        assert getattr(cls.__dataclass_params__, flag) == getattr(
            twin.__dataclass_params__, flag
        ), flag
    ours = list(inspect.signature(cls).parameters.values())
    theirs = list(inspect.signature(twin).parameters.values())
    assert [(p.name, p.kind) for p in ours] == [(p.name, p.kind) for p in theirs]
    for mine, its in zip(ours, theirs, strict=True):
        assert repr(mine.default) == repr(its.default), mine.name  # <factory> for a factory

    values = _sample(cls)
    one, other = cls(**values), twin(**values)
    assert repr(one) == repr(other)
    assert dataclasses.asdict(one) == dataclasses.asdict(other)
    assert one == cls(**values)
    assert one != other  # another class: NotImplemented both ways, as between two dataclasses
    try:
        expected: int | type = hash(other)
    except TypeError as e:
        expected = type(e)
    if expected is TypeError:
        with pytest.raises(TypeError):
            hash(one)
    else:
        assert hash(one) == expected
    name = dataclasses.fields(cls)[0].name
    for target in (one, other):
        with pytest.raises(
            dataclasses.FrozenInstanceError, match=f"cannot assign to field '{name}'"
        ):
            setattr(target, name, None)
        with pytest.raises(dataclasses.FrozenInstanceError, match="cannot assign to field 'new'"):
            target.new = 1  # type: ignore[attr-defined]
        with pytest.raises(dataclasses.FrozenInstanceError, match=f"cannot delete field '{name}'"):
            delattr(target, name)

    changed = dataclasses.replace(one, **{name: values.get(name, getattr(one, name))})
    assert type(changed) is cls and changed == one
    if all(p.default is not inspect.Parameter.empty for p in ours):
        assert repr(cls()) == repr(twin())
        assert cls() == cls()
    with pytest.raises(TypeError):
        cls(**values, not_a_field=1)


def test_a_field_left_out_of_eq_and_repr_is_left_out() -> None:
    @frozen
    class Pair(Frozen):
        a: int
        b: list[int] = dataclasses.field(default_factory=list, compare=False, repr=False)

        def __init__(self, a: int, b: list[int] = FACTORY) -> None:
            object.__setattr__(self, "a", a)
            object.__setattr__(self, "b", [] if b is FACTORY else b)

    assert (
        repr(Pair(1, [2])) == "test_a_field_left_out_of_eq_and_repr_is_left_out.<locals>.Pair(a=1)"
    )
    assert Pair(1, [2]) == Pair(1, [3]) and Pair(1) != Pair(2)
    assert hash(Pair(1, [2])) == hash((1,))
    assert Pair(1).b == [] and Pair(1).b is not Pair(1).b


def test_a_subclass_may_add_attributes_and_be_a_frozen_dataclass() -> None:
    class Loose(Key):
        pass

    loose = Loose("k")
    loose.note = "ok"  # type: ignore[attr-defined]  # not a field, not the frozen class itself
    with pytest.raises(dataclasses.FrozenInstanceError):
        loose.name = "other"  # type: ignore[misc]

    @dataclasses.dataclass(frozen=True)
    class Tighter(Key):
        extra: int = 0

    assert Tighter("k", extra=2).extra == 2 and Tighter("k").name == "k"
