"""The drill-down of a question's tool calls against its ``reference_trajectory``, per run.

For each run the results say which acceptable trajectory was chosen (``trajectory_alternative``:
0 for ``calls``, i for ``alternatives[i-1]``), each of its reference calls' ``matches`` (the
actual call's id or position) or ``mismatch`` text, and per actual call its ``trajectory_calls``
entry (role matched / extra / failed / optional, the reference call it matched, repeated). This
module only lays those out: the reference calls with what matched them or why not (a required
call nobody matched is *missing*), and the actual calls in order with their role, the missing
reference calls after them. A question the metric could not evaluate shows its
``trajectory_error`` and no values; nothing is recomputed here.
"""

from __future__ import annotations

import contextlib
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from ..aggregate import as_float
from .drill import MAX_CELL, MAX_TEXT, Cell, StepView, step_view
from .text import clip

__all__ = ["ActualCallView", "ReferenceCallView", "RunTrajectory", "trajectory_views"]

_ARG_CHARS = MAX_CELL
"""Characters shown of an argument's value (the rest in its tooltip, up to four times more)."""
_ROLES = ("matched", "optional", "extra", "failed")


@dataclass(frozen=True)
class ReferenceCallView:
    """One call of the chosen acceptable trajectory, and what answered it in one run."""

    position: int
    name: str
    args: tuple[tuple[str, Cell], ...]
    optional: bool
    state: str  # "matched", "missing" (required, not matched), "optional" (not called), ""
    match: str  # the actual call that matched it: "[index] name (id)"
    mismatch: str


@dataclass(frozen=True)
class ActualCallView:
    """One actual call (a step of the response) with its role in the matching."""

    index: int
    sid: str
    name: str
    args: tuple[tuple[str, Cell], ...]
    status: str
    role: str  # "matched", "optional", "extra", "failed" or "" (not scored)
    reference: int | None  # the position of the reference call it matched
    repeated: bool
    lost: str  # what the tracer did not record ("args", ...)
    output: StepView | None  # the output, error and step metrics, shown folded


@dataclass(frozen=True)
class RunTrajectory:
    """One run's tool calls against the question's reference trajectory."""

    settings: str  # "superset, args exact" (+ "ordered")
    alternative: int | None
    alternatives: int  # acceptable trajectories in all
    match: float | None
    error: str  # trajectory_error: not evaluated, and why
    scored: bool  # the run has the trajectory keys (or their error)
    reason: str
    reference: tuple[ReferenceCallView, ...]
    calls: tuple[ActualCallView, ...]
    counts: tuple[tuple[str, int], ...]  # matched, then those that are not 0

    @property
    def missing(self) -> tuple[ReferenceCallView, ...]:
        """The required reference calls no actual call matched."""
        return tuple(r for r in self.reference if r.state == "missing")


def _arg_text(value: Any) -> str:
    if isinstance(value, str):
        return value
    try:
        return json.dumps(value, ensure_ascii=False, separators=(", ", ": "), default=str)
    except (TypeError, ValueError):
        return str(value)


def _cell(text: str) -> Cell:
    if len(text) > _ARG_CHARS:
        return Cell(text[:_ARG_CHARS] + "…", clip(text, _ARG_CHARS * 4))
    return Cell(text)


def _args(args: Any) -> tuple[tuple[str, Cell], ...]:
    """Arguments as (name, shown value); a JSON-object text is read, other text shown whole."""
    if isinstance(args, str) and args.lstrip().startswith("{"):
        with contextlib.suppress(ValueError, RecursionError):
            args = json.loads(args)
    if isinstance(args, Mapping):
        return tuple((str(k), _cell(_arg_text(v))) for k, v in args.items())
    if args is None:
        return ()
    return (("", _cell(_arg_text(args))),)


def _names(name: Any) -> str:
    if isinstance(name, list):
        return " | ".join(str(n) for n in name)
    return "" if name is None else str(name)


def _chosen(raw: Any, alternative: int | None) -> tuple[list[Any], int, str]:
    """(the chosen trajectory's calls, how many acceptable trajectories, the settings text)."""
    if isinstance(raw, list):
        return raw, 1, "superset, args exact"
    if not isinstance(raw, Mapping):
        return [], 0, ""
    found, more = raw.get("calls"), raw.get("alternatives")
    calls: list[Any] = found if isinstance(found, list) else []
    alternatives: list[Any] = more if isinstance(more, list) else []
    match = str(raw.get("match", "superset"))
    settings = f"{match}{', ordered' if raw.get('ordered') is True else ''}"
    settings += f", args {raw.get('args', 'exact')}"
    if alternative and 0 < alternative <= len(alternatives):
        chosen = alternatives[alternative - 1]
        calls = chosen if isinstance(chosen, list) else []
    return calls, 1 + len(alternatives), settings


def _label(index: int, step: Mapping[str, Any] | None, entry: Mapping[str, Any] | None) -> str:
    source = step if step is not None else (entry or {})
    name = _names(source.get("name"))
    sid = source.get("id")
    return f"[{index}] {name}" + (f" ({sid})" if sid is not None and str(sid) != "" else "")


def _int(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def _trajectory(result: Mapping[str, Any]) -> RunTrajectory | None:
    raw = result.get("reference_trajectory")
    if raw is None:
        return None
    alternative = _int(result.get("trajectory_alternative"))
    calls, count, settings = _chosen(raw, alternative)
    error = result.get("trajectory_error")
    entries = result.get("trajectory_calls")
    entries = [e for e in entries if isinstance(e, Mapping)] if isinstance(entries, list) else []
    steps = result.get("actual_steps")
    steps = steps if isinstance(steps, list) else []
    scored = bool(entries) or error is not None or "trajectory_match" in result
    by_index = {i: e for e in entries if (i := _int(e.get("index"))) is not None}
    by_reference = {
        j: i for i, e in by_index.items() if (j := _int(e.get("reference"))) is not None
    }
    reference = []
    for j, call in enumerate(calls):
        if not isinstance(call, Mapping):
            continue
        optional = call.get("optional") is True
        mismatch = clip(call.get("mismatch"), MAX_TEXT) if call.get("mismatch") else ""
        match = ""
        if j in by_reference:
            i = by_reference[j]
            step = steps[i] if 0 <= i < len(steps) and isinstance(steps[i], Mapping) else None
            match = _label(i, step, by_index[i])
        elif call.get("matches") is not None:
            match = clip(call["matches"], MAX_CELL)
        if match:
            state = "matched"
        elif not scored or error:
            state = ""
        else:
            state = "optional" if optional else "missing"
        reference.append(
            ReferenceCallView(
                j, _names(call.get("name")), _args(call.get("args")), optional, state, match,
                mismatch,
            )
        )  # fmt: skip
    actual = []
    for i, step in enumerate(steps):
        if not isinstance(step, Mapping):
            continue
        entry = by_index.get(i, {})
        role = str(entry.get("role")) if entry.get("role") in _ROLES else ""
        lost = step.get("lost")
        folded = {k: v for k, v in step.items() if k not in ("args", "name", "id", "status")}
        output = step_view(folded) if ("output" in step or step.get("error")) else None
        actual.append(
            ActualCallView(
                index=i,
                sid="" if step.get("id") is None else str(step["id"]),
                name=_names(step.get("name")),
                args=_args(step.get("args")),
                status=str(step.get("status") or "success"),
                role=role,
                reference=_int(entry.get("reference")),
                repeated=entry.get("repeated") is True,
                lost=", ".join(str(x) for x in lost) if isinstance(lost, list) else "",
                output=output,
            )
        )
    counts: list[tuple[str, int]] = []
    if scored and not error:
        for role in _ROLES:
            counts.append((role, sum(1 for c in actual if c.role == role)))
        counts.insert(2, ("missing", sum(1 for r in reference if r.state == "missing")))
        counts.append(("repeated", sum(1 for c in actual if c.repeated)))
        counts = [(name, n) for name, n in counts if n or name == "matched"]
    reason = result.get("trajectory_reason")
    return RunTrajectory(
        settings=settings,
        alternative=alternative,
        alternatives=count,
        match=as_float(result.get("trajectory_match")),
        error=clip(error, MAX_TEXT) if error else "",
        scored=scored,
        reason=clip(reason, MAX_TEXT) if reason else "",
        reference=tuple(reference),
        calls=tuple(actual),
        counts=tuple(counts),
    )


def trajectory_views(
    results: Sequence[Mapping[str, Any] | None],
) -> tuple[RunTrajectory | None, ...] | None:
    """Per run the question's tool calls against its reference trajectory (None where the run
    lacks the question or the question has none); None when no run has one."""
    views = tuple(_trajectory(r) if r is not None else None for r in results)
    return views if any(v is not None for v in views) else None
