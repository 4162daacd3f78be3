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
from collections.abc import Mapping, Sequence
from typing import Any

import orjson
from pydantic import BaseModel, create_model

from ..judge.calls import Judge
from ..prompts import Example, delimit, examples_block, render, with_examples
from .definitions import CustomMetric
from .output import Output, measure, serialize

__all__ = ["custom_metric", "custom_output"]


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
    judge: Judge,
    metric: CustomMetric,
    values: Mapping[str, Any],
    examples: Sequence[Example] = (),
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
    content = with_examples(content, examples_block(examples))
    verdict = await judge.ask(metric.name, [{"role": "user", "content": content}], _schema(metric))
    reply = verdict.value.model_dump()
    out = {name: reply.get(name) for name in metric.outputs}
    # an output may itself be called <name>_reason (graphrag-eval's README example): keep it
    out.setdefault(f"{metric.name}_reason", reply.get("reason", ""))
    return Output.judged(metric.name, out, verdict)  # a cost of None: the price is unknown


async def custom_output(
    judge: Judge,
    metric: CustomMetric,
    values: Mapping[str, Any],
    examples: Sequence[Example] = (),
) -> tuple[Output, ...]:
    """The record of one custom metric on one question's inputs (``values`` keyed by input
    name; ``examples``: few-shot examples from labels, put in the prompt as data); a failure
    writes every output as null beside ``<name>_error``."""
    job = _custom_output(judge, metric, values, examples)
    return await measure(metric.name, job, values=_nulls(metric))


async def custom_metric(
    judge: Judge, metric: CustomMetric, values: Mapping[str, Any]
) -> dict[str, Any]:
    """Run one custom metric on one question's inputs (``values`` keyed by input name)."""
    return serialize(await custom_output(judge, metric, values))
