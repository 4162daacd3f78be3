"""What a config may declare about a metric, checked without a judge: a correctness prompt
template's placeholders (``answer_correctness.prompt``) and a custom metric's definition
(``custom_evaluations``).

Kept apart from the metrics that score with a judge so that loading a config needs no judge:
``config`` imports this module (and the registry), never ``judge.calls``;
``metrics.answer.correctness`` and ``metrics.custom`` import what they need of it.
"""

from __future__ import annotations

import re
import string
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from ..errors import InputError
from ..vocabulary.lookup import reserved

__all__ = [
    "INPUTS",
    "PLACEHOLDERS",
    "CustomMetric",
    "check_prompt",
    "collides",
    "parse_custom_metric",
]

PLACEHOLDERS = ("question", "reference_answer", "actual_answer")
"""The placeholders a correctness prompt from the config may use."""


def check_prompt(template: str) -> None:
    """Raise ``ValueError`` unless the template's placeholders are among
    ``{question}``, ``{reference_answer}``, ``{actual_answer}`` (``{{``/``}}`` are braces), each
    without a conversion or format spec."""
    try:
        parts = [p for p in string.Formatter().parse(template) if p[1] is not None]
    except ValueError as e:
        raise ValueError(
            f"the prompt does not parse: {e} (write a brace as {{{{ or }}}})"
        ) from None
    unknown = sorted({str(f) for _, f, _, _ in parts if f not in PLACEHOLDERS})
    if unknown:
        raise ValueError(
            f"unknown placeholder(s) {', '.join('{' + f + '}' for f in unknown)}; "
            f"allowed: {', '.join('{' + p + '}' for p in PLACEHOLDERS)}"
        )
    for _, name, spec, conversion in parts:
        if spec or conversion:
            raise ValueError(
                f"placeholder {{{name}}} takes no conversion or format spec (write {{{name}}})"
            )


INPUTS = ("question", "reference_answer", "reference_steps", "actual_answer", "actual_steps")
STEP_KEYS = ("args", "output")
_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")


def collides(key: str) -> bool:
    """Whether a custom output named ``key`` would overwrite a key qa-eval writes itself: a
    record field, a key of the metric registry, or a family's name or ``<family>_...``."""
    return reserved(key)


@dataclass(frozen=True)
class CustomMetric:
    """A checked custom metric definition."""

    name: str
    inputs: tuple[str, ...]
    instructions: str
    outputs: Mapping[str, str]
    steps_name: str | None = None
    steps_keys: tuple[str, ...] = ()


def parse_custom_metric(data: Mapping[str, Any], source: str, index: int) -> CustomMetric:
    """Check one definition; errors name the file, the entry and the field."""
    record = f"custom_evaluations[{index}]"

    def fail(field: str, message: str) -> InputError:
        return InputError(message, source=source, record=record, field=field)

    allowed = ("name", "inputs", "instructions", "outputs", "steps_name", "steps_keys")
    for key in data:
        if key not in allowed:
            raise fail(str(key), f"unknown key (known: {', '.join(allowed)})")
    name = data.get("name")
    if not isinstance(name, str) or not _NAME.match(name):
        raise fail("name", "must be a name of letters, digits and underscores")
    record = f"custom_evaluations[{index}] ({name})"
    inputs = data.get("inputs")
    if not isinstance(inputs, list) or not inputs or not all(i in INPUTS for i in inputs):
        raise fail("inputs", f"must be a non-empty list of: {', '.join(INPUTS)}")
    instructions = data.get("instructions")
    if not isinstance(instructions, str) or not instructions.strip():
        raise fail("instructions", "must be a non-empty string")
    outputs = data.get("outputs")
    if not isinstance(outputs, Mapping) or not outputs:
        raise fail("outputs", "must map each output name to its description")
    for out in outputs:
        if not isinstance(out, str) or not _NAME.match(out):
            raise fail("outputs", f"{out!r} is not a name of letters, digits and underscores")
        if collides(out) or out in (f"{name}_error", f"{name}_cost"):
            raise fail("outputs", f"{out!r} would overwrite a result key that qa-eval writes")
        if not isinstance(outputs[out], str):
            raise fail(f"outputs.{out}", "the description must be a string")
    uses_steps = any(i.endswith("_steps") for i in inputs)
    steps_name = data.get("steps_name")
    steps_keys = data.get("steps_keys")
    if uses_steps:
        if not isinstance(steps_name, str) or not steps_name:
            raise fail("steps_name", "is required when steps are an input")
        if (
            not isinstance(steps_keys, list)
            or not steps_keys
            or not all(k in STEP_KEYS for k in steps_keys)
        ):
            raise fail("steps_keys", "must be a non-empty list of: args, output")
    elif steps_name is not None or steps_keys is not None:
        raise fail("steps_name", "is only for metrics with reference_steps or actual_steps inputs")
    return CustomMetric(
        name, tuple(inputs), instructions, dict(outputs), steps_name, tuple(steps_keys or ())
    )
