"""What ``steps.compare.StepScorer`` reads of one response's actual steps, each at most once: the
outputs (parsed as JSON, checked as SPARQL results, their SELECT columns), retrieval outputs'
context ids with ``args.k``, and the indexes of the successful steps. A problem of an actual
step (no output, an output that is not JSON or not a SPARQL result, no ``args.k``) is a
``StepProblem``, kept and raised again on each read.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from orjson import loads as _orjson_loads

from ..errors import short_repr
from .contexts import context_ids
from .kinds import ReferenceStep
from .outputs import OutputParseError, loads
from .sparql.terms import SparqlResultError, Table, parse_sparql_json

__all__ = ["MISSING", "OutputReader", "StepProblem"]

MISSING = object()
"""A value not read yet (in the caches below, where None can be a value)."""


class StepProblem(Exception):
    """A problem of an actual step, recorded once for it by the scorer."""


def _loaded(output: Any) -> Any:
    """``loads(output)``, or its ``OutputParseError``."""
    try:
        return loads(output)
    except OutputParseError as e:
        return e


class OutputReader:
    """The actual steps of one response, each output read at most once (the scorer's base)."""

    __slots__ = (
        "_checked",
        "_contexts",
        "_json",
        "_scores",
        "_successful",
        "_tables",
        "_wanted",
        "actual",
        "problems",
    )

    def __init__(
        self, actual_steps: Sequence[Mapping[str, Any]], successful: list[int] | None = None
    ) -> None:
        self.actual = actual_steps
        self.problems: dict[int, str] = {}
        self._json: dict[int, Any] = {}
        self._checked: dict[int, Any] = {}  # SPARQL outputs checked, or their problem
        self._tables: dict[int, Table] = {}  # their columns as read by comparisons
        self._contexts: dict[int, Any] = {}  # retrieval outputs' (ids, k, top k), or problem
        self._wanted: dict[tuple[int, int, int], set[Any]] = {}  # see _wanted_ids
        self._scores: dict[tuple[int, int, int], float] = {}
        self._successful = successful  # found while the responses were checked, when given

    def successful(self) -> list[int]:
        """Indexes of the actual steps that may be matched (status success)."""
        if self._successful is None:
            self._successful = [
                i for i, s in enumerate(self.actual) if s.get("status", "success") == "success"
            ]
        return self._successful

    def _describe(self, act_index: int, message: str) -> str:
        step_id = self.actual[act_index].get("id")
        label = f"actual_steps[{act_index}]" + (f" (id {step_id})" if step_id is not None else "")
        return f"{label}: {message}"

    def _output(self, act_index: int) -> Any:
        """The actual step's output; a problem when a successful step has none."""
        output = self.actual[act_index].get("output")
        if output is None:
            raise StepProblem("output: missing in a successful step")
        return output

    def _parsed(self, act_index: int) -> Any:
        """The actual step's output as JSON, parsed once; a problem when it is not JSON."""
        value = self._json.get(act_index, MISSING)
        if value is MISSING:
            output = self.actual[act_index].get("output")
            if type(output) is str:  # (the usual output: parsed here, without ``_parse``)
                try:
                    value = self._json[act_index] = _orjson_loads(output)
                    return value
                except ValueError:
                    pass  # (``_parse`` keeps the error ``loads`` words)
            elif output is None:
                self._output(act_index)  # (the problem of a missing output)
            value = self._parse(act_index, output)
        if type(value) is OutputParseError:
            raise StepProblem(f"output: {value}")
        return value

    def _parse(self, act_index: int, output: Any) -> Any:
        """Parse ``output`` (a JSON text, or a value already) and keep it, or the error."""
        if type(output) is str:  # (the usual output: orjson at once, ``loads`` for the rest)
            try:
                value = _orjson_loads(output)
            except ValueError:
                value = _loaded(output)
        elif isinstance(output, (dict, list)):
            value = output
        else:
            value = _loaded(output)
        self._json[act_index] = value
        return value

    def _sparql(self, act_index: int) -> Mapping[str, Any]:
        """The actual step's output, checked once as a SPARQL JSON result."""
        value = self._checked.get(act_index, MISSING)
        if value is MISSING:
            value = self._check_sparql(act_index)
        if type(value) is StepProblem:
            raise value
        return value  # type: ignore[no-any-return]

    def _check_sparql(self, act_index: int) -> Any:
        """Check the actual step's output as a SPARQL JSON result and keep it, or the problem
        (a problem of the output itself is raised, not kept)."""
        value: Any
        try:
            value = parse_sparql_json(self._parsed(act_index))
        except SparqlResultError as e:
            value = StepProblem(f"output: not a SPARQL JSON result: {e}")
        self._checked[act_index] = value
        return value

    def _table(self, act_index: int, checked: Mapping[str, Any]) -> Table | None:
        """The actual SELECT result's columns, read once for every reference step compared
        with it and for the explanations (None for an ASK result)."""
        table = self._tables.get(act_index)
        if table is None:
            bindings = (checked.get("results") or {}).get("bindings")
            if not isinstance(bindings, list):
                return None
            table = self._tables[act_index] = Table(bindings)
        return table

    def _wanted_ids(self, ref: ReferenceStep, k: int) -> set[Any]:
        """The set of a retrieval reference's first ``k`` ids, made once per scorer."""
        key = (ref.group, ref.index, k)
        wanted = self._wanted.get(key)
        if wanted is None:
            parsed = ref.parsed
            wanted = self._wanted[key] = set(parsed if len(parsed) <= k else parsed[:k])
        return wanted

    def _context_ids(self, act_index: int) -> tuple[list[Any], int, list[Any]]:
        """A retrieval step's context ids, its ``args.k`` and its first k ids, checked once for
        every reference step compared with it and for the explanations."""
        value = self._contexts.get(act_index)
        if value is None:
            value = self._contexts[act_index] = self._check_contexts(act_index)
        if type(value) is StepProblem:
            raise value
        return value  # type: ignore[no-any-return]

    def _check_contexts(self, act_index: int) -> Any:
        """``_context_ids``' value, or its problem (returned, to be kept)."""
        step = self.actual[act_index]
        parsed = self._json.get(act_index, MISSING)
        if parsed is MISSING:  # (``_parsed``'s usual case, written out: one call fewer)
            output = step.get("output")
            if type(output) is str:
                try:
                    parsed = self._json[act_index] = _orjson_loads(output)
                except ValueError:
                    parsed = MISSING  # (``_parsed`` keeps the error ``loads`` words)
        if parsed is MISSING or type(parsed) is OutputParseError:
            try:
                parsed = self._parsed(act_index)
            except StepProblem as problem:
                return problem
        ids = context_ids(parsed)
        if ids is None:
            return StepProblem(
                "output: a retrieval output must be a JSON list of objects with an 'id' (a "
                "string or a number)"
            )
        args = step.get("args") or {}
        if type(args) is not dict and not isinstance(args, dict):
            # (raw argument text, as a trace import keeps it)
            return StepProblem(f"args: must be a mapping with k, got {short_repr(args)}")
        k = args.get("k")
        if (type(k) is not int or k <= 0) and (  # (the usual k told by its type alone)
            isinstance(k, bool) or not isinstance(k, int) or k <= 0
        ):
            return StepProblem(f"args.k: must be a positive integer, got {short_repr(k)}")
        # The first k as a list, not a set: the comparisons ask a reference's set of ids about
        # them (``isdisjoint``, ``intersection``), which reads any iterable as that set would.
        return ids, k, ids if len(ids) <= k else ids[:k]
