"""What a refresh finds (``refresh.reference``): the canonical SPARQL JSON text of a result
(``head.vars`` in the query's order, each term's keys in a fixed order, ``xsd:string`` left out,
rows sorted unless the step is ``ordered``), the difference between an old output and a new result
(rows added and removed, as a sequence when ordered, else as a multiset; blank node labels ignored),
and the records of a refresh: :class:`StepChange` per changed step and :class:`RefreshResult`.
"""

from __future__ import annotations

import json
import re
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from ..steps.sparql.terms import parse_sparql_json
from .runners import RDF_LANG_STRING, XSD, XSD_STRING

__all__ = [
    "SAMPLE_ROWS",
    "Difference",
    "RefreshResult",
    "StepChange",
    "canonical",
    "difference",
    "json_indent",
    "output_text",
    "parse_old",
    "sparql_json_text",
    "summary",
]


SAMPLE_ROWS = 3
"""Rows added and removed shown per changed step."""


@dataclass(frozen=True)
class StepChange:
    """One refreshed reference step whose result differs from its old output."""

    template_id: Any
    question_id: Any
    group: int
    index: int
    old: str
    new: str
    added: int = 0
    removed: int = 0
    kind: str = "changed"
    """``changed``: an output was replaced; ``filled``: the step had no output."""
    emptied: bool = False
    """The old output had rows (or was not SPARQL JSON) and the new result has none."""
    rows_added: tuple[str, ...] = ()
    """The first rows of the new result that the old one lacks, as text."""
    rows_removed: tuple[str, ...] = ()
    """The first rows of the old result that the new one lacks, as text."""
    note: str = ""
    """What else changed: the order of the rows or of the columns."""
    position: tuple[int, int] = (-1, -1)
    """Where the question is in the file: (template position, question position)."""

    @property
    def step(self) -> str:
        """Where the step is in its question: ``reference_steps[group][index]``."""
        return f"reference_steps[{self.group}][{self.index}]"

    def describe(self) -> str:
        """One line: the question, the step and what changed."""
        detail = f"{self.old} -> {self.new}"
        if self.added or self.removed:
            detail += f" (+{self.added} added, -{self.removed} removed)"
        if self.note:
            detail += f" ({self.note})"
        if self.emptied:
            detail += " [EMPTIED]"
        return f"template {self.template_id!r} question {self.question_id!r} {self.step}: {detail}"

    def details(self) -> list[str]:
        """The first rows removed (``-``) and added (``+``), one line each, indented."""
        lines = [f"    - {row}" for row in self.rows_removed]
        if self.removed > len(self.rows_removed):
            lines.append(f"    - ... {self.removed - len(self.rows_removed)} more removed")
        lines += [f"    + {row}" for row in self.rows_added]
        if self.added > len(self.rows_added):
            lines.append(f"    + ... {self.added - len(self.rows_added)} more added")
        return lines

    def as_dict(self) -> dict[str, Any]:
        """The change as plain data (the CLI's ``--format json``)."""
        return {
            "template_id": self.template_id,
            "question_id": self.question_id,
            "step": self.step,
            "kind": self.kind,
            "old": self.old,
            "new": self.new,
            "added": self.added,
            "removed": self.removed,
            "emptied": self.emptied,
            "rows_added": list(self.rows_added),
            "rows_removed": list(self.rows_removed),
            "note": self.note,
        }

    def __str__(self) -> str:
        return self.describe()


@dataclass(frozen=True)
class RefreshResult:
    """The refreshed reference data (a new object), the changed steps and the steps run."""

    data: Any
    changes: list[StepChange]
    steps_run: int
    issues: tuple[str, ...] = ()
    """Why writing needs ``force`` (``safety_issues``); empty when the refresh looks safe."""
    written: str | None = None
    """The file written, or None (nothing changed in place, a dry run, or no output asked)."""


def _canonical_term(term: Mapping[str, Any]) -> dict[str, Any]:
    kind = term.get("type")
    if kind == "typed-literal":  # the SPARQL 1.0 JSON name
        kind = "literal"
    out: dict[str, Any] = {"type": kind, "value": term.get("value")}
    if kind == "literal":
        lang = term.get("xml:lang")
        datatype = term.get("datatype")
        if lang:
            out["xml:lang"] = lang
        elif datatype and datatype not in (XSD_STRING, RDF_LANG_STRING):
            out["datatype"] = datatype
    elif kind == "triple" and isinstance(out["value"], Mapping):
        out["value"] = {k: _canonical_term(v) for k, v in out["value"].items()}
    return out


def _sort_key(term: Mapping[str, Any] | None) -> tuple[str, ...]:
    if term is None:
        return ("",)
    value = term.get("value")
    text = value if isinstance(value, str) else json.dumps(value, sort_keys=True)
    return (
        str(term.get("type")),
        text,
        str(term.get("xml:lang") or ""),
        str(term.get("datatype") or ""),
    )


def canonical(result: Mapping[str, Any], ordered: bool) -> dict[str, Any]:
    """The result with canonical terms, vars in projection order and (unless ordered) sorted
    rows."""
    if "boolean" in result:
        return {"head": {}, "boolean": bool(result["boolean"])}
    names = list(dict.fromkeys(result.get("head", {}).get("vars", [])))
    rows = []
    for binding in result["results"]["bindings"]:
        for name in binding:
            if name not in names:  # a variable missing from head.vars: keep it, at the end
                names.append(name)
        rows.append({n: _canonical_term(binding[n]) for n in names if binding.get(n) is not None})
    if not ordered:
        rows.sort(key=lambda row: [_sort_key(row.get(n)) for n in names])
    return {"head": {"vars": names}, "results": {"bindings": rows}}


def sparql_json_text(result: Mapping[str, Any], ordered: bool = False) -> str:
    """SPARQL JSON results as stable one-line text (rows sorted unless ``ordered``)."""
    return json.dumps(canonical(result, ordered), ensure_ascii=False)


def _row_key(row: Mapping[str, Any], names: Sequence[str]) -> tuple[Any, ...]:
    key: list[tuple[str, ...]] = []
    for name in names:
        term = row.get(name)
        if term is not None and term.get("type") == "bnode":
            key.append(("bnode",))  # labels are local to one result
        else:
            key.append(_sort_key(term))
    return tuple(key)


def summary(result: Mapping[str, Any] | None) -> str:
    """A result in a few words: ``3 rows [s, name]``, ``ASK true`` or ``no output``."""
    if result is None:
        return "no output"
    if "boolean" in result:
        return f"ASK {str(result['boolean']).lower()}"
    count = len(result["results"]["bindings"])
    columns = ", ".join(result["head"]["vars"])
    return f"{count} row{'' if count == 1 else 's'} [{columns}]"


_SHORT_TYPES = {XSD + name: name for name in ("integer", "decimal", "double", "float", "boolean")}


def _format_term(term: Mapping[str, Any]) -> str:
    """One term as short text: ``<iri>``, ``_:b``, ``"text"@en``, a number, ``"v"^^<type>``."""
    kind, value = term.get("type"), term.get("value")
    if kind == "uri":
        return f"<{value}>"
    if kind == "bnode":
        return f"_:{value}"
    if kind == "triple" and isinstance(value, Mapping):
        inner = " ".join(
            _format_term(value.get(k) or {}) for k in ("subject", "predicate", "object")
        )
        return f"<< {inner} >>"
    text = json.dumps(value, ensure_ascii=False)
    if term.get("xml:lang"):
        return f"{text}@{term['xml:lang']}"
    datatype = term.get("datatype")
    if datatype in _SHORT_TYPES:
        return str(value)
    return f"{text}^^<{datatype}>" if datatype else text


def _format_row(row: Mapping[str, Any], names: Sequence[str]) -> str:
    cells = [f"{name}={_format_term(row[name])}" for name in names if row.get(name) is not None]
    return ", ".join(cells) or "(a row with no values)"


def _row_samples(
    rows: list[dict[str, Any]], keys: list[tuple[Any, ...]], extra: Counter[Any], names: list[str]
) -> tuple[str, ...]:
    """The first ``SAMPLE_ROWS`` rows whose keys are in ``extra`` (a multiset), as text."""
    left = Counter(extra)
    out: list[str] = []
    for row, key in zip(rows, keys):
        if len(out) == SAMPLE_ROWS:
            break
        if left[key] > 0:
            left[key] -= 1
            out.append(_format_row(row, names))
    return tuple(out)


@dataclass(frozen=True)
class Difference:
    """What changed between an old output and a new result: rows added and removed (with the
    first few as text) and a note on the order of rows or columns."""

    changed: bool
    added: int = 0
    removed: int = 0
    rows_added: tuple[str, ...] = ()
    rows_removed: tuple[str, ...] = ()
    note: str = ""


def difference(old: Mapping[str, Any] | None, new: Mapping[str, Any], ordered: bool) -> Difference:
    """What changed between two canonical results."""
    if old is None or ("boolean" in old) != ("boolean" in new):
        return Difference(True)
    if "boolean" in new:
        return Difference(old["boolean"] != new["boolean"])
    old_names, new_names = old["head"]["vars"], new["head"]["vars"]
    names = list(dict.fromkeys([*old_names, *new_names]))
    old_bindings, new_bindings = old["results"]["bindings"], new["results"]["bindings"]
    old_rows = [_row_key(r, names) for r in old_bindings]
    new_rows = [_row_key(r, names) for r in new_bindings]
    old_count, new_count = Counter(old_rows), Counter(new_rows)
    more, fewer = new_count - old_count, old_count - new_count
    same_rows = old_rows == new_rows if ordered else not more and not fewer
    if same_rows and old_names == new_names:
        return Difference(False)
    note = ""
    if not more and not fewer and not same_rows:
        note = "the same rows in another order"
    elif old_names != new_names and sorted(old_names) == sorted(new_names):
        note = "the columns in another order"
    return Difference(
        True,
        sum(more.values()),
        sum(fewer.values()),
        _row_samples(new_bindings, new_rows, more, new_names),
        _row_samples(old_bindings, old_rows, fewer, old_names),
        note,
    )


def parse_old(output: Any, ordered: bool) -> dict[str, Any] | None:
    """An old output as a canonical result; None when it is missing or not SPARQL JSON."""
    if output is None:
        return None
    try:
        data = output if isinstance(output, Mapping) else json.loads(output)
        return canonical(parse_sparql_json(data), ordered)
    except (TypeError, ValueError, KeyError):  # not JSON, or not a SPARQL JSON result
        return None


def json_indent(text: str) -> int | str | None:
    """The indentation of JSON text written over several lines (None: on one line)."""
    match = re.search(r"\n([ \t]+)\S", text)
    if match is None:
        return None
    indent = match.group(1)
    return "\t" if indent.startswith("\t") else len(indent)


def output_text(new: Mapping[str, Any], old_output: Any, old: Any) -> str:
    """The new output text, indented as the old one was when it was indented JSON."""
    indent = None
    if old is not None and isinstance(old_output, str) and "\n" in old_output.strip():
        indent = json_indent(old_output.strip())
    return json.dumps(new, ensure_ascii=False, indent=indent)
