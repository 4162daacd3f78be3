"""The JUnit XML file of a CI job (``--junit``): a test case per gate and per question.

Everything read from results (ids, answers, error messages, metric names) is untrusted text: the
writer drops nothing and escapes everything (characters XML 1.0 cannot hold are written as
``\\uXXXX``). What passes and what fails is decided in :mod:`qa_eval.cli.gates`.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from .gates import Gate, question_checks, short

if TYPE_CHECKING:  # ElementTree is imported when a file is written (--junit), not at every run
    import xml.etree.ElementTree as ET

__all__ = ["junit_xml", "xml_safe"]

NOT_XML = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\ud800-\udfff\ufffe\uffff]")
"""The characters XML 1.0 cannot hold: controls, lone surrogates, U+FFFE and U+FFFF."""


def xml_safe(value: Any) -> str:
    """Text that XML 1.0 can hold: characters it cannot (controls, lone surrogates, U+FFFE/F)
    are written as ``\\uXXXX``. ElementTree escapes ``& < > "`` itself."""
    return NOT_XML.sub(lambda m: f"\\u{ord(m.group()):04x}", str(value))


def _case(
    suite: ET.Element, classname: str, name: str, errors: list[str], failures: list[str]
) -> tuple[int, int]:
    """A test case with its first check as the message; returns (errors, failures) added."""
    import xml.etree.ElementTree as ET

    case = ET.SubElement(suite, "testcase", classname=xml_safe(classname), name=xml_safe(name))
    checks = errors + failures
    if not checks:
        return 0, 0
    tag = "error" if errors else "failure"
    message = checks[0] if len(checks) == 1 else f"{checks[0]} (and {len(checks) - 1} more)"
    element = ET.SubElement(case, tag, message=xml_safe(short(message, 500)))
    element.set("type", "incomplete" if errors else "quality")
    element.text = xml_safe("\n".join(checks))
    return (1, 0) if errors else (0, 1)


def _suite(parent: ET.Element, name: str) -> ET.Element:
    """An empty ``testsuite`` element under ``parent``."""
    import xml.etree.ElementTree as ET

    return ET.SubElement(parent, "testsuite", name=xml_safe(name))


def _counts(element: ET.Element, tests: int, errors: int, failures: int) -> None:
    """The ``tests``, ``errors`` and ``failures`` counts of a suite (or of all of them)."""
    element.set("tests", str(tests))
    element.set("errors", str(errors))
    element.set("failures", str(failures))


def junit_xml(
    gates: Sequence[Gate],
    runs: Sequence[tuple[str | None, Sequence[Mapping[str, Any]]]] = (),
    name: str = "qa-eval",
) -> bytes:
    """A JUnit XML document: a ``gates`` suite (one test case per gate) and, for each run, a
    suite with one test case per question (class name: its template) and its failed checks."""
    import xml.etree.ElementTree as ET

    root = ET.Element("testsuites", name=xml_safe(name))
    totals = _gate_suite(root, gates, name)
    for system, results in runs:
        counts = _question_suite(root, name, system, results)
        totals = [t + c for t, c in zip(totals, counts)]
    _counts(root, *totals)
    ET.indent(root)
    text = ET.tostring(root, encoding="unicode")
    return ('<?xml version="1.0" encoding="UTF-8"?>\n' + text + "\n").encode("utf-8")


def _gate_suite(root: ET.Element, gates: Sequence[Gate], name: str) -> list[int]:
    """The ``gates`` suite, a test case per gate; returns its (tests, errors, failures)."""
    suite = _suite(root, f"{name} gates")
    failed = 0
    for gate in gates:
        detail = [] if gate.passed else [gate.detail]
        failed += _case(suite, f"{name}.gates", gate.name, [], detail)[1]
    _counts(suite, len(gates), 0, failed)
    suite.set("skipped", "0")
    return [len(gates), 0, failed]


def _question_suite(
    root: ET.Element, name: str, system: str | None, results: Sequence[Mapping[str, Any]]
) -> list[int]:
    """One run's suite, a test case per question; returns its (tests, errors, failures)."""
    suite_name = f"{name} questions" + (f" [{system}]" if system is not None else "")
    suite = _suite(root, suite_name)
    counts = [0, 0, 0]
    for result in results:
        errors, failures = question_checks(result)
        template = result.get("template_id")
        classname = str(template) if template is not None else "questions"
        e, f = _case(suite, classname, str(result.get("question_id")), errors, failures)
        counts = [counts[0] + 1, counts[1] + e, counts[2] + f]
    _counts(suite, *counts)
    suite.set("skipped", "0")
    return counts
