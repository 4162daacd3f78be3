"""References generated from the graph itself (``qa-eval generate``): the schema read from the
data (``schema``), seeded entity samples and label checks (``entities``), the query shapes
(``shapes``, ``measures``), their execution and quality controls (``engine``), canonical queries
(``canonical``), wording (``wording``), the reference file (``records``), the review CSV
(``review``), the report (``report``), the languages of the templates (``languages``), the
judge's rewording (``verbalize``, ``--batch`` too) and the command from files (``files``). See
docs/generate.md."""

from typing import TYPE_CHECKING

from ..extras import lazy_face

if TYPE_CHECKING:
    from .canonical import canonical_query
    from .engine import SHAPES, GenerateOptions, Generation, generate
    from .files import GraphSource, apply_review_files, describe_graph, generate_reference_file
    from .records import records
    from .report import GenerationReport
    from .review import apply_review, read_review, review_text
    from .schema import Schema, describe_json, describe_text, read_schema
    from .settings import GenerateSettings, read_settings
    from .source import Graph, open_graph
    from .verbalize import WordingBatch

_NAMES = {
    "SHAPES": "engine",
    "GenerateOptions": "engine",
    "GenerateSettings": "settings",
    "Generation": "engine",
    "GenerationReport": "report",
    "Graph": "source",
    "GraphSource": "files",
    "Schema": "schema",
    "WordingBatch": "verbalize",
    "apply_review": "review",
    "apply_review_files": "files",
    "canonical_query": "canonical",
    "describe_graph": "files",
    "describe_json": "schema",
    "describe_text": "schema",
    "generate": "engine",
    "generate_reference_file": "files",
    "open_graph": "source",
    "read_review": "review",
    "read_schema": "schema",
    "read_settings": "settings",
    "records": "records",
    "review_text": "review",
}

__all__ = [
    "SHAPES",
    "GenerateOptions",
    "GenerateSettings",
    "Generation",
    "GenerationReport",
    "Graph",
    "GraphSource",
    "Schema",
    "WordingBatch",
    "apply_review",
    "apply_review_files",
    "canonical_query",
    "describe_graph",
    "describe_json",
    "describe_text",
    "generate",
    "generate_reference_file",
    "open_graph",
    "read_review",
    "read_schema",
    "read_settings",
    "records",
    "review_text",
]
__getattr__, __dir__ = lazy_face(__name__, _NAMES)
