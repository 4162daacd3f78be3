"""The report for agent trajectories: the trajectory metrics in the tables, charts and verdict
with their registry directions, the per-question drill-down of calls (matched, missing, extra,
failed, optional, repeated; the alternative chosen; ``trajectory_error`` as such), two agents
side by side, repeated trials, and hostile tool names, arguments and outputs kept as text."""

from __future__ import annotations

import copy
import json
import re
from typing import Any

from test_report import Structure, assert_safe, drills, table_rows

from qa_eval import run_evaluation
from qa_eval.compare.runs import compare_runs
from qa_eval.metrics import direction
from qa_eval.report import Run, build_report
from qa_eval.report.model import metric_list, summarize_run, verdict_of
from qa_eval.report.trajectory import trajectory_views

TRAJECTORY_METRICS = (
    "trajectory_match", "tool_recall", "tool_precision", "tool_f1", "tool_args_score",
    "tool_calls_missing", "tool_calls_extra", "tool_calls_failed", "tool_calls_repeated",
    "tool_calls_ratio",
)  # fmt: skip
TRAJECTORY = {
    "match": "superset",
    "args": "superset",
    "calls": [
        {
            "name": "search",
            "args": {"to": "BGO", "date": {"$date": "2026-12-01", "tolerance": "1d"}},
        },
        {"name": "book", "args": {"flight": {"$any": True}}},
        {"name": "notify", "optional": True},
    ],
    "alternatives": [[{"name": "search", "args": {"to": "BGO"}}, {"name": "book_with_points"}]],
}  # fmt: skip


def reference(n: int) -> list[dict[str, Any]]:
    questions = [
        {"id": f"q{i}", "question_text": f"Fly {i}", "reference_trajectory": TRAJECTORY}
        for i in range(n)
    ]
    return [{"template_id": "flights", "questions": questions}]


def call(name: str, args: Any, cid: str, status: str = "success", output: Any = "ok") -> dict:
    return {"name": name, "args": args, "id": cid, "status": status, "output": output}


GOOD = [
    call("search", {"to": "BGO", "date": "2026-12-01"}, "s", output="[]"),
    call("book", {"flight": "F1"}, "b"),
]
POOR = [  # alternative 1 chosen: search matched, book_with_points missing
    call("search", {"to": "BGO", "date": "2026-12-03"}, "s1"),
    call("search", {"to": "BGO", "date": "2026-12-03"}, "s2"),  # extra, repeated
    call("book", {"flight": "F1"}, "b1", status="error", output="seat taken"),  # failed
]


def evaluate(steps: list[list[dict[str, Any]]]) -> list[dict[str, Any]]:
    responses = [
        {"question_id": f"q{i}", "actual_answer": "booked", "actual_steps": copy.deepcopy(s)}
        for i, s in enumerate(steps)
    ]
    return run_evaluation(reference(len(steps)), responses)


def agents() -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """Agent A poor on 10 of 12 questions, agent B good on all."""
    a = evaluate([POOR] * 10 + [GOOD] * 2)
    b = evaluate([GOOD] * 12)
    return a, b


# ------------------------------------------------------------------ metrics and directions


def test_trajectory_metrics_are_in_the_tables_with_their_registry_directions() -> None:
    a, b = agents()
    summaries = [summarize_run("A", a, None), summarize_run("B", b, None)]
    comparison = compare_runs(a, b, labels=("A", "B"))
    metrics = {m.name: m for m in metric_list(summaries, verdict_of(comparison))}
    assert set(TRAJECTORY_METRICS) <= set(metrics)
    for name in TRAJECTORY_METRICS:
        assert metrics[name].direction == direction(name), name
    assert metrics["tool_calls_ratio"].direction == "none"
    assert metrics["tool_calls_missing"].direction == "lower"
    assert "trajectory_alternative" not in metrics  # names a trajectory, measures nothing
    page = build_report([Run("A", a), Run("B", b)], comparison)
    headline = page[page.index('class="num-table headline"') : page.index("</table>")]
    assert ">trajectory_match<" in headline and "tool_calls_ratio" not in headline
    templates = page[page.index('id="templates"') :]
    header = table_rows(templates[: templates.index("</thead>")])[0]
    assert "tool_calls_missing ↓" in header and "tool_calls_ratio =" in header
    assert "trajectory_match" in header and "trajectory_alternative" not in header
    charts = re.findall(r'aria-label="([^"]*)"', templates)
    assert any(label.startswith("tool_calls_extra") for label in charts)


def test_the_verdict_compares_two_agents_on_the_trajectory_metrics() -> None:
    a, b = agents()
    comparison = compare_runs(a, b, labels=("A", "B"))
    entries = {e["metric"]: e for e in comparison["metrics"]}
    page = build_report([Run("A", a), Run("B", b)], comparison)
    verdict = page[page.index('class="num-table verdict"') :]
    verdict = verdict[: verdict.index("</table>")]
    rows = {r[0].rstrip(" ↓="): r for r in table_rows(verdict)[1:]}
    for name in TRAJECTORY_METRICS:
        overall = entries[name]["overall"]
        row = rows[name]
        assert row[1] == str(overall["n"]), name
        expected = {"b": "better", "a": "worse"}.get(overall["better"])
        assert expected is None or expected in row[-1], (name, row)
    assert entries["trajectory_match"]["overall"]["better"] == "b"  # 10 of 12 pairs improve
    assert "better" in rows["trajectory_match"][-1]
    assert entries["tool_calls_extra"]["overall"]["better"] == "b"  # fewer extra calls
    assert "better" in rows["tool_calls_extra"][-1]
    # the ratio changes (1.5 -> 1.0) but has no direction: a delta, never better or worse
    ratio = re.search(r"<tr><td>tool_calls_ratio.*?</tr>", verdict, re.S)
    assert ratio is not None and 'class="up' not in ratio.group(0)
    assert 'class="down' not in ratio.group(0)
    assert (
        "better" not in rows["tool_calls_ratio"][-1] and "worse" not in rows["tool_calls_ratio"][-1]
    )
    assert "trajectory_alternative" not in entries


# ------------------------------------------------------------------ the drill-down


def test_drill_down_lays_out_matched_missing_extra_failed_and_repeated_calls() -> None:
    a, b = agents()
    poor, good = trajectory_views([a[0], b[0]]) or (None, None)
    assert poor is not None and good is not None
    assert (poor.alternative, poor.alternatives, poor.match) == (1, 2, 0.0)
    assert [(r.name, r.state) for r in poor.reference] == [
        ("search", "matched"),
        ("book_with_points", "missing"),
    ]
    assert poor.reference[0].match == "[0] search (s1)"
    assert poor.reference[1].mismatch == "not called"
    assert [(c.sid, c.role, c.reference, c.repeated) for c in poor.calls] == [
        ("s1", "matched", 0, False),
        ("s2", "extra", None, True),
        ("b1", "failed", None, False),
    ]
    assert dict(poor.counts) == {"matched": 1, "missing": 1, "extra": 1, "failed": 1, "repeated": 1}
    assert [r.name for r in poor.missing] == ["book_with_points"]
    assert (good.alternative, good.match) == (0, 1.0)
    assert [r.state for r in good.reference] == ["matched", "matched", "optional"]
    assert good.reference[2].mismatch == "optional, not called"
    assert dict(poor.calls[0].args)["date"].text == "2026-12-03"

    page = build_report([Run("A", a), Run("B", b)])
    html = next(h for h in drills(page) if "alternatives[0]" in h)
    block = html[html.index('class="block traj"') :]
    assert block.index(">A<") < block.index(">B<")  # both agents, labelled, side by side
    ref_rows = table_rows(
        re.search(r'class="res calls ref-calls".*?</table>', block, re.S).group(0)
    )
    assert ref_rows[1][0] == "matched" and ref_rows[2][:3] == ["missing", "1", "book_with_points"]
    assert ref_rows[2][4] == "not called"
    act = re.search(r'class="res calls act-calls".*?</table>', block, re.S).group(0)
    marks = re.findall(r'<tr(?: class="(\w+)")?><td class="mk">(\w*)</td>', act)
    assert marks == [
        ("", "matched"),
        ("extra", "extra"),
        ("failed", "failed"),
        ("missing", "missing"),
    ]
    assert "repeated" in act and "seat taken" in act  # the failed call's output, folded
    assert "<details><summary" in act
    # the section replaces the generic lists: no trajectory_calls table, no "other calls"
    assert ">trajectory_calls<" not in html and ">other calls<" not in html


def test_a_question_that_could_not_be_evaluated_shows_its_error_never_a_zero() -> None:
    lost = [{"name": "search", "id": "s", "lost": ["args"]}, call("book", {"flight": "F1"}, "b")]
    (a,) = evaluate([lost])
    assert a["trajectory_error"].startswith("not evaluable: 1 of 2 calls")
    assert "trajectory_match" not in a
    (view,) = trajectory_views([a]) or (None,)
    assert view is not None and view.error == a["trajectory_error"]
    assert view.counts == () and {r.state for r in view.reference} == {""}
    assert view.calls[0].lost == "args"
    (html,) = drills(build_report([Run("A", [a])]))
    text = "".join(Structure(html).text)
    assert f"trajectory_error: {a['trajectory_error']}" in text
    assert "no trajectory values" in text
    metrics = html[: html.index('class="block traj"')]
    assert "trajectory_match" not in metrics  # no value, so no row (never a 0)
    assert "lost: args" in text


def test_without_scoring_the_calls_are_listed_without_roles() -> None:
    responses = [{"question_id": "q0", "actual_steps": copy.deepcopy(GOOD)}]
    (result,) = run_evaluation(reference(1), responses, disable=["trajectory"])
    (view,) = trajectory_views([result]) or (None,)
    assert view is not None and not view.scored and view.counts == ()
    assert [c.role for c in view.calls] == ["", ""]
    assert trajectory_views([{"question_id": "x"}]) is None
    text = "".join(Structure(drills(build_report([Run("A", [result])]))[0]).text)
    assert "not scored" in text


def test_list_form_references_and_json_text_arguments() -> None:
    raw = [{"name": "search", "args": {"to": "BGO"}}]
    responses = [
        {"question_id": "q0", "actual_steps": [call("search", '{"to": "BGO", "n": 2}', "s")]}
    ]
    dataset = [{"template_id": "t", "questions": [{"id": "q0", "question_text": "x",
                                                   "reference_trajectory": raw}]}]  # fmt: skip
    (result,) = run_evaluation(dataset, responses)
    (view,) = trajectory_views([result]) or (None,)
    assert view is not None and view.settings == "superset, args exact"
    assert [(k, v.text) for k, v in view.calls[0].args] == [("to", "BGO"), ("n", "2")]
    assert view.reference[0].state == "missing"  # args exact: n is not in the reference
    assert view.reference[0].mismatch.startswith("search: args.n")


# ------------------------------------------------------------------ repeated trials


def test_repeated_trials_show_pass_at_k_and_how_often_the_same_trajectory_was_chosen() -> None:
    responses = []
    for trial in range(3):
        for i, steps in enumerate([GOOD, POOR if trial == 0 else GOOD]):
            responses.append(
                {"question_id": f"q{i}", "trial": trial, "actual_steps": copy.deepcopy(steps)}
            )
    results = run_evaluation(reference(2), responses)
    page = build_report([Run("A", results)])
    trials = page[page.index('id="trials"') :]
    rows = table_rows(trials[: trials.index("</table>")])
    assert rows[0][-1] == "same trajectory"
    by_group = {r[0]: r for r in rows[1:]}
    # q0 passes 3 of 3, q1 passes 2 of 3: pass@3 = 1, pass^3 = (1 + 0) / 2, pass@1 = 5/6
    # q1 chose alternative 1 once and 0 twice: same trajectory (1 + 2/3) / 2
    expected = ["trajectory_match", "3", "3", "0.833", "1", "0.500", "0.833"]
    assert by_group["all questions"][1:] == expected
    assert by_group["flights"][1:] == expected
    # each trial is its own row in the question list, labelled with its trial
    shown = r'<span class="qid">(\w+)</span> <span class="muted">trial (\d)</span>'
    labels = re.findall(shown, page)
    assert sorted(labels) == sorted((f"q{i}", str(t)) for i in range(2) for t in range(3))
    assert all("· trial " in html for html in drills(page))


# ------------------------------------------------------------------ safety


HOSTILE = '"><script>alert({n})</script><img src=x onerror=alert({n})>'


def hostile_trajectory_runs() -> tuple[list[Run], list[str]]:
    """Two runs of one question with a distinct hostile text in every field of the trajectory
    drill-down (tool names, ids, arguments, outputs, errors, mismatch, reason, labels)."""
    marks: list[str] = []

    def h(field: str) -> str:
        text = f"{field}:" + HOSTILE.format(n=len(marks))
        marks.append(text)
        return text

    json_arg = "json arg:" + HOSTILE.format(n="j").replace('"', "'")  # inside a JSON text
    marks.append(json_arg)
    long_output = h("long output") + "x" * 20_000
    tool = h("tool name")
    raw = {
        "match": "unordered",
        "args": "exact",
        "calls": [
            {"name": [tool, h("other tool name")], "args": {h("ref arg name"): h("ref arg")}},
            {"name": h("missing tool"), "args": {"q": {"$regex": h("ref regex")}}},
        ],
    }
    steps = [
        {"name": tool, "id": h("call id"), "args": {h("arg name"): h("arg value") + "y" * 5000},
         "status": "success", "output": long_output},
        {"name": h("extra tool"), "args": h("raw text args"), "status": "error",
         "error": h("call error"), "output": h("error output")},
        {"name": h("json args tool"), "args": '{"k": "' + json_arg + '"}'},
    ]  # fmt: skip
    dataset = [{"template_id": "t", "questions": [{"id": "q0", "question_text": "x",
                                                   "reference_trajectory": raw}]}]  # fmt: skip
    (result,) = run_evaluation(dataset, [{"question_id": "q0", "actual_steps": steps}])
    result["trajectory_reason"] = h("reason")
    calls = result["reference_trajectory"]["calls"]
    calls[0]["mismatch"] = h("mismatch")
    other = dict(result, trajectory_error=h("trajectory error"))
    for key in ("trajectory_match", "trajectory_calls"):
        other.pop(key)
    return [Run(h("run a"), [result]), Run(h("run b"), [other])], marks


def test_hostile_tool_names_arguments_and_outputs_stay_text() -> None:
    runs, marks = hostile_trajectory_runs()
    assert len({m.split(":")[0] for m in marks}) == 21
    page = build_report(runs)
    (html,) = drills(page)
    assert_safe(page)
    text = "".join(assert_safe(html).text)
    # a comparator is shown as its JSON, where a quote is escaped
    missing = [m for m in marks if m not in text and json.dumps(m)[1:-1] not in text]
    assert missing == [], missing
    assert "<script>" not in html and "<img" not in html
    assert "x" * 20_000 not in html and "y" * 5000 not in html  # long texts clipped
    output = html[html.index("long output:") - 400 : html.index("long output:")]
    assert "<details>" in output  # the output is folded away
