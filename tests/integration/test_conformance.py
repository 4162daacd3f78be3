"""The conformance cases of the original library (../shared/conformance), when they are present."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

COMPARE = Path(__file__).resolve().parents[3] / "shared" / "conformance" / "compare.py"


@pytest.mark.skipif(
    not COMPARE.exists(), reason="../shared/conformance is not beside this checkout"
)
def test_conformance_cases_pass() -> None:
    run = subprocess.run(
        [sys.executable, str(COMPARE), "--module", "qa_eval", "--verbose"],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert run.returncode == 0, run.stdout + run.stderr
    assert run.stdout.strip().splitlines()[-1].endswith(" 0 failed")
