"""A reference dataset in JSON Lines read as a stream (:class:`JsonLinesReference`).

Two forms: one template a line (``{"template_id": ..., "questions": [...]}``), or one question a
line carrying its ``template_id`` (the line is the question without that key, in a template of
its own: a template's questions need not be on consecutive lines). A file holds one form: a line
of the other form is an error naming it. ``.gz`` files are read decompressed.

A run over it holds no question longer than it is evaluated. One pass reads and checks every
line (the problems ``prepare_reference`` finds, named by file, line and field; every one found
before anything is evaluated) and keeps, per question, a 64-bit hash of its id sorted with the
question's place (12 bytes a question, not a dict of Python objects: ``IdIndex``) and its
content's digest, sorted into a temporary file a run at a time, which gives the fingerprint and
is let go; the run then reads the lines again, preparing each question as its turn comes. A
responses file read as a stream (``run.stream``) is joined to the questions through that index.
The run's results and aggregates, and the reference fingerprint, are those of the same dataset
read whole.
"""

from __future__ import annotations

import os
from array import array
from bisect import bisect_left
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

from ..errors import InputError, short_repr
from ..io.files import JSONL_SUFFIXES, parse_json
from .options import Spell, python_name
from .places import DigestRuns
from .prepare.records import AN_ID, ID_TYPES, Problems, Question, found, type_name, wrong
from .prepare.reference import prepare_question
from .shards import id_key, key_hash
from .signature import digests_fingerprint, question_digest
from .stream import decode_line, gz_lines, open_input
from .tags import RESULT_TAGS, is_tag

__all__ = [
    "Checked",
    "IdIndex",
    "IdLookup",
    "JsonLinesReference",
    "StreamedReference",
    "as_templates",
    "check_lines",
    "jsonl_path",
    "lines_of",
    "streams_with",
    "unprepared",
]

TEMPLATE, QUESTION = "template", "question"


def jsonl_path(path: str) -> bool:
    """Whether a file is JSON Lines by its name (``.jsonl``, ``.ndjson``, also ``.gz``)."""
    suffixes = [s.lower() for s in Path(path).suffixes[-2:]]
    if suffixes and suffixes[-1] == ".gz":
        suffixes.pop()
    return bool(suffixes) and suffixes[-1] in JSONL_SUFFIXES


def streams_with(reference: str, responses: str | tuple[str, ...]) -> bool:
    """Whether a run that streams its results reads this reference as a stream: a JSON Lines
    reference, with its responses in a JSON Lines file (not agent traces)."""
    if not jsonl_path(reference) or not isinstance(responses, str) or not jsonl_path(responses):
        return False
    from ..traces.read import is_trace_file

    return not is_trace_file(responses)


class _Unseen(dict):  # type: ignore[type-arg]
    """A ``seen`` for ``prepare_question`` that remembers nothing: duplicate ids are found
    afterwards, from the compact index (then the file is checked again with a real one)."""

    def __contains__(self, key: object) -> bool:
        return False

    def __setitem__(self, key: Any, value: Any) -> None:
        return None


class _Shared(dict):  # type: ignore[type-arg]
    """A ``seen`` for ``prepare_question`` that remembers only the ids whose hash ``shared``
    holds (hashes two questions share): finds the duplicate ids as a real one does, and keeps
    the places of distinct ids that share a hash for the index (``found``)."""

    def __init__(self, shared: set[int]) -> None:
        super().__init__()
        self.shared = shared
        self.count = 0
        self.found: dict[int, dict[bytes, int]] = {}
        """By shared hash, the place of each id kept (the questions are noted in order: valid
        when no problem was found)."""

    def __contains__(self, key: object) -> bool:
        return key_hash(id_key(key)) in self.shared and dict.__contains__(self, key)

    def __setitem__(self, key: Any, value: Any) -> None:
        hashed = key_hash(id_key(key))
        if hashed in self.shared:
            dict.__setitem__(self, key, value)
            self.found.setdefault(hashed, {})[id_key(key)] = self.count
        self.count += 1


@dataclass
class Checked:
    """What the checking pass kept of some lines: per question its id key's hash and its
    digest (``digests``; sorted into a temporary file a run at a time when ``runs`` is given);
    the template ids, the ``by`` keys some question has a value for, and the problems."""

    source: str
    count: int = 0
    form: tuple[str, int] | None = None
    hashes: array[int] = field(default_factory=lambda: array("Q"))
    digests: bytearray = field(default_factory=bytearray)
    templates: dict[Any, None] = field(default_factory=dict)
    tags: set[str] = field(default_factory=set)
    problems: Problems | None = None
    runs: DigestRuns | None = None

    def add(self, question: Question, raw: Any, wanted: Sequence[str]) -> None:
        """Keep what the index needs of a question read (``raw``: its record as fingerprinted)."""
        self.hashes.append(key_hash(id_key(question.question_id)))
        self.digests += question_digest(question.template_id, raw)
        if self.runs is not None:
            self.digests = self.runs.keep(self.digests)
        self.templates[question.template_id] = None
        for tag in wanted:
            if is_tag(raw.get(tag)):
                self.tags.add(tag)
        self.count += 1

    def fingerprint(self) -> str:
        """The reference fingerprint of its questions (``signature.digests_fingerprint``)."""
        if self.runs is None or not self.runs.spans:
            return digests_fingerprint(self.digests)  # (sorts them in place)
        self.runs.write(self.digests)
        self.digests = bytearray()
        return self.runs.fingerprint()


def lines_of(
    lines: Iterator[tuple[int, int, bytes]], source: str
) -> Iterator[tuple[int, str, Any]]:
    """(line number, form, record) of each non-blank line; the form of a record that is not a
    mapping is None."""
    for number, offset, line in lines:
        if not line.strip():
            continue
        record = parse_json(decode_line(line, source, number, offset), source, f"line {number}")
        if not isinstance(record, dict):
            yield number, "", record
        else:
            yield number, TEMPLATE if "questions" in record else QUESTION, record


def _questions(
    number: int, form: str, record: Any, seen: dict[Any, str], problems: Problems, copies: bool
) -> Iterator[tuple[Question, Any]]:
    """The questions of one line, prepared, each with its record as fingerprinted (a question
    line's without its ``template_id``); the line's problems go to ``problems``."""
    where = f"line {number}"
    if not form:
        message = f"a line must be a mapping (a template or a question), got {type_name(record)}"
        problems.add(where, None, message)
        return
    template_id = record.get("template_id")
    if not isinstance(template_id, ID_TYPES) or isinstance(template_id, bool):
        problems.add(where, "template_id", wrong(record, "template_id", AN_ID))
        return
    if form == QUESTION:
        raw = {k: v for k, v in record.items() if k != "template_id"}
        prepared = prepare_question(raw, 0, template_id, where, seen, problems, copies)
        if prepared is not None:
            yield prepared, raw
        return
    t_record = f"{where} template {short_repr(template_id)}"
    items = record.get("questions")
    if not isinstance(items, list):
        problems.add(t_record, "questions", f"must be a list, got {found(items)}")
        return
    for q_pos, raw in enumerate(items):
        prepared = prepare_question(raw, q_pos, template_id, t_record, seen, problems, copies)
        if prepared is not None:
            yield prepared, raw


def _same_form(
    first: tuple[str, int] | None, form: str, number: int, source: str
) -> tuple[str, int] | None:
    """The form of the file (and the line that set it) after line ``number``; ``InputError``
    when that line is of the other form."""
    if not form:
        return first
    if first is None:
        return form, number
    if form != first[0]:
        a = {TEMPLATE: "a template (a record with questions)", QUESTION: "a question"}
        raise InputError(
            f"{a[form]} here, but line {first[1]} is {a[first[0]]}: a reference in JSON Lines "
            "has one template a line or one question a line, not both",
            source=source,
            record=f"line {number}",
        )
    return first


def check_lines(
    lines: Iterator[tuple[int, int, bytes]],
    source: str,
    wanted: Sequence[str] = (),
    seen: dict[Any, str] | None = None,
    runs: DigestRuns | None = None,
) -> Checked:
    """Check lines of a JSON Lines reference (see the module docstring); ``seen``: a dict of
    the ids read, to find duplicates as they come (None: found afterwards, from the hashes);
    ``runs``: where the questions' digests are sorted, when given."""
    out = Checked(source, problems=Problems(source), runs=runs)
    assert out.problems is not None
    memo = _Unseen() if seen is None else seen
    for number, form, record in lines_of(lines, source):
        out.form = _same_form(out.form, form, number, source)
        for question, raw in _questions(number, form, record, memo, out.problems, False):
            out.add(question, raw, wanted)
    return out


class JsonLinesReference:
    """A reference dataset in a JSON Lines file, for a run that reads it as a stream
    (``run_evaluation``, ``iter_evaluation`` and ``evaluate_files`` accept it where they take
    the reference, with the responses in a :class:`~qa_eval.run.stream.JsonLinesResponses`).
    ``by``: the keys the aggregates group by, checked against the questions as they are read
    (named as ``spell`` names the option)."""

    def __init__(
        self, path: str | os.PathLike[str], by: Sequence[str] = (), spell: Spell = python_name
    ) -> None:
        self.path = Path(path)
        self.by = tuple(by)
        self.spell = spell

    def __repr__(self) -> str:
        return f"JsonLinesReference({str(self.path)!r})"

    def open(self) -> IO[bytes]:
        """The file, opened to read bytes (decompressed when ``.gz``)."""
        return open_input(self.path)

    def records(self, limit: int | None = None) -> Iterator[Any]:
        """The records of its lines, in order (the first ``limit``)."""
        with self.open() as file:
            for taken, (_, _, record) in enumerate(
                lines_of(gz_lines(file, str(self.path)), str(self.path))
            ):
                if limit is not None and taken >= limit:
                    return
                yield record

    def head(self, limit: int) -> list[dict[str, Any]]:
        """Its first ``limit`` questions as a reference dataset read whole (a list of
        templates): what an estimate from a sample reads."""
        out: list[dict[str, Any]] = []
        taken = 0
        for record in self.records():
            if taken >= limit:
                break
            if not isinstance(record, dict):
                continue
            if "questions" in record:
                items = record["questions"] if isinstance(record["questions"], list) else []
                out.append({**record, "questions": items[: limit - taken]})
                taken += len(out[-1]["questions"])
            else:
                template_id = record.get("template_id")
                raw = {k: v for k, v in record.items() if k != "template_id"}
                out.append({"template_id": template_id, "questions": [raw]})
                taken += 1
        return out

    def count(self) -> int:
        """How many questions it has (read through once)."""
        total = 0
        for record in self.records():
            if isinstance(record, dict):
                items = record.get("questions")
                total += len(items) if isinstance(items, list) else ("questions" not in record)
        return total

    def check(self, source: str | None = None) -> StreamedReference:
        """Read and check every line; ``InputError`` (the first problem, with how many more)
        before anything is evaluated. Keeps the compact index of the run."""
        source = source or str(self.path)
        runs = DigestRuns()
        try:
            with self.open() as file:
                checked = check_lines(gz_lines(file, source), source, self.by, runs=runs)
            index = StreamedReference(self, source, [checked])
        finally:
            runs.close()
        shared = index.index.shared()
        if shared:  # two questions with one id, or (rarely) two ids with one hash
            with self.open() as file:  # found again as they come, to name each as prepare does
                seen = _Shared(shared)
                checked = check_lines(gz_lines(file, source), source, self.by, seen)
            if checked.problems is not None and not checked.problems.items:
                index.index.clashes = seen.found
        self.check_by(checked)
        assert checked.problems is not None
        checked.problems.raise_if_any()
        return index

    def check_by(self, checked: Checked) -> None:
        """A ``by`` key no question has a value for is an ``InputError`` (as
        ``check_by_reference`` says it for a dataset read whole)."""
        for key in dict.fromkeys(self.by):
            if key in RESULT_TAGS or key in checked.tags:
                continue
            have: set[str] = set()
            for record in self.records():
                for question in raw_questions(record):
                    have.update(k for k, v in question.items() if is_tag(v))
            have -= {"id", "question_text", "reference_answer", "template_id"}
            raise InputError(
                f"{self.spell('by')} {key}: no question has this key (question keys: "
                f"{', '.join([*sorted(have), 'template_id', 'status'])})",
                source=checked.source,
            )


def as_templates(records: list[Any], source: str) -> list[Any]:
    """The records of a JSON Lines reference read whole (``io.files.read_data``) as a list of
    templates (a question line: a template of its own, without its ``template_id``), which a run
    in memory takes: the same results, aggregates and fingerprint as the file read as a stream.
    Both forms in one file: ``InputError`` naming the line."""
    numbers = getattr(records, "line_numbers", None) or range(1, len(records) + 1)
    out: list[Any] = []
    form = None
    for number, record in zip(numbers, records, strict=True):
        kind = (
            "" if not isinstance(record, dict) else TEMPLATE if "questions" in record else QUESTION
        )
        form = _same_form(form, kind, number, source)
        if kind == QUESTION:
            raw = {k: v for k, v in record.items() if k != "template_id"}
            record = {"template_id": record.get("template_id"), "questions": [raw]}
        out.append(record)
    return out


def raw_questions(record: Any) -> list[dict[str, Any]]:
    """The question records of a line (a template's, or the line's own)."""
    if not isinstance(record, dict):
        return []
    if "questions" not in record:
        return [record]
    items = record["questions"]
    return [q for q in items if isinstance(q, dict)] if isinstance(items, list) else []


class IdIndex:
    """The ids of a reference's questions, compactly: the 64-bit hashes of their keys
    (``shards.id_key``) sorted (``hashes``) with each one's place (``order``): 12 bytes a
    question. Two distinct ids with one hash (odds about n²/2^65) have their places by key in
    ``clashes``. An id not in the reference whose hash is a question's is taken for that
    question's: its response is then refused as a changed file when it is read again."""

    def __init__(
        self, hashes: Any, order: Any, clashes: dict[int, dict[bytes, int]] | None = None
    ) -> None:
        self.hashes, self.order = hashes, order
        self.clashes: dict[int, dict[bytes, int]] = clashes or {}
        # Looked up with bisect over Python views: a scalar numpy.searchsorted costs ~30x more.
        self._hashes = memoryview(hashes).cast("B").cast("Q") if len(hashes) else ()
        self._order = memoryview(order).cast("B").cast(order.dtype.char) if len(order) else ()

    @classmethod
    def of(cls, parts: Sequence[Checked]) -> IdIndex:
        """The index of the questions of ``parts``, in order (their hashes are let go)."""
        import numpy as np

        if len(parts) == 1:  # (no copy: the part's array, let go below)
            hashes = np.frombuffer(parts[0].hashes, dtype=np.uint64)
        else:
            hashes = np.concatenate(
                [np.frombuffer(part.hashes, dtype=np.uint64) for part in parts if part.count]
                or [np.zeros(0, np.uint64)]
            )
        for part in parts:
            part.hashes = array("Q")
        order = np.argsort(hashes, kind="stable")
        if len(hashes) < 1 << 32:
            order = order.astype(np.uint32)  # 4 bytes a question when it fits
        sorted_hashes = hashes[order]
        return cls(sorted_hashes, order)

    def save(self, folder: Path) -> None:
        """Write it to files in ``folder`` (read by :meth:`load`, in another process)."""
        import pickle

        import numpy as np

        (folder / "clashes").write_bytes(pickle.dumps(self.clashes))
        for name in ("hashes", "order"):
            np.save(folder / f"{name}.npy", getattr(self, name))

    @classmethod
    def load(cls, folder: Path) -> IdIndex:
        """The index :meth:`save` wrote (its arrays mapped, not read)."""
        import pickle

        import numpy as np

        arrays = [np.load(folder / f"{name}.npy", mmap_mode="r") for name in ("hashes", "order")]
        return cls(arrays[0], arrays[1], pickle.loads((folder / "clashes").read_bytes()))

    def find(self, key: bytes) -> int:
        """The place of the question whose id has this key (or this key's hash: see the class
        docstring); -1 when there is none."""
        hashed = key_hash(key)
        hashes = self._hashes
        at = bisect_left(hashes, hashed)
        if at >= len(hashes) or hashes[at] != hashed:
            return -1
        clash = self.clashes.get(hashed)
        if clash is not None:
            return clash.get(key, -1)
        return self._order[at]  # type: ignore[no-any-return]

    def shared(self) -> set[int]:
        """The hashes two or more questions share (one id twice, or two ids: rarely)."""
        import numpy as np

        same = np.flatnonzero(self.hashes[1:] == self.hashes[:-1])
        return {int(h) for h in self.hashes[same]} - set(self.clashes)

    def duplicates(self) -> bool:
        """Whether two questions may have one id (they share a hash not known to clash)."""
        return bool(self.shared())

    def shard_places(self, shard: tuple[int, int]) -> list[int]:
        """The places of the questions of shard ``(i, N)`` (``shards.shard_of``), in order."""
        import numpy as np

        index, count = shard
        chosen = self.order[self.hashes % np.uint64(count) == np.uint64(index - 1)]
        return np.sort(chosen).tolist()  # type: ignore[no-any-return]


class StreamedReference:
    """The checked questions of a :class:`JsonLinesReference`: their count, templates and
    fingerprint, the compact index of their ids (``index``), and the questions read again in
    order (:meth:`each`). ``chunks``: when worker processes checked it, the byte ranges they
    read (start, end, first place, questions, first line number)."""

    def __init__(self, origin: JsonLinesReference, source: str, parts: list[Checked]) -> None:
        self.origin = origin
        self.source = source
        self.count = sum(part.count for part in parts)
        self.templates = len(dict.fromkeys(t for part in parts for t in part.templates))
        if len(parts) == 1:
            self.fingerprint = parts[0].fingerprint()
        else:
            self.fingerprint = digests_fingerprint(bytearray().join(p.digests for p in parts))
        self.index = IdIndex.of(parts)
        self.copies = False
        """Whether the questions read again carry the copies of their steps (``Question.copies``:
        a run that keeps every result)."""
        self.chunks: list[tuple[int, int, int, int, int]] | None = None

    def __len__(self) -> int:
        return self.count

    def shard_places(self, shard: tuple[int, int]) -> list[int]:
        """The places of the questions of shard ``(i, N)`` (``shards.shard_of``), in order."""
        return self.index.shard_places(shard)

    def lookup(self) -> IdLookup:
        """The ids, as a container a responses file is checked against."""
        return IdLookup(self.index)

    def each(
        self, chosen: Sequence[int] | None = None, prepare: bool = True
    ) -> Iterator[tuple[int, Question]]:
        """Each question (of ``chosen``, increasing places) with its place, read again:
        prepared, or (``prepare=False``) only its template, id and record. ``InputError`` when
        the file changed since it was checked."""
        wanted = iter(chosen) if chosen is not None else None
        next_place = next(wanted, -1) if wanted is not None else 0
        place = 0
        problems = Problems(self.source)
        changed = "the file changed while it was being evaluated"
        find = self.index.find
        with self.origin.open() as file:
            for number, form, record in lines_of(gz_lines(file, self.source), self.source):
                if next_place < 0:
                    return
                if prepare:
                    questions = _questions(number, form, record, _Unseen(), problems, self.copies)
                else:
                    questions = unprepared(number, form, record)
                for question, _ in questions:
                    if place >= self.count or find(id_key(question.question_id)) != place:
                        raise InputError(changed, source=self.source, record=f"line {number}")
                    if place == next_place:
                        yield place, question
                        next_place = place + 1 if wanted is None else next(wanted, -1)
                    place += 1
                if problems.items:
                    raise InputError(changed, source=self.source, record=f"line {number}")
        if place != self.count:
            raise InputError(changed, source=self.source)


def unprepared(number: int, form: str, record: Any) -> Iterator[tuple[Question, Any]]:
    """The questions of a checked line, not prepared (a worker process prepares them)."""
    where = f"line {number}"
    template_id = record.get("template_id")
    for raw in raw_questions(record) if form == TEMPLATE else [record]:
        if form == QUESTION:
            raw = {k: v for k, v in raw.items() if k != "template_id"}
        yield Question(template_id, raw.get("id"), raw, None, where), raw


class IdLookup:
    """The reference ids as a container (``qid in lookup``) and mapping (``lookup[qid]``: its
    place) for checking a responses file, remembering the last id looked up; :meth:`places`
    the compact record of responses seen that ``prepare.responses.Seen`` keeps."""

    def __init__(self, index: IdIndex) -> None:
        self.index = index
        self._last: tuple[Any, type, int] = (None, type(None), -1)

    def place(self, qid: Any) -> int:
        last, kind, place = self._last
        if kind is type(qid) and last == qid:
            return place
        place = self.index.find(id_key(qid))
        self._last = (qid, type(qid), place)
        return place

    def __contains__(self, qid: object) -> bool:
        return self.place(qid) >= 0

    def __getitem__(self, qid: Any) -> int:
        place = self.place(qid)
        if place < 0:
            raise KeyError(qid)
        return place

    def places(self, answered: bytearray, exact: bool = False) -> SeenPlaces:
        """Where ``Seen`` notes each response read: a question's mark in ``answered`` (one byte
        a place), or (``exact``) its first response's line number; its trials in a dict."""
        return SeenPlaces(self, answered, exact)


class SeenPlaces:
    """``Seen.places`` in a byte a question: whether it has a response (a response seen again
    sets ``collided``: the run is an error, found again ``exact``, to name the first response's
    line), or (``exact``) the first response's line number in 8 bytes; a dict only for the
    questions answered with ``trial``."""

    def __init__(self, lookup: IdLookup, answered: bytearray, exact: bool = False) -> None:
        self.lookup = lookup
        self.first: Any = array("q", [0]) * len(lookup.index.order) if exact else answered
        self.exact = exact
        self.collided = False
        self.trials: dict[int, dict[Any, Any]] = {}

    def get(self, qid: Any) -> Any:
        place = self.lookup.place(qid)
        first = self.first[place]
        if not first:
            return None
        if place in self.trials:
            return self.trials[place]
        self.collided = self.collided or not self.exact
        return ("line", first)

    def __setitem__(self, qid: Any, value: Any) -> None:
        place = self.lookup.place(qid)
        if isinstance(value, dict):
            self.trials[place] = value
            value = next(iter(value.values()))
        self.first[place] = value[1] if self.exact else 1
