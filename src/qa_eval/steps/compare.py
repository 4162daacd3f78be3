"""Score one reference step against one actual step, parsing each actual output at most once.

Dispatch (graphrag-eval's rules, names must agree except for ``iri_discovery``):

=====================================  ==================================================
reference step                         comparison
=====================================  ==================================================
``sparql_query`` with SPARQL JSON      ``steps.sparql.compare_sparql_results`` (0 or 1)
``retrieval`` with an output           recall@k of the context ids (``k`` = actual args.k)
``retrieve_time_series``               ``steps.timeseries`` (arguments)
``retrieve_data_points``               ``steps.timeseries`` (arguments and times)
``iri_discovery``                      the IRI is bound in the actual result (any step name)
``application/json`` output            JSON equality
other step with an output              exact text equality of the outputs
other step without an output           equality of the arguments (JSON values)
=====================================  ==================================================

A problem with an actual step (no output, output that is not JSON, no ``args.k``, a relative time
without an execution timestamp) makes that pair score 0 and is recorded once per actual step, as a
message naming the step and the field, in ``problems``.
"""

from __future__ import annotations

from collections.abc import Callable, Container, Hashable, Iterable, Sequence
from functools import cache
from typing import TYPE_CHECKING, Any

from .contexts import ids_closeness, ids_may_be_in, missing_ids_text
from .kinds import (
    COMPARE_ARGS,
    COMPARE_DATA_POINTS,
    COMPARE_IRI,
    COMPARE_JSON,
    COMPARE_RETRIEVAL,
    COMPARE_SPARQL,
    COMPARE_TEXT,
    COMPARE_TIME_SERIES,
    ReferenceStep,
)
from .outputs import (
    OutputParseError,
    StepArgumentError,
    iri_excluded,
    iri_found,
    json_difference,
    json_equal,
    shown,
    text_difference,
)
from .reading import MISSING as _MISSING
from .reading import OutputReader
from .reading import StepProblem as _StepProblem
from .signatures import arguments_may_match, iri_may_be_in, json_may_be_in
from .sparql.match import SparqlReference, compare_sparql_results, select_score
from .sparql.terms import IRI, LITERAL, MIXED, NUMBER, SparqlResultError

__all__ = ["GRADED", "SIGNED", "StepScorer"]

GRADED = frozenset((COMPARE_SPARQL, COMPARE_RETRIEVAL))
"""The kinds whose explanations grade how close a candidate is: ``closeness_bound`` of any
other kind is 0, and exact."""

_BY_ARGUMENTS = (COMPARE_TIME_SERIES, COMPARE_DATA_POINTS)
SIGNED = GRADED | {COMPARE_IRI, COMPARE_TEXT, COMPARE_ARGS, COMPARE_JSON, *_BY_ARGUMENTS}
"""The kinds ``may_match`` can rule a candidate out for: every kind."""

_EQUAL_FIELDS = {COMPARE_TEXT: "output", COMPARE_ARGS: "args", COMPARE_JSON: ""}  # first_match
_IRI_STEPS = ("autocomplete_search", "sparql_query")


if TYPE_CHECKING:  # (the explanations' module is imported when a step is first explained)
    from .sparql.explain import Text


def _first_strings(sparql: Any) -> list[Any]:
    """The first row's values of a SPARQL reference's columns of IRIs and plain literals:
    values a matching result holds as written (JSON text without escapes spells them out)."""
    if not isinstance(sparql, SparqlReference):
        return []
    derived = sparql.derived  # (found once per reference: every candidate's hint reads them)
    found: list[Any] | None = derived.get(_FIRST)
    if found is None:
        found = derived[_FIRST] = [
            values[0] for kind, values in sparql.columns if kind in _AS_WRITTEN and values
        ]
    return found


_FIRST = "first strings"


_AS_WRITTEN = (IRI, LITERAL)
_BOOLEAN_TEXTS = {True: "true", False: "false"}


def _distinct_counts(sparql: SparqlReference) -> tuple[int, int]:
    """The fewest and the most distinct values a required column of a SPARQL reference has (1
    for a column of numbers, which the tolerant comparison may merge), each at least 1."""
    derived = sparql.derived  # (found once per reference: every candidate reads them)
    known: tuple[int, int] | None = derived.get(_COUNTS)
    if known is None:
        terms = sparql.distinct_terms()  # (shared with the explanations)
        counts = [1 if kind in (NUMBER, MIXED) else len(found) for kind, found in terms]
        known = derived[_COUNTS] = (
            max(1, min(counts, default=1)),
            max(1, max(counts, default=1)),
        )
    return known


_COUNTS = "distinct counts"


@cache
def _recall_at_k() -> Callable[[Sequence[Hashable], Sequence[Hashable], int], float]:
    """``metrics.retrieval.ranking.spec_recall_at_k``, imported when a retrieval step is first
    compared (a run without one loads none of the metrics)."""
    from ..metrics.retrieval.ranking import spec_recall_at_k

    return spec_recall_at_k


@cache
def _timeseries() -> Any:
    """``steps.timeseries``, imported when a time series or data points step is first
    compared (a run without one never loads it)."""
    from . import timeseries

    return timeseries


@cache
def _select_bound() -> Callable[..., tuple[int, float] | None]:
    """``steps.sparql.explain.select_bound``, imported when a SPARQL step is first bounded."""
    from .sparql.explain import select_bound

    return select_bound


@cache
def _explain_sparql() -> Callable[..., tuple[float, Text]]:
    """``steps.sparql.explain.sparql_explanation``, imported when a SPARQL step is first
    explained (only unmatched steps are)."""
    from .sparql.explain import sparql_explanation

    return sparql_explanation


class StepScorer(OutputReader):
    """Scores reference steps against the actual steps of one response, with caches."""

    __slots__ = ()

    def matchable_names(self, ref: ReferenceStep) -> Container[Any]:
        """The actual step names that can match ``ref``: a step of any other name scores 0
        against it, with no comparison and no problem recorded."""
        return _IRI_STEPS if ref.kind == COMPARE_IRI else (ref.name,)

    def score(self, ref: ReferenceStep, act_index: int) -> float:
        """Score of ``ref`` against actual step ``act_index`` (memoised)."""
        key = (ref.group, ref.index, act_index)
        cached = self._scores.get(key)
        if cached is None:
            try:
                cached = self._compare(ref, act_index)
            except _StepProblem as problem:
                self.problems.setdefault(act_index, self._describe(act_index, str(problem)))
                cached = 0.0
            self._scores[key] = cached
        return cached

    def latest_match(
        self, ref: ReferenceStep, candidates: Sequence[int], stop: int
    ) -> tuple[int, float]:
        """(position, score) of the latest of ``candidates[:stop]`` that ``ref`` scores above 0
        against, else (-1, 0.0): each step whose name can match compared, the latest first, as
        ``score`` compares it (the score kept, a problem recorded); the others score 0."""
        actual = self.actual
        memo = self._scores
        group = ref.group
        index = ref.index
        # (``matchable_names``, written out: a call per reference step fewer)
        kind = ref.kind
        names = _IRI_STEPS if kind == COMPARE_IRI else (ref.name,)
        compare = _COMPARERS[kind]
        i = stop
        while i:
            i -= 1
            a = candidates[i]
            if actual[a].get("name") in names:
                # (``score``, written out, without its memo's read: matching scans a pair
                # once; compared again, a pair scores the same and records no new problem)
                try:
                    score = compare(self, ref, a)
                except _StepProblem as problem:
                    self.problems.setdefault(a, self._describe(a, str(problem)))
                    score = 0.0
                memo[group, index, a] = score
                if score > 0.0:
                    return i, score
        return -1, 0.0

    def best_before(
        self, ref: ReferenceStep, candidates: Sequence[int], stop: int, best: float
    ) -> float:
        """The highest of ``best`` and the scores of ``ref`` against ``candidates[:stop]``, each
        step whose name can match compared as in ``latest_match``, the first first."""
        actual = self.actual
        kind = ref.kind
        names = _IRI_STEPS if kind == COMPARE_IRI else (ref.name,)
        compare = _COMPARERS[kind]
        for a in candidates[:stop]:
            if actual[a].get("name") in names:
                try:  # (as above)
                    score = compare(self, ref, a)
                except _StepProblem as problem:
                    self.problems.setdefault(a, self._describe(a, str(problem)))
                    score = 0.0
                self._scores[ref.group, ref.index, a] = score
                if score > best:
                    best = score
        return best

    def would_match(self, ref: ReferenceStep, act_index: int) -> float:
        """``score``, without recording a problem of the actual step (for explanations); a
        score matching computed is read back, and one computed here is kept for the next ask."""
        key = (ref.group, ref.index, act_index)
        cached = self._scores.get(key)
        if cached is not None:
            return cached
        try:
            cached = self._compare(ref, act_index)
        except _StepProblem:
            return 0.0  # not kept: ``score`` would record the problem
        self._scores[key] = cached
        return cached

    def may_match(self, ref: ReferenceStep, act_index: int) -> bool:
        """False when ``ref`` certainly does not match actual step ``act_index`` (a step of its
        name), decided from cheap signatures before a full comparison, else True:
        ``would_match`` then decides. SPARQL: the text holds the values of the reference's
        first row (parsed or not), then a SELECT result with at least as many rows as a
        required column has distinct values (rows compared as sets); retrieval: the text holds
        a reference id; IRI: the text holds the IRI; text: the outputs are equal; arguments
        and JSON: Python's equality (looser than JSON's); time series and data points: the
        arguments compared as strings or instants (``steps.signatures``). Never records a
        problem: a step whose output is unreadable or missing would not match either."""
        kind = ref.kind
        if kind == COMPARE_SPARQL:
            return self._sparql_may_match(ref, act_index)
        act = self.actual[act_index]
        if kind == COMPARE_TEXT:  # (the comparison itself: a test of two strings in C)
            output = act.get("output")
            return output is not None and ref.raw["output"] == output
        if kind == COMPARE_ARGS:  # (``json_equal``'s first test)
            return bool(ref.raw.get("args") == act.get("args"))
        if kind == COMPARE_IRI:
            return iri_may_be_in(ref.parsed, act.get("output"))
        if kind == COMPARE_JSON:
            return self._json_may_match(ref.parsed, act_index)
        if kind == COMPARE_RETRIEVAL:
            return act_index in self._contexts or ids_may_be_in(ref.parsed, act.get("output"))
        if kind in _BY_ARGUMENTS:
            return arguments_may_match(kind, ref.raw.get("args"), act)
        return True

    def _json_may_match(self, wanted: Any, act_index: int) -> bool:
        """``may_match`` of a JSON output: the output parsed (once, as the comparison would
        parse it) and equal to ``wanted`` by Python's equality, which holds whenever
        ``json_equal`` does."""
        value = self._json.get(act_index, _MISSING)
        if value is _MISSING:
            output = self.actual[act_index].get("output")
            if type(output) is not str:  # (none: a problem, no match; a value: compared)
                return output is not None
            if not json_may_be_in(wanted, output):
                return False  # (decided from the text, unparsed)
            value = self._parse(act_index, output)
        if type(value) is OutputParseError:
            return False  # (a problem: no match)
        return bool(wanted == value)

    def _sparql_may_match(self, ref: ReferenceStep, act_index: int) -> bool:
        sparql = ref.parsed
        if not isinstance(sparql, SparqlReference):
            return True
        output = self.actual[act_index].get("output")
        # (without an escape, the text spells every value as it is; read whether or not the
        # output was parsed already: a search of the text costs less than a comparison)
        if type(output) is str and "\\" not in output:
            if sparql.boolean is not None:
                # An ASK reference matches only an ASK result of its value: the text has the
                # key and the value (a JSON literal, spelled as it is).
                return '"boolean"' in output and _BOOLEAN_TEXTS[sparql.boolean] in output
            for value in _first_strings(sparql):
                if value not in output:
                    return False
        if sparql.boolean is not None or not sparql.rows or not sparql.required:
            return True  # (the comparison decides at once)
        raw = ref.raw
        if raw.get("ordered", False) or not raw.get("ignore_duplicates", True):
            return True  # (the comparison counts the rows itself)
        checked = self._checked.get(act_index, _MISSING)  # (``_sparql``, written out)
        try:
            if checked is _MISSING:
                checked = self._check_sparql(act_index)
        except _StepProblem:
            return False  # (the comparison would raise it: no match)
        if type(checked) is _StepProblem:
            return False
        if "boolean" in checked:
            return False
        rows = (checked.get("results") or {}).get("bindings") or ()
        return len(rows) >= _distinct_counts(ref.parsed)[1]

    def explain(self, ref: ReferenceStep, act_index: int) -> tuple[float, str]:
        """Why ``ref`` does not match actual step ``act_index``, for a user, with a closeness
        (0-1) to pick the closest of several candidates. Only read for unmatched steps."""
        closeness, text = self.explanation(ref, act_index)
        return closeness, text if isinstance(text, str) else text()

    def explanation(self, ref: ReferenceStep, act_index: int) -> tuple[float, Text]:
        """``explain`` with the text of a SPARQL SELECT result left to be made when called:
        of several candidates, only the text of the one shown is made."""
        try:  # (the comparator's text, written out here: one call fewer per text)
            act = self.actual[act_index]
            kind = ref.kind
            if kind == COMPARE_IRI:
                self._output(act_index)
                return 0.0, f"the IRI <{shown(ref.parsed)}> is not among the IRIs it returned"
            if kind == COMPARE_SPARQL:
                sparql = ref.parsed
                checked = self._sparql(act_index)
                if not isinstance(sparql, SparqlReference):  # (prepared at load: a fallback)
                    return 0.0, "the SPARQL results differ"
                return _explain_sparql()(
                    sparql,
                    checked,
                    ordered=ref.raw.get("ordered", False),
                    ignore_duplicates=ref.raw.get("ignore_duplicates", True),
                    table=self._table(act_index, checked),
                )
            if kind == COMPARE_RETRIEVAL:
                _, k, top = self._context_ids(act_index)
                return missing_ids_text(ref.parsed, k, self._wanted_ids(ref, k), top)
            if kind == COMPARE_TIME_SERIES:
                return 0.0, _timeseries().explain_time_series_steps(ref.raw, act)
            if kind == COMPARE_DATA_POINTS:
                return 0.0, _timeseries().explain_data_points_steps(ref.raw, act)
            if kind == COMPARE_JSON:
                found = json_difference(ref.parsed, self._parsed(act_index))
                return 0.0, f"output differs at {found}" if found else "the outputs differ"
            if kind == COMPARE_ARGS:
                found = json_difference(ref.raw.get("args"), act.get("args"), "args")
                return 0.0, f"arguments differ at {found}" if found else "the arguments differ"
            return 0.0, "output differs at " + text_difference(
                ref.raw["output"], self._output(act_index)
            )
        except _StepProblem as problem:
            return 0.0, str(problem)
        except (SparqlResultError, StepArgumentError) as e:
            return 0.0, f"output: {e}" if isinstance(e, SparqlResultError) else str(e)

    def closeness_bound(self, ref: ReferenceStep, act_index: int) -> tuple[float, bool]:
        """An upper bound of the closeness ``explain`` gives ``ref`` against actual step
        ``act_index`` (a step it does not match), from what is cheap to know, and whether the
        bound is that closeness: 0 for the kinds whose explanation is not graded, the bound of
        the columns and rows for SPARQL, else 1."""
        kind = ref.kind
        if kind == COMPARE_SPARQL:
            return self._sparql_bound(ref, act_index)
        if kind == COMPARE_RETRIEVAL:
            return self._retrieval_bound(ref, act_index)
        return 0.0, True

    def _retrieval_bound(self, ref: ReferenceStep, act_index: int) -> tuple[float, bool]:
        """``closeness_bound`` of a retrieval reference: the closeness itself (the share of the
        reference's first k ids among the actual step's first k), from the ids the
        comparisons keep, so that only the candidate shown is explained in full."""
        if type(ref.parsed) is not list:  # (a step made by hand: the explanation decides)
            return 1.0, False
        try:
            _, k, top = self._context_ids(act_index)
        except _StepProblem:
            return 0.0, True  # (explained by the problem, at 0)
        return ids_closeness(self._wanted_ids(ref, k), top), True

    def _sparql_bound(self, ref: ReferenceStep, act_index: int) -> tuple[float, bool]:
        """``closeness_bound`` of a SPARQL reference: exact for an ASK result or no rows, else
        from the columns there are to find and, when rows are counted, the row counts."""
        sparql = ref.parsed
        checked = self._checked.get(act_index, _MISSING)  # (``_sparql``, written out)
        try:
            if checked is _MISSING:
                checked = self._check_sparql(act_index)
        except _StepProblem:
            return 0.0, True
        if type(checked) is _StepProblem:
            return 0.0, True
        if not isinstance(sparql, SparqlReference):
            return 0.0, True
        if sparql.boolean is not None:
            return (0.5, True) if "boolean" in checked else (0.0, True)
        if "boolean" in checked:
            return 0.0, True
        rows = (checked.get("results") or {}).get("bindings") or ()
        if not sparql.rows:
            return (0.5, True) if not rows else (0.0, True)
        if not rows:
            return 0.0, True
        required = len(sparql.required)
        if not required:
            return 1.0, False
        act_vars = list(dict.fromkeys((checked.get("head") or {}).get("vars") or ()))
        columns = min(len(act_vars), required)
        raw = ref.raw
        if raw.get("ordered", False) or not raw.get("ignore_duplicates", True):
            # Rows compared as lists or multisets: at most the fewer rows are in common.
            common = min(sparql.rows, len(rows)) / max(sparql.rows, len(rows))
        else:
            # As sets: the rows in common are at most the actual rows, out of at least as many
            # reference rows as a found column has distinct values.
            common = min(1.0, len(rows) / _distinct_counts(ref.parsed)[0])
        table = self._tables.get(act_index)
        if table is not None:
            # What the columns read already (by matching) tell: which can pair, and a bound of
            # the rows in common.
            try:
                terms = _select_bound()(sparql, table, act_vars, len(rows))
            except (SparqlResultError, TypeError):
                terms = None  # (the explanation reports it)
            if terms is not None:
                found, most = terms
                if not found:
                    return 0.0, True  # no column pairs: the explanation's closeness is 0
                columns = min(columns, found)
                common = min(common, most)
        return 0.5 * columns / required + 0.5 * common, False

    def _iri(self, iri: str, act_index: int) -> float:
        """1.0 when the IRI is among those actual step ``act_index`` returned, else 0.0."""
        output = self._output(act_index)
        parsed = self._json.get(act_index, _MISSING)
        if iri and isinstance(output, str):
            is_json = parsed is not _MISSING and not isinstance(parsed, OutputParseError)
            if iri_excluded(output, iri, is_json):
                # Decided from the text, without a parse (or a walk over a result parsed
                # already): the IRI is neither a string in it nor a token of it.
                return 0.0
        if parsed is _MISSING:
            parsed = self._parse(act_index, output)
        if isinstance(parsed, OutputParseError):
            parsed = None  # e.g. a DESCRIBE result: look for the IRI as a token
        return float(iri_found(iri, parsed, output))

    def _compare(self, ref: ReferenceStep, act_index: int) -> float:
        name = self.actual[act_index].get("name")
        kind = ref.kind
        if name != ref.name if kind != COMPARE_IRI else name not in _IRI_STEPS:
            return 0.0  # (``matchable_names``' rule)
        return _COMPARERS[kind](self, ref, act_index)

    def _compare_sparql(self, ref: ReferenceStep, act_index: int) -> float:
        checked = self._checked.get(act_index, _MISSING)  # (``_sparql``, written out)
        if checked is _MISSING:
            checked = self._check_sparql(act_index)
        if type(checked) is _StepProblem:
            raise checked
        sparql = ref.parsed
        raw = ref.raw
        try:
            if type(sparql) is SparqlReference:  # (the usual case, in fewer calls)
                boolean = sparql.boolean  # (``boolean_score``, written out)
                if boolean is not None:  # an ASK reference: its value decides
                    return 1.0 if "boolean" in checked and checked["boolean"] == boolean else 0.0
                if "boolean" in checked:  # an ASK result
                    return 0.0
                table = self._tables.get(act_index)
                return select_score(
                    sparql,
                    checked,
                    raw.get("ordered", False),
                    raw.get("ignore_duplicates", True),
                    self._table(act_index, checked) if table is None else table,
                )
            return compare_sparql_results(
                sparql,
                checked,
                ordered=raw.get("ordered", False),
                ignore_duplicates=raw.get("ignore_duplicates", True),
                checked=True,
                table=self._table(act_index, checked),
            )
        except SparqlResultError as e:
            raise _StepProblem(f"output: {e}") from None

    def _compare_data_points(self, ref: ReferenceStep, act_index: int) -> float:
        try:
            return _timeseries().compare_data_points_steps(ref.raw, self.actual[act_index])  # type: ignore[no-any-return]
        except StepArgumentError as e:
            raise _StepProblem(str(e)) from None

    def _compare_json(self, ref: ReferenceStep, act_index: int) -> float:
        wanted = ref.parsed
        value = self._parsed(act_index)
        # (``json_equal``'s first test here: the usual answer, unequal, without its call)
        return 1.0 if wanted == value and json_equal(wanted, value) else 0.0

    def _compare_args(self, ref: ReferenceStep, act_index: int) -> float:
        wanted = ref.raw.get("args")
        got = self.actual[act_index].get("args")
        return 1.0 if wanted == got and json_equal(wanted, got) else 0.0

    def _compare_text(self, ref: ReferenceStep, act_index: int) -> float:
        output = self.actual[act_index].get("output")
        if output is None:
            self._output(act_index)  # (the problem of a missing output)
        return 1.0 if ref.raw["output"] == output else 0.0

    def _retrieval(self, ref: ReferenceStep, act_index: int) -> float:
        """graphrag-eval's recall@k (``spec_recall_at_k``) of ``ref`` against a retrieval step,
        from the ids kept per step: the actual step's first k, the reference's first k as a set."""
        value = self._contexts.get(act_index)  # (``_context_ids``, written out)
        if value is None:
            value = self._contexts[act_index] = self._check_contexts(act_index)
        if type(value) is _StepProblem:
            raise value
        ids, k, top = value
        key = (ref.group, ref.index, k)
        wanted = self._wanted.get(key)  # (``_wanted_ids``, written out)
        if wanted is None:
            parsed = ref.parsed
            if type(parsed) is not list:  # (a step made by hand: the metric checks it)
                return _recall_at_k()(parsed, ids, k)
            wanted = self._wanted[key] = set(parsed if len(parsed) <= k else parsed[:k])
        if not wanted or wanted.isdisjoint(top):  # (the usual pair: no allocation)
            return 0.0
        return len(wanted.intersection(top)) / len(wanted)

    def first_match(self, ref: ReferenceStep, candidates: Iterable[int]) -> int | None:
        """The first of ``candidates`` that ``ref`` would match (``would_match`` above 0), else
        None: known scores read at once, ``may_match`` asked first; whole texts, arguments and
        JSON values compared here (``_compare``'s rule: equal, and named as ``ref``)."""
        kind = ref.kind
        field = _EQUAL_FIELDS.get(kind)
        if field is not None:
            wanted = ref.raw.get(field) if field else ref.parsed
            steps = self.actual
            for a in candidates:
                try:
                    value = steps[a].get(field) if field else self._parsed(a)
                except _StepProblem:
                    continue  # (no match; not kept: ``score`` would record the problem)
                if (
                    value == wanted
                    and steps[a].get("name") == ref.name
                    and (value is not None if kind == COMPARE_TEXT else json_equal(wanted, value))
                ):
                    return a
            return None
        for a in candidates:
            key = (ref.group, ref.index, a)
            score = self._scores.get(key)
            if score is None:
                if kind in SIGNED and not self.may_match(ref, a):
                    continue
                try:  # (``would_match``, written out: the score is known to be unknown)
                    score = self._scores[key] = self._compare(ref, a)
                except _StepProblem:
                    continue  # (no match; not kept: ``score`` would record the problem)
            if score > 0.0:
                return a
        return None


class _ByKind(dict[str, Callable[[StepScorer, ReferenceStep, int], float]]):
    """The comparison of a step whose name can match, per kind (found once per reference step
    for a scan of the candidates, not once per pair): text for another kind (made by hand)."""

    def __missing__(self, kind: str) -> Callable[[StepScorer, ReferenceStep, int], float]:
        return StepScorer._compare_text


_COMPARERS = _ByKind(
    {
        COMPARE_IRI: lambda scorer, ref, a: scorer._iri(ref.parsed, a),
        COMPARE_SPARQL: StepScorer._compare_sparql,
        COMPARE_RETRIEVAL: StepScorer._retrieval,
        COMPARE_TIME_SERIES: lambda scorer, ref, a: _timeseries().compare_time_series_steps(
            ref.raw, scorer.actual[a]
        ),
        COMPARE_DATA_POINTS: StepScorer._compare_data_points,
        COMPARE_JSON: StepScorer._compare_json,
        COMPARE_ARGS: StepScorer._compare_args,
        COMPARE_TEXT: StepScorer._compare_text,
    }
)
