"""What the judged agent metrics (``goal_accuracy``, ``trajectory_judgement``,
``topic_adherence``) read of a question: the response's ``actual_steps`` as numbered calls, the
reference trajectory's calls, the judge's context budget, and the rule that makes a long
trajectory fit it.

The budget rule (docs/metrics/agent.md; strands-agents/evals #342 for why a silent cut is wrong):
a prompt's tokens are estimated as a dry run estimates them
(``judge.usage.estimated_prompt_tokens``: characters / 4 of the messages and the reply schema, plus
8). When the prompt exceeds ``max_prompt_tokens``, the tool outputs are shortened first, the
longest first: every output longer than a cap keeps its first and last ``cap / 2`` characters
around a ``[… N characters cut …]`` mark, with the largest cap (at least :data:`MIN_KEEP`) that
fits; if the outputs at :data:`MIN_KEEP` still do not fit, the arguments are shortened the same
way. The metric's reason says what was shortened. A trajectory that does not fit even then is
not evaluated: its error says ``not evaluated: trajectory needs ~N prompt tokens, budget M`` (N:
the prompt with nothing shortened) and the judge is not called. Nothing is ever scored 0 for its
length.

The default budget: ``max_prompt_tokens`` of the metric's config block; else, for a judge model
whose context window genai-prices knows, 3/4 of (the window minus the largest reply budget,
``judge.replies.BUDGET_RANGE``), a margin for the estimate's error (4 characters a token
under-counts JSON and most non-English text); else :data:`DEFAULT_PROMPT_TOKENS`.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

from ...judge.prices import context_window
from ...judge.replies import BUDGET_RANGE, json_schema
from ...judge.usage import estimated_prompt_tokens
from ..output import Output

__all__ = [
    "DEFAULT_PROMPT_TOKENS",
    "MIN_KEEP",
    "Call",
    "Fitted",
    "Noting",
    "actual_calls",
    "cut",
    "fit",
    "fit_prompt",
    "not_evaluated",
    "prompt_budget",
    "reference_calls",
    "shortened_note",
]

DEFAULT_PROMPT_TOKENS = 6000
"""The budget for a judge model whose context window is not known: it fits an 8k-token model
with room for the reply."""
MIN_KEEP = 200
"""The fewest characters a shortened output or argument text keeps (its first and last 100)."""


@dataclass(frozen=True)
class Call:
    """One tool call as a prompt shows it (texts, JSON where the step had data)."""

    number: int
    """Its position in the trajectory, from 1."""
    name: str
    args: str
    status: str | None = None
    output: str | None = None
    note: str = ""
    """What else the prompt says of it (a reference call: ``optional``)."""

    def text(self) -> str:
        """The call as the lines of a prompt block."""
        lines = [f"name: {self.name}", f"args: {self.args}"]
        if self.status is not None:
            lines.append(f"status: {self.status}")
        if self.output is not None:
            lines.append(f"output: {self.output}")
        if self.note:
            lines.append(self.note)
        return "\n".join(lines)


def _json(value: Any) -> str:
    """A value as compact JSON (keys in their order; what JSON cannot hold as its ``str``)."""
    if isinstance(value, str):
        return value
    return json.dumps(value, ensure_ascii=False, default=str)


class Noting:
    """The judge as one metric of one question sees it: each verdict is kept for its cost and
    tokens, and every call (asked or, in a dry run, planned) is counted under ``metric``, the
    run metric's name, whatever name the engine asks under."""

    def __init__(self, judge: Any, metric: str) -> None:
        self.judge = judge
        self.metric = metric
        self.verdicts: list[Any] = []

    def __getattr__(self, name: str) -> Any:
        return getattr(self.judge, name)

    async def ask(self, metric: str, messages: list[dict[str, str]], schema: Any) -> Any:
        """The judge's verdict, noted."""
        verdict = await self.judge.ask(self.metric, messages, schema)
        self.verdicts.append(verdict)
        return verdict

    def plan_call(self, metric: str, messages: list[dict[str, str]], schema: Any) -> None:
        """A call a dry run counts, under this metric's name."""
        self.judge.plan_call(self.metric, messages, schema)


def actual_calls(steps: Any) -> list[Call]:
    """The response's ``actual_steps`` as numbered calls: name, JSON arguments, status (and the
    error of a failed call), output."""
    if not isinstance(steps, list):
        raise ValueError(f"actual_steps must be a list, got {type(steps).__name__}")
    calls = []
    for number, step in enumerate(steps, 1):
        if not isinstance(step, Mapping):
            raise ValueError(f"actual_steps[{number - 1}] must be a mapping")
        status = str(step.get("status") or "success")
        if step.get("error"):
            status = f"{status} ({_json(step['error'])})"
        output = step.get("output")
        calls.append(
            Call(
                number,
                str(step.get("name", "")),
                _json(step.get("args", {})),
                status,
                None if output is None else _json(output),
            )
        )
    return calls


def _reference_list(calls: Any, where: str) -> list[Call]:
    if not isinstance(calls, list):
        raise ValueError(f"{where} must be a list of calls, got {type(calls).__name__}")
    out = []
    for number, call in enumerate(calls, 1):
        if not isinstance(call, Mapping):
            raise ValueError(f"{where}[{number - 1}] must be a mapping with a name")
        name = call.get("name", "")
        shown = " or ".join(map(str, name)) if isinstance(name, list) else str(name)
        out.append(
            Call(
                number,
                shown,
                _json(call.get("args", {})),
                note="optional: the trajectory may leave it out" if call.get("optional") else "",
            )
        )
    return out


def reference_calls(trajectory: Any) -> tuple[list[Call], list[list[Call]]]:
    """The calls of a question's ``reference_trajectory`` (a list of calls, or a mapping with
    ``calls`` and ``alternatives``) and of each alternative, as data: nothing of its match
    settings is read here."""
    if isinstance(trajectory, list):
        return _reference_list(trajectory, "reference_trajectory"), []
    if isinstance(trajectory, Mapping):
        calls = _reference_list(trajectory.get("calls", []), "reference_trajectory.calls")
        others = trajectory.get("alternatives") or []
        if not isinstance(others, list):
            raise ValueError("reference_trajectory.alternatives must be a list of call lists")
        alternatives = [
            _reference_list(other, f"reference_trajectory.alternatives[{i}]")
            for i, other in enumerate(others)
        ]
        return calls, alternatives
    got = type(trajectory).__name__
    raise ValueError(f"reference_trajectory must be a list of calls or a mapping, got {got}")


def cut(text: str, keep: int) -> str:
    """``text`` with at most ``keep`` of its characters: its first ``keep // 2`` and its last
    ``keep - keep // 2`` around a ``[… N characters cut …]`` mark (unchanged when it fits)."""
    if len(text) <= keep:
        return text
    head = keep // 2
    tail = keep - head
    return f"{text[:head]}[… {len(text) - keep} characters cut …]{text[len(text) - tail :]}"


@dataclass(frozen=True)
class Fitted:
    """A trajectory made to fit a budget, or found not to fit."""

    calls: tuple[Call, ...]
    tokens: int
    """The estimated prompt tokens of ``calls``."""
    needed: int
    """The estimated prompt tokens with nothing shortened."""
    budget: int
    """The prompt budget in tokens the calls were fitted to."""
    fits: bool
    shortened: tuple[str, ...] = ()
    """What was shortened, in words (``output of call 3: 1234 characters cut``)."""


Measure = Callable[[Sequence[Call]], int]


def _capped(calls: Sequence[Call], field: str, cap: int) -> list[Call]:
    out = []
    for call in calls:
        if field == "output" and call.output is not None and len(call.output) > cap:
            call = replace(call, output=cut(call.output, cap))
        elif field == "args" and len(call.args) > cap:
            call = replace(call, args=cut(call.args, cap))
        out.append(call)
    return out


def _largest_cap(calls: Sequence[Call], field: str, tokens: Measure, budget: int) -> int | None:
    """The largest cap (>= MIN_KEEP) on the ``field`` texts under which the prompt fits, or
    None when even MIN_KEEP does not."""
    longest = max((len(getattr(c, field) or "") for c in calls), default=0)
    if longest <= MIN_KEEP or tokens(_capped(calls, field, MIN_KEEP)) > budget:
        return None
    low, high = MIN_KEEP, longest  # fits(low) holds; fits(longest) does not (we would be done)
    while high - low > 1:
        middle = (low + high) // 2
        if tokens(_capped(calls, field, middle)) <= budget:
            low = middle
        else:
            high = middle
    return low


def _what_was_cut(before: Sequence[Call], field: str, cap: int) -> list[str]:
    label = "output" if field == "output" else "arguments"
    return [
        f"{label} of call {c.number} ({c.name}): {len(text) - cap} characters cut"
        for c in before
        if (text := getattr(c, field)) is not None and len(text) > cap
    ]


def fit(calls: Sequence[Call], tokens: Measure, budget: int) -> Fitted:
    """The calls made to fit ``budget`` by the module's rule (outputs, then arguments), or the
    finding that they do not fit; ``tokens`` estimates a prompt's tokens from its calls."""
    needed = tokens(calls)
    if needed <= budget:
        return Fitted(tuple(calls), needed, needed, budget, True)
    current = list(calls)
    shortened: list[str] = []
    for field in ("output", "args"):
        cap = _largest_cap(current, field, tokens, budget)
        if cap is not None:
            fitted = _capped(current, field, cap)
            shortened += _what_was_cut(current, field, cap)
            return Fitted(tuple(fitted), tokens(fitted), needed, budget, True, tuple(shortened))
        shortened += _what_was_cut(current, field, MIN_KEEP)
        current = _capped(current, field, MIN_KEEP)
    return Fitted(tuple(current), tokens(current), needed, budget, False, tuple(shortened))


def prompt_budget(judge: Any, options: Mapping[str, Any]) -> int:
    """The metric's prompt budget in tokens (module docstring): its ``max_prompt_tokens``, else
    from the judge model's context window, else :data:`DEFAULT_PROMPT_TOKENS`."""
    given = options.get("max_prompt_tokens")
    if given is not None:
        if isinstance(given, bool) or not isinstance(given, int) or given < 1:
            raise ValueError(f"max_prompt_tokens must be a whole number >= 1, not {given!r}")
        return given
    model = getattr(getattr(judge, "gen", None), "model", None)
    window = context_window(model) if isinstance(model, str) and model else None
    if window is None:
        return DEFAULT_PROMPT_TOKENS
    return max(1, (window - BUDGET_RANGE[1]) * 3 // 4)


def fit_prompt(
    judge: Any,
    options: Mapping[str, Any],
    calls: Sequence[Call],
    prompt: Callable[[Sequence[Call]], str],
    reply: Any,
) -> Fitted:
    """``calls`` fitted to the metric's prompt budget, ``prompt`` rendering the user message from
    the calls shown and ``reply`` the model the judge answers with."""
    schema = json_schema(reply)

    def tokens(shown: Sequence[Call]) -> int:
        return estimated_prompt_tokens([{"role": "user", "content": prompt(shown)}], schema)

    return fit(calls, tokens, prompt_budget(judge, options))


def not_evaluated(metric: str, fitted: Fitted) -> Output:
    """The record of a trajectory too long for the budget: its error, no value, no call."""
    return Output(
        metric,
        error=(
            f"not evaluated: trajectory needs ~{fitted.needed} prompt tokens, "
            f"budget {fitted.budget}"
        ),
    )


def shortened_note(fitted: Fitted) -> str:
    """What the reason adds when the trajectory was shortened to fit (empty when it was not)."""
    if not fitted.shortened:
        return ""
    return (
        f" [shortened to fit the prompt budget of {fitted.budget} tokens "
        f"(~{fitted.needed} needed): " + "; ".join(fitted.shortened) + "]"
    )
