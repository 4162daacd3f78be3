"""The generated questions as a reference file in graphrag-eval's format: templates in shape
order, each question with its ``autocomplete_search`` steps (one per entity it names, the IRI in
the output) and its ``sparql_query`` step (the query, its SPARQL JSON result, the answer
columns), its reference answer and a ``generated`` mapping. Written to a temporary file and
renamed, so a failed run leaves nothing half-written."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from ..io.files import check_output_path
from ..refresh.changes import sparql_json_text
from ..refresh.writer import reference_bytes, write_atomically
from ..steps.kinds import SPARQL_JSON
from .engine import SHAPES, Generation, Question
from .entities import Named
from .schema import Schema

__all__ = ["records", "write_generated"]


def records(generation: Generation) -> list[dict[str, Any]]:
    """The questions in graphrag-eval's reference format (templates in shape order)."""
    templates: dict[str, list[dict[str, Any]]] = {}
    order = sorted(
        generation.questions,
        key=lambda q: (SHAPES.index(q.candidate.shape), q.template_id),
    )
    for question in order:
        templates.setdefault(question.template_id, []).append(_record(question, generation))
    return [{"template_id": t, "questions": qs} for t, qs in templates.items()]


def _autocomplete(named: Named, schema: Schema) -> dict[str, Any]:
    """The step that finds a named entity's IRI from its label."""
    output = {
        "head": {"vars": ["iri", "name"]},
        "results": {
            "bindings": [
                {
                    "iri": {"type": "uri", "value": named.iri},
                    "name": {"type": "literal", "value": named.label},
                }
            ]
        },
    }
    return {
        "name": "autocomplete_search",
        "args": {"query": named.label, "result_class": schema.short(named.cls)},
        "output": sparql_json_text(output),
    }


def _record(question: Question, generation: Generation) -> dict[str, Any]:
    candidate = question.candidate
    schema = generation.schema
    sparql: dict[str, Any] = {
        "name": "sparql_query",
        "args": {"query": question.query},
        "output": sparql_json_text(question.result),
        "output_media_type": SPARQL_JSON,
        "required_columns": list(candidate.columns),
    }
    steps: list[list[dict[str, Any]]] = []
    if candidate.named:
        steps.append([_autocomplete(n, schema) for n in candidate.named])
    steps.append([sparql])
    return {
        "id": question.id,
        "question_text": question.text,
        "reference_answer": question.answer,
        "reference_steps": steps,
        "generated": {
            "shape": candidate.shape,
            "entities": [
                {
                    "iri": n.iri,
                    "label": n.label,
                    "class": schema.short(n.cls),
                    "named_by": n.qualified,
                }
                for n in candidate.named
            ],
            "parameters": {k: v for k, v in sorted(candidate.params.items())},
            "seed": generation.seed,
            "language": generation.language,
            "wording": question.wording,
            "round_trip": question.round_trip,
            "answerable": not candidate.control,
        },
    }


def write_generated(path: str | os.PathLike[str], generation: Generation) -> None:
    """Write the reference file (YAML, JSON or JSON Lines by extension) in one step."""
    write_output(path, records(generation))


def write_output(path: str | os.PathLike[str], data: Any) -> None:
    """Write reference data to ``path`` in one step (a temporary file renamed over it)."""
    file = Path(path)
    check_output_path(file)
    write_atomically(file, reference_bytes(file, data))
