"""Each class made with ``qa_eval.vocabulary.frozen``'s ``frozen``, ``mutable`` or ``slotted``
behaves as the dataclass that ``@dataclass`` (``frozen=True``, ``slots=True``) makes of the same
fields: the same signature, fields, repr, equality, hash, immutability, slots and ``replace``."""

from __future__ import annotations

import dataclasses
import inspect
import pickle
from typing import Any, ClassVar

import pytest

from qa_eval.config import EvalConfig
from qa_eval.judge.settings import EmbeddingConfig, GenerationConfig
from qa_eval.prompts import Example
from qa_eval.run.options import RunOptions
from qa_eval.run.prepare.records import Problems, Question, Response
from qa_eval.run.progress import RunProgress
from qa_eval.run.shards import ShardFile
from qa_eval.steps.kinds import ReferenceStep
from qa_eval.steps.sparql.match import SparqlReference
from qa_eval.vocabulary.frozen import FACTORY, Frozen, Mutable, frozen, mutable
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
    if cls is Example:
        return {"question": "q", "answer": "a", "label": True, "metric": "m"}
    if cls is RunProgress:
        return {"questions_done": 1, "questions_total": 2, "cost": 0.5}
    if cls is ShardFile:
        return {"index": 0, "count": 2, "positions": [1, 2], "aggregates": {"a": 1}}
    if cls is Problems:
        return {"source": "s", "items": [("r", None, "m")]}
    if cls is Question:
        return {"template_id": "t", "question_id": "q", "raw": {}, "groups": (), "record": "r"}
    if cls is Response:
        return {"question_id": "q", "raw": {}, "place": ("line", 1), "is_error": False}
    if cls is ReferenceStep:
        return {"group": 0, "index": 1, "raw": {}, "name": "n", "media_type": None, "kind": "x"}
    if cls is SparqlReference:
        return {"boolean": None, "rows": 2, "required": ["a"], "columns": [("a", [1, 2])]}
    raise AssertionError(cls)


def _twin(cls: type) -> type:
    """The dataclass ``@dataclass`` makes of ``cls``'s fields (and its ``__post_init__``), frozen
    or with slots as ``cls`` is."""
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
    twin = dataclasses.make_dataclass(
        cls.__name__,
        specs,
        frozen=cls.__dataclass_params__.frozen,
        slots=_slotted(cls),
        namespace=namespace,
    )
    twin.__qualname__ = cls.__qualname__
    return twin


def _slotted(cls: type) -> bool:
    return bool(cls.__dict__.get("__slots__"))


FROZEN = [Key, Option, Metric, GenerationConfig, EmbeddingConfig, EvalConfig, RunOptions, Example]
MUTABLE = [RunProgress, ShardFile, Problems]
SLOTTED = [Question, Response, ReferenceStep, SparqlReference]
CLASSES = FROZEN + MUTABLE + SLOTTED


def test_the_lists_say_what_each_class_is() -> None:
    for cls in CLASSES:
        assert cls.__dataclass_params__.frozen == (cls in FROZEN), cls
        assert _slotted(cls) == (cls in SLOTTED), cls


@pytest.mark.parametrize("cls", CLASSES, ids=lambda c: c.__name__)
def test_a_written_class_is_the_dataclass_of_its_fields(cls: type) -> None:
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
    assert pickle.loads(pickle.dumps(one)) == one  # worker processes get them pickled
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
        if cls in FROZEN:
            match = f"cannot assign to field '{name}'"
            with pytest.raises(dataclasses.FrozenInstanceError, match=match):
                setattr(target, name, None)
            with pytest.raises(
                dataclasses.FrozenInstanceError, match="cannot assign to field 'new'"
            ):
                target.new = 1  # type: ignore[attr-defined]
            match = f"cannot delete field '{name}'"
            with pytest.raises(dataclasses.FrozenInstanceError, match=match):
                delattr(target, name)
        else:
            setattr(target, name, values[name])
            assert getattr(target, name) is values[name]
        if cls in SLOTTED:
            assert not hasattr(target, "__dict__")
            with pytest.raises(AttributeError):
                target.new = 1  # type: ignore[attr-defined]
    assert cls.__slots__ == twin.__slots__ if cls in SLOTTED else "__slots__" not in cls.__dict__

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


@pytest.mark.parametrize("cls", CLASSES, ids=lambda c: c.__name__)
def test_the_fields_are_those_the_decorator_reads_from_the_text(cls: type) -> None:
    """``frozen`` shows ``@dataclass`` plain types for annotations written as text (see
    ``vocabulary.frozen._dataclass``): the fields are still those it makes of the text, each
    with its annotation's text as its type."""
    namespace = {
        name: value
        for name, value in vars(cls).items()
        if name not in ("__dict__", "__weakref__", "__dataclass_fields__", "__dataclass_params__")
    }
    for f in dataclasses.fields(cls):  # the class as written: a field() where one was given
        namespace.pop(f.name, None)
        if f.default_factory is not dataclasses.MISSING or not (f.init and f.repr and f.compare):
            namespace[f.name] = dataclasses.field(
                default=f.default,
                default_factory=f.default_factory,
                init=f.init,
                repr=f.repr,
                hash=f.hash,
                compare=f.compare,
                metadata=f.metadata,
            )
        elif f.default is not dataclasses.MISSING:
            namespace[f.name] = f.default
    namespace.pop("__slots__", None)
    written = type(cls.__name__, cls.__bases__, namespace)
    plain = dataclasses.dataclass(init=False, repr=False, eq=False)(written)
    ours = [(f.name, f.type, f.default, f.default_factory, f.init, f.repr, f.hash, f.compare,
             f.kw_only, f._field_type) for f in dataclasses.fields(cls)]  # fmt: skip
    theirs = [(f.name, f.type, f.default, f.default_factory, f.init, f.repr, f.hash, f.compare,
               f.kw_only, f._field_type) for f in dataclasses.fields(plain)]  # fmt: skip
    assert ours == theirs
    assert all(type(f.type) is str for f in dataclasses.fields(cls))
    assert cls.__match_args__ == plain.__match_args__


def test_an_annotation_that_is_not_a_field_stays_out() -> None:
    @frozen
    class Counted(Frozen):
        total: ClassVar[int] = 0
        name: str = "n"

        def __init__(self, name: str = "n") -> None:
            object.__setattr__(self, "name", name)

    assert [f.name for f in dataclasses.fields(Counted)] == ["name"]
    assert Counted.total == 0 and repr(Counted("x")).endswith("Counted(name='x')")


def test_a_subclass_of_a_made_class_keeps_its_bases_fields() -> None:
    base = mutable(type("Base", (Mutable,), {"__doc__": "b", "__annotations__": {"a": "int"}}))
    cls = type("Sub", (base,), {"__doc__": "s", "__annotations__": {"b": "int"}})
    assert [f.name for f in dataclasses.fields(mutable(cls))] == ["a", "b"]
