"""What a run's warnings and mismatch summary read of its results, tallied as they come
(:class:`Notable`): a few counts and first examples, not the results (nor their keys), so a run
of a million questions keeps as little as a run of ten."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping
from typing import Any

from .question import NO_RESPONSE

__all__ = ["Notable", "mismatches"]


class Notable:
    """The tallies of results with a problem: questions with no response, with steps that could
    not be compared (how many, and the first's id and first ``step_errors`` entry), metric
    values not computed (per ``*_error`` key in order of first appearance: how many, and the
    first message), and the kinds of ``mismatch`` texts. Results are added in reference order;
    tallies of consecutive parts merge in order (:meth:`merge`) into the whole's."""

    def __init__(self) -> None:
        self.signature: dict[str, Any] = {}
        self.missing = 0
        self.step_problems = 0
        self.first_step_problem: tuple[Any, Any] | None = None
        self.metric_errors: dict[str, list[Any]] = {}
        """``*_error`` key -> [how many, the first message]."""
        self.mismatches: Counter[str] = Counter()

    @classmethod
    def of(cls, results: Iterable[Mapping[str, Any]]) -> Notable:
        """The tallies of results (or of their notable keys), with their ``signature``."""
        out = cls()
        for result in results:
            out.add(result)
        out.signature = dict(getattr(results, "signature", None) or {})
        return out

    def add(self, result: Mapping[str, Any]) -> None:
        """Count one result (or its notable keys: ``run.files.notable_keys``)."""
        from ..steps.explain import mismatch_kinds

        if result.get("error") == NO_RESPONSE:
            self.missing += 1
        problems = result.get("step_errors")
        if problems:
            self.step_problems += 1
            if self.first_step_problem is None:
                self.first_step_problem = (result.get("question_id"), problems[0])
        steps = result.get("actual_steps") or []
        for record in [result, *(s for s in steps if isinstance(s, dict))]:
            for key, value in record.items():
                if key.endswith("_error") and key != "answer_eval_error" and value:
                    held = self.metric_errors.get(key)
                    if held is None:
                        self.metric_errors[key] = [1, str(value)]
                    else:
                        held[0] += 1
        for text in mismatches(result):
            self.mismatches.update(mismatch_kinds(text))

    def merge(self, other: Notable) -> None:
        """Add the tallies of the results that follow these."""
        self.missing += other.missing
        self.step_problems += other.step_problems
        if self.first_step_problem is None:
            self.first_step_problem = other.first_step_problem
        for key, (count, first) in other.metric_errors.items():
            held = self.metric_errors.get(key)
            if held is None:
                self.metric_errors[key] = [count, first]
            else:
                held[0] += count
        self.mismatches.update(other.mismatches)


def mismatches(result: Mapping[str, Any]) -> list[str]:
    """The ``mismatch`` texts of a result's reference steps (or of a slim result's list)."""
    if "mismatches" in result:
        return list(result["mismatches"])
    return [
        step["mismatch"]
        for group in result.get("reference_steps") or ()
        if isinstance(group, list)
        for step in group
        if isinstance(step, dict) and isinstance(step.get("mismatch"), str)
    ]
