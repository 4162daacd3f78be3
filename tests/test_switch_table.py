"""``qa_eval.vocabulary.switch_table`` is the registry's: each family's switch, default, judge,
embedder and groups as ``registry.METRICS`` says them, and the names derived from them as
``vocabulary.lookup`` derives them. A family added, removed or changed without writing the table
again fails here, with the table to write."""

from __future__ import annotations

from pathlib import Path

import pytest

from qa_eval.vocabulary import lookup, switch_table
from qa_eval.vocabulary.registry import METRICS


def _row(name: str, row: tuple[object, ...]) -> str:
    """One row of ``FAMILIES`` as the module writes it (ruff format keeps it so)."""
    return f'    "{name}": {row!r},'.replace("'", '"')


def _rows() -> list[str]:
    """Each family's row as the registry says it."""
    return [
        _row(m.name, (m.switch, m.default, "judge" in m.needs, "embedder" in m.needs, m.groups))
        for m in METRICS.values()
    ]


def _stale() -> str | None:
    """What to write into the module when its table is not the registry's, else None."""
    found = [_row(name, row) for name, row in switch_table.FAMILIES.items()]
    if found == _rows():
        return None
    rows = "\n".join(_rows())
    return f"write these rows into FAMILIES in src/qa_eval/vocabulary/switch_table.py:\n{rows}"


def test_the_switch_table_is_the_registry() -> None:
    stale = _stale()
    assert stale is None, stale


def test_the_rows_are_written_as_the_check_prints_them() -> None:
    """The rows the check prints are the module's own text (so that they can be pasted in)."""
    source = Path(switch_table.__file__).read_text(encoding="utf-8")
    assert "\n".join(_rows()) in source


def test_the_check_fails_on_a_stale_table(monkeypatch: pytest.MonkeyPatch) -> None:
    """A family whose default or groups changed, or a family missing, is caught, and the
    message holds the rows to write."""
    families = dict(switch_table.FAMILIES)
    switch, _, judge, embedder, groups = families["faithfulness"]
    monkeypatch.setitem(
        switch_table.FAMILIES, "faithfulness", (switch, True, judge, embedder, groups)
    )
    message = _stale()
    assert message is not None
    assert '    "faithfulness": (True, False, True, False, ("graphrag",)),' in message
    monkeypatch.setitem(switch_table.FAMILIES, "faithfulness", (switch, False, judge, embedder, ()))
    assert _stale() is not None
    monkeypatch.setitem(switch_table.FAMILIES, "faithfulness", families["faithfulness"])
    assert _stale() is None
    monkeypatch.delitem(switch_table.FAMILIES, "bertscore")
    assert _stale() is not None


def test_what_the_run_reads_is_what_the_registry_says() -> None:
    """The names derived from the table, and what ``config`` makes of them, are those the
    registry gives."""
    from qa_eval.config import GRAPHRAG_SWITCHES, GROUPS, OFFLINE_SWITCHES, SWITCHES, EvalConfig

    switches = lookup.switches()
    assert switches == switch_table.SWITCH_ORDER
    assert {m.name for m in METRICS.values() if not m.default} == switch_table.OFF_BY_DEFAULT
    assert tuple(s for s in switches if METRICS[s].offline) == switch_table.JUDGE_FREE
    embedder = tuple(s for s in switches if "embedder" in METRICS[s].needs)
    assert embedder == switch_table.NEED_EMBEDDER
    assert lookup.groups() == switch_table.SWITCH_GROUPS
    assert switches == SWITCHES
    assert tuple(s for s in SWITCHES if not METRICS[s].default) == GRAPHRAG_SWITCHES
    assert tuple(s for s in SWITCHES if METRICS[s].offline) == OFFLINE_SWITCHES
    assert lookup.groups() == GROUPS
    config = EvalConfig()
    for name in [*METRICS, "not_a_family"]:
        metric = METRICS.get(name)
        assert config.enabled(name) is (metric.default if metric is not None else True), name
