"""The results files that ``compare`` and ``report`` read: each read whole, or, a JSON Lines file,
read through once (``compare.columns.scan_results``) so that the run can be compared as columns
in bounded memory; the signature beside each, and the check that two runs used one reference."""

from __future__ import annotations

import argparse
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from ..compare.columns import Scanned, scan_results
from ..errors import QaEvalError
from ..io import kinds
from ..io.files import JSONL_SUFFIXES, check_results, read_data, signature_path

__all__ = [
    "check_same_reference",
    "compared_metrics",
    "read_results_file",
    "read_runs",
    "read_signature",
]


def read_results_file(path: str, command: str) -> list[Any]:
    """Read a results file for ``command``, refusing a reference dataset, responses,
    aggregates and the like (they would be "aggregated" into made-up numbers)."""
    data = read_data(path)
    expected = f"`qa-eval {command}` expects results written by `qa-eval evaluate -o`"
    kinds.require(data, str(path), (kinds.RESULTS,), expected)
    return check_results(data, str(path))


def read_runs(paths: Sequence[str], command: str) -> list[Scanned] | list[list[Any]]:
    """The runs of ``paths``, checked in order: each JSON Lines file read through once (scanned,
    to be compared as columns) when every one is JSON Lines and none has trials or judge
    repeats; otherwise every run read whole (the same checks, the same errors)."""
    scans: list[Scanned] = []
    for path in paths:
        if Path(path).suffix.lower() not in JSONL_SUFFIXES:
            break
        scanned = scan_results(path, command)
        if scanned.whole:
            break
        scans.append(scanned)
    else:
        return scans
    return [read_results_file(p, command) for p in paths]


def read_signature(results_path: str) -> dict[str, Any] | None:
    """The run signature beside a results file (``RESULTS.signature.yaml``), if there is one."""
    sig_file = signature_path(results_path)
    if not sig_file.is_file():
        return None
    signature = read_data(sig_file)
    if signature is None:
        return None
    return dict(signature) if isinstance(signature, dict) else {"signature": signature}


def _fingerprint(signature: Any) -> str | None:
    reference = signature.get("reference") if isinstance(signature, dict) else None
    value = reference.get("fingerprint") if isinstance(reference, dict) else None
    return value if isinstance(value, str) else None


def check_same_reference(
    paths: Sequence[str], signatures: Sequence[Any], args: argparse.Namespace
) -> list[str]:
    """Refuse two runs evaluated against different reference datasets (their questions would be
    paired by accidental id matches) unless ``--allow-different-references``; returns the notes
    to print once the command succeeded (a run without a fingerprint cannot be checked)."""
    fingerprints = [_fingerprint(s) for s in signatures]
    notes = []
    missing = [p for p, f in zip(paths, fingerprints) if f is None]
    if missing:
        notes.append(
            f"{', '.join(missing)}: no reference fingerprint (no RESULTS.signature.yaml, or one "
            "written before qa-eval recorded it), so it is not checked that the runs used the "
            "same reference dataset"
        )
    elif fingerprints[0] != fingerprints[1]:
        a, b = fingerprints
        message = (
            f"{paths[0]} and {paths[1]} were evaluated against different reference datasets "
            f"(fingerprints {str(a)[:19]}... and {str(b)[:19]}...): their questions would be "
            "paired by matching ids only"
        )
        if not getattr(args, "allow_different_references", False):
            raise QaEvalError(f"{message}; pass --allow-different-references to compare anyway")
        notes.append(f"{message} (--allow-different-references)")
    return notes


def compared_metrics(
    chosen: Sequence[str] | None, available: Callable[[], list[str]], regressions: Sequence[Any]
) -> list[str] | None:
    """The metrics to compare: ``--metric``s plus the gated ones; a gated metric neither run
    has (``available()``: the runs' metrics) is a usage error listing the metrics they have."""
    if not regressions:
        return list(chosen) if chosen else None
    present = available()
    for metric, _ in regressions:
        if metric not in present:
            raise QaEvalError(
                f"--fail-on-regression {metric}: no such metric in these runs (metrics: "
                f"{', '.join(present) or 'none'})"
            )
    if not chosen:
        return None
    return [*chosen, *(m for m, _ in regressions if m not in chosen)]
