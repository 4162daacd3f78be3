"""Re-run the SPARQL queries of a reference dataset and update the reference step outputs.

A reference step is refreshed when it has a SPARQL query in ``args.query`` and is a SPARQL step
(``name: sparql_query`` or ``output_media_type: application/sparql-results+json``). Its query runs
against either an RDF file loaded into an embedded pyoxigraph store (``store_runner``) or a SPARQL
1.1 protocol endpoint over HTTP (``endpoint_runner``: headers, basic auth, ``default-graph-uri``),
and the result (SELECT or ASK) becomes the step's ``output``: SPARQL 1.1 JSON results text, as in
the README's examples::

    {"head": {"vars": ["s", "name"]}, "results": {"bindings": [{"s": {"type": "uri", ...}}]}}

The text is stable: ``head.vars`` is the query's projection, each binding lists its variables in
that order and each term its keys as ``type``, ``value``, then ``xml:lang`` or ``datatype``
(``xsd:string`` is left out, as RDF 1.1 makes it the default). Rows keep the query's order when the
step has ``ordered: true``; otherwise they are sorted, so that the text does not depend on the
store's internal order. An old output written as indented JSON gets its new text indented the same
way. A step whose result is unchanged (the same columns and the same rows, as a sequence when
ordered, else as a multiset; blank node labels are ignored) keeps its old output untouched.

Writing a reference file back (``refresh_reference_file``) changes nothing but the changed
outputs: an up-to-date file is not written at all, and in a YAML file each changed ``output``
value is replaced where it stands (same quoting style, same block indentation), so comments,
indentation and every other line stay byte for byte as they were. The new text is parsed again
and must give exactly the refreshed data; where a value cannot be replaced in place (an anchor, a
tag, a flow-style step without an output) the file is rewritten by ruamel.yaml's round-trip
dumper, which keeps comments. A JSON file is rewritten with its own indentation.

A refresh that looks like a mistake is refused unless forced (``RefreshRefused``): one that
would empty an output that had rows (the wrong graph, an empty default graph), or that would
change more than ``max_changes`` outputs (by default more than half of the steps run).

``refresh_reference`` never mutates the caller's data: it returns a deep copy with the new outputs
and the list of the steps whose result changed. Problems (an unknown RDF format, a query that does
not parse, an endpoint that cannot be reached) are ``InputError`` s whose one-line message names
the file, the template and question, and the step. Header values and passwords never appear in a
message: they are replaced by ``***`` even where a server echoes them.

For RDF dataset files (N-Quads, TriG) the queries see the union of all graphs as their default
graph, as most triple stores do, unless ``default_graph_uris`` name the graphs to use.

The parts: the query runners are in ``refresh.runners``, the canonical text and the differences
in ``refresh.changes``, the writing of the file in ``refresh.writer``; the package's face names
their public names.
"""

from __future__ import annotations

import copy
import dataclasses
import os
from collections.abc import Iterable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

from ..errors import InputError, QaEvalError
from ..io.files import check_output_path, read_data
from ..steps.kinds import SPARQL_JSON
from ..steps.sparql.terms import SparqlResultError, parse_sparql_json
from .changes import (
    RefreshResult,
    StepChange,
    canonical,
    difference,
    output_text,
    parse_old,
    summary,
)
from .runners import (
    DEFAULT_TIMEOUT,
    QueryRunner,
    SparqlRunError,
    endpoint_runner,
    store_runner,
)
from .writer import (
    file_kind,
    same_file,
    updated_text,
    write_atomically,
    write_reference,
)

__all__ = [
    "DEFAULT_MAX_CHANGES",
    "RefreshRefused",
    "change_limit",
    "refresh_reference",
    "refresh_reference_file",
    "safety_issues",
]

DEFAULT_MAX_CHANGES = "50%"
"""Without ``force``, a refresh may change at most this many outputs (here: half the steps run)."""


class RefreshRefused(QaEvalError):
    """A refresh that would empty outputs or change too many was not written (pass ``force``)."""

    def __init__(self, message: str, result: RefreshResult) -> None:
        super().__init__(message)
        self.result = result


def _is_sparql_step(step: Any) -> bool:
    if not isinstance(step, dict):
        return False
    args = step.get("args")
    if not isinstance(args, dict) or not isinstance(args.get("query"), str):
        return False
    return step.get("name") == "sparql_query" or step.get("output_media_type") == SPARQL_JSON


def _has_rows(old: Mapping[str, Any] | None, old_output: Any) -> bool:
    """Whether an old output had something in it: rows, or text that was not SPARQL JSON."""
    if old is None:
        if isinstance(old_output, str):
            return bool(old_output.strip())
        return old_output is not None and old_output != {} and old_output != []
    return "boolean" not in old and bool(old["results"]["bindings"])


@dataclasses.dataclass(frozen=True)
class _Place:
    """Where a reference step is: its template and question (by id and by position), and its
    group and index in ``reference_steps``."""

    template_id: Any
    question_id: Any
    position: tuple[int, int]
    group: int
    index: int

    @property
    def record(self) -> str:
        """The question, as an ``InputError`` names it."""
        return f"template {self.template_id!r} question {self.question_id!r}"

    @property
    def query_field(self) -> str:
        """The step's query, as an ``InputError`` names it."""
        return f"reference_steps[{self.group}][{self.index}].args.query"


def _sparql_steps(data: list[Any], source: str) -> Iterator[tuple[_Place, dict[str, Any]]]:
    """Every SPARQL reference step of a dataset with its place, in file order; a template that
    is not a mapping with a ``questions`` list is an ``InputError`` when it is reached."""
    for t_pos, template in enumerate(data):
        if not isinstance(template, dict) or not isinstance(template.get("questions"), list):
            raise InputError(
                "a template must be a mapping with a 'questions' list",
                source=source,
                record=f"template [{t_pos}]",
            )
        template_id = template.get("template_id", f"[{t_pos}]")
        for q_pos, question in enumerate(template["questions"]):
            if not isinstance(question, dict):
                continue
            question_id = question.get("id", f"[{q_pos}]")
            groups = question.get("reference_steps")
            if not isinstance(groups, list):
                continue
            for g, group in enumerate(groups):
                if not isinstance(group, list):
                    continue
                for i, step in enumerate(group):
                    if _is_sparql_step(step):
                        yield _Place(template_id, question_id, (t_pos, q_pos), g, i), step


def _run_step(
    run_query: QueryRunner, step: Mapping[str, Any], place: _Place, source: str
) -> dict[str, Any]:
    """The checked SPARQL JSON result of a step's query; a failure is an ``InputError`` naming
    the step's query."""
    try:
        return parse_sparql_json(run_query(step["args"]["query"]))
    except SparqlRunError as e:
        raise InputError(
            str(e), source=source, record=place.record, field=place.query_field
        ) from None
    except SparqlResultError as e:
        raise InputError(
            f"not a SPARQL JSON result: {e}",
            source=source,
            record=place.record,
            field=place.query_field,
        ) from None


def _old_summary(old: Mapping[str, Any] | None, old_output: Any) -> str:
    """What a step's old output was, in a few words."""
    if old is not None:
        return summary(old)
    if old_output is None:
        return "no output"
    return "output that is not SPARQL JSON"


def _refresh_step(step: dict[str, Any], result: dict[str, Any], place: _Place) -> StepChange | None:
    """Write a step's new result into it when it differs from the old output, and say how;
    ``None`` (the step untouched) when the result is unchanged."""
    ordered = step.get("ordered") is True
    new = canonical(result, ordered)
    old_output = step.get("output")
    old = parse_old(old_output, ordered)
    diff = difference(old, new, ordered)
    if not diff.changed:
        return None
    if isinstance(old_output, dict):
        step["output"] = new
    else:
        step["output"] = output_text(new, old_output, old)
    new_empty = "boolean" not in new and not new["results"]["bindings"]
    return StepChange(
        place.template_id,
        place.question_id,
        place.group,
        place.index,
        _old_summary(old, old_output),
        summary(new),
        diff.added,
        diff.removed,
        kind="filled" if old_output is None else "changed",
        emptied=new_empty and _has_rows(old, old_output),
        rows_added=diff.rows_added,
        rows_removed=diff.rows_removed,
        note=diff.note,
        position=place.position,
    )


def refresh_reference(
    data: Any, run_query: QueryRunner, source: str = "reference"
) -> RefreshResult:
    """Re-run every SPARQL reference step with ``run_query``; return a refreshed copy."""
    if not isinstance(data, list):
        raise InputError("the top level must be a list of templates", source=source)
    data = copy.deepcopy(data)
    changes: list[StepChange] = []
    steps_run = 0
    for place, step in _sparql_steps(data, source):
        result = _run_step(run_query, step, place, source)
        steps_run += 1
        change = _refresh_step(step, result, place)
        if change is not None:
            changes.append(change)
    return RefreshResult(data, changes, steps_run)


def change_limit(max_changes: int | str, steps_run: int) -> float:
    """The most outputs a refresh may change without force: a count (``5``, ``"5"``) or a
    percentage of the steps run (``"50%"``)."""
    problem = (
        f"max changes must be a count (e.g. 5) or a percentage of the steps run (e.g. 50%), "
        f"got {max_changes!r}"
    )
    if isinstance(max_changes, bool):
        raise InputError(problem)
    if isinstance(max_changes, int):
        if max_changes < 0:
            raise InputError(problem)
        return float(max_changes)
    text = str(max_changes).strip()
    try:
        if text.endswith("%"):
            percent = float(text[:-1])
            if not 0 <= percent <= 100:
                raise ValueError(text)
            return steps_run * percent / 100
        count = int(text)
    except ValueError:
        raise InputError(problem) from None
    if count < 0:
        raise InputError(problem)
    return float(count)


def safety_issues(
    result: RefreshResult, max_changes: int | str = DEFAULT_MAX_CHANGES
) -> tuple[str, ...]:
    """Why writing this refresh needs force: outputs that had rows would become empty, or more
    outputs would change than ``max_changes`` allows. Filled-in missing outputs do not count."""
    issues = []
    emptied = [c for c in result.changes if c.emptied]
    if emptied:
        first = emptied[0]
        issues.append(
            f"{len(emptied)} of {result.steps_run} SPARQL outputs would become empty, e.g. "
            f"template {first.template_id!r} question {first.question_id!r} {first.step} "
            f"({first.old} -> {first.new})"
        )
    replaced = sum(1 for c in result.changes if c.kind == "changed")
    if replaced > change_limit(max_changes, result.steps_run):
        issues.append(
            f"{replaced} of {result.steps_run} SPARQL outputs would change, more than "
            f"--max-changes {max_changes} allows"
        )
    return tuple(issues)


def refresh_reference_file(
    reference_path: str | os.PathLike[str],
    *,
    store: str | os.PathLike[str] | None = None,
    endpoint: str | None = None,
    output: str | os.PathLike[str] | None = None,
    timeout: float = DEFAULT_TIMEOUT,
    headers: Mapping[str, str] | Iterable[str] | None = None,
    default_graph_uris: Sequence[str] = (),
    auth: tuple[str, str] | None = None,
    force: bool = False,
    max_changes: int | str = DEFAULT_MAX_CHANGES,
) -> RefreshResult:
    """Refresh a reference file against an RDF file or an endpoint; write it to ``output``.

    Only the changed outputs are rewritten; an unchanged file is not written (to another
    ``output`` it is copied as it is). A refresh with ``safety_issues`` raises
    ``RefreshRefused`` and writes nothing, unless ``force``."""
    if (store is None) == (endpoint is None):
        raise ValueError("give exactly one of store (an RDF file) or endpoint (a URL)")
    if store is not None and headers:
        raise InputError("headers apply to a SPARQL endpoint, not to an RDF file")
    change_limit(max_changes, 0)  # a bad value fails before any query runs
    if output is not None:
        check_output_path(output)
    source = Path(reference_path)
    data = read_data(source)
    raw = source.read_bytes()
    bom = raw.startswith(b"\xef\xbb\xbf")
    runner = (
        store_runner(store, default_graph_uris)
        if store is not None
        else endpoint_runner(
            endpoint or "",
            timeout,
            headers=headers,
            default_graph_uris=default_graph_uris,
            auth=auth,
        )
    )
    result = refresh_reference(data, runner, source=str(reference_path))
    result = dataclasses.replace(result, issues=safety_issues(result, max_changes))
    if output is None:
        return result
    if result.issues and not force:
        raise RefreshRefused(
            f"{source}: not written: {'; '.join(result.issues)}; check the graph or endpoint, "
            "review the changes with --dry-run, and pass --force to write them",
            result,
        )
    target = Path(output)
    if file_kind(target) != file_kind(source):
        write_reference(target, result.data)
        return dataclasses.replace(result, written=str(target))
    if not result.changes and same_file(source, target):
        return result
    text = raw.decode("utf-8-sig")
    new = updated_text(text, source.suffix, result).encode("utf-8")
    write_atomically(target, (b"\xef\xbb\xbf" if bom else b"") + new)
    return dataclasses.replace(result, written=str(target))
