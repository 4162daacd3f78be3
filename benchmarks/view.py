"""``qa-eval view`` on a large results file: the index's build time and size, then the time of
each page through the whole app (an HTTP request to the viewer served on 127.0.0.1, the HTML
read back), median of ``--repeats``.

    python benchmarks/view.py                       # 1,000,000 generated questions
    python benchmarks/view.py --questions 100000    # another size
    python benchmarks/view.py --keep /tmp/view      # keep the files (a second run reuses them)

The generated results look like an evaluation's: 40 templates, a question text, reference and
actual answers, a judge's reason (about 70 words drawn from 20,000), nine numeric values, a
class label, a tag, one error in 97 and one failed judge metric in 53; about 1 KB a result in
JSON Lines. Targets (issue 34): first page under 1 s, a filter, sort or search under 300 ms.
"""

from __future__ import annotations

import argparse
import random
import re
import statistics
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "src"))

import orjson  # noqa: E402

WORDS = 20_000


def results(count: int, seed: int = 1) -> Iterator[dict[str, Any]]:
    """``count`` generated results (see the module docstring)."""
    rng = random.Random(seed)
    letters = "abcdefghijklmnopqrstuvwxyz"
    vocabulary = ["".join(rng.choices(letters, k=rng.randint(3, 10))) for _ in range(WORDS)]

    def text(n: int) -> str:
        return " ".join(rng.choices(vocabulary, k=n))

    for i in range(count):
        recall = rng.random()
        result: dict[str, Any] = {
            "template_id": f"template_{i % 40}",
            "question_id": f"q{i}",
            "question_text": f"What is the {text(10)}?",
            "reference_answer": text(6),
            "actual_answer": text(14),
            "status": "success",
            "answer_recall": recall,
            "answer_precision": rng.random(),
            "answer_f1": recall * 0.9,
            "faithfulness": rng.random(),
            "answer_relevance": rng.random(),
            "steps_score": float(rng.random() < 0.7),
            "faithfulness_reason": text(30),
            "answer_class": rng.choice(("CORRECT", "PARTIAL", "WRONG")),
            "question_type": rng.choice(("list", "count", "fact", "boolean")),
            "input_tokens": rng.randint(200, 2000),
            "output_tokens": rng.randint(10, 200),
            "llm_cost": rng.random() / 1000,
        }
        if i % 97 == 0:
            result.update(status="error", error=f"timeout after {rng.randint(30, 90)} s")
        if i % 53 == 0:
            del result["faithfulness"]
            result["faithfulness_error"] = "the judge's reply was not JSON"
        yield result


def write(path: Path, count: int) -> None:
    """Write the generated results as JSON Lines."""
    with path.open("wb") as out:
        for result in results(count):
            out.write(orjson.dumps(result) + b"\n")


def timed(action: Callable[[], Any], repeats: int) -> float:
    """The median time of ``action`` in milliseconds."""
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        action()
        times.append((time.perf_counter() - start) * 1000)
    return statistics.median(times)


def main() -> None:
    """Generate, index, then time the pages; print a table."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--questions", type=int, default=1_000_000)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--keep", help="a folder for the files (reused when present)")
    args = parser.parse_args()

    import threading

    import httpx

    from qa_eval.view.server import make_server, settings_for

    folder = Path(args.keep or tempfile.mkdtemp(prefix="qa-view-bench-"))
    folder.mkdir(parents=True, exist_ok=True)
    source = folder / f"results-{args.questions}.jsonl"
    if not source.exists():
        start = time.perf_counter()
        write(source, args.questions)
        print(f"generated {args.questions:,} results in {time.perf_counter() - start:.1f} s")
    start = time.perf_counter()
    settings = settings_for([source], labels=folder / "labels.csv", annotator="bench")
    build = time.perf_counter() - start
    index = settings.runs[0].index
    start = time.perf_counter()
    settings_for([source], labels=folder / "labels.csv", annotator="bench")
    reopen = time.perf_counter() - start
    server, sock, url = make_server(settings)
    threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True).start()
    client = httpx.Client(base_url=url.split("/?")[0], timeout=600)
    client.get(url)
    word = next(results(1, seed=1))["question_text"].split()[3]

    rows: list[tuple[str, str, float, str]] = []

    def page(label: str, url: str, target: str, repeats: int = args.repeats) -> None:
        response = client.get(url)
        assert response.status_code == 200, (url, response.text[:300])
        found = re.search(r'<p id="count"[^>]*>(.*?)(?: · page|</p>)', response.text, re.S)
        counted = re.sub(r"<[^>]+>", "", found.group(1)) if found else ""
        rows.append((label, target, timed(lambda: client.get(url), repeats), counted))

    page("runs page (counts, headline means)", "/", "")
    page("questions, first page", "/run/0", "< 1000")
    page("filter: template", "/run/0?template=template_7", "< 300")
    page("filter: errors only", "/run/0?errors=only", "< 300")
    page("filter: metric range 0.2-0.3", "/run/0?metric=faithfulness&low=0.2&high=0.3", "< 300")
    page("filter: tag", "/run/0?tag=question_type%3Dcount", "< 300")
    page("filter: failed metric", "/run/0?failed=faithfulness", "< 300")
    page("sort: answer_recall descending", "/run/0?sort=answer_recall&desc=1", "< 300")
    page("sort: page 1,000 of it", "/run/0?sort=answer_recall&desc=1&page=1000", "< 300")
    page("filter + sort", "/run/0?template=template_3&sort=faithfulness", "< 300")
    page(f"search: one word ({word})", f"/run/0?q={word}", "< 300")
    page("search: two words", f"/run/0?q={word}+what", "< 300")
    from urllib.parse import quote

    def regex(pattern: str, extra: str = "") -> str:
        return f"/run/0?regex=1&q={quote(pattern)}{extra}"

    infix = word[1:6] if len(word) >= 7 else word
    page("regex: common (What is the \\w+)", regex(r"What is the \w+"), "< 300")
    page(
        "regex: common, sorted by a metric",
        regex(r"What is the \w+", "&sort=faithfulness"),
        "< 300",
    )
    page("regex: common, counted to the end", regex(r"What is the \w+", "&count=1"), "", 1)
    page("regex: rare, a whole word (timeout after 4\\d)", regex(r"timeout after 4\d"), "< 300")
    page("regex: rare, case ignored", regex(r"(?i)TIMEOUT after [4-6]\d"), "< 300")
    page(f"regex: inside a word ({infix})", regex(infix), "< 300")
    page("regex: no literal (\\d{2} s$, a scan)", regex(r"\d{2} s$"), "", 1)
    page("regex + template", regex(r"after 4\d", "&template=template_0"), "< 300")
    page("one question", f"/run/0/q/{args.questions // 2}", "")
    page("label: next of the seeded sample", "/label?metric=faithfulness", "")

    size = source.stat().st_size
    print(f"\nqa-eval view on {args.questions:,} results ({size / 1e6:,.0f} MB JSON Lines)\n")
    print(f"index build        {build:8.1f} s")
    print(f"index size         {index.path.stat().st_size / 1e6:8.0f} MB")
    print(f"reopen (up to date){reopen * 1000:8.0f} ms\n")
    print(f"{'page':48s} {'target ms':>10s} {'median ms':>10s}  rows shown as")
    for label, target, ms, counted in rows:
        print(f"{label:48s} {target:>10s} {ms:10.1f}  {counted}")
    server.should_exit = True


if __name__ == "__main__":
    main()
