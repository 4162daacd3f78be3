"""The responses checked and indexed by question id (``prepare_responses``, ``check_response``):
their ids, trials, steps and values."""

from __future__ import annotations

from collections.abc import Container, Iterable, Mapping
from itertools import count, repeat
from operator import attrgetter
from typing import Any

from ...errors import short_repr
from ...io.keysets import TRIAL_KEY
from .records import (
    AN_ID,
    ID_TYPES,
    Problems,
    Question,
    Response,
    found,
    response_record,
    type_name,
    wrong,
)


def _check_steps(steps: Any, place: tuple[str, Any], qid: Any, problems: Problems) -> list[int]:
    """Check the actual steps of the response read at ``place``; returns the indexes of the
    successful ones."""
    if not isinstance(steps, list):
        message = f"must be a list, got {found(steps)}"
        problems.add(response_record(place, qid), "actual_steps", message)
        return []
    successful = []
    for i, step in enumerate(steps):
        if not isinstance(step, dict):
            field_path, message = f"actual_steps[{i}]", f"must be a mapping, got {type_name(step)}"
            problems.add(response_record(place, qid), field_path, message)
            continue
        status = step.get("status", "success")
        if status == "success":
            successful.append(i)
        args = step.get("args")
        step_id = step.get("id")
        error = step.get("error")
        if not isinstance(step.get("name"), str):
            key, wanted = "name", "a string"
        elif not isinstance(status, str):
            key, wanted = "status", "a string"
        elif args is not None and not isinstance(args, (dict, str)):
            key, wanted = "args", "a mapping or a string"
        elif "lost" in step and not (
            isinstance(step["lost"], list) and all(isinstance(x, str) for x in step["lost"])
        ):
            key, wanted = "lost", "a list of strings"
        elif (
            step_id is not None
            and type(step_id) is not str  # the common id, a string: one test (hot loop)
            and (not isinstance(step_id, ID_TYPES) or isinstance(step_id, bool))
        ):
            key, wanted = "id", AN_ID
        elif error is not None and not isinstance(error, str):
            key, wanted = "error", "a string"
        else:
            continue
        field_path, message = f"actual_steps[{i}].{key}", wrong(step, key, wanted)
        problems.add(response_record(place, qid), field_path, message)
    return successful


def _numbered(data: Any, problems: Problems) -> Iterable[tuple[tuple[str, Any], Any, Any]]:
    """(place, key, response) for a list, a dict keyed by question id, or JSONL lines (made by
    ``zip``, in C, rather than by a generator resumed once per response)."""
    if isinstance(data, dict):
        return zip(zip(repeat("key"), data), data, data.values())
    if isinstance(data, list):
        line_numbers = getattr(data, "line_numbers", None)
        if line_numbers is not None:  # (an IndexError at the same response as line_numbers[i])
            numbers = map(line_numbers.__getitem__, range(len(data)))
            return zip(zip(repeat("line"), numbers), repeat(None), data)
        return zip(zip(repeat("response"), count()), repeat(None), data)
    problems.add(
        None,
        None,
        f"responses must be a list, a mapping by question id or JSON lines, got {type_name(data)}",
    )
    return ()


_TOKEN_KEYS = ("input_tokens", "output_tokens", "total_tokens", "elapsed_sec")
_TEXT_KEYS = ("actual_answer", "error")
_INF = float("inf")


class Unknown:
    """The responses whose question id is not in the reference dataset: left out of the run
    (graphrag-eval ignores them), counted, and named in one warning."""

    def __init__(self) -> None:
        self.count = 0
        self.examples: list[Any] = []
        """The first few ids, in the order read."""

    def add(self, qid: Any) -> None:
        """Count one response for an unknown question id."""
        self.count += 1
        if len(self.examples) < 5:
            self.examples.append(qid)

    def message(self, source: str) -> str:
        """The warning's one line: how many were left out, and which ids (the first few)."""
        shown = ", ".join(short_repr(q, 40) for q in self.examples)
        more = ", ..." if self.count > len(self.examples) else ""
        noun = "response" if self.count == 1 else "responses"
        return (
            f"{source}: {self.count} {noun} for question ids not in the reference dataset "
            f"ignored ({shown}{more})"
        )

    def as_dict(self) -> dict[str, Any]:
        """The signature's record of them."""
        return {"count": self.count, "question_ids": list(self.examples)}


def prepare_responses(
    data: Any,
    questions: Iterable[Question],
    source: str = "responses",
    unknown: Unknown | None = None,
) -> dict[Any, list[Response]]:
    """Validate the responses and index them by question id: one response per question, or
    several when each carries a distinct ``trial`` (in the order read). A response for a
    question id not in the reference is counted in ``unknown`` and left out; without
    ``unknown`` it is an error."""
    problems = Problems(source)
    known = set(map(_QUESTION_ID, questions))
    responses: dict[Any, list[Response]] = {}
    seen = Seen()
    for place, key, response in _numbered(data, problems):
        if type(response) is dict:
            checked = _quick(place, key, response, known, seen)
            if checked is not None:  # (its question's first response: _quick takes no other)
                responses[checked.question_id] = [checked]
                continue
        checked = _check(place, key, response, problems, known, seen, unknown)
        if checked is not None:
            answered = responses.get(checked.question_id)  # (no empty list made per response)
            if answered is None:
                responses[checked.question_id] = [checked]
            else:
                answered.append(checked)
    problems.raise_if_any()
    return responses


_NO_TRIAL = object()
"""The trial of a response without ``trial``."""
_QUESTION_ID = attrgetter("question_id")


class Seen:
    """The responses read so far, by question id and trial: finds a second response for a
    question without trials, a duplicate (question id, trial) pair, and a question answered both
    with and without ``trial``. Keeps one place per response read (a question without trials:
    the place alone)."""

    def __init__(self, places: Any = None) -> None:
        self.places: Any = {} if places is None else places
        """question id -> the place of its response, or {trial: place} for one with trials (a
        dict, or a compact mapping with ``get`` and item assignment)."""

    def claim(self, place: tuple[str, Any], qid: Any, trial: Any) -> tuple[str, str] | None:
        """Note the response at ``place``; (field, message) when it collides with one read
        before, else None."""
        before = self.places.get(qid)
        if before is None:
            self.places[qid] = place if trial is _NO_TRIAL else {trial: place}
            return None
        if not isinstance(before, dict):  # the question's one response had no trial
            also = response_record(before, qid)
            if trial is _NO_TRIAL:
                return "question_id", f"duplicate response (also {also})"
            return "trial", f"given here but not in another response to this question ({also})"
        if trial is _NO_TRIAL:
            also = response_record(next(iter(before.values())), qid)
            return "trial", f"missing here but given in another response to this question ({also})"
        if trial in before:
            also = response_record(before[trial], qid)
            return "trial", f"duplicate trial {short_repr(trial)} (also {also})"
        before[trial] = place
        return None


def check_response(
    place: tuple[str, Any],
    key: Any,
    response: Any,
    problems: Problems,
    known: Container[Any],
    seen: Seen | None,
    unknown: Unknown | None = None,
) -> Response | None:
    """Check one response read at ``place`` (under ``key`` in a mapping); its problems go to
    ``problems``. ``known`` holds the reference question ids, ``seen`` the responses already
    read (a second one for a question needs a distinct ``trial`` in both; None: not checked);
    a response for another id is counted in ``unknown`` (a problem without it). The prepared
    response, or None when it is not usable."""
    if type(response) is dict:
        quick = _quick(place, key, response, known, seen)
        if quick is not None:
            return quick
    return _check(place, key, response, problems, known, seen, unknown)


def _check(
    place: tuple[str, Any],
    key: Any,
    response: Any,
    problems: Problems,
    known: Container[Any],
    seen: Seen | None,
    unknown: Unknown | None = None,
) -> Response | None:
    """``check_response`` without its fast path: every check, each problem worded."""
    qid = _response_id(place, key, response, problems)
    if qid is _NO_ID:
        return None
    if qid not in known:
        _unjoined(place, qid, problems, unknown)
        return None
    trial = response.get(TRIAL_KEY, _NO_TRIAL)
    if trial is not _NO_TRIAL and (not isinstance(trial, ID_TYPES) or isinstance(trial, bool)):
        problems.add(response_record(place, qid), TRIAL_KEY, f"must be {AN_ID}, got {found(trial)}")
        return None
    collision = None if seen is None else seen.claim(place, qid, trial)
    if collision is not None:
        problems.add(response_record(place, qid), *collision)
        return None
    status = response.get("status")
    if status is not None and status not in ("success", "error"):
        problems.add(
            response_record(place, qid),
            "status",
            f"must be 'success' or 'error', got {short_repr(status)}",
        )
        return None
    is_error = status == "error" or (status is None and "error" in response)
    successful = None
    if "actual_steps" in response:
        successful = _check_steps(response["actual_steps"], place, qid, problems)
    _check_values(response, place, qid, problems)
    return Response(qid, response, place, is_error, successful)


_NO_ID = object()
"""What ``_response_id`` gives for a response without a usable question id."""


def _response_id(place: tuple[str, Any], key: Any, response: Any, problems: Problems) -> Any:
    """The question id of a response (its ``question_id``, else its key in a mapping), or
    ``_NO_ID`` when it is not a mapping or has no usable id."""
    if not isinstance(response, dict):
        problems.add(
            response_record(place, None),
            None,
            f"a response must be a mapping, got {type_name(response)}",
        )
        return _NO_ID
    given = response.get("question_id", _NO_ID)  # one lookup: whether it is there, and what
    if given is _NO_ID:
        qid = key
    elif key is not None and given != key:
        problems.add(
            response_record(place, None),
            "question_id",
            f"{short_repr(given)} differs from its key",
        )
        return _NO_ID
    else:
        qid = given
    if not isinstance(qid, ID_TYPES) or isinstance(qid, bool):
        message = (
            f"must be {AN_ID}, got {found(qid)}"
            if given is not _NO_ID or key is not None
            else "missing"
        )
        problems.add(response_record(place, None), "question_id", message)
        return _NO_ID
    return qid


def _unjoined(
    place: tuple[str, Any], qid: Any, problems: Problems, unknown: Unknown | None
) -> None:
    """A response for ``qid``, which is not a reference question's id: counted in ``unknown``
    (a problem without it)."""
    if unknown is not None:
        unknown.add(qid)
        return
    problems.add(
        response_record(place, qid),
        "question_id",
        "no question with this id in the reference dataset",
    )


def _check_values(
    response: Mapping[str, Any], place: tuple[str, Any], qid: Any, problems: Problems
) -> None:
    """Check the answer and error texts and the token counts and time of a response."""
    for key_name in _TEXT_KEYS:
        value = response.get(key_name)
        if value is not None and not isinstance(value, str):
            problems.add(
                response_record(place, qid), key_name, f"must be a string, got {found(value)}"
            )
    for key_name in _TOKEN_KEYS:
        value = response.get(key_name)
        if value is None:
            continue
        # The common cases first (hot loop): a plain int (never infinite) at least 0, or a
        # plain float in range; any other value is checked below.
        kind = type(value)
        if kind is int:
            if value >= 0:
                continue
        elif kind is float and 0 <= value < _INF:
            continue
        number = isinstance(value, (int, float)) and not isinstance(value, bool)
        if number and 0 <= value < _INF:
            continue
        wanted = "a finite number, at least 0" if number else "a number"
        problems.add(response_record(place, qid), key_name, f"must be {wanted}, got {found(value)}")


# The fast path (``_quick``): a response without any problem, as almost every response is,
# checked in one function with each test written out. Any doubt sends it to the checks above,
# which find and word every problem: the fast path only ever accepts what they accept, and gives
# the same Response.


def _quick(
    place: tuple[str, Any],
    key: Any,
    response: dict[str, Any],
    known: Container[Any],
    seen: Seen | None,
) -> Response | None:
    """``check_response``'s Response for a response that has no problem (no trial, no
    ``lost`` steps); None when it may have one (the checks above then read it)."""
    qid = response.get("question_id", key)
    if (
        (key is not None and qid != key)
        or not (type(qid) is str or type(qid) is int)
        or qid not in known
        or TRIAL_KEY in response
    ):
        return None
    status = response.get("status")
    if not (status is None or status == "success" or status == "error"):
        return None
    value = response.get("actual_answer")
    if value is not None and type(value) is not str:
        return None
    error = response.get("error", _ABSENT)
    if not (error is _ABSENT or error is None or type(error) is str):
        return None
    # The counts and the time: null, a plain int at least 0, or a float from 0 up, finite; the
    # usual response, with three int counts and a float time, in one test.
    tokens = response.get("input_tokens")
    output_tokens = response.get("output_tokens")
    total_tokens = response.get("total_tokens")
    elapsed = response.get("elapsed_sec")
    if not (
        type(tokens) is int
        and type(output_tokens) is int
        and type(total_tokens) is int
        and type(elapsed) is float
        and tokens >= 0
        and output_tokens >= 0
        and total_tokens >= 0
        and 0 <= elapsed < _INF
    ):
        for value in (tokens, output_tokens, total_tokens, elapsed):
            if value is not None and not (
                (type(value) is int and value >= 0) or (type(value) is float and 0 <= value < _INF)
            ):
                return None
    steps = response.get("actual_steps", _ABSENT)
    successful = None
    if steps is not _ABSENT:
        if type(steps) is not list:
            return None
        successful = []
        for i, step in enumerate(steps):
            if type(step) is not dict:
                return None
            step_status = step.get("status", "success")
            if step_status == "success":
                successful.append(i)
            elif type(step_status) is not str:
                return None
            value = step.get("args")
            if type(step.get("name")) is not str or "lost" in step:
                return None
            if not (value is None or type(value) is dict or type(value) is str):
                return None
            value = step.get("id")
            if not (value is None or type(value) is str or type(value) is int):
                return None
            value = step.get("error")
            if not (value is None or type(value) is str):
                return None
    if seen is not None:
        if seen.places.get(qid) is not None:
            return None
        seen.places[qid] = place
    # The fields set as Response.__init__ sets them, without its call from C (type.__call__),
    # which cost about as much as the checks of a response's fields.
    prepared = _new(Response)
    prepared.question_id = qid
    prepared.raw = response
    prepared.place = place
    prepared.is_error = status == "error" or (status is None and error is not _ABSENT)
    prepared.successful = successful
    prepared.plain_steps = True  # (none of its steps is lost: tested above)
    return prepared


class _Absent:
    """The type of ``_ABSENT``, a key's stand-in when the key is not there: no value has it."""

    __slots__ = ()


_ABSENT = _Absent()
_new = object.__new__
