"""Writing a refreshed reference file back (``refresh.reference``): only the changed outputs are
rewritten. In a YAML file each changed ``output`` value is replaced where it stands (same quoting
style, same block indentation), so comments and every other line stay byte for byte as they
were; the new text is parsed again and must give exactly the refreshed data, else the file is
rewritten by ruamel.yaml's round-trip dumper (which keeps comments). A JSON file is rewritten
with its own indentation. Files are replaced atomically, keeping their permissions.
"""

from __future__ import annotations

import io
import itertools
import json
import os
import re
import tempfile
from pathlib import Path
from typing import Any

import yaml

from ..errors import QaEvalError
from ..extras import require
from ..io.files import (
    JSON_SUFFIXES,
    YAML_SUFFIXES,
    check_output_path,
    data_bytes,
    write_data,
)
from .changes import RefreshResult, StepChange, json_indent

__all__ = [
    "file_kind",
    "reference_bytes",
    "same_file",
    "updated_text",
    "write_atomically",
    "write_reference",
]

try:
    _Loader: Any = yaml.CSafeLoader
except AttributeError:  # PyYAML built without libyaml
    _Loader = yaml.SafeLoader


def _changed_output(data: Any, change: StepChange) -> Any:
    t_pos, q_pos = change.position
    question = data[t_pos]["questions"][q_pos]
    return question["reference_steps"][change.group][change.index]["output"]


def _get(node: Any, key: str) -> tuple[Any, Any] | None:
    """The last (key node, value node) pair of a mapping node with this key (the loader keeps
    the last of duplicate keys); None when absent or when a merge key could supply it."""
    if not isinstance(node, yaml.MappingNode):
        return None
    found = None
    for k, v in node.value:
        if isinstance(k, yaml.ScalarNode) and k.tag == "tag:yaml.org,2002:merge":
            return None
        if isinstance(k, yaml.ScalarNode) and k.value == key:
            found = (k, v)
    return found


def _item(node: Any, position: int) -> Any:
    if isinstance(node, yaml.SequenceNode) and 0 <= position < len(node.value):
        return node.value[position]
    return None


def _step_node(root: Any, change: StepChange) -> Any:
    t_pos, q_pos = change.position
    questions = _get(_item(root, t_pos), "questions")
    question = _item(questions[1], q_pos) if questions else None
    groups = _get(question, "reference_steps")
    group = _item(groups[1], change.group) if groups else None
    step = _item(group, change.index)
    return step if isinstance(step, yaml.MappingNode) else None


def _content_end(text: str, node: Any) -> int:
    """The index just after the last non-blank character of a node's text."""
    collection = isinstance(node, (yaml.MappingNode, yaml.SequenceNode))
    if collection and not node.flow_style and node.value:
        last = node.value[-1]
        return _content_end(text, last[1] if isinstance(last, tuple) else last)
    end = node.end_mark.index
    while end > node.start_mark.index and text[end - 1] in " \t\r\n":
        end -= 1
    return end


_BREAKS = "\r\n\x85\u2028\u2029"


def _single_quotable(value: str) -> bool:
    return all(c.isprintable() or c == "\t" for c in value) and not any(
        c in _BREAKS or c == "\ufeff" for c in value
    )


def _one_line(value: Any, style: str | None = "'") -> str:
    """A YAML value on one line: flow JSON for a mapping, else a quoted scalar."""
    if not isinstance(value, str):
        return json.dumps(value, ensure_ascii=False)
    if style != '"' and _single_quotable(value):
        return "'" + value.replace("'", "''") + "'"
    text = json.dumps(value, ensure_ascii=False)  # a JSON string is a YAML double-quoted one
    for c in "\x85\u2028\u2029\ufeff":
        text = text.replace(c, f"\\u{ord(c):04x}")
    return text


def _wrapped(value: str, style: str, key_column: int, width: int, continuation: int) -> str | None:
    """A quoted scalar folded over several lines as PyYAML writes it, re-indented."""
    node = yaml.MappingNode(
        "tag:yaml.org,2002:map",
        [
            (
                yaml.ScalarNode("tag:yaml.org,2002:str", "output"),
                yaml.ScalarNode("tag:yaml.org,2002:str", value, style=style),
            )
        ],
    )
    dumped = yaml.serialize(
        node, Dumper=yaml.SafeDumper, width=max(20, width - key_column), allow_unicode=True
    )
    if not dumped.startswith("output: "):
        return None
    lines = dumped[len("output: ") :].rstrip("\n").split("\n")
    if any(line and not line.startswith("  ") for line in lines[1:]):
        return None
    return "\n".join([lines[0], *(" " * continuation + line[2:] for line in lines[1:])])


_BLOCK_HEADER = re.compile(r"([|>])([1-9]?)([+-]?)([1-9]?)(.*)")


def _literal_block(span: str, value: str, default_indent: int) -> str | None:
    """The new text of a ``|``/``>`` block scalar: a literal block indented as the old one."""
    header_end = span.find("\n")
    match = _BLOCK_HEADER.fullmatch(span[:header_end].rstrip("\r")) if header_end >= 0 else None
    if match is None or match.group(2) or match.group(4):  # an explicit indentation indicator
        return None
    body = span[header_end + 1 :]
    first = next((line for line in body.split("\n") if line.strip()), None)
    indent = len(first) - len(first.lstrip(" ")) if first else default_indent
    content_end = len(span.rstrip(" \t\r\n"))
    tail_start = span.find("\n", content_end)
    tail = "" if tail_start < 0 else span[tail_start - (span[tail_start - 1] == "\r") :]
    lines = [" " * indent + line if line else "" for line in value.split("\n")]
    if not lines or lines[0].startswith(" " * (indent + 1)) or not value.strip():
        return None
    return "\n".join([f"|-{match.group(5)}", *lines]) + tail


def _output_edit(text: str, step: Any, value: Any) -> tuple[int, int, str] | None:
    """(start, end, replacement) that sets a step mapping's ``output`` to ``value``."""
    pair = _get(step, "output")
    if pair is None:  # add the key after the step's last line
        if step.flow_style or not step.value:
            return None
        column = step.value[0][0].start_mark.column
        end = _content_end(text, step)
        line_end = text.find("\n", end)
        line = f"{' ' * column}output: {_one_line(value)}"
        if line_end < 0:
            return len(text), len(text), "\n" + line
        return line_end + 1, line_end + 1, line + "\n"
    key, node = pair
    start, end = node.start_mark.index, node.end_mark.index
    between = text[key.end_mark.index : start]
    if not re.fullmatch(r"[ \t]*:(?:\s|#[^\n]*)*", between):
        return None  # an alias: leave it to the round-trip dumper
    null = node.tag == "tag:yaml.org,2002:null" and text.startswith("!!null ", start)
    if text[start : start + 1] in "&!*" and not null:
        return None  # an anchor or a tag: leave it to the round-trip dumper
    if null:
        return start, end, _one_line(value)
    if isinstance(node, yaml.ScalarNode):
        if start == end:  # an empty value (null)
            return start, end, " " + _one_line(value)
        style = node.style or None
        span = text[start:end]
        if style in ("|", ">"):
            if not isinstance(value, str):
                return None
            block = _literal_block(span, value, key.start_mark.column + 2)
            return None if block is None else (start, end, block)
        if style in ("'", '"') and "\n" in span.rstrip() and isinstance(value, str):
            line_start = text.rfind("\n", 0, start) + 1
            lines = text[line_start:end].split("\n")
            width = min(len(line.rstrip("\r")) for line in lines[:-1]) - 1
            second = lines[1]
            continuation = len(second) - len(second.lstrip(" "))
            wrapped = _wrapped(value, style, key.start_mark.column, width, continuation)
            return None if wrapped is None else (start, end, wrapped)
        return start, end, _one_line(value, style)
    if node.flow_style:
        return start, end, _one_line(value)
    if isinstance(value, (dict, list)) and value:  # a block collection, at the same column
        block = yaml.dump(
            value, Dumper=yaml.SafeDumper, sort_keys=False, allow_unicode=True, width=4096
        ).rstrip("\n")
        lines = block.split("\n")
        indent = " " * node.start_mark.column
        return (
            start,
            _content_end(text, node),
            "\n".join(lines[:1] + [indent + x for x in lines[1:]]),
        )
    colon = text.index(":", key.end_mark.index)
    return colon + 1, _content_end(text, node), " " + _one_line(value)


def _splice_yaml(text: str, result: RefreshResult) -> str | None:
    """The YAML text with only the changed outputs replaced, or None where it cannot be done."""
    try:
        root = yaml.compose(text, Loader=_Loader)
    except yaml.YAMLError:
        return None
    newline = "\r\n" if "\r\n" in text else "\n"
    edits = []
    for change in result.changes:
        step = _step_node(root, change)
        value = _changed_output(result.data, change)
        edit = None if step is None else _output_edit(text, step, value)
        if edit is None:
            return None
        start, end, replacement = edit
        edits.append((start, end, replacement.replace("\r\n", "\n").replace("\n", newline)))
    edits.sort()
    for (_, end, _), (start, _, _) in itertools.pairwise(edits):
        if start < end:
            return None
    for start, end, replacement in reversed(edits):
        text = text[:start] + replacement + text[end:]
    return text


def _roundtrip_yaml(text: str, result: RefreshResult) -> str:
    """The YAML text rewritten by ruamel.yaml's round-trip dumper (keeps comments)."""
    feature = "rewriting a YAML reference whose outputs cannot be replaced in place"
    ruamel = require("ruamel.yaml", feature)
    util = require("ruamel.yaml.util", feature)
    scalars = require("ruamel.yaml.scalarstring", feature)
    _, indent, offset = util.load_yaml_guess_indent(text)
    dumper = ruamel.YAML()
    dumper.preserve_quotes = True
    dumper.width = 4096
    dumper.indent(mapping=indent or 2, sequence=indent or 2, offset=offset or 0)
    document = dumper.load(text)
    for change in result.changes:
        t_pos, q_pos = change.position
        step = document[t_pos]["questions"][q_pos]["reference_steps"][change.group][change.index]
        value = _changed_output(result.data, change)
        if isinstance(value, str) and "\n" in value:
            value = scalars.LiteralScalarString(value)
        step["output"] = value
    out = io.StringIO()
    dumper.dump(document, out)
    return str(out.getvalue())


def _json_text(text: str, data: Any) -> str:
    """JSON text of data in the style of ``text``: its indentation, separators, escapes."""
    indent = json_indent(text)
    if indent is None:
        separators = (", ", ": ") if re.search(r'"\s*:\s', text) else (",", ":")
    else:
        separators = (",", ": ")
    ascii_only = text.isascii() and "\\u" in text
    out = json.dumps(data, ensure_ascii=ascii_only, indent=indent, separators=separators)
    return out + "\n" if text.endswith("\n") else out


def _loads(text: str, yaml_file: bool) -> Any:
    try:
        return yaml.load(text, Loader=_Loader) if yaml_file else json.loads(text)
    except (yaml.YAMLError, ValueError):
        return None


def updated_text(text: str, suffix: str, result: RefreshResult) -> str:
    """The new text of a reference file: ``text`` with only the changed outputs rewritten."""
    if not result.changes:
        return text
    if suffix.lower() not in YAML_SUFFIXES:
        return _json_text(text, result.data)
    new = _splice_yaml(text, result)
    if new is None or _loads(new, True) != result.data:
        new = _roundtrip_yaml(text, result)
        if _loads(new, True) != result.data:
            raise QaEvalError(
                "cannot write the new outputs into this YAML file without changing other values; "
                "write the refreshed dataset to a new file with -o"
            )
    return new


class _LiteralBlockDumper(yaml.SafeDumper):
    """The safe dumper, with multi-line strings (queries) written as ``|`` literal blocks."""


def _represent_str(dumper: yaml.SafeDumper, text: str) -> yaml.ScalarNode:
    style = "|" if "\n" in text else None
    return dumper.represent_scalar("tag:yaml.org,2002:str", text, style=style)


_LiteralBlockDumper.add_representer(str, _represent_str)


def reference_bytes(path: str | os.PathLike[str], data: Any) -> bytes:
    """Reference data as a new file's bytes, format by extension; YAML keeps multi-line
    strings (queries) as literal blocks."""
    file = Path(path)
    if file.suffix.lower() not in YAML_SUFFIXES:
        return data_bytes(file, data)
    text = yaml.dump(
        data, Dumper=_LiteralBlockDumper, sort_keys=False, allow_unicode=True, width=100
    )
    return text.encode("utf-8")


def write_reference(path: str | os.PathLike[str], data: Any) -> None:
    """Write reference data afresh by extension; YAML keeps multi-line strings as literal blocks
    (``refresh_reference_file`` uses it only to convert between YAML and JSON)."""
    file = Path(path)
    if file.suffix.lower() not in YAML_SUFFIXES:
        write_data(file, data)
        return
    check_output_path(file)
    file.write_bytes(reference_bytes(file, data))


def file_kind(path: Path) -> str:
    """``yaml`` or ``json`` by the file's extension (else the extension itself)."""
    suffix = path.suffix.lower()
    return "yaml" if suffix in YAML_SUFFIXES else "json" if suffix in JSON_SUFFIXES else suffix


def write_atomically(path: Path, data: bytes) -> None:
    """Replace the file in one step (a crash leaves the old file), keeping its permissions."""
    handle, temporary = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(handle, "wb") as out:
            out.write(data)
        if path.exists():
            os.chmod(temporary, path.stat().st_mode & 0o7777)
        os.replace(temporary, path)
    except BaseException:
        if os.path.exists(temporary):
            os.unlink(temporary)
        raise


def same_file(a: Path, b: Path) -> bool:
    """Whether two paths name the same file (False when that cannot be told)."""
    try:
        return a.resolve() == b.resolve() or (b.exists() and os.path.samefile(a, b))
    except OSError:
        return False
