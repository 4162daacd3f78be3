"""Custom LLM metrics declared in the config (``custom_evaluations``), as graphrag-eval 6.6.1
supports them.

A definition has ``name``, ``inputs`` (any of ``question``, ``reference_answer``,
``reference_steps``, ``actual_answer``, ``actual_steps``), ``instructions``, ``outputs`` (output
name → description) and, when steps are an input, ``steps_name`` (only steps of that name) and
``steps_keys`` (which of ``args`` / ``output`` to show). One judge call per question returns a JSON
object with one value per output; each value is written to the result under its output name, with
``<name>_reason`` and ``<name>_cost``; a failure writes every output as null and ``<name>_error``.
The instructions are text: a ``{`` or ``$`` in them is not a placeholder.
"""

from __future__ import annotations

import contextlib
import functools
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import orjson
from pydantic import BaseModel, create_model

from ..errors import InputError
from ..judge import Judge
from ..prompts import delimit, render
from . import METRICS, reserved
from .output import Output, measure, serialize

__all__ = ["INPUTS", "CustomMetric", "custom_metric", "custom_output", "parse_custom_metric"]

INPUTS = ("question", "reference_answer", "reference_steps", "actual_answer", "actual_steps")
STEP_KEYS = ("args", "output")
BUILT_IN_PREFIXES = tuple(m.name for m in METRICS.values() if m.prefix)
"""The families whose name and name + ``_...`` (its reason, cost, error, grade, components, ...)
are qa-eval's (from the registry). ``retrieval_answer_*`` and ``retrieval_context_*`` are written
into the steps but aggregated by name, so they are taken too; a custom ``retrieval_recall`` (as
graphrag-eval's own test config has) collides with nothing."""
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


def _step_view(step: Mapping[str, Any], keys: tuple[str, ...]) -> dict[str, Any]:
    view: dict[str, Any] = {}
    for key in keys:
        if key in step:
            value = step[key]
            if isinstance(value, str):
                with contextlib.suppress(orjson.JSONDecodeError):
                    value = orjson.loads(value)
            view[key] = value
    return view


def _steps_text(metric: CustomMetric, steps: Any, grouped: bool) -> str:
    groups = steps if grouped else [steps]
    parts = []
    for group in groups or []:
        kept = [
            _step_view(s, metric.steps_keys)
            for s in group or []
            if isinstance(s, Mapping) and s.get("name") == metric.steps_name
        ]
        parts.append(orjson.dumps(kept, option=orjson.OPT_INDENT_2).decode())
    return "\n\n".join(parts)


def _schema(metric: CustomMetric) -> type[BaseModel]:
    return _reply_model(metric.name, tuple(metric.outputs))


OutputValue = bool | int | float | str
"""What a custom output may be: a JSON number, string or boolean. Typed, so that constrained
decoders (llama.cpp grammars, vLLM, OpenAI's structured outputs) can follow the schema."""


@functools.lru_cache(maxsize=64)
def _reply_model(name: str, outputs: tuple[str, ...]) -> type[BaseModel]:
    fields: dict[str, Any] = {output: (OutputValue, ...) for output in outputs}
    fields["reason"] = (str, "")
    return create_model(f"{name}_reply", **fields)


def _nulls(metric: CustomMetric) -> dict[str, Any]:
    return dict.fromkeys(metric.outputs)


async def _custom_output(
    judge: Judge, metric: CustomMetric, values: Mapping[str, Any]
) -> Output:
    blocks = []
    for name in metric.inputs:
        if values.get(name) is None:
            raise ValueError(f"the question has no {name}")
        value = values[name]
        if name.endswith("_steps"):
            text = _steps_text(metric, value, grouped=name == "reference_steps")
        else:
            text = str(value)
        blocks.append(f"<{name}>\n{delimit(text)}\n</{name}>")
    outputs = "\n".join(f'- "{k}": {v}' for k, v in metric.outputs.items())
    content = render(
        "custom",
        trusted={
            "instructions": metric.instructions.strip(),
            "inputs": "\n".join(blocks),
            "outputs": outputs,
        },
    )
    verdict = await judge.ask(metric.name, [{"role": "user", "content": content}], _schema(metric))
    reply = verdict.value.model_dump()
    out = {name: reply.get(name) for name in metric.outputs}
    # an output may itself be called <name>_reason (graphrag-eval's README example): keep it
    out.setdefault(f"{metric.name}_reason", reply.get("reason", ""))
    return Output.judged(metric.name, out, verdict)  # a cost of None: the price is unknown


async def custom_output(
    judge: Judge, metric: CustomMetric, values: Mapping[str, Any]
) -> tuple[Output, ...]:
    """The record of one custom metric on one question's inputs (``values`` keyed by input
    name); a failure writes every output as null beside ``<name>_error``."""
    return await measure(metric.name, _custom_output(judge, metric, values), values=_nulls(metric))


async def custom_metric(
    judge: Judge, metric: CustomMetric, values: Mapping[str, Any]
) -> dict[str, Any]:
    """Run one custom metric on one question's inputs (``values`` keyed by input name)."""
    return serialize(await custom_output(judge, metric, values))
