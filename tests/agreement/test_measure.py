"""agreement(): the figures per metric, judge and template equal the statistics on the same
items; majority ties, thresholds and their cross-validation, disagreements with the judge's
reason, the people's alpha, the judges' comparison and the JSON schema of the report."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from qa_eval.agreement import agreement, format_report, load_judges
from qa_eval.agreement.judges import judge_labels
from qa_eval.agreement.stats import (
    cohen_kappa,
    kendall_tau_b,
    krippendorff_alpha,
    mae,
    mcnemar_exact,
    roc_auc,
    spearman,
)
from qa_eval.errors import InputError
from qa_eval.schemas import load_schema

jsonschema = pytest.importorskip("jsonschema")
N = 40


def results(
    values: list[Any], metric: str = "faithfulness", cost: float | None = 0.01, **extra: Any
) -> list[dict]:
    out = []
    for i, value in enumerate(values):
        row = {
            "template_id": f"t{i % 2}",
            "question_id": f"q{i}",
            "question_text": f"Question {i}?",
            "status": "success",
            metric: value,
            f"{metric}_reason": f"reason {i}",
            **extra,
        }
        if cost is not None:
            row["llm_cost"] = cost
        out.append(row)
    return out


def truth(seed: int = 0) -> np.ndarray:
    return np.random.default_rng(seed).random(N) < 0.5


def noisy(label: np.ndarray, flip: float, seed: int) -> list[bool]:
    rng = np.random.default_rng(seed)
    return [bool(x) ^ bool(rng.random() < flip) for x in label]


def rows(label: list[Any], metric: str = "faithfulness", annotator: str = "") -> list[dict]:
    return [
        {"question_id": f"q{i}", "metric": metric, "label": v, "annotator": annotator}
        for i, v in enumerate(label)
    ]


def validate(report: dict) -> None:
    validator = jsonschema.Draft202012Validator(load_schema("agreement"))
    errors = [f"{list(e.absolute_path)}: {e.message}" for e in validator.iter_errors(report)]
    assert not errors, errors[:5]


def test_binary_judge_figures_equal_the_statistics_on_the_same_items() -> None:
    label = truth()
    judge = noisy(label, 0.2, 1)
    report = agreement(results(judge), rows(label.tolist()), resamples=200)
    data = report.to_dict()
    validate(json.loads(json.dumps(data)))
    (entry,) = data["judges"][0]["metrics"]
    assert entry["n"] == N and entry["kind"] == "binary" and entry["judge_values"] == "binary"
    assert entry["accuracy"] == pytest.approx(np.mean(np.array(judge) == label))
    assert entry["kappa"] == pytest.approx(cohen_kappa(judge, label.tolist()))
    lo, hi = entry["kappa_ci"]
    assert lo < entry["kappa"] < hi
    counts = entry["confusion"]["counts"]
    assert entry["confusion"]["classes"] == [False, True]
    assert counts[1][1] == sum(j and t for j, t in zip(judge, label))
    assert sum(map(sum, counts)) == N
    assert "auc" not in entry and "spearman" not in entry
    assert set(entry["per_template"]) == {"t0", "t1"}
    assert sum(t["n"] for t in entry["per_template"].values()) == N
    wrong = list(entry["disagreements"])
    assert wrong and all(d["judge"] != d["label"] for d in wrong)
    assert wrong[0]["reason"] == f"reason {wrong[0]['question_id'][1:]}"
    assert wrong[0]["question_text"].startswith("Question")


def test_a_continuous_judge_gets_auc_and_a_cross_validated_threshold() -> None:
    label = truth(2)
    rng = np.random.default_rng(3)
    scores = [float(np.clip(0.3 + 0.4 * t + rng.normal(0, 0.2), 0, 1)) for t in label]
    report = agreement(results(scores), rows(label.tolist()), resamples=200).to_dict()
    (entry,) = report["judges"][0]["metrics"]
    assert entry["judge_values"] == "continuous"
    assert entry["auc"] == pytest.approx(roc_auc(scores, label.tolist()))
    called = [s >= entry["threshold"] for s in scores]
    assert entry["accuracy"] == pytest.approx(np.mean(np.array(called) == label))
    cv = entry["threshold_cv"]
    assert cv["accuracy_in_sample"] == pytest.approx(entry["accuracy"])
    assert cv["optimism"] == pytest.approx(cv["accuracy_in_sample"] - cv["accuracy_cv"])
    # disagreements are the items on the wrong side of the threshold only
    assert all((d["judge"] >= entry["threshold"]) != d["label"] for d in entry["disagreements"])
    given = agreement(results(scores), rows(label.tolist()), threshold=0.5, resamples=200)
    fixed = given.metric("judge", "faithfulness")
    assert fixed is not None and fixed["threshold"] == 0.5 and "threshold_cv" not in fixed
    assert fixed["accuracy"] == pytest.approx(np.mean((np.array(scores) >= 0.5) == label))


def test_continuous_labels_get_rank_correlations_and_mae() -> None:
    rng = np.random.default_rng(4)
    label = rng.integers(1, 6, N).astype(float)
    judge = (label + rng.integers(-1, 2, N)).tolist()
    report = agreement(results(judge, "score"), rows(label.tolist(), "score"), resamples=200)
    entry = report.metric("judge", "score")
    assert entry is not None and entry["kind"] == "continuous"
    assert entry["spearman"] == pytest.approx(spearman(judge, label))
    assert entry["kendall"] == pytest.approx(kendall_tau_b(judge, label))
    assert entry["mae"] == pytest.approx(mae(judge, label))
    assert entry["spearman_ci"][0] < entry["spearman"] < entry["spearman_ci"][1]
    assert "kappa" not in entry and "confusion" not in entry


def test_class_labels_compare_the_judges_class_as_text() -> None:
    label = ["correct", "wrong", "partial"] * 10
    judge = label[:25] + ["wrong"] * 5
    report = agreement(results(judge, "answer_class"), rows(label, "answer_class"), resamples=200)
    entry = report.metric("judge", "answer_class")
    assert entry is not None and entry["kind"] == "class"
    assert entry["accuracy"] == pytest.approx(np.mean(np.array(judge) == np.array(label)))
    assert entry["kappa"] == pytest.approx(cohen_kappa(judge, label))
    assert entry["confusion"]["classes"] == ["correct", "partial", "wrong"]


def test_several_annotators_majority_ties_and_alpha() -> None:
    label = truth(5)
    people = [noisy(label, 0.1, 10 + k) for k in range(3)]
    labels = [r for k, p in enumerate(people) for r in rows(p, annotator=f"p{k}")]
    # q0: only two annotators, who disagree: a tie, left out
    labels = [r for r in labels if not (r["question_id"] == "q0" and r["annotator"] == "p2")]
    labels = [r for r in labels if r["question_id"] != "q0"] + [
        {"question_id": "q0", "metric": "faithfulness", "label": True, "annotator": "p0"},
        {"question_id": "q0", "metric": "faithfulness", "label": False, "annotator": "p1"},
    ]
    judge = noisy(label, 0.2, 6)
    report = agreement(results(judge), labels, resamples=200).to_dict()
    validate(report)
    (entry,) = report["judges"][0]["metrics"]
    assert entry["n"] == N - 1 and entry["n_tied"] == 1
    block = report["annotators"]
    assert report["annotators"]["alpha"] == block["metrics"][0]["alpha"]
    units: dict[str, list[bool]] = {}
    for r in labels:
        units.setdefault(r["question_id"], []).append(r["label"])
    assert block["alpha"] == pytest.approx(krippendorff_alpha(list(units.values()), "nominal"))
    assert [r["annotator"] for r in block["metrics"][0]["raters"]] == ["p0", "p1", "p2"]
    assert all("kappa" in r for r in block["metrics"][0]["raters"])
    majority = {q: sum(v) > len(v) / 2 for q, v in units.items() if sum(v) * 2 != len(v)}
    entry_wrong = {d["question_id"] for d in entry["disagreements"]}
    assert entry_wrong <= {f"q{i}" for i in range(N) if judge[i] != majority.get(f"q{i}")}


def test_two_judges_are_measured_on_the_same_items_and_compared() -> None:
    label = truth(7)
    good = noisy(label, 0.1, 8)
    poor = noisy(label, 0.35, 9)
    poor_results = results(poor, cost=0.0005)
    del poor_results[3]["faithfulness"]  # no value: q3 is left out for both judges
    report = agreement(
        {"mini": poor_results, "big": results(good, cost=0.01)}, rows(label.tolist()), resamples=300
    )
    data = report.to_dict()
    validate(data)
    mini, big = (report.metric(j, "faithfulness") for j in ("mini", "big"))
    assert mini is not None and big is not None
    assert mini["n"] == big["n"] == N - 1 and mini["missing"] == 1 and big["missing"] == 0
    by_statistic = {c["statistic"]: c for c in data["comparisons"]}
    assert set(by_statistic) == {"accuracy", "kappa"}
    mcnemar = by_statistic["accuracy"]
    keep = [i for i in range(N) if i != 3]
    p, only_a, only_b = mcnemar_exact(
        [poor[i] == label[i] for i in keep], [good[i] == label[i] for i in keep]
    )
    assert (mcnemar["p_value"], mcnemar["only_a_right"], mcnemar["only_b_right"]) == (
        p,
        only_a,
        only_b,
    )
    assert by_statistic["kappa"]["value_b"] == pytest.approx(big["kappa"])
    ps = sorted(c["p_value"] for c in data["comparisons"])
    assert min(c["p_adjusted"] for c in data["comparisons"]) == pytest.approx(min(1, 2 * ps[0]))
    assert data["judges"][0]["cost"] == pytest.approx(0.0005)
    text = format_report(report)
    assert "mini costs 5% of what big costs per question" in text


def test_no_significant_difference_is_worded_without_claiming_equivalence() -> None:
    label = truth(11)
    a = noisy(label, 0.2, 12)
    report = agreement(
        {"a": results(a), "b": results(list(a))}, rows(label.tolist()), resamples=200
    )
    text = format_report(report)
    assert "no significant difference between a and b" in text
    assert "not a proof that they are equally good" in text
    assert "as well as" not in text


def test_model_comes_from_the_signature_and_label_from_the_file(tmp_path: Path) -> None:
    label = truth(13)
    path = tmp_path / "gpt-judge.jsonl"
    path.write_text("\n".join(json.dumps(r) for r in results(noisy(label, 0.1, 14))) + "\n")
    (tmp_path / "gpt-judge.signature.yaml").write_text("judge:\n  model: gpt-4o-mini\n")
    (judge,) = load_judges([path])
    assert (judge.label, judge.model) == ("gpt-judge", "gpt-4o-mini")
    report = agreement(path, rows(label.tolist()), resamples=200).to_dict()
    assert report["judges"][0]["model"] == "gpt-4o-mini"
    assert report["judges"][0]["source"] == str(path)
    reference = tmp_path / "reference.yaml"
    reference.write_text("- template_id: t\n  questions:\n  - id: q\n    question_text: Q?\n")
    with pytest.raises(InputError, match="`qa-eval agreement` expects results"):
        load_judges([reference])


def test_bad_requests_are_clear_errors() -> None:
    label = truth(15).tolist()
    with pytest.raises(InputError, match="no label for metric 'nope'"):
        agreement(results(label), rows(label), metric="nope")
    with pytest.raises(
        InputError, match="judge: faithfulness: the values of faithfulness are text"
    ):
        agreement(results(["yes"] * N), rows(label))
    twice = [*results(label), dict(results(label)[0], template_id="other")]
    with pytest.raises(InputError, match="give the label a template_id"):
        agreement(twice, rows(label))
    with pytest.raises(ValueError, match="resamples"):
        agreement(results(label), rows(label), resamples=10)


def test_judge_labels_are_the_system_names_of_evaluate_system_files() -> None:
    assert judge_labels(["out/results.gpt-4o-mini.jsonl", "out/results.gpt-4.1.jsonl"]) == [
        "gpt-4o-mini",
        "gpt-4.1",
    ]
    assert judge_labels(["mini.jsonl", "big.jsonl"]) == ["mini", "big"]
    assert judge_labels(["results.a.jsonl"]) == ["results.a"]  # one file: nothing to strip
    assert judge_labels(["x/run.jsonl", "y/run.jsonl"]) == ["x/run.jsonl", "y/run.jsonl"]


def test_labels_that_match_no_result_measure_nothing_and_say_so() -> None:
    report = agreement(
        results([True, False]), [{"question_id": "zz", "metric": "faithfulness", "label": True}]
    )
    entry = report.metric("judge", "faithfulness")
    assert entry is not None and entry["n"] == 0 and entry["missing"] == 1
    assert "no labelled item has a value in every results file" in format_report(report)


def test_a_disagreement_carries_the_reason_of_the_family_that_writes_the_key() -> None:
    rows = [
        {
            "question_id": f"q{i}",
            "question_text": f"Q{i}",
            "answer_f1": 1.0 if i < 3 else 0.0,
            "answer_correctness_reason": f"claims of q{i} compared",
        }
        for i in range(6)
    ]
    labels = [{"question_id": f"q{i}", "metric": "answer_f1", "label": i % 2} for i in range(6)]
    entry = agreement(rows, labels, threshold=0.5).metric("judge", "answer_f1")
    assert entry is not None and entry["disagreements"]
    for item in entry["disagreements"]:
        assert item["reason"] == f"claims of {item['question_id']} compared"
    rows[0]["answer_f1_reason"] = "its own"  # a key's own reason comes first
    labels[0]["label"] = 0
    entry = agreement(rows, labels, threshold=0.5).metric("judge", "answer_f1")
    assert entry is not None
    assert {d["question_id"]: d["reason"] for d in entry["disagreements"]}["q0"] == "its own"
