"""Argument comparison of tool calls (docs/metrics/trajectory.md): a reference call's ``args``
compiled into nodes (``compiler``: the modes and the ``$`` comparators read, the argument score),
plain values, mappings by argument mode and lists (``modes``), the ``$`` comparators (``operators``)
and what they all share (``values``: the error, the ``$llm`` answers, showing, keying, parsing).
"""

from typing import TYPE_CHECKING

from ....extras import lazy_face

if TYPE_CHECKING:
    from .compiler import (
        ARG_MODES,
        COMPARATORS,
        ArgsSpec,
        compile_args,
        compile_value,
        mentions_llm,
    )
    from .operators import duration_words, normalise_text, parse_tolerance
    from .values import (
        MISSING,
        LlmAnswers,
        Node,
        TrajectoryError,
        canonical,
        freeze,
        parse_args,
        show,
    )

_NAMES = {
    "ARG_MODES": "compiler",
    "COMPARATORS": "compiler",
    "MISSING": "values",
    "ArgsSpec": "compiler",
    "LlmAnswers": "values",
    "Node": "values",
    "TrajectoryError": "values",
    "canonical": "values",
    "compile_args": "compiler",
    "compile_value": "compiler",
    "duration_words": "operators",
    "freeze": "values",
    "mentions_llm": "compiler",
    "normalise_text": "operators",
    "parse_args": "values",
    "parse_tolerance": "operators",
    "show": "values",
}

__all__ = [
    "ARG_MODES",
    "COMPARATORS",
    "MISSING",
    "ArgsSpec",
    "LlmAnswers",
    "Node",
    "TrajectoryError",
    "canonical",
    "compile_args",
    "compile_value",
    "duration_words",
    "freeze",
    "mentions_llm",
    "normalise_text",
    "parse_args",
    "parse_tolerance",
    "show",
]

__getattr__, __dir__ = lazy_face(__name__, _NAMES)
