"""The Hypothesis profile the suite runs under has no deadline and no too-slow health check, for
the tests' own @settings too."""

from __future__ import annotations

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st


def test_the_default_profile_has_no_deadline() -> None:
    default = settings.default
    assert default is not None
    assert default.deadline is None
    assert HealthCheck.too_slow in default.suppress_health_check


@settings(max_examples=5)
@given(st.integers())
def test_a_test_with_its_own_settings_inherits_no_deadline(value: int) -> None:
    assert isinstance(value, int)
    assert settings(max_examples=5).deadline is None
