"""A run's per-template summaries kept in a temporary file (:class:`TemplateSummaries`), and the
aggregates file written with them read back one at a time (:func:`write_aggregates`).

A streamed run (``evaluate -o RESULTS.jsonl``) summarises each template once its values are in
(``PartialAggregates.in_order``), and keeps its summary here, written to a nameless temporary
file (``tempfile.TemporaryFile``: the system removes it when it is closed or the process ends,
also on an error, Ctrl-C or a crash) instead of in memory: 8 bytes a template. The aggregates
file is then written piece by piece, each template's entry as the whole document would have it,
between the text of the rest: the same bytes as ``io.files.write_data`` of the aggregates with a
``dict`` of the summaries (the rare document whose pieces cannot be joined so is written whole).
"""

from __future__ import annotations

import os
import pickle
from array import array
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import orjson

from ..io.files import JSON_SUFFIXES, YAML_SUFFIXES, check_output_path, data_bytes, write_data
from ..io.limits import JSON_OPTIONS

__all__ = ["TemplateSummaries", "plain", "write_aggregates"]


class TemplateSummaries(Mapping[Any, Any]):
    """``per_template`` of a streamed run: template id -> summary, in the order they were set
    (each set once: :meth:`add`), read back from a temporary file when asked for (a new copy
    each time). A read-only ``Mapping``; ``dict(summaries)`` makes a dict of it."""

    def __init__(self) -> None:
        self.file: Any = None
        self.ends = array("q")
        """Where each entry's pickle ends in the file (the first starts at 0)."""
        self.index: dict[Any, int] | None = None
        """Template id -> entry number, made when a template is first looked up by id."""

    def add(self, template: Any, summary: dict[str, Any]) -> None:
        """Keep a template's summary (after those kept before it)."""
        if self.file is None:
            import tempfile
            import weakref

            self.file = tempfile.TemporaryFile(prefix="qa-eval-templates-")  # noqa: SIM115
            weakref.finalize(self, self.file.close)  # (closed with its owner, unwarned)
        data = pickle.dumps((template, summary), protocol=pickle.HIGHEST_PROTOCOL)
        start = self.ends[-1] if self.ends else 0
        os.pwrite(self.file.fileno(), data, start)
        self.ends.append(start + len(data))
        if self.index is not None:
            self.index.setdefault(template, len(self.ends) - 1)

    __setitem__ = add

    def _entry(self, number: int) -> tuple[Any, dict[str, Any]]:
        start = self.ends[number - 1] if number else 0
        size = self.ends[number] - start
        data = os.pread(self.file.fileno(), size, start)
        if len(data) != size:
            raise OSError("the temporary file of the per-template summaries was cut short")
        entry: tuple[Any, dict[str, Any]] = pickle.loads(data)
        return entry

    def entries(self) -> Iterator[tuple[Any, dict[str, Any]]]:
        """(template id, summary), in order, one read at a time."""
        for number in range(len(self.ends)):
            yield self._entry(number)

    def items(self) -> Iterator[tuple[Any, dict[str, Any]]]:  # type: ignore[override]
        """(template id, summary), in order (each read once)."""
        return self.entries()

    def values(self) -> Iterator[dict[str, Any]]:  # type: ignore[override]
        """The summaries, in order."""
        return (summary for _, summary in self.entries())

    def __iter__(self) -> Iterator[Any]:
        return (template for template, _ in self.entries())

    def __len__(self) -> int:
        return len(self.ends)

    def __getitem__(self, template: Any) -> dict[str, Any]:
        if self.index is None:  # (only when looked up: an iteration needs none)
            self.index = {}
            for number, key in enumerate(self):
                self.index.setdefault(key, number)
        return self._entry(self.index[template])[1]

    def __repr__(self) -> str:
        return f"TemplateSummaries({len(self)} templates)"

    def __reduce__(self) -> Any:  # (pickled, e.g. to another process: as a dict)
        return (dict, (list(self.entries()),))

    def close(self) -> None:
        """Let the temporary file go (the summaries with it)."""
        if self.file is not None:
            self.file.close()
            self.file = None
            self.ends = array("q")
            self.index = None


def plain(aggregates: dict[str, Any]) -> dict[str, Any]:
    """The aggregates with their ``per_template`` a dict (read back whole when it is kept in a
    file): what a serialiser of plain data takes."""
    per_template = aggregates.get("per_template")
    if isinstance(per_template, TemplateSummaries):
        return {**aggregates, "per_template": dict(per_template.entries())}
    return aggregates


def write_aggregates(path: str | os.PathLike[str], aggregates: dict[str, Any]) -> None:
    """Write aggregates as ``io.files.write_data`` does (format by extension), the same bytes;
    a ``per_template`` kept in a file (:class:`TemplateSummaries`) is read back one template at
    a time, each entry written between the text of the rest into a file beside ``path``, then
    put in its place (a failure leaves no half-written file)."""
    per_template = aggregates.get("per_template")
    if not isinstance(per_template, TemplateSummaries) or not len(per_template):
        write_data(path, plain(aggregates))
        return
    target = Path(path)
    check_output_path(target)
    part = target.with_name(f".{target.name}.part")
    try:
        with open(part, "wb") as out:
            out.writelines(_pieces(target, aggregates, per_template))
        os.replace(part, target)
    except _Whole:  # a document whose pieces are not the whole's text: written whole
        write_data(target, plain(aggregates))
    finally:
        part.unlink(missing_ok=True)


class _Whole(Exception):
    """The aggregates cannot be written in pieces that join into the whole's text."""


_KEY = "per_template"


def _pieces(
    path: Path, aggregates: dict[str, Any], per_template: TemplateSummaries
) -> Iterator[bytes]:
    """The aggregates file's bytes in pieces, ``per_template``'s entries read as they are
    written (``_Whole`` when they would not be the whole's text)."""
    if next(iter(aggregates)) != _KEY:
        raise _Whole
    rest = {**aggregates, _KEY: {}}
    suffix = path.suffix.lower()
    if suffix in YAML_SUFFIXES:
        yield from _yaml_pieces(path, rest, per_template)
        return
    indent = suffix in JSON_SUFFIXES  # (else JSON Lines: one line)
    option = JSON_OPTIONS | orjson.OPT_INDENT_2 if indent else JSON_OPTIONS
    start, end, between, empty = (
        (b'{\n  "per_template": {\n', b"\n  }\n}", b",\n", b'{\n  "per_template": {}')
        if indent
        else (b'{"per_template":{', b"}}", b",", b'{"per_template":{}')
    )
    tail = _orjson(rest, option)  # (io.limits.dump_json: orjson, unless it refuses a piece)
    if not tail.startswith(empty):
        raise _Whole
    yield start
    for number, entry in enumerate(per_template.entries()):
        piece = _orjson({_KEY: dict([entry])}, option)
        if not (piece.startswith(start) and piece.endswith(end)):
            raise _Whole
        yield (between if number else b"") + piece[len(start) : -len(end)]
    yield (b"\n  }" if indent else b"}") + tail[len(empty) :] + b"\n"


def _orjson(data: Any, option: int) -> bytes:
    """``io.limits.dump_json``'s bytes when orjson writes them (``_Whole`` when it refuses)."""
    try:
        return orjson.dumps(data, option=option, default=str)
    except orjson.JSONEncodeError:
        raise _Whole from None


def _yaml_pieces(
    path: Path, rest: dict[str, Any], per_template: TemplateSummaries
) -> Iterator[bytes]:
    """The YAML text in pieces (``_Whole`` for an anchor, which is numbered over the whole
    document)."""
    text = data_bytes(path, rest)
    empty, start = b"per_template: {}\n", b"per_template:\n"
    if not text.startswith(empty) or b"&id" in text:
        raise _Whole
    yield start
    for entry in per_template.entries():
        piece = data_bytes(path, {_KEY: dict([entry])})
        if not piece.startswith(start) or b"&id" in piece:
            raise _Whole
        yield piece[len(start) :]
    yield text[len(empty) :]
