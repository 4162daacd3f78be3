"""Tool-call metrics of an agent's conversation, computed as ragas 0.4.3's collections classes do.

A tool call is anything with ``.name`` and ``.args`` (ragas' ``ToolCall``) or a mapping with
``"name"`` and ``"args"``; a message counts as the agent's when its ``type`` (attribute or key) is
``"ai"`` (ragas' ``AIMessage``), and its ``tool_calls`` are the predicted calls, in order.

* ``tool_call_accuracy`` - ``ToolCallAccuracy``: 1 when there are neither predicted nor reference
  calls, 0 when only one side has calls. Otherwise, with ``strict_order=False`` both lists are
  first sorted by (name, then each argument name and ``str`` of its value, arguments by name);
  the names must then be the same sequence (the same multiset when not strict), or the score is
  0. The score is ``sum(args(pred_i, ref_i) for pairs with equal names) / len(reference)``
  (pairs by position), where ``args`` is the share of the reference's arguments whose ``str``
  equals the prediction's (1 when neither has arguments, 0 when only the prediction has), times
  ``compared / len(reference)`` when there are fewer predictions. Two lists of different lengths
  never have the same name sequence, so in ragas that penalty never changes a score that counts.
* ``tool_call_f1`` - ``ToolCallF1``: the predicted and reference calls as *sets* of (name,
  arguments), arguments made hashable recursively (dicts and sets as frozensets, lists and tuples
  as tuples); ``F1 = 2PR / (P + R)`` with ``P = |pred ∩ ref| / |pred|``, ``R = |pred ∩ ref| /
  |ref|``, each 0 when its denominator is, rounded to 4 decimals. A call repeated counts once, and
  ``1``, ``1.0`` and ``True`` are the same argument value (Python's equality): ragas' set
  semantics, kept for parity.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from ..textual.strings import Scored

__all__ = ["predicted_tool_calls", "tool_call_accuracy", "tool_call_f1"]


def _part(item: Any, name: str) -> Any:
    """``item[name]`` for a mapping, else ``item.name`` (``None`` when absent)."""
    if isinstance(item, Mapping):
        return item.get(name)
    return getattr(item, name, None)


def _name(call: Any) -> str:
    return _part(call, "name")  # type: ignore[no-any-return]


def _args(call: Any) -> Mapping[str, Any]:
    return _part(call, "args")  # type: ignore[no-any-return]


def predicted_tool_calls(user_input: Iterable[Any]) -> list[Any]:
    """The tool calls of the agent's messages (``type == "ai"``) of a conversation, in order."""
    calls: list[Any] = []
    for message in user_input:
        if _part(message, "type") == "ai":
            found = _part(message, "tool_calls")
            if found is not None:
                calls.extend(found)
    return calls


def _check_lists(user_input: object, reference_tool_calls: object) -> None:
    """Refuse what ragas refuses: a conversation or a reference that is not a list."""
    if not isinstance(user_input, list):
        raise ValueError("user_input must be a list of messages")
    if not isinstance(reference_tool_calls, list):
        raise ValueError("reference_tool_calls must be a list")


def _order_key(call: Any) -> tuple[str, ...]:
    """The sort key of a call when order does not matter: name, then each argument and value."""
    args = _args(call)
    key = [_name(call)]
    for arg in sorted(args):
        key += [arg, str(args[arg])]
    return tuple(key)


def argument_match(pred_args: Mapping[str, Any], ref_args: Mapping[str, Any]) -> float:
    """Share of the reference's arguments that the prediction gives with the same ``str``."""
    if not ref_args:
        return 1.0 if not pred_args else 0.0
    same = 0.0
    for arg in ref_args:
        if arg in pred_args and str(pred_args[arg]) == str(ref_args[arg]):
            same += 1.0
    return same / len(ref_args)


def _accuracy(predicted: list[Any], reference: list[Any], strict_order: bool) -> Scored:
    """ragas' arithmetic on two non-empty lists of calls, in its order of operations."""
    if not strict_order:
        predicted = sorted(predicted, key=_order_key)
        reference = sorted(reference, key=_order_key)
    pred_names = [_name(call) for call in predicted]
    ref_names = [_name(call) for call in reference]
    aligned = pred_names == ref_names if strict_order else sorted(pred_names) == sorted(ref_names)
    score = 0.0
    per_call = []
    for ref_call, pred_call in zip(reference, predicted):
        if _name(ref_call) == _name(pred_call):
            match = argument_match(_args(pred_call), _args(ref_call))
            score += match
            per_call.append(match)
        else:
            per_call.append(0.0)
    compared = min(len(predicted), len(reference))
    score /= len(reference)
    if compared < len(reference):
        score *= compared / len(reference)
    value = score * int(aligned)
    details = {"aligned": aligned, "argument_scores": per_call, "compared": compared}
    if not aligned:
        how = "sequence" if strict_order else "set"
        reason = f"the tool names differ ({how}): {pred_names} vs {ref_names}"
    else:
        reason = f"names aligned; mean argument match {value:.4f} over {len(reference)} call(s)"
    return Scored(value, reason, details)


def tool_call_accuracy(
    user_input: Sequence[Any], reference_tool_calls: Sequence[Any], strict_order: bool = True
) -> Scored:
    """ragas' ``ToolCallAccuracy`` of the agent's tool calls against the reference ones."""
    _check_lists(user_input, reference_tool_calls)
    predicted = predicted_tool_calls(user_input)
    reference = list(reference_tool_calls)
    if not predicted and not reference:
        return Scored(1.0, "no tool calls expected and none made")
    if not predicted:
        return Scored(0.0, "No tool calls found in the user input")
    if not reference:
        return Scored(0.0, "Reference tool calls are empty but predictions exist")
    return _accuracy(predicted, reference, strict_order)


def _hashable(value: Any) -> Any:
    """``value`` with dicts and sets as frozensets and lists and tuples as tuples, recursively."""
    if isinstance(value, dict):
        return frozenset((key, _hashable(item)) for key, item in value.items())
    if isinstance(value, list | tuple):
        return tuple(_hashable(item) for item in value)
    if isinstance(value, set):
        return frozenset(_hashable(item) for item in value)
    return value


def _f1(true_positives: int, false_positives: int, false_negatives: int) -> float:
    """F1 of the counts, each ratio 0 when its denominator is 0 (ragas' order of operations)."""
    predicted = true_positives + false_positives
    expected = true_positives + false_negatives
    precision = true_positives / predicted if predicted > 0 else 0.0
    recall = true_positives / expected if expected > 0 else 0.0
    if precision + recall > 0:
        return 2 * precision * recall / (precision + recall)
    return 0.0


def tool_call_f1(user_input: Sequence[Any], reference_tool_calls: Sequence[Any]) -> Scored:
    """ragas' ``ToolCallF1``: F1 of the sets of predicted and reference (name, arguments)."""
    _check_lists(user_input, reference_tool_calls)
    expected = {(_name(call), _hashable(_args(call))) for call in reference_tool_calls}
    actual = {(_name(call), _hashable(_args(call))) for call in predicted_tool_calls(user_input)}
    hits = len(actual & expected)
    extra = len(actual - expected)
    missed = len(expected - actual)
    value = round(_f1(hits, extra, missed), 4)
    return Scored(
        value,
        f"{hits} matched, {extra} unexpected, {missed} missing (distinct calls)",
        {"true_positives": hits, "false_positives": extra, "false_negatives": missed},
    )
