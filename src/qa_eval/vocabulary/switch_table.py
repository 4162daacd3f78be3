"""The registry's metric families as a data table: what a run reads of ``registry.METRICS``
before it scores anything, read without building the registry.

``config.model`` takes the switches, their defaults, their groups and the judge-free ones from
here, ``run.options`` and ``run.endpoints`` the ones that need the embedder: a fresh process's
first ``run_evaluation`` then imports neither ``registry`` nor ``model`` nor ``lookup`` (about
5.5 M instructions: the registry's 41 families and 184 keys built, three modules loaded). The
registry stays the one place that says what a metric is: ``tests/test_switch_table.py`` checks
this table against it, and prints the rows to write here when a family was added, removed or
changed.
"""

FAMILIES: dict[str, tuple[bool, bool, bool, bool, tuple[str, ...]]] = {
    "answer_correctness": (True, True, True, False, ()),
    "answer_relevance": (True, True, True, True, ()),
    "retrieval_answer": (True, True, True, False, ()),
    "retrieval_context": (True, True, True, False, ()),
    "llm_cost": (False, True, True, False, ()),
    "faithfulness": (True, False, True, False, ("graphrag",)),
    "context_precision": (True, False, True, False, ("graphrag",)),
    "context_recall": (True, False, True, False, ("graphrag",)),
    "ragas_score": (True, False, True, False, ("graphrag",)),
    "factual_accuracy": (True, False, True, False, ("graphrag",)),
    "semantic_similarity": (True, False, False, True, ("graphrag",)),
    "answer_class": (True, False, True, False, ("graphrag",)),
    "bertscore": (True, False, False, False, ()),
    "bleu_score": (True, False, False, False, ("ragas-text",)),
    "chrf_score": (True, False, False, False, ("ragas-text",)),
    "rouge_score": (True, False, False, False, ("ragas-text",)),
    "exact_match": (True, False, False, False, ("ragas-text",)),
    "string_present": (True, False, False, False, ("ragas-text",)),
    "non_llm_string_similarity": (True, False, False, False, ("ragas-text",)),
    "answer_accuracy": (True, False, True, False, ("ragas",)),
    "factual_correctness": (True, False, True, False, ("ragas",)),
    "response_groundedness": (True, False, True, False, ("ragas",)),
    "context_entity_recall": (True, False, True, False, ("ragas",)),
    "context_relevance": (True, False, True, False, ("ragas",)),
    "noise_sensitivity": (True, False, True, False, ("ragas",)),
    "summary_score": (True, False, True, False, ("ragas",)),
    "ragas_answer_correctness": (True, False, True, True, ("ragas",)),
    "topic_adherence": (True, False, True, False, ("ragas",)),
    "goal_accuracy": (True, False, True, False, ("agent",)),
    "trajectory_judgement": (True, False, True, False, ("agent",)),
    "trajectory": (True, True, True, False, ()),
    "sql_semantic_equivalence": (True, False, True, False, ()),
    "rubrics_score": (True, False, True, False, ("ragas",)),
    "instance_specific_rubrics": (True, False, True, False, ("ragas",)),
    "quoted_spans_alignment": (True, False, False, False, ("ragas-text",)),
    "tool_call_accuracy": (True, False, False, False, ("ragas",)),
    "tool_call_f1": (True, False, False, False, ("ragas",)),
    "datacompy_score": (True, False, False, False, ()),
    "custom": (True, True, True, False, ()),
    "steps_score": (False, True, False, False, ()),
    "usage": (False, True, False, False, ()),
}
"""Each family in the registry's order: (a config switch, on by default, needs a judge, needs the
embedder, its groups): ``Metric.switch``, ``default``, ``"judge"`` and ``"embedder"`` in
``needs``, ``groups``."""

SWITCH_ORDER = tuple(name for name, row in FAMILIES.items() if row[0])
"""Every config switch (``--enable`` / ``--disable``), in order (``lookup.switches``)."""
OFF_BY_DEFAULT = frozenset(name for name, row in FAMILIES.items() if not row[1])
"""Every family off unless a config or ``--enable`` switches it on; any other name is on."""
JUDGE_FREE = tuple(name for name in SWITCH_ORDER if not FAMILIES[name][2])
"""The switches whose family needs no judge (``Metric.offline``), in order."""
NEED_EMBEDDER = tuple(name for name in SWITCH_ORDER if FAMILIES[name][3])
"""The switches whose family needs the embedder, in order."""


def _groups() -> dict[str, tuple[str, ...]]:
    out: dict[str, tuple[str, ...]] = {}
    for name, row in FAMILIES.items():
        for group in row[4]:
            out[group] = (*out.get(group, ()), name)
    return out


SWITCH_GROUPS = _groups()
"""The names ``--enable`` expands to the switches of their group (``lookup.groups``)."""
