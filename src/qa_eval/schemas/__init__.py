"""JSON Schemas (draft 2020-12) of qa-eval's file formats: the reference dataset, the responses of
a system, the per-question results, the aggregates and the agreement report (``qa-eval
agreement``).

They are data files of the package (``reference.schema.json``, ``responses.schema.json``,
``results.schema.json``, ``aggregates.schema.json``, ``agreement.schema.json``), printed by
``qa-eval schema NAME`` and loaded by ``load_schema(NAME)``.
Each is self-contained (its ``$defs`` repeat the shared parts: ids, SPARQL JSON results, steps).
They state the formats of the spec README; what a schema cannot express (unique question ids,
JSON given as text that must parse, responses naming known questions) qa-eval checks when it
loads the files, and its loader accepts some values more leniently (any ``error`` or
``actual_answer`` is copied as it is).
"""

from __future__ import annotations

import json
from typing import Any

__all__ = ["SCHEMAS", "load_schema", "schema_text"]

SCHEMAS: tuple[str, ...] = ("reference", "responses", "results", "aggregates", "agreement")
"""The formats that have a schema."""


def schema_text(name: str) -> str:
    """The text of a schema: ``reference``, ``responses``, ``results``, ``aggregates`` or
    ``agreement``."""
    if name not in SCHEMAS:
        raise ValueError(f"unknown schema {name!r}: use one of {', '.join(SCHEMAS)}")
    from importlib import resources  # on use: the parser reads SCHEMAS, and --help stays light

    return resources.files(__name__).joinpath(f"{name}.schema.json").read_text(encoding="utf-8")


def load_schema(name: str) -> dict[str, Any]:
    """A schema as a dict, ready for ``jsonschema.validate``."""
    schema: dict[str, Any] = json.loads(schema_text(name))
    return schema
