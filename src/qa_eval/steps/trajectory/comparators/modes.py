"""Plain reference values, mappings compared by argument mode (``exact``, ``superset``, ``subset``;
the score's satisfied reference arguments) and lists compared in order.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from .values import MISSING, LlmAnswers, Node, equal, show


class Plain(Node):
    def __init__(self, value: Any) -> None:
        self.value = value
        self.kind = type(value)

    def ok(self, actual: Any, llm: LlmAnswers) -> bool:
        if self.kind is str:
            return type(actual) is str and actual == self.value
        return actual is not MISSING and equal(self.value, actual)

    def check(self, actual: Any, path: str, llm: LlmAnswers) -> list[str]:
        if self.ok(actual, llm):
            return []
        return [f"{path}: reference {self.words()}, actual {show(actual)}"]

    def words(self) -> str:
        return show(self.value)


def maybe_json(actual: Any, kind: type | tuple[type, ...]) -> Any:
    """An actual string holding the JSON of a mapping or list where the reference has one."""
    if isinstance(actual, str):
        try:
            parsed = json.loads(actual)
        except ValueError:
            return actual
        if isinstance(parsed, kind):
            return parsed
    return actual


INLINE = (str, int, type(None))


class Obj(Node):
    def __init__(self, fields: dict[str, Node], mode: str) -> None:
        self.fields = fields
        self.mode = mode
        # fields holding a string, a whole number or null: compared inline (a string equals
        # only a string; a number is not a bool)
        self.plain: list[tuple[str, Any, bool]] = []
        self.other: list[tuple[str, Node]] = []
        for key, node in fields.items():
            if type(node) is Plain and node.kind in INLINE:
                self.plain.append((key, node.value, node.kind is int))
            else:
                self.other.append((key, node))

    def count(self, actual: Any, llm: LlmAnswers) -> tuple[int, int, int]:
        """(satisfied reference arguments, reference arguments, actual arguments the mode
        refuses that the reference has not) of an actual mapping in this node's mode (no
        words). ``exact`` and ``superset``: a reference argument is satisfied when the actual
        value matches it; ``subset``: also when the actual call leaves it out. The call matches
        when every reference argument is satisfied and the last count is 0 (``exact``, ``subset``:
        an actual key the reference lacks)."""
        mode = self.mode
        if mode == "ignore":
            return 0, 0, 0
        if type(actual) is not dict:
            actual = maybe_json(actual, dict)
            if not isinstance(actual, dict):
                return 0, max(len(self.fields), 1), 0
        satisfied = 0
        fields = self.fields
        get = actual.get
        subset = mode == "subset"  # a reference argument left out is satisfied
        for key, value, number in self.plain:
            found = get(key, MISSING)
            if (found == value and (not number or type(found) is not bool)) or (
                subset and found is MISSING
            ):
                satisfied += 1
        for key, node in self.other:
            found = get(key, MISSING)
            satisfied += (subset and found is MISSING) or node.ok(found, llm)
        foreign = 0
        if mode != "superset":
            foreign = sum(1 for key in actual if key not in fields)
        return satisfied, len(fields), foreign

    def ok(self, actual: Any, llm: LlmAnswers) -> bool:
        if actual is MISSING:
            return False
        satisfied, total, foreign = self.count(actual, llm)
        return satisfied == total and not foreign

    def units(self, actual: Any, path: str, llm: LlmAnswers) -> tuple[int, int, list[str]]:
        """(satisfied reference arguments, reference arguments, mismatches) of an actual mapping
        in this node's mode (as ``count``; every refused actual key is a mismatch)."""
        if self.mode == "ignore":
            return 0, 0, []
        actual = maybe_json(actual, dict)
        if not isinstance(actual, Mapping):
            why = "raw text" if isinstance(actual, str) else show(actual)
            return 0, max(len(self.fields), 1), [f"{path}: reference an object, actual {why}"]
        satisfied = 0
        problems: list[str] = []
        for key, node in self.fields.items():
            value = actual.get(key, MISSING)
            if value is MISSING and self.mode == "subset":
                satisfied += 1
                continue
            found = node.check(value, f"{path}.{key}", llm)
            satisfied += not found
            problems += found
        if self.mode in ("exact", "subset"):
            for key, value in actual.items():
                if key not in self.fields:
                    problems.append(f"{path}.{key}: not in the reference, actual {show(value)}")
        return satisfied, len(self.fields), problems

    def check(self, actual: Any, path: str, llm: LlmAnswers) -> list[str]:
        if actual is MISSING:
            return [f"{path}: reference {self.words()}, actual missing"]
        return self.units(actual, path, llm)[2]

    def words(self) -> str:
        return "an object"


class Seq(Node):
    def __init__(self, items: list[Node]) -> None:
        self.items = items

    def check(self, actual: Any, path: str, llm: LlmAnswers) -> list[str]:
        actual = maybe_json(actual, list)
        if not isinstance(actual, list):
            return [f"{path}: reference a list, actual {show(actual)}"]
        if len(actual) != len(self.items):
            return [f"{path}: reference {len(self.items)} items, actual {len(actual)}"]
        problems: list[str] = []
        for i, (node, value) in enumerate(zip(self.items, actual)):
            problems += node.check(value, f"{path}[{i}]", llm)
        return problems

    def ok(self, actual: Any, llm: LlmAnswers) -> bool:
        actual = maybe_json(actual, list)
        return (
            isinstance(actual, list)
            and len(actual) == len(self.items)
            and all(node.ok(v, llm) for node, v in zip(self.items, actual))
        )

    def words(self) -> str:
        return "a list"
