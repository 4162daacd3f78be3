"""Speed work must not change a byte of what a run gives: the results (with every ``matches``,
``mismatch`` and ``step_errors`` text), the aggregates and the reference fingerprint of the
benchmark's seeded datasets are pinned by digests that the code before the speed work produced.

The datasets are ``benchmarks/run.py``'s own (``dataset``, ``mismatch_mix``, ``failing_mix``), at
2,000 questions: the matching mix, the mismatch mix (about half the reference steps unmatched, so
every kind of explanation is written) and the failing mix (85% of the questions below 1, most
unmatched steps with several candidates to explain against; pinned by the code before the
explanations bounded their candidates). A digest that changes means an output changed: if that
was meant (a new key, a better text), update the digest in the same commit and say why."""

from __future__ import annotations

import hashlib
import importlib.util
from pathlib import Path
from types import ModuleType
from typing import Any

import orjson
import pytest

from qa_eval import compute_aggregates, run_evaluation

BENCHMARK = Path(__file__).resolve().parents[2] / "benchmarks" / "run.py"

FINGERPRINT = "sha256:2e0f5d0ab1fa212c71888cb890bae0f12ecedc85bfb322c028c650582a020490"
"""The reference (the same in both mixes)."""
PINNED = {
    "matching": {
        "results": "247c4fdb43c5152e4e18de5330abbbddd00304451354718cc3ba48793060229d",
        "aggregates": "d6827766c4eb20f1d8004a07b0324aa4065c6f5803617c354f28ec568ceddd15",
        "fingerprint": FINGERPRINT,
        "graphrag-eval keys": "27b7f2988658cfb315ccf59003abbd17ca4e91011b0cb7fdf66dbbea8504a657",
    },
    "mismatch": {
        "results": "dd514adf81e88c277883157cc03e4c863c238cb374c8fd955b8739c03350f82b",
        "aggregates": "40aff38ed44ef35e99598f1b97d82d89c10c171e049fd3efdcad83e52f8bdb90",
        "fingerprint": FINGERPRINT,
        "graphrag-eval keys": "49172753b1b87d0a7bad95d2e72218e71823df95e676b011f96c54023024acf9",
    },
    "failing": {
        "results": "63d439f069f8c067255cbc1de27e444c477bab999dcb2aa7d84e4d00cd10c16f",
        "aggregates": "2ee345e07a92db75db665225b691c42e9ddeb02df08a9050ee39065dde5e2e70",
        "fingerprint": "sha256:a479584e890dd81ea48505a9397c2960ff122f2fa62332b7bbc0a4cf035721c8",
        "graphrag-eval keys": "72bd3e854b72d4b2031c1be558a7aef76319fe2da1c18807cc1730ab13cbd41c",
    },
}


def _benchmark() -> ModuleType:
    spec = importlib.util.spec_from_file_location("qa_eval_benchmark_run", BENCHMARK)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _digest(value: Any) -> str:
    """Key order counts too: it is the order a results file is written in."""
    return hashlib.sha256(orjson.dumps(value)).hexdigest()


def digests(mix: str, questions: int = 2000) -> dict[str, str]:
    """The digests of one mix's results, aggregates and reference fingerprint."""
    bench = _benchmark()
    if mix == "failing":
        reference, responses = bench.failing_mix(questions)
    else:
        reference, responses = bench.dataset(questions)
    if mix == "mismatch":
        responses = bench.mismatch_mix(reference, responses)
    results = run_evaluation(reference, responses)
    original = run_evaluation(reference, responses, keys="graphrag-eval")
    return {
        "results": _digest(list(results)),
        "aggregates": _digest(compute_aggregates(results)),
        "fingerprint": results.signature["reference"]["fingerprint"],
        "graphrag-eval keys": _digest(
            [list(original), compute_aggregates(original, keys="graphrag-eval")]
        ),
    }


@pytest.mark.parametrize("mix", sorted(PINNED))
def test_outputs_are_unchanged(mix: str) -> None:
    assert digests(mix) == PINNED[mix]


if __name__ == "__main__":  # prints the digests of the code on the path, to pin them
    for name in sorted(PINNED):
        print(name, digests(name))
