"""Read and write YAML, JSON and JSON Lines; every error names the file, the line and the problem.

YAML is read with PyYAML's safe loader (the C one when available); JSON with orjson. The format
is chosen by the file's extension (``.yaml``/``.yml``, ``.json``, ``.jsonl``/``.ndjson``).

What is read can be written back (results copy the inputs), and nothing read can make a run
blow up, so every reader refuses, with a one-line error naming the place:

* nesting deeper than ``MAX_DEPTH`` (200) levels, and (YAML) integers beyond 64 bits - the
  writers' limits, checked once on the whole document;
* a key given twice in one mapping or object (``<<`` merge keys may be overridden);
* (YAML) an alias inside the collection it names (a recursive structure), and aliases that
  together repeat more than the file's own size plus a million characters (an "alias bomb":
  each repeated node counts 1 plus the length of its text). Aliases within that budget, and
  merge keys, are read as usual. Depth and aliases are counted on PyYAML's event stream before
  anything is built, so a hostile file costs no more than reading it.

JSON Lines are split at ``\n`` only (``\r\n`` too): U+2028, U+2029 and U+0085 are ordinary
characters inside a JSON string. JSON numbers are read as orjson reads them: an integer beyond
64 bits becomes a float, one beyond the float range is an error.

The writers' limits and their JSON (``MAX_DEPTH``, ``dump_json``) are ``io.limits``.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any, BinaryIO

import orjson
import yaml
from yaml.events import (
    AliasEvent,
    DocumentStartEvent,
    MappingEndEvent,
    MappingStartEvent,
    ScalarEvent,
    SequenceEndEvent,
    SequenceStartEvent,
)

from ..errors import InputError, short_repr
from .limits import (
    INT_MAX,
    INT_MIN,
    MAX_DEPTH,
    check_writable,
    dump_json,
    one_line,
)

__all__ = [
    "data_bytes",
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


def open_bytes(path: Path) -> BinaryIO:
    """A file opened to read bytes; ``InputError`` naming it when it cannot be."""
    try:
        return path.open("rb")
    except FileNotFoundError:
        raise InputError("no such file", source=str(path)) from None
    except IsADirectoryError:
        raise InputError("is a directory, not a file", source=str(path)) from None
    except OSError as e:
        raise InputError(f"cannot read: {e.strerror}", source=str(path)) from None


def read_text(path: Path) -> str:
    with open_bytes(path) as file:
        try:
            raw = file.read()
        except OSError as e:
            raise InputError(f"cannot read: {e.strerror}", source=str(path)) from None
    if path.suffix.lower() == ".gz":  # e.g. reference.jsonl.gz: read as reference.jsonl
        import gzip
        import zlib

        try:
            raw = gzip.decompress(raw)
        except (OSError, EOFError, zlib.error) as e:
            raise InputError(f"cannot read: {e}", source=str(path)) from None
    try:
        return raw.decode("utf-8-sig")
    except UnicodeDecodeError as e:
        line = raw[: e.start].count(b"\n") + 1
        raise InputError(
            f"not UTF-8 text (byte 0x{raw[e.start]:02x} at offset {e.start})",
            source=str(path),
            record=f"line {line}",
        ) from None


YAML_ALIAS_ALLOWANCE = 1_000_000
"""What the aliases of a YAML file may repeat beyond the file's own size (see the module doc)."""


def numbered_lines(text: str) -> Iterator[tuple[int, str]]:
    """(line number, line) of JSON Lines text, split at ``\\n`` (and ``\\r\\n``) only."""
    for number, line in enumerate(text.split("\n"), start=1):
        yield number, line[:-1] if line.endswith("\r") else line


def _mark(mark: Any) -> str | None:
    return f"line {mark.line + 1}, column {mark.column + 1}" if mark is not None else None


def _position(text: str, offset: int, in_bytes: bool) -> str:
    """``line L, column C`` of a character offset (or a UTF-8 byte offset) in ``text``."""
    before = text.encode("utf-8")[:offset].decode("utf-8", "replace") if in_bytes else text[:offset]
    line_start = before.rfind("\n") + 1
    return f"line {before.count(chr(10)) + 1}, column {len(before) - line_start + 1}"


# YAML ----------------------------------------------------------------------------------------
class _YamlRefused(yaml.MarkedYAMLError):
    pass


class _StrictLoader(_Loader):  # type: ignore[misc, valid-type]
    """The safe loader, refusing a key given twice in one mapping and integers beyond 64 bits."""

    def construct_mapping(self, node: Any, deep: bool = False) -> Any:
        own = None
        if isinstance(node, yaml.MappingNode):
            merges = sum(1 for key, _ in node.value if key.tag == "tag:yaml.org,2002:merge")
            if merges:  # keys merged in may be overridden: only the mapping's own must differ
                own = len(node.value) - merges
        mapping = super().construct_mapping(node, deep=deep)
        pairs = node.value if own is None else node.value[len(node.value) - own :]
        if len(mapping) != len(node.value) or own is not None:
            seen: set[Any] = set()
            for key_node, _ in pairs:
                key = self.construct_object(key_node, deep=True)  # built already: a lookup
                if key in seen:
                    raise _YamlRefused(
                        None, None, f"duplicate key {short_repr(key)}", key_node.start_mark
                    )
                seen.add(key)
        return mapping

    def construct_yaml_int(self, node: Any) -> int:
        # The text of a 64-bit integer is short (0b and 64 digits at most): a longer one is
        # refused before it is converted, which can take long (e.g. sexagesimal 1:2:3:...).
        text = self.construct_scalar(node).replace("_", "")
        if len(text) > 70:
            shown = (
                f"integer beyond 64 bits (of {len(text):,} digits)"
                if text.lstrip("+-").isdigit()
                else f"not a 64-bit integer ({len(text):,} characters)"
            )
            raise _YamlRefused(None, None, f"{shown}: quote it to keep it as text", node.start_mark)
        value: int = super().construct_yaml_int(node)
        if not INT_MIN <= value <= INT_MAX:
            raise _YamlRefused(
                None,
                None,
                f"integer beyond 64 bits ({value}): quote it to keep it as text",
                node.start_mark,
            )
        return value


def _guarded(constructor: Any) -> Any:
    """A scalar constructor whose failure on a bad text (``!!int abc``, an implicit date such
    as 2024-02-30, ``!!bool maybe``) is a located YAML error instead of a Python exception."""

    def construct(loader: Any, node: Any) -> Any:
        try:
            return constructor(loader, node)
        except (ValueError, KeyError, IndexError, AttributeError, TypeError, OverflowError) as e:
            tag = str(node.tag).rsplit(":", 1)[-1]
            reason = one_line(str(e))
            reason = reason if len(reason) <= 60 else reason[:59] + "…"
            problem = f"cannot read {short_repr(node.value)} as {tag} ({reason}); quote it for text"
            raise _YamlRefused(None, None, problem, node.start_mark) from None

    return construct


for _tag, _constructor in (
    ("int", _StrictLoader.construct_yaml_int),
    ("float", _StrictLoader.construct_yaml_float),
    ("bool", _StrictLoader.construct_yaml_bool),
    ("null", _StrictLoader.construct_yaml_null),
    ("timestamp", _StrictLoader.construct_yaml_timestamp),
    ("binary", _StrictLoader.construct_yaml_binary),
):
    _StrictLoader.add_constructor(f"tag:yaml.org,2002:{_tag}", _guarded(_constructor))


def _scan_yaml(text: str) -> None:
    """Refuse, before anything is built, YAML nested deeper than ``MAX_DEPTH`` (aliases
    expanded), recursive aliases, and aliases repeating more than the allowance."""
    allowance = len(text) + YAML_ALIAS_ALLOWANCE
    repeated = 0
    cost = 0  # nodes + characters so far, aliases expanded
    anchors: dict[str, tuple[int, int]] = {}  # anchor -> (cost, height) of its node
    stack: list[list[Any]] = []  # open collections: [anchor, cost before it, children height]
    open_anchors: set[str] = set()
    loader = _Loader(text)
    try:
        while loader.check_event():
            event = loader.get_event()
            kind = type(event)
            if kind is ScalarEvent:
                size = 1 + len(event.value)
                cost += size
                if event.anchor is not None:
                    anchors[event.anchor] = (size, 0)
            elif kind is SequenceStartEvent or kind is MappingStartEvent:
                if len(stack) >= MAX_DEPTH:
                    raise _YamlRefused(
                        None, None, f"nested more than {MAX_DEPTH} levels deep", event.start_mark
                    )
                stack.append([event.anchor, cost, 0])
                cost += 1
                if event.anchor is not None:
                    open_anchors.add(event.anchor)
            elif kind is SequenceEndEvent or kind is MappingEndEvent:
                anchor, before, children = stack.pop()
                height = children + 1
                if stack and height > stack[-1][2]:
                    stack[-1][2] = height
                if anchor is not None:
                    anchors[anchor] = (cost - before, height)
                    open_anchors.discard(anchor)
            elif kind is AliasEvent:
                name = event.anchor
                if name in open_anchors:
                    raise _YamlRefused(
                        None,
                        None,
                        f"recursive alias *{short_repr(name)[1:-1]} (inside the collection it "
                        "names)",
                        event.start_mark,
                    )
                found = anchors.get(name)
                if found is None:
                    raise _YamlRefused(None, None, "found undefined alias", event.start_mark)
                size, height = found
                cost += size
                repeated += size
                if repeated > allowance:
                    raise _YamlRefused(
                        None,
                        None,
                        f"aliases repeat more than {allowance:,} characters (an alias bomb?)",
                        event.start_mark,
                    )
                if len(stack) + height > MAX_DEPTH:
                    raise _YamlRefused(
                        None,
                        None,
                        f"nested more than {MAX_DEPTH} levels deep (through an alias)",
                        event.start_mark,
                    )
                if stack and height > stack[-1][2]:
                    stack[-1][2] = height
            elif kind is DocumentStartEvent:
                anchors.clear()
    finally:
        loader.dispose()


def _yaml(text: str, source: str) -> Any:
    try:
        _scan_yaml(text)
        data = yaml.load(text, Loader=_StrictLoader)
    except yaml.MarkedYAMLError as e:
        mark = e.problem_mark or e.context_mark
        problem = e.problem or e.context or "not valid YAML"
        prefix = "" if isinstance(e, _YamlRefused) else "YAML does not parse: "
        raise InputError(prefix + one_line(problem), source=source, record=_mark(mark)) from None
    except yaml.reader.ReaderError as e:  # a character YAML does not allow
        where = _position(text, e.position, in_bytes=_Loader is not yaml.SafeLoader)
        raise InputError(
            f"YAML does not parse: {one_line(e.reason)} (#x{e.character:04x})"
            if isinstance(e.character, int)
            else f"YAML does not parse: {one_line(e.reason)}",
            source=source,
            record=where,
        ) from None
    except yaml.YAMLError as e:
        raise InputError(f"YAML does not parse: {one_line(str(e))}", source=source) from None
    except RecursionError:  # complex keys built deep; bounded by MAX_DEPTH, kept as a guard
        raise InputError(f"nested more than {MAX_DEPTH} levels deep", source=source) from None
    check_writable(data, source)
    return data


# JSON ----------------------------------------------------------------------------------------
class _DuplicateKey(ValueError):
    pass


def _unique_pairs(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    mapping = dict(pairs)
    if len(mapping) != len(pairs):
        seen: set[str] = set()
        for key, _ in pairs:
            if key in seen:
                raise _DuplicateKey(key)
            seen.add(key)
    return mapping


def _json_int(text: str) -> int | float:
    """An integer as orjson reads it: beyond 64 bits, a float."""
    if len(text) < 19:
        return int(text)
    if len(text) <= 21:
        value = int(text)
        if INT_MIN <= value <= INT_MAX:
            return value
    number = float(text)
    if number in (float("inf"), float("-inf")):
        raise ValueError("number is infinity when parsed as double")
    return number


_STRICT_JSON = json.JSONDecoder(object_pairs_hook=_unique_pairs, parse_int=_json_int)


def parse_json(text: str, source: str, record: str | None = None) -> Any:
    """Parse one JSON document (a file, or a JSON Lines record named ``record``)."""
    try:
        data = orjson.loads(text)
    except orjson.JSONDecodeError as fast_error:
        # NaN / Infinity as Python writes them: the standard library reads them.
        data = _strict_json(text, source, record, fast_error)
        check_writable(data, source, record)
        return data
    out = check_writable(data, source, record)
    # A key given twice is dropped from the data, and with it its colon: outside strings a
    # colon follows each key, inside them it is kept as it is. Unless a colon was written as
    # an escape (\u003a), equal counts mean no key was lost; else parse again to find it.
    if text.count(":") != out.count(b":") or "\\u003" in text:
        _strict_json(text, source, record, None)
    return data


def _strict_json(
    text: str, source: str, record: str | None, fast_error: orjson.JSONDecodeError | None
) -> Any:
    """The standard library's reading of ``text``, refusing duplicate keys."""
    try:
        return _STRICT_JSON.decode(text)
    except _DuplicateKey as e:
        raise InputError(
            f"duplicate key {short_repr(e.args[0])}", source=source, record=record
        ) from None
    except (ValueError, RecursionError) as e:
        if fast_error is None:  # orjson read it (a duplicate key was looked for): keep that
            return None
        problem = fast_error.msg
        if isinstance(e, RecursionError):
            problem = "nested too deeply"
        elif "infinity" in str(e):
            problem = str(e)
        where = record
        if where is None and not isinstance(e, RecursionError):
            where = f"line {fast_error.lineno}, column {fast_error.colno}"
        raise InputError(f"JSON does not parse: {problem}", source=source, record=where) from None


def _jsonl(text: str, source: str) -> LineList:
    records = LineList()
    records.line_numbers = []
    for number, line in numbered_lines(text):
        if not line.strip():
            continue
        records.append(parse_json(line, source, f"line {number}"))
        records.line_numbers.append(number)
    return records


def read_data(path: str | os.PathLike[str]) -> Any:
    """Parse a YAML, JSON or JSON Lines file, chosen by its extension."""
    file = Path(path)
    text = read_text(file)
    suffix = file.suffix.lower()
    if suffix == ".gz":
        suffix = Path(file.stem).suffix.lower()
    if suffix in JSONL_SUFFIXES:
        return _jsonl(text, str(file))
    if suffix in JSON_SUFFIXES:
        return parse_json(text, str(file))
    if suffix in YAML_SUFFIXES:
        return _yaml(text, str(file))
    # No known extension: JSON, else JSON Lines, else YAML.
    try:
        orjson.loads(text)
    except orjson.JSONDecodeError:
        pass
    else:
        return parse_json(text, str(file))
    lines = [line for _, line in numbered_lines(text) if line.strip()]
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
    """Read evaluation results written by ``write_data`` (YAML, JSON or JSON Lines): a list of
    mappings, each with a ``question_id`` (string or integer), a ``template_id`` (string,
    integer or null) and ``actual_steps`` (if any, a list of mappings with a string ``name``),
    as qa-eval writes them; ``InputError`` naming the first result that is not so."""
    return check_results(read_data(path), str(path))


def check_results(data: Any, source: str) -> list[Any]:
    """``data`` (as read from ``source``) if it has the shape of results; else an
    ``InputError`` naming the first result that does not (see :func:`read_results`)."""
    if not isinstance(data, list):
        raise InputError(f"results must be a list, got {_type_name(data)}", source=source)
    line_numbers = getattr(data, "line_numbers", None)
    for position, result in enumerate(data):
        record = f"line {line_numbers[position]}" if line_numbers else f"result [{position}]"
        check_result(result, source, record)
    return data


def check_result(result: Any, source: str, record: str) -> None:
    """``InputError`` when a result (``record`` of ``source``) has not the shape of one (see
    :func:`read_results`)."""
    if not isinstance(result, dict):
        problem = f"a result must be a mapping, got {_type_name(result)}"
        raise InputError(problem, source=source, record=record)
    for key in ("question_id", "template_id"):
        value = result.get(key)
        if value is None and key == "template_id":
            continue
        if isinstance(value, bool) or not isinstance(value, (str, int)):
            problem = f"must be a string or integer, got {_type_name(value)}"
            raise InputError(problem, source=source, record=record, field=key)
    steps = result.get("actual_steps")
    if steps is None:
        return
    if not isinstance(steps, list):
        problem = f"must be a list, got {_type_name(steps)}"
        raise InputError(problem, source=source, record=record, field="actual_steps")
    for index, step in enumerate(steps):
        if not isinstance(step, dict):
            problem = f"must be a mapping, got {_type_name(step)}"
            field = f"actual_steps[{index}]"
        elif not isinstance(step.get("name"), str):
            problem = f"must be a string, got {_type_name(step.get('name'))}"
            field = f"actual_steps[{index}].name"
        else:
            continue
        raise InputError(problem, source=source, record=record, field=field)


def json_lines(path: str | os.PathLike[str]) -> Iterator[tuple[int, Any]]:
    """(line number, record) of each non-blank line of a JSON Lines file, read one line at a
    time (lines split at ``\\n``; a UTF-8 byte order mark skipped); ``InputError`` naming the
    file and line for one that is not UTF-8 or not JSON."""
    file = Path(path)
    source = str(file)
    try:
        handle = file.open("rb")
    except FileNotFoundError:
        raise InputError("no such file", source=source) from None
    except OSError as e:
        raise InputError(f"cannot read: {e.strerror}", source=source) from None
    with handle:
        for number, line in enumerate(handle, start=1):
            if number == 1 and line.startswith(b"\xef\xbb\xbf"):
                line = line[3:]
            if not line.strip():
                continue
            try:
                text = line.decode("utf-8")
            except UnicodeDecodeError as e:
                raise InputError(
                    f"not UTF-8 text (byte 0x{line[e.start]:02x})",
                    source=source,
                    record=f"line {number}",
                ) from None
            yield number, parse_json(text, source, f"line {number}")


def _type_name(value: Any) -> str:
    return "null" if value is None else type(value).__name__


def _check_suffix(path: Path) -> str:
    suffix = path.suffix.lower()
    if suffix not in YAML_SUFFIXES + JSON_SUFFIXES + JSONL_SUFFIXES:
        raise InputError(
            "unknown output format: use .yaml, .yml, .json or .jsonl", source=str(path)
        )
    return suffix


def data_bytes(path: str | os.PathLike[str], data: Any) -> bytes:
    """The bytes ``write_data`` writes for ``data`` at ``path`` (format by extension)."""
    suffix = _check_suffix(Path(path))
    if isinstance(data, list) and type(data) is not list:
        data = list(data)  # e.g. Results: the serialisers want a plain list
    if suffix in YAML_SUFFIXES:
        text = yaml.dump(data, Dumper=_Dumper, sort_keys=False, allow_unicode=True, width=100)
        return text.encode("utf-8")
    if suffix in JSON_SUFFIXES:
        return dump_json(data, indent=True) + b"\n"
    records: Iterable[Any] = data if isinstance(data, list) else [data]
    return b"".join(dump_json(record) + b"\n" for record in records)


def write_data(path: str | os.PathLike[str], data: Any) -> None:
    """Write data as YAML, JSON or JSON Lines (a list, one record a line) by extension."""
    file = Path(path)
    _check_suffix(file)
    if file.parent and not file.parent.exists():
        raise InputError("the folder does not exist", source=str(file))
    file.write_bytes(data_bytes(file, data))


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
