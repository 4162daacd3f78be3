"""Read and write YAML, JSON and JSON Lines; every error names the file, the line and the problem.

YAML is read with PyYAML's safe loader (the C one when available); JSON with orjson. The format
is chosen by the file's extension (``.yaml``/``.yml``, ``.json``, ``.jsonl``/``.ndjson``).
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import orjson
import yaml

from .errors import InputError

__all__ = [
    "dump_json",
    "read_data",
    "read_reference",
    "read_responses",
    "read_results",
    "write_data",
]

try:
    _Loader: Any = yaml.CSafeLoader
    _Dumper: Any = yaml.CSafeDumper
except AttributeError:  # PyYAML built without libyaml
    _Loader = yaml.SafeLoader
    _Dumper = yaml.SafeDumper

YAML_SUFFIXES = (".yaml", ".yml")
JSON_SUFFIXES = (".json",)
JSONL_SUFFIXES = (".jsonl", ".ndjson")


class LineList(list):  # type: ignore[type-arg]
    """A list of JSON Lines records that remembers each record's line number."""

    line_numbers: list[int]


def _text(path: Path) -> str:
    try:
        raw = path.read_bytes()
    except FileNotFoundError:
        raise InputError("no such file", source=str(path)) from None
    except IsADirectoryError:
        raise InputError("is a directory, not a file", source=str(path)) from None
    except OSError as e:
        raise InputError(f"cannot read: {e.strerror}", source=str(path)) from None
    try:
        return raw.decode("utf-8-sig")
    except UnicodeDecodeError as e:
        line = raw[: e.start].count(b"\n") + 1
        raise InputError(
            f"not UTF-8 text (byte 0x{raw[e.start]:02x} at offset {e.start})",
            source=str(path),
            record=f"line {line}",
        ) from None


def _yaml(text: str, source: str) -> Any:
    try:
        return yaml.load(text, Loader=_Loader)
    except yaml.MarkedYAMLError as e:
        mark = e.problem_mark or e.context_mark
        where = f"line {mark.line + 1}, column {mark.column + 1}" if mark else None
        raise InputError(
            f"YAML does not parse: {e.problem or e}", source=source, record=where
        ) from None
    except yaml.YAMLError as e:
        raise InputError(f"YAML does not parse: {e}", source=source) from None


def _json(text: str, source: str, record: str | None = None) -> Any:
    try:
        return orjson.loads(text)
    except orjson.JSONDecodeError as fast_error:
        try:  # NaN / Infinity as Python writes them
            return json.loads(text)
        except json.JSONDecodeError:
            where = record or f"line {fast_error.lineno}, column {fast_error.colno}"
            raise InputError(
                f"JSON does not parse: {fast_error.msg}", source=source, record=where
            ) from None


def _jsonl(text: str, source: str) -> LineList:
    records = LineList()
    records.line_numbers = []
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        records.append(_json(line, source, f"line {number}"))
        records.line_numbers.append(number)
    return records


def read_data(path: str | os.PathLike[str]) -> Any:
    """Parse a YAML, JSON or JSON Lines file, chosen by its extension."""
    file = Path(path)
    text = _text(file)
    suffix = file.suffix.lower()
    if suffix in JSONL_SUFFIXES:
        return _jsonl(text, str(file))
    if suffix in JSON_SUFFIXES:
        return _json(text, str(file))
    if suffix in YAML_SUFFIXES:
        return _yaml(text, str(file))
    # No known extension: JSON, else JSON Lines, else YAML.
    try:
        return orjson.loads(text)
    except orjson.JSONDecodeError:
        pass
    lines = [line for line in text.splitlines() if line.strip()]
    if lines and all(line.lstrip().startswith("{") for line in lines):
        return _jsonl(text, str(file))
    return _yaml(text, str(file))


def read_reference(path: str | os.PathLike[str]) -> Any:
    """Read a reference dataset file (YAML or JSON): a list of templates."""
    return read_data(path)


def read_responses(path: str | os.PathLike[str]) -> Any:
    """Read responses: JSON Lines, or a JSON/YAML list or mapping by question id."""
    return read_data(path)


def read_results(path: str | os.PathLike[str]) -> list[Any]:
    """Read evaluation results written by ``write_data`` (YAML, JSON or JSON Lines)."""
    data = read_data(path)
    if not isinstance(data, list):
        raise InputError(f"results must be a list, got {type(data).__name__}", source=str(path))
    return data


def _check_suffix(path: Path) -> str:
    suffix = path.suffix.lower()
    if suffix not in YAML_SUFFIXES + JSON_SUFFIXES + JSONL_SUFFIXES:
        raise InputError(
            "unknown output format: use .yaml, .yml, .json or .jsonl", source=str(path)
        )
    return suffix


def dump_json(data: Any) -> bytes:
    """JSON bytes of data as the writers store it (non-string keys and other values as text)."""
    return orjson.dumps(data, option=orjson.OPT_NON_STR_KEYS, default=str)


def write_data(path: str | os.PathLike[str], data: Any) -> None:
    """Write data as YAML, JSON or JSON Lines (a list, one record a line) by extension."""
    file = Path(path)
    suffix = _check_suffix(file)
    if file.parent and not file.parent.exists():
        raise InputError("the folder does not exist", source=str(file))
    if isinstance(data, list) and type(data) is not list:
        data = list(data)  # e.g. Results: the serialisers want a plain list
    if suffix in YAML_SUFFIXES:
        text = yaml.dump(data, Dumper=_Dumper, sort_keys=False, allow_unicode=True, width=100)
        file.write_text(text, encoding="utf-8")
    elif suffix in JSON_SUFFIXES:
        file.write_bytes(
            orjson.dumps(data, option=orjson.OPT_INDENT_2 | orjson.OPT_NON_STR_KEYS, default=str)
            + b"\n"
        )
    else:
        records: Iterable[Any] = data if isinstance(data, list) else [data]
        with file.open("wb") as out:
            for record in records:
                out.write(dump_json(record) + b"\n")


def check_output_path(path: str | os.PathLike[str]) -> None:
    """Fail early (before a long run) on an output path with an unknown extension."""
    file = Path(path)
    _check_suffix(file)
    if file.parent and not file.parent.exists():
        raise InputError("the folder does not exist", source=str(file))


def signature_path(results_path: str | os.PathLike[str]) -> Path:
    """Where a run's signature goes: ``NAME.signature.yaml`` beside its results ``NAME.ext``."""
    path = Path(results_path)
    return path.with_name(f"{path.stem}.signature.yaml")
