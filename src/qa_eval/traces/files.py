"""Trace files read as records: one JSON document or JSON Lines, gzip-compressed too, told apart
by the content whatever the file's name (docs/traces.md, *Files*), and whether a file is OTLP
protobuf; every problem one line naming the file and the line.
"""

from __future__ import annotations

import gzip
from collections.abc import Iterator
from pathlib import Path
from typing import IO, Any

from ..errors import InputError
from ..io.files import parse_json
from ..io.limits import one_line
from .formats import load

__all__ = [
    "BINARY",
    "LINES",
    "decode",
    "is_binary",
    "open_file",
    "read_all",
    "records_of",
    "suffix_of",
]

LINES = (".jsonl", ".ndjson")
"""Names of files streamed line by line (unless their first line is not JSON on its own)."""
BINARY = (".pb", ".binpb", ".protobuf")
"""Names of files read as OTLP protobuf."""


def open_file(path: Path) -> IO[bytes]:
    try:
        if path.suffix.lower() == ".gz":
            packed = gzip.open(path, "rb")  # noqa: SIM115  # closed by the caller
            try:
                packed.peek(1)  # not gzip: fails here, not later
            except BaseException:
                packed.close()
                raise
            return packed  # type: ignore[return-value]
        return path.open("rb")
    except FileNotFoundError:
        raise InputError("no such file", source=str(path)) from None
    except IsADirectoryError:
        raise InputError("is a directory, not a file", source=str(path)) from None
    except (OSError, EOFError) as e:
        reason = getattr(e, "strerror", None) or one_line(str(e))
        raise InputError(f"cannot read: {reason}", source=str(path)) from None


def suffix_of(path: Path) -> str:
    suffixes = [s.lower() for s in path.suffixes]
    if suffixes and suffixes[-1] == ".gz":
        suffixes.pop()
    return suffixes[-1] if suffixes else ""


def decode(raw: bytes, source: str, record: str | None) -> str:
    try:
        return raw.decode("utf-8-sig")
    except UnicodeDecodeError as e:
        raise InputError(
            f"not UTF-8 text (byte 0x{raw[e.start]:02x} at offset {e.start})",
            source=source,
            record=record,
        ) from None


def read_all(file: IO[bytes], source: str) -> bytes:
    try:
        return file.read()
    except (OSError, EOFError) as e:  # a truncated or corrupt .gz
        raise InputError(f"cannot read: {one_line(str(e))}", source=source) from None


def _lines(file: IO[bytes], source: str, whole: Path | None = None) -> Iterator[Any]:
    """The records of a JSON Lines file, one at a time (blank lines skipped). ``whole``: the
    file to read as one JSON document instead when its first line is not JSON on its own (a
    document written over several lines, whatever the file's name)."""
    number = 0
    first = True
    try:
        for number, raw in enumerate(file, start=1):
            if not raw.strip():
                continue
            text = decode(raw, source, f"line {number}")
            if first and whole is not None:
                first = False
                try:
                    record = parse_json(text, source, f"line {number}")
                except InputError as line_error:
                    file.close()
                    try:
                        records = list(_document(whole, source))
                    except InputError:
                        raise line_error from None
                    yield from records
                    return
                yield record
                continue
            yield parse_json(text, source, f"line {number}")
    except (OSError, EOFError) as e:
        raise InputError(
            f"cannot read: {one_line(str(e))}", source=source, record=f"after line {number}"
        ) from None
    finally:
        file.close()


def _document(path: Path, source: str) -> Iterator[Any]:
    """A file read whole: one JSON document, else JSON Lines when its first line is a JSON
    document on its own (what the collector's file exporter writes into a ``.json`` file)."""
    file = open_file(path)
    with file:
        raw = read_all(file, source)
    text = decode(raw, source, None)
    if not text.strip():
        yield None
        return
    try:
        document = parse_json(text, source)
    except InputError:
        lines = text.split("\n")
        filled = [line for line in lines if line.strip()]
        if len(filled) < 2 or not _parses(filled[0], source):
            raise
        for number, line in enumerate(lines, start=1):
            if line.strip():
                yield parse_json(line, source, f"line {number}")
        return
    yield document


def _parses(line: str, source: str) -> bool:
    """Whether one line is a JSON document on its own."""
    try:
        parse_json(line, source)
    except InputError:
        return False
    return True


def records_of(path: Path, source: str) -> Iterator[Any]:
    """The top-level records of a trace file: each line of JSON Lines, or the one JSON
    document, told by the content whatever the file's name (``.jsonl`` and ``.ndjson`` are
    streamed line by line unless their first line is not JSON on its own)."""
    if suffix_of(path) in LINES:
        yield from _lines(open_file(path), source, whole=path)
        return
    yield from _document(path, source)


def is_binary(path: Path, forced: str) -> bool:
    """Whether a file is read as bytes (OTLP protobuf): forced, named so, or looking so."""
    if forced == "otlp-proto":
        return True
    if forced != "auto":
        return False
    module = load("otlp-proto", required=False)
    if module is None or not hasattr(module, "looks_binary"):
        return False
    if suffix_of(path) in BINARY:
        return True
    with open_file(path) as file:
        try:
            head = file.read(64)
        except (OSError, EOFError):
            return False
    return bool(module.looks_binary(head))
