"""Size and time-to-interactive of the HTML report in headless Chromium.

    python benchmarks/report.py                      # the demo and 2 x 2,000 generated questions
    python benchmarks/report.py --questions 1000     # another size
    python benchmarks/report.py --page report.html   # time an existing page
    python benchmarks/report.py --screenshot shot.png --page report.html

Each page is loaded in one tab of one headless Chromium (driven by Playwright, launched as
tests/browser.py launches it for the browser tests). "ready" is the page's own clock
(``performance.now()``, milliseconds since navigation started) at the moment it sets
``window.__qaEvalReady``: after its script has run and the first frame has been drawn. A page
without that flag (an older report) is polled until ``data-charts-drawn`` is set, and timed by the
wall clock. "first open" is the time from a click on the first question to its drill-down on
screen (the first open unpacks every drill-down). Median of ``--repeats`` loads. The 2 x 2,000
runs are benchmarks/run.py's generated dataset (40 templates of mixed steps), evaluated twice
with different response seeds.
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT / "src"), str(ROOT / "tests"), str(ROOT / "benchmarks")]

from browser import CHROMIUM_ARGS, find_chromium  # noqa: E402

READY = (
    "(() => { if (typeof window.__qaEvalReady === 'number') return window.__qaEvalReady;"
    " const d = document.body && document.body.dataset.chartsDrawn;"
    " return d !== undefined && d !== null ? -1 : false; })()"
)


FIRST_OPEN = (
    "new Promise(done => { const d = document.querySelector('details.q');"
    " if (!d) { done(null); return; } const t0 = performance.now();"
    " d.querySelector('summary').click();"
    " const wait = () => d.hasAttribute('data-loaded') ? done(performance.now() - t0)"
    " : requestAnimationFrame(wait); wait(); })"
)


def demo_page(folder: Path) -> Path:
    """The README's demo: two systems on the power-grid example, compared."""
    run = [sys.executable, "-m", "qa_eval"]
    env = {"PYTHONPATH": str(ROOT / "src"), "PATH": "/usr/bin:/bin"}
    ref = folder / "ref.yaml"
    examples = ROOT / "examples" / "powergrid"
    steps = [
        [*run, "refresh-references", str(examples / "reference.yaml"), "--store",
         str(examples / "graph.ttl"), "-o", str(ref)],
        [*run, "evaluate", str(ref), "--system", f"good={examples / 'responses-good.jsonl'}",
         "--system", f"flawed={examples / 'responses-flawed.jsonl'}", "-o",
         str(folder / "results.yaml"), "-q"],
        [*run, "report", str(folder / "results.good.yaml"), str(folder / "results.flawed.yaml"),
         "-o", str(folder / "demo.html")],
    ]  # fmt: skip
    for command in steps:
        subprocess.run(command, check=True, env=env, capture_output=True)
    return folder / "demo.html"


def generated_page(folder: Path, questions: int) -> tuple[Path, float]:
    """Two runs of the generated dataset, and the seconds build_report took."""
    import qa_eval
    import run as bench  # benchmarks/run.py
    from qa_eval.report import Run, build_report

    reference, responses_a = bench.dataset(questions, seed=1)
    _, responses_b = bench.dataset(questions, seed=2)
    a = qa_eval.run_evaluation(reference, responses_a)
    b = qa_eval.run_evaluation(reference, responses_b)
    started = time.perf_counter()
    page = build_report([Run.of("seed 1", a), Run.of("seed 2", b)])
    seconds = time.perf_counter() - started
    target = folder / f"generated-{questions}.html"
    target.write_text(page, encoding="utf-8")
    return target, seconds


def load(page: Any, path: Path) -> tuple[float, float | None]:
    """Milliseconds from navigation to ready (see the module docstring), and from a click on the
    first question to its drill-down shown (None for a page without drill-downs to unpack)."""
    page.goto("about:blank")
    started = time.monotonic()
    page.goto(path.as_uri(), timeout=300_000)
    deadline = time.monotonic() + 300
    while time.monotonic() < deadline:
        value = page.evaluate(READY)
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            if value < 0:  # an older page: the wall clock, no drill-downs to unpack
                return (time.monotonic() - started) * 1000, None
            opened = page.evaluate(FIRST_OPEN)
            return float(value), float(opened) if opened is not None else None
        time.sleep(0.02)
    raise TimeoutError(f"{path} never became ready")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--questions", type=int, default=2000)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--page", type=Path, action="append", help="time this page instead")
    parser.add_argument("--screenshot", type=Path, help="save the first screen of the first page")
    args = parser.parse_args()
    binary = find_chromium()
    if binary is None:
        sys.exit("no Chromium found (set QA_EVAL_CHROMIUM)")
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        pages: list[tuple[str, Path, str]] = []
        if args.page:
            pages = [(str(p), p.resolve(), "") for p in args.page]
        else:
            pages.append(("demo (2 x 11 questions)", demo_page(folder), ""))
            path, seconds = generated_page(folder, args.questions)
            pages.append((f"2 x {args.questions:,} questions", path, f"{seconds:.2f} s"))
        from playwright.sync_api import sync_playwright

        with sync_playwright() as playwright:
            browser = playwright.chromium.launch(executable_path=binary, args=CHROMIUM_ARGS)
            page = browser.new_page()
            print(
                f"{'page':<28} {'size':>10} {'build':>8} {'ready (median)':>15} "
                f"{'first open':>11}  all loads"
            )
            for number, (name, path, build) in enumerate(pages):
                runs = [load(page, path) for _ in range(args.repeats)]
                times = [ready for ready, _ in runs]
                opens = [o for _, o in runs if o is not None]
                size = path.stat().st_size / 1e6
                loads = ", ".join(f"{t / 1000:.2f}" for t in times)
                median = statistics.median(times) / 1000
                first = f"{statistics.median(opens) / 1000:.2f} s" if opens else "-"
                print(
                    f"{name:<28} {size:>8.2f}MB {build:>8} {median:>13.2f} s {first:>11}  [{loads}]"
                )
                if args.screenshot and number == 0:
                    page.screenshot(path=str(args.screenshot))
            browser.close()


if __name__ == "__main__":
    main()
