"""The keys results are grouped by (``--by``): checked against the reference's questions
(``check_by_reference``) or the results (``check_by_results``), and copied into results
(``with_tags``)."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING, Any, cast

from ..aggregate import CATEGORIES
from ..errors import InputError

if TYPE_CHECKING:
    pass
from .options import Spell, python_name

__all__ = [
    "RESULT_TAGS",
    "check_by_reference",
    "check_by_results",
    "is_tag",
    "question_tags",
    "reference_questions",
    "tagged",
    "with_tags",
]


RESULT_TAGS = ("template_id", "question_id", "question_text", "status", "error", *CATEGORIES)
"""Keys results have that do not come from the question: always fine for ``by``."""


def reference_questions(reference: Any) -> list[dict[str, Any]]:
    """The questions of a reference dataset (its templates' ``questions`` that are mappings)."""
    questions: list[dict[str, Any]] = []
    for template in reference if isinstance(reference, list) else ():
        items = template.get("questions") if isinstance(template, dict) else None
        if isinstance(items, list):  # anything else is the loader's to report, in one line
            questions += [q for q in items if isinstance(q, dict)]
    return questions


def is_tag(value: Any) -> bool:
    """Whether a value can be a tag's value (a group of ``per_tag``)."""
    return value is not None and not isinstance(value, (dict, list))


def check_by_reference(
    reference: Any, keys: Sequence[str], source: str, spell: Spell = python_name
) -> None:
    """An explicit ``by`` key that no reference question has is an ``InputError``."""
    questions = reference_questions(reference)
    for key in dict.fromkeys(keys):
        if key in RESULT_TAGS or any(is_tag(q.get(key)) for q in questions):
            continue
        have = sorted(
            {k for q in questions for k, v in q.items() if is_tag(v)}
            - {"id", "question_text", "reference_answer"}
        )
        raise InputError(
            f"{spell('by')} {key}: no question has this key (question keys: "
            f"{', '.join([*have, 'template_id', 'status'])})",
            source=source,
        )


def with_tags(
    results: Sequence[dict[str, Any]], reference: Any, keys: Sequence[str]
) -> Sequence[dict[str, Any]]:
    """The results with the question keys named by ``by`` copied in where they lack them, so they
    can be aggregated (a result copies only ``question_type`` from its question): new dicts in a
    new list of the same kind (its ``signature`` kept); ``results`` itself is not changed."""
    wanted = [k for k in dict.fromkeys(keys) if k not in RESULT_TAGS]
    if not wanted or all(all(k in r for k in wanted) for r in results):
        return results
    values = question_tags(reference_questions(reference), wanted) or {}
    done = [tagged(result, values) for result in results]
    copy: Any = type(results)(done) if isinstance(results, list) else done
    if hasattr(results, "signature"):
        copy.signature = results.signature
    return cast("Sequence[dict[str, Any]]", copy)


def question_tags(
    questions: Iterable[dict[str, Any]], keys: Sequence[str]
) -> dict[Any, dict[str, Any]] | None:
    """What :func:`with_tags` copies into each result, by question id, for a run whose results
    are written as they finish: each question's values of the ``by`` keys results lack (None
    when no key is wanted)."""
    wanted = [k for k in dict.fromkeys(keys) if k not in RESULT_TAGS]
    if not wanted:
        return None
    values: dict[Any, dict[str, Any]] = {}
    for question in questions:
        values[question.get("id")] = {k: question[k] for k in wanted if k in question}
    return values


def tagged(result: dict[str, Any], values: dict[Any, dict[str, Any]]) -> dict[str, Any]:
    """A result with its question's values (:func:`question_tags`) of the keys it lacks added
    at its end, as :func:`with_tags` adds them."""
    found = values.get(result.get("question_id"))
    if not found:
        return result
    extra = {k: v for k, v in found.items() if k not in result}
    return {**result, **extra} if extra else result


def check_by_results(
    results: Sequence[Any], keys: Sequence[str], source: str, spell: Spell = python_name
) -> None:
    """An explicit ``by`` key that no result has a value for is an ``InputError``."""
    records = [r for r in results if isinstance(r, dict)]
    if not records:
        return
    for key in dict.fromkeys(keys):
        if not any(is_tag(r.get(key)) for r in records):
            raise InputError(
                f"{spell('by')} {key}: no result has a value for this key", source=source
            )
