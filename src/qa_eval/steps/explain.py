"""Why a reference step did not match: the ``mismatch`` text of an unmatched reference step.

Computed after matching, only for the reference steps left unmatched, so a question whose steps
all match costs nothing more. The text names the actual step it is about and says, in order of
precedence:

* ``not evaluated: matching stopped at group N, ...`` - the groups are matched from the last one
  backwards and a group not fully matched ends the matching, so earlier groups are never compared
  (with a hint when an actual step would match the step on its own);
* ``no actual step named X`` (for ``iri_discovery``: no ``autocomplete_search`` or
  ``sparql_query`` step);
* ``the actual step X [i] has status error: ...`` for a same-named step that failed;
* ``the actual X steps [i, j] come after the steps matched to group N+1`` - the ordering rule;
* ``partly matched by actual step retrieval [0]: reference ids not in the top 2: ...`` for a
  retrieval step matched with a recall@k below 1 (it has ``matches`` too);
* otherwise the comparator's explanation against the closest candidate (the most columns and
  rows in common for SPARQL, the most reference ids for retrieval, else the latest step, the one
  the greedy matching tries first): ``actual step sparql_query [1] (id call_2): 1 row missing:
  name="OSLO T3"``, ``closest of 2 candidates, ...`` when there were several.

What an explanation costs follows what it shows: of several candidates only those whose bound
(``StepScorer.closeness_bound``: a match, the kind, the columns and row counts) can still beat
the closest found so far are explained in full, usually just the one shown (for the kinds whose
explanation is not graded, ``GRADED``, no bound is needed: the first candidate that matches,
else the latest, found by ``StepScorer.first_match``); the hint compares a SPARQL step only
when its output's text holds the reference's first row, parsed or not (``StepScorer.may_match``,
asked only of the ``SIGNED`` kinds). The texts are those a full comparison of every candidate
gives.

The actual steps are read once per question for all its texts: their names, and per name the
successful steps of that name (the candidates of every reference step of the name). The
candidates' scores are read in one call, ``StepScorer.first_match``: the scores matching knew,
and whole texts, arguments and JSON values compared there at once (the hint's comparisons,
which matching never made); the usual unmatched step (candidates in order, none failed) goes
straight to the closest candidate's text.

``mismatch_kinds`` sorts the texts into a few kinds for the CLI summary.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Mapping, Sequence
from operator import itemgetter
from typing import TYPE_CHECKING, Any

from .compare import GRADED, StepScorer
from .kinds import COMPARE_IRI, ReferenceStep
from .matching import Match
from .outputs import shown

if TYPE_CHECKING:
    from .sparql.explain import Text

__all__ = ["explain_unmatched", "mismatch_kinds"]

_IRI_STEPS = ("autocomplete_search", "sparql_query")
_MAX_CANDIDATES = 8  # explained against at most this many candidates (the latest ones)
_LATEST = slice(None, -_MAX_CANDIDATES - 1, -1)  # those candidates, the latest first


def _label(steps: Sequence[Mapping[str, Any]], a: int) -> str:
    """``actual step NAME [a] (id ID)``: how an explanation names an actual step."""
    step = steps[a]
    name = step.get("name")
    step_id = step.get("id")
    if type(name) is str and type(step_id) in _ID_TYPES:
        return _cached_label(name, a, step_id)
    return _spelled_label(name, a, step_id)


_ID_TYPES = (str, int, type(None))


def _spelled_label(name: Any, a: int, step_id: Any) -> str:
    """The label of actual step ``a`` from its name and id."""
    label = f"actual step {shown(name)} [{a}]"
    return label + (f" (id {shown(step_id)})" if step_id is not None else "")


_cached_label = functools.lru_cache(maxsize=4096)(_spelled_label)
"""The same labels come back question after question (the same tools, positions and ids)."""


def _step_error(steps: Sequence[Mapping[str, Any]], a: int) -> str:
    """``the actual step NAME [a] (id ID) has status S: ERROR``, for a step that failed."""
    step = steps[a]
    name = step.get("name")
    step_id = step.get("id")
    status = step.get("status")
    error = step.get("error")
    if (
        type(name) is str
        and type(step_id) in _ID_TYPES
        and type(status) is str
        and type(error) in _ERROR_TYPES
    ):
        return _cached_step_error(name, a, step_id, status, error)
    return _spelled_step_error(name, a, step_id, status, error)


_ERROR_TYPES = (str, type(None))


def _spelled_step_error(name: Any, a: int, step_id: Any, status: Any, error: Any) -> str:
    """The text of failed actual step ``a`` from its name, id, status and error."""
    detail = f": {shown(error, 160)}" if error not in (None, "") else ""
    return f"the {_spelled_label(name, a, step_id)} has status {shown(status)}{detail}"


_cached_step_error = functools.lru_cache(maxsize=1024)(_spelled_step_error)
"""The same failures come back too (the same tools, positions, ids and errors)."""


def explain_unmatched(
    groups: Sequence[Sequence[ReferenceStep]],
    scorer: StepScorer,
    matches: Sequence[Match],
    response_error: Any = None,
) -> dict[tuple[int, int], str]:
    """The ``mismatch`` text of every reference step ``matches`` leaves unmatched, keyed by
    (group index, step index); ``response_error``: the error of an error response, if any.

    The comparisons matching made are read back from ``scorer`` (its memo of scores, parsed
    outputs and SPARQL columns); only pairs matching never compared are compared here. The
    actual steps are read once for all the texts: their names, and per name (or pair of names,
    ``iri_discovery``'s) the successful steps of that name."""
    out: dict[tuple[int, int], str] = {}
    stop = len(groups) - 1  # the last group not fully matched: matching stopped there
    steps = scorer.actual
    upto = len(steps)  # the candidates come before the steps matched to the group after
    matched = None  # the steps matched in the groups up to ``stop``
    done = 0  # of the steps of group ``stop``
    if not matches:  # (most failing questions: nothing to count)
        while stop >= 0 and not groups[stop]:
            stop -= 1
        if stop < 0:
            return out
    else:
        counts = [0] * len(groups)  # matched steps per group
        partial = []
        for g, i, a, score in matches:
            counts[g] += 1
            if score < _WHOLE:
                partial.append((g, i, a))  # a retrieval step matched with recall@k below 1
        while stop >= 0 and counts[stop] >= len(groups[stop]):
            stop -= 1
        for g, i, a in partial:
            _, text = scorer.explain(groups[g][i], a)
            out[(g, i)] = f"partly matched by {_label(steps, a)}: {text}"
        if stop < 0:
            return out
        done = counts[stop]
        matched = set()
        first = None
        for g, i, a, _ in matches:
            if g <= stop:
                matched.add((g, i))
            elif g == stop + 1 and (first is None or a < first):
                first = a
        if first is not None:
            upto = first
    if not steps:  # (an error response, or no steps: nothing to compare)
        _explain_no_steps(groups, stop, done, response_error, matched, out)
        return out
    try:
        names = list(map(_NAME, steps))  # (a checked response: every step has a name)
    except KeyError:
        names = [step.get("name") for step in steps]
    successful = scorer.successful()
    named: dict[Any, list[int]] = {}  # per name: its successful steps, in order
    if stop:  # the steps of the groups before: matching never reached them
        header = _header(stop, done, len(groups[stop]))
        first_match = scorer.first_match
        for g in range(stop):
            for ref in groups[g]:
                if matched and (g, ref.index) in matched:
                    continue
                # With a hint when an actual step (the latest such) would match it on its own.
                key = _IRI_STEPS if ref.kind == COMPARE_IRI else ref.name
                ok = named.get(key)
                if ok is None:
                    ok = named[key] = _of_names(key, names, successful)
                hint = first_match(ref, reversed(ok)) if ok else None
                if hint is None:
                    out[(g, ref.index)] = header
                else:
                    out[(g, ref.index)] = (
                        f"{header} (on its own this step would match {_label(steps, hint)})"
                    )
    failed = None  # the steps that did not succeed, when some did not
    if len(successful) < len(steps):
        failed = [a for a in range(len(steps)) if a not in successful]
    for ref in groups[stop]:
        if matched and (stop, ref.index) in matched:
            continue
        # (the hint loop's lookup, written out again: a helper for both cost 3 M instructions,
        # 0.5%, on the failing mix)
        key = _IRI_STEPS if ref.kind == COMPARE_IRI else ref.name
        ok = named.get(key)
        if ok is None:
            ok = named[key] = _of_names(key, names, successful)
        if failed is None and ok and ok[-1] < upto:  # (the usual case: the closest's text)
            out[(stop, ref.index)] = _closest(ref, scorer, ok, matches)
        else:
            bad = _of_names(key, names, failed) if failed else []
            out[(stop, ref.index)] = _explain_step(ref, scorer, ok, bad, upto, matches, stop)
    return out


_WHOLE = 1.0 - 1e-12
"""A match scoring below this is partial."""


_NAME = itemgetter("name")


def _of_names(key: Any, names: list[Any], positions: list[int]) -> list[int]:
    """The ``positions`` whose step is named ``key`` (or one of ``key``, a tuple of names):
    ``positions`` itself when every step has that name (the list is only read)."""
    if type(key) is tuple:
        return [a for a in positions if names[a] in key]
    count = names.count(key)  # (in C: the usual answers need no pass in Python)
    if count == len(names):
        return positions
    if not count:
        return []
    a = names.index(key)
    if count == 1:
        return [a] if a in positions else []
    if count == 2:  # (the second at once too: no pass over the positions in Python)
        b = names.index(key, a + 1)
        if len(positions) == len(names):  # (every step)
            return [a, b]
        if a in positions:
            return [a, b] if b in positions else [a]
        return [b] if b in positions else []
    return [a for a in positions if names[a] == key]


def _explain_no_steps(
    groups: Sequence[Sequence[ReferenceStep]],
    stop: int,
    done: int,
    response_error: Any,
    matched: set[tuple[int, int]] | None,
    out: dict[tuple[int, int], str],
) -> None:
    """``_explain_stopped`` for a response without actual steps: nothing to compare."""
    if stop:
        header = _header(stop, done, len(groups[stop]))
        for g in range(stop):
            for ref in groups[g]:
                if not matched or (g, ref.index) not in matched:
                    out[(g, ref.index)] = header
    for ref in groups[stop]:
        if matched and (stop, ref.index) in matched:
            continue
        out[(stop, ref.index)] = (
            f"the response is an error ({shown(response_error)}) with no actual steps"
            if response_error is not None
            else f"the response has no actual steps (expected a {shown(ref.name)} step)"
        )


@functools.lru_cache(maxsize=256)
def _header(stop: int, done: int, size: int) -> str:
    """The text of a step matching never reached: group ``stop`` (0-based) matched ``done``
    of its ``size`` steps."""
    why = "has no match" if done == 0 else f"matched only {done} of its {size} steps"
    return f"not evaluated: group {stop + 1} {why}, and matching stops there"


def _explain_step(
    ref: ReferenceStep,
    scorer: StepScorer,
    ok: list[int],
    failed: list[int],
    upto: int,
    matches: Sequence[Match],
    group: int,
) -> str:
    """Why ``ref``, a step of the group matching stopped at, found no match: ``ok`` and
    ``failed`` are the successful and the failed actual steps of its name, in order."""
    if not failed:
        if not ok:
            if ref.kind == COMPARE_IRI:
                return "no actual step named autocomplete_search or sparql_query"
            return f"no actual step named {shown(ref.name)}"
        if ok[-1] < upto:  # (the usual case: one text, the closest candidate's)
            return _closest(ref, scorer, ok, matches)
    in_order = ok if not ok or ok[-1] < upto else [a for a in ok if a < upto]
    parts: list[str] = []
    if failed:
        more = f" (and {len(failed) - 1} more such steps)" if len(failed) > 1 else ""
        parts.append(_step_error(scorer.actual, failed[-1]) + more)
    if ok and not in_order:
        positions = ", ".join(str(a) for a in ok)
        parts.append(
            f"the actual {shown(ref.name)} steps [{positions}] come after the steps matched to "
            f"group {group + 2}, and a step of group {group + 1} must come before them"
        )
    if in_order:
        parts.append(_closest(ref, scorer, in_order, matches))
    return "; ".join(parts)


def _closest(
    ref: ReferenceStep,
    scorer: StepScorer,
    in_order: list[int],
    matches: Sequence[Match],
) -> str:
    """The explanation against the closest of the candidates ``in_order`` (the latest ones
    first, as the matching tries them; the first of equally close ones).

    Only the candidate shown is explained in full: each candidate's closeness is bounded first
    from what is cheap to know (a match, the kind, the columns and the rows of a result), the
    candidates are compared in order of their bounds, and one whose bound cannot beat the
    closest found so far is not compared at all."""
    if len(in_order) == 1:  # the one candidate is the one shown: nothing to bound
        a = in_order[0]
        return f"{_label(scorer.actual, a)}: {_candidate_text(ref, scorer, a, matches)}"
    candidates = in_order[_LATEST]
    best_text: Text | None = None
    if ref.kind not in GRADED:
        # Every candidate that does not match is as close as any other (0): the closest is
        # the first that matches, else the first (the bounds below would give the same).
        found = scorer.first_match(ref, candidates)
        if found is None:
            a = candidates[0]
            best_text = scorer.explanation(ref, a)[1]
        else:
            a = found
            best_text = _matched_text(a, matches)
    else:
        would_match = scorer.would_match
        # (-bound, position, the bound is the closeness): sorted, the highest bound first.
        bounds: list[tuple[float, int, bool]] = []
        for position, a in enumerate(candidates):
            if would_match(ref, a) > 0.0:
                bounds.append((-1.0, position, True))
            else:
                bound, exact = scorer.closeness_bound(ref, a)
                bounds.append((-bound, position, exact))
        bounds.sort()
        best = -1.0
        best_position = 0
        for negated, position, exact in bounds:
            bound = -negated
            if bound < best or (bound == best and position > best_position):
                break  # (sorted: no later candidate can be closer)
            if exact:
                closeness, text = bound, None
            else:  # (the text is made below, only for the candidate shown)
                closeness, text = scorer.explanation(ref, candidates[position])
            if closeness > best or (closeness == best and position < best_position):
                best, best_position, best_text = closeness, position, text
        a = candidates[best_position]
        if best_text is None:
            best_text = _candidate_text(ref, scorer, a, matches)
    if not isinstance(best_text, str):
        best_text = best_text()
    return f"closest of {len(in_order)} candidates, {_label(scorer.actual, a)}: {best_text}"


def _candidate_text(
    ref: ReferenceStep, scorer: StepScorer, a: int, matches: Sequence[Match]
) -> str:
    """The text of the candidate shown: why it was left out if it matches, else why not."""
    if scorer.would_match(ref, a) > 0.0:
        return _matched_text(a, matches)
    text = scorer.explanation(ref, a)[1]
    return text if isinstance(text, str) else text()


def _matched_text(a: int, matches: Sequence[Match]) -> str:
    """The text of a candidate shown that matches: why it was left out."""
    for g, i, b, _ in matches:
        if b == a:
            return f"it matches, but it is matched to step {i + 1} of group {g + 1}"
    return "it matches, but the best matching left it out"


_KIND_TEXTS = (
    ("not evaluated", r"^not evaluated: "),
    ("partly matched", r"^partly matched by "),
    ("no such step", r"^(no actual step named|the response has no actual steps)"),
    ("error response", r"^the response is an error"),
    ("step error", r"has status (?!success)"),
    ("out of order", r"come after the steps matched to group"),
    ("column not found", r"columns? \?\S+ not found|columns, \d+ are required"),
    ("rows missing", r"\d+ rows? missing"),
    ("extra rows", r"\d+ extra rows?"),
    ("row order", r"rows in another order"),
    ("ASK value", r"ASK result"),
    ("ids not retrieved", r"reference ids not in the top"),
    (
        "argument differs",
        r"(mrid|limit|external_id|granularity|aggregates|start|end): |arguments differ",
    ),
    ("output differs", r"output differs at"),
    ("IRI not returned", r"the IRI <"),
    ("output problem", r"\b(output|args\.k): "),
)
"""Each kind of mismatch and the pattern of the texts that report it."""


@functools.cache
def _kinds() -> tuple[tuple[str, re.Pattern[str]], ...]:
    """``_KIND_TEXTS`` compiled, when the CLI summary first counts kinds (a run does not)."""
    return tuple((name, re.compile(pattern)) for name, pattern in _KIND_TEXTS)


def mismatch_kinds(text: str) -> list[str]:
    """The kinds of mismatch a ``mismatch`` text reports (for counting), ``other`` if none."""
    kinds = [name for name, pattern in _kinds() if pattern.search(text)]
    for alone in ("not evaluated", "partly matched", "error response"):
        if alone in kinds:
            return [alone]
    return kinds or ["other"]
