"""An agreement report as text: a compact table per metric with the judges side by side (and
their cost per question), the people's own agreement, and one sentence per pair of judges that
says what the comparison shows and no more (docs/agreement.md)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

__all__ = ["comparison_sentences", "format_report"]

_COLUMNS = (
    ("accuracy", "accuracy"),
    ("kappa", "kappa"),
    ("auc", "AUC"),
    ("spearman", "spearman"),
    ("kendall", "kendall"),
    ("mae", "MAE"),
)


def _num(value: Any, digits: int = 2) -> str:
    return "-" if value is None else f"{value:.{digits}f}"


def _ci(interval: Any) -> str:
    if not interval or interval[0] is None or interval[1] is None:
        return ""
    return f" [{interval[0]:.2f}, {interval[1]:.2f}]"


def _cost(value: Any) -> str:
    if value is None:
        return "-"
    return f"${value:.4g}"


def _p(value: Any) -> str:
    if value is None:
        return "p not computed"
    return "p < 0.001" if value < 0.001 else f"p = {value:.2g}"


def format_report(report: Any, disagreements: int = 3) -> str:
    """The report (an ``AgreementReport`` or its dict) as terminal text."""
    data: Mapping[str, Any] = report.to_dict() if hasattr(report, "to_dict") else report
    judges: Sequence[Mapping[str, Any]] = data["judges"]
    lines: list[str] = []
    cv = data.get("method", {}).get("cross_validation")
    if isinstance(cv, Mapping):
        lines.append(
            f"few-shot examples cross-validated: {cv.get('items')} labelled items in "
            f"{cv.get('folds')} folds, each judged by {cv.get('family')} with "
            f"{cv.get('examples_per_prompt')} examples ({cv.get('pick')}) from the other folds "
            "only, against the same items judged without examples"
        )
        lines.append("")
    metrics = list(dict.fromkeys(m["metric"] for j in judges for m in j["metrics"]))
    for metric in metrics:
        rows = [(j, next(m for m in j["metrics"] if m["metric"] == metric)) for j in judges]
        first = rows[0][1]
        kind = first["kind"]
        lines.append(f"{metric} ({kind} labels, n = {first['n']}, 95% intervals)")
        if not first["n"]:
            lines.append(
                "  no labelled item has a value in every results file (question ids are "
                "compared as text; a label may name its template_id)"
            )
        shown = [(k, title) for k, title in _COLUMNS if any(r.get(k) is not None for _, r in rows)]
        header = ["judge", "model", "cost/question", *(t for _, t in shown)]
        if any("threshold" in r for _, r in rows):
            header.append("threshold")
        table = [header]
        for judge, row in rows:
            cells = [str(judge["label"]), str(judge.get("model") or "-"), _cost(judge.get("cost"))]
            for key, _ in shown:
                cells.append(_num(row.get(key)) + _ci(row.get(f"{key}_ci")))
            if "threshold" in header:
                cells.append(_num(row.get("threshold"), 3))
            table.append(cells)
        widths = [max(len(r[i]) for r in table) for i in range(len(header))]
        for cells in table:
            lines.append("  " + "  ".join(c.ljust(w) for c, w in zip(cells, widths)).rstrip())
        for judge, row in rows:
            cv = row.get("threshold_cv")
            if cv:
                lines.append(
                    f"  {judge['label']}: threshold chosen on these labels; accuracy "
                    f"{cv['accuracy_in_sample']:.2f} in sample, {cv['accuracy_cv']:.2f} "
                    f"cross-validated ({cv['folds']} folds; optimism {cv['optimism']:+.2f})"
                )
            if row.get("n_tied"):
                lines.append(f"  {row['n_tied']} item(s) left out: the annotators tied")
            if row.get("missing"):
                lines.append(f"  {judge['label']}: {row['missing']} labelled item(s) with no value")
        for judge, row in rows:
            listed = row.get("disagreements", [])
            for entry in listed[:disagreements]:
                reason = entry.get("reason")
                text = f"  disagrees [{judge['label']}] question {entry['question_id']!r}: judge "
                text += f"{_value(entry['judge'])}, label {_value(entry['label'])}"
                if reason:
                    reason_text = " ".join(str(reason).split())
                    text += f" - {reason_text[:100]}"
                lines.append(text)
            more = row.get("n_disagreements", len(listed)) - min(len(listed), disagreements)
            if more > 0:
                lines.append(
                    f"  and {more} more [{judge['label']}] (--format json lists the "
                    f"{len(listed)} largest gaps)"
                )
        lines.append("")
    annotators = data.get("annotators")
    if annotators:
        for block in annotators["metrics"]:
            lines.append(
                f"people on {block['metric']}: Krippendorff's alpha ({block['level']}) "
                f"{_num(block['alpha'])}{_ci(block['alpha_ci'])}, n = {block['n']} "
                "(the ceiling a judge can reach)"
            )
            for rater in block["raters"]:
                figure = "kappa" if "kappa" in rater else "spearman"
                if figure in rater:
                    lines.append(
                        f"  {rater['annotator'] or '(unnamed)'} vs the others: {figure} "
                        f"{_num(rater[figure])}{_ci(rater.get(figure + '_ci'))} (n = {rater['n']})"
                    )
        lines.append("")
    lines.extend(comparison_sentences(data))
    return "\n".join(lines).rstrip() + "\n"


def comparison_sentences(data: Mapping[str, Any], alpha: float = 0.05) -> list[str]:
    """One sentence per pair of judges and metric, on kappa (or Spearman): a difference only
    when the Holm-adjusted test finds one, else "no significant difference" with the interval
    of the difference, which is not a proof that the judges are equivalent."""
    costs = {j["label"]: j.get("cost") for j in data["judges"]}
    out = []
    for row in data.get("comparisons", []):
        if row["statistic"] not in ("kappa", "spearman"):
            continue
        a, b, name = row["a"], row["b"], row["statistic"]
        values = f"{name} {_num(row['value_a'])} vs {_num(row['value_b'])}"
        p = row.get("p_adjusted", row.get("p_value"))
        p_text = _p(p) + (" Holm-adjusted" if "p_adjusted" in row else "")
        cost = _relative_cost(costs.get(a), costs.get(b), a, b)
        if p is not None and p < alpha and row["difference"] is not None:
            better, worse = (b, a) if row["difference"] > 0 else (a, b)
            out.append(
                f"{row['metric']}: {better} agrees with your labels better than {worse} "
                f"({values}, {p_text}){cost}."
            )
            continue
        interval = row.get("difference_ci")
        bounds = ""
        if interval and interval[0] is not None:
            bounds = (
                f"; the difference {b} - {a} could be anywhere in "
                f"[{interval[0]:+.2f}, {interval[1]:+.2f}], so this is not a proof that they "
                "are equally good"
            )
        out.append(
            f"{row['metric']}: no significant difference between {a} and {b} in agreement "
            f"with your labels ({values}, {p_text}){cost}{bounds}."
        )
    return out


def _relative_cost(cost_a: Any, cost_b: Any, a: str, b: str) -> str:
    """``"; A costs 6% of what B costs per question"`` when both costs are known."""
    if cost_a is None or cost_b is None or cost_b <= 0:
        return ""
    return f"; {a} costs {100 * cost_a / cost_b:.0f}% of what {b} costs per question"


def _value(value: Any) -> str:
    """A judge value or label for a line: numbers to 3 digits, the rest as written."""
    if isinstance(value, float):
        return f"{value:.3g}"
    return repr(value)
