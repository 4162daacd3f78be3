"""The LLM judge layer's throughput, retries and cache, against a scripted server.

    python benchmarks/judge.py            # 1,000 questions, 0.2 s latency, 16 calls in flight
    python benchmarks/judge.py --quick    # 200 questions, under ~40 s

The OpenAI-compatible server is ``tests/openai_stub.py`` run as a separate process (its threads
must not compete with the evaluation for the GIL). Metric set: answer correctness + answer
relevance, so two judge calls per question; relevance embeddings go to the stub's /v1/embeddings.
Every number is measured when it runs; nothing is stored. See benchmarks/README.md.
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import json
import os
import platform
import re
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pydantic import BaseModel

import qa_eval
from qa_eval.cli import format_table
from qa_eval.judge.calls import Judge
from qa_eval.metrics.answer.correctness import CorrectnessReply
from qa_eval.metrics.answer.relevance import RelevanceReply

HERE = Path(__file__).resolve().parent
STUB = HERE.parent / "tests" / "openai_stub.py"
COMPARED = ("answer_f1", "answer_recall", "answer_precision", "answer_relevance")


# The server, in its own process ---------------------------------------------------------------
class Server:
    """``tests/openai_stub.py`` as a subprocess: its port, and its counters on request."""

    def __init__(self, latency: float, fault_rate: float) -> None:
        self.process = subprocess.Popen(
            [sys.executable, str(STUB), "--latency", str(latency), "--fault-rate", str(fault_rate)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
        )
        assert self.process.stdout is not None
        line = self.process.stdout.readline()
        if not line.strip():
            self.stop()
            raise RuntimeError(f"the stub server did not start ({STUB})")
        self.url = f"http://127.0.0.1:{int(line)}/v1"

    def stats(self) -> dict[str, int]:
        """Requests (chat + embeddings), peak requests in flight, chat requests, so far."""
        assert self.process.stdin is not None and self.process.stdout is not None
        self.process.stdin.write("stats\n")
        self.process.stdin.flush()
        return json.loads(self.process.stdout.readline())

    def stop(self) -> None:
        if self.process.stdin is not None:
            self.process.stdin.close()  # the stub stops serving at the end of its input
        try:
            self.process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()

    def __enter__(self) -> Server:
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()


# The data --------------------------------------------------------------------------------------
PLACES = ["OSLO", "BERGEN", "TRONDHEIM", "STAVANGER", "TROMSO", "DRAMMEN", "BODO", "ALTA"]
TEMPLATES = [
    ("List all transformers within substation {p}", "{p} T1, {p} T2"),
    ("What is the rated voltage of the lines leaving {p}?", "420 kV and 132 kV"),
    ("Which breakers in {p} were opened in {y}?", "{p} CB3 and {p} CB7"),
    ("How many feeders does substation {p} have?", "{p} has {n} feeders"),
    ("Who operates the {p} substation?", "Statnett operates {p} since {y}"),
    ("What was the peak load at {p} in {y}?", "{n}0 MW, on 14 January {y}"),
    ("Which generators connect to {p}?", "{p} G1 (hydro) and {p} G2 (wind)"),
    ("When was the {p} substation commissioned?", "It was commissioned in {y}"),
    ("What is the average daily load of {p} in January {y}?", "{n}2.5 MW on average"),
    ("Which lines run between {p} and its neighbours?", "Line {p}-{n}A and line {p}-{n}B"),
]
ANSWERS = [
    "{ref}.",
    "The answer is {ref}, according to the grid model.",
    "{ref}; I also found a spare unit that is out of service.",
    "I am not sure, but possibly {ref}.",
    "I don't know.",
]


def dataset(questions: int) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """Templates of 10 questions each; every question text is different (some answers repeat,
    e.g. "I don't know.", as they do in real runs)."""
    reference: list[dict[str, Any]] = []
    responses: list[dict[str, Any]] = []
    for start in range(0, questions, 10):
        t = start // 10
        items = []
        for q in range(start, min(start + 10, questions)):
            text, ref = TEMPLATES[q % 10]
            values = {"p": f"{PLACES[t % len(PLACES)]}-{t}", "y": 1990 + q % 30, "n": q % 9 + 2}
            qid = f"q{q}"
            reference_answer = ref.format(**values)
            items.append(
                {
                    "id": qid,
                    "question_text": text.format(**values),
                    "reference_answer": reference_answer,
                }
            )
            answer = ANSWERS[(q // 10 + q) % len(ANSWERS)].format(ref=reference_answer)
            responses.append({"question_id": qid, "actual_answer": answer})
        reference.append({"template_id": f"template-{t}", "questions": items})
    return reference, responses


# The runs --------------------------------------------------------------------------------------
def config(url: str, concurrency: int, *, max_attempts: int = 6, retry_base: float = 0.5) -> dict:
    endpoint = {"provider": "openai", "base_url": url, "api_key": "x"}
    return {
        "llm": {
            "generation": {**endpoint, "model": "gpt-4o-mini"},
            "embedding": {**endpoint, "model": "text-embedding-3-small"},
            "concurrency": concurrency,
            "max_attempts": max_attempts,
            "retry_base": retry_base,
        }
    }


@dataclass
class Run:
    """One evaluation: wall time, this process's CPU time, the results."""

    wall: float
    cpu: float
    results: Any

    @property
    def usage(self) -> dict[str, Any]:
        return self.results.signature["usage"]


def evaluate(data: tuple[list, list], settings: dict, cache: Path) -> Run:
    """One ``run_evaluation``, GC collected first."""
    gc.collect()
    cpu = time.process_time()
    start = time.perf_counter()
    results = qa_eval.run_evaluation(data[0], data[1], config=settings, cache=cache)
    return Run(time.perf_counter() - start, time.process_time() - cpu, results)


def incomplete(results: list[dict[str, Any]]) -> int:
    """Questions without answer_f1 or answer_relevance, or with any ``*_error`` key."""
    return sum(
        1
        for r in results
        if "answer_f1" not in r
        or "answer_relevance" not in r
        or any(k.endswith("_error") for k in r)
    )


def differing(first: list[dict[str, Any]], second: list[dict[str, Any]]) -> list[int]:
    """Positions of the questions whose compared values are not exactly equal in two runs."""
    return [
        i
        for i, (a, b) in enumerate(zip(first, second))
        if any(a.get(k) != b.get(k) for k in COMPARED)
    ]


class ReaskLog:
    """Records the prompts the judge re-asks after an unusable reply (a call whose messages hold
    the reply, as an assistant message), by wrapping ``Judge._call`` while a run lasts."""

    def __init__(self) -> None:
        self.prompts: list[str] = []

    def __enter__(self) -> ReaskLog:
        self.original = Judge._call
        original, prompts = self.original, self.prompts

        async def call(
            judge: Judge, metric: str, messages: list[dict[str, str]], schema: Any, *rest: Any
        ) -> Any:
            roles = [m["role"] for m in messages]
            if "assistant" in roles:  # the prompt as first asked: system and user messages
                asked = messages[: roles.index("assistant")]
                prompts.append("\n".join(m["content"] for m in asked))
            return await original(judge, metric, messages, schema, *rest)

        Judge._call = call  # type: ignore[method-assign]
        return self

    def __exit__(self, *exc: object) -> None:
        Judge._call = self.original  # type: ignore[method-assign]

    def texts(self, tag: str) -> set[str]:
        """What stood between ``<tag>`` and ``</tag>`` in the re-asked prompts (the question of
        an answer-correctness prompt, the answer of an answer-relevance prompt)."""
        pattern = re.compile(rf"<{tag}>\n(.*?)\n</{tag}>", re.S)
        return {m.group(1) for p in self.prompts for m in pattern.finditer(p)}


def listen_overflows() -> int | None:
    """The kernel's count of connections dropped from full listen queues (Linux, all sockets)."""
    try:
        lines = Path("/proc/net/netstat").read_text().splitlines()
    except OSError:
        return None
    for names, values in zip(lines[::2], lines[1::2]):
        if names.startswith("TcpExt:"):
            row = dict(zip(names.split(), values.split()))
            return int(row.get("ListenOverflows", 0))
    return None


def sdk_floor(url: str, calls: int, chars: int, concurrency: int) -> float:
    """Wall time of ``calls`` bare openai-SDK chat calls with prompts of ``chars`` characters,
    ``concurrency`` at a time: the same server and client library, without qa-eval."""
    from openai import AsyncOpenAI

    async def run() -> float:
        client = AsyncOpenAI(api_key="x", base_url=url, max_retries=0)
        todo = list(range(calls))

        async def worker() -> None:
            while todo:
                n = todo.pop()
                text = f"[qa-eval:answer-correctness] floor call {n} ".ljust(chars, "x")
                await client.chat.completions.create(
                    model="gpt-4o-mini",
                    messages=[{"role": "user", "content": text}],
                    temperature=0,
                )

        start = time.perf_counter()
        await asyncio.gather(*(worker() for _ in range(concurrency)))
        elapsed = time.perf_counter() - start
        await client.close()
        return elapsed

    gc.collect()
    return asyncio.run(run())


# The original, estimated --------------------------------------------------------------------
class RagasRelevanceOutput(BaseModel):
    question: str
    noncommittal: int


def ragas_style_prompt(answer: str) -> str:
    """A prompt built like ragas' answer-relevancy prompt (written here, same parts): the
    instruction, the output JSON schema, its two few-shot examples, then the response."""
    schema = json.dumps(RagasRelevanceOutput.model_json_schema())
    examples = [
        ("Marie Curie was born in Warsaw.", "Where was Marie Curie born?", 0),
        (
            "I have no information about the safety feature the 2024 model of that car "
            "introduced, since what I know ends in 2023.",
            "What safety feature did the 2024 model of that car introduce?",
            1,
        ),
    ]
    shots = "\n\n".join(
        f"Example {i}\nInput: {json.dumps({'response': r}, indent=4)}\n"
        f"Output: {json.dumps({'question': q, 'noncommittal': n}, indent=4)}"
        for i, (r, q, n) in enumerate(examples, 1)
    )
    return (
        "Write a question that the given answer answers, and say whether the answer is "
        "noncommittal. Set noncommittal to 1 if it is and 0 if it is committal. An answer is "
        'noncommittal when it is evasive, vague or ambiguous, such as "I don\'t know" or '
        '"I\'m not sure".\n'
        "Give your output as JSON that is valid against the JSON Schema below, with every key "
        f"the schema lists:\n{schema}Quote every string with double quotes (never single "
        "quotes) and escape them with a backslash where needed.\n\n"
        f"-------- EXAMPLES --------\n{shots}\n--------------------------\n\n"
        "Now do the same for this input\n"
        f"Input: {json.dumps({'response': answer}, indent=4)}\nOutput: "
    )


def original_measured() -> str:
    """Why graphrag-eval's judge path has no measured row here."""
    python = os.environ.get("QA_EVAL_ORIGINAL_PYTHON")
    if python and Path(python).exists():
        probe = subprocess.run(
            [python, "-c", "import graphrag_eval"], capture_output=True, check=False
        )
        if probe.returncode == 0:
            return "importable, but not measured in this benchmark"
    return "not measured (Python 3.12 only)"


# The table -------------------------------------------------------------------------------------
def cells(label: str, **values: Any) -> list[Any]:
    """A table row: the label, then the named columns (empty where not given)."""
    return [label, *(values.get(k, "") for k in COLUMNS)]


COLUMNS = ("wall", "calls", "bound", "ratio", "peak", "result", "target", "ok")


def verdict(passed: bool) -> str:
    return "ok" if passed else "MISSED"


def complete_row(results: list[dict[str, Any]], n: int) -> list[Any]:
    """The row counting the questions that got both metrics and no ``*_error``."""
    bad = incomplete(results)
    return cells(
        "  both metrics, no *_error",
        result=f"{n - bad:,} of {n:,}",
        target=f"{n:,}",
        ok=verdict(bad == 0),
    )


def equal_row(label: str, mismatches: list[int]) -> list[Any]:
    """The row saying whether a run's values equal another run's (no mismatching question)."""
    return cells(
        label,
        result=f"{'yes' if not mismatches else 'no'}, {len(mismatches)} mismatches",
        target="yes, 0",
        ok=verdict(not mismatches),
    )


def main() -> None:
    """Run the evaluations and print the table."""
    parser = argparse.ArgumentParser(description="qa-eval judge-layer benchmark")
    parser.add_argument("--questions", type=int, default=None, help="questions (default 1000)")
    parser.add_argument("--latency", type=float, default=0.2, help="server latency per call (s)")
    parser.add_argument("--concurrency", type=int, default=16, help="llm.concurrency")
    parser.add_argument("--quick", action="store_true", help="200 questions")
    args = parser.parse_args()
    n = args.questions or (200 if args.quick else 1000)
    latency, concurrency = args.latency, args.concurrency
    print(
        f"qa-eval {qa_eval.__version__} on Python {platform.python_version()}, "
        f"{os.cpu_count()} CPUs, {platform.machine()}; {n:,} questions, latency {latency:g} s, "
        f"concurrency {concurrency}\n"
    )
    start = time.perf_counter()
    import openai  # noqa: F401  (loaded here, outside the timed runs)

    sdk_import = time.perf_counter() - start
    data = dataset(n)
    overflows = listen_overflows()
    with tempfile.TemporaryDirectory(prefix="qa-eval-judge-") as tmp:
        cache_clean, cache_fault = Path(tmp) / "clean.sqlite3", Path(tmp) / "faults.sqlite3"
        with Server(latency, 0.0) as server:
            settings = config(server.url, concurrency)
            cold = evaluate(data, settings, cache_clean)
            seen = server.stats()
            calls = cold.usage["total"]["calls"]
            chars = cold.usage["total"]["prompt_tokens"] * 4 // max(calls, 1)
            floor = sdk_floor(server.url, calls, chars, concurrency)

            with Server(latency, 0.2) as faulty, ReaskLog() as reasks:
                faulted = evaluate(
                    data,
                    config(faulty.url, concurrency, max_attempts=8, retry_base=0.05),
                    cache_fault,
                )
                fault_seen = faulty.stats()

            before = server.stats()
            warm = evaluate(data, settings, cache_clean)
            after = server.stats()
    if overflows is not None:
        overflows = (listen_overflows() or 0) - overflows

    rows: list[list[Any]] = []
    # 1. fault-free, cold cache
    bound = calls * latency / concurrency
    ratio = cold.wall / bound
    peak = seen["peak"]
    rows.append(
        cells(
            "fault-free, cold cache",
            wall=f"{cold.wall:.2f} s",
            calls=f"{calls:,}",
            bound=f"{bound:.2f} s",
            ratio=f"{ratio:.2f}x",
            peak=f"{peak} / {cold.usage['peak_concurrency']}",
            target="<= 1.3x",
            ok=verdict(ratio <= 1.3),
        )
    )
    rows.append(
        cells(
            "  peak requests in flight at the server",
            result=f"{peak}",
            target=f"<= {concurrency}",
            ok=verdict(peak <= concurrency),
        )
    )
    rows.append(
        cells(
            "  client CPU",
            result=f"{cold.cpu:.1f} s, {cold.cpu * 1000 / calls:.1f} ms/call",
        )
    )
    rows.append(
        cells(
            "  openai SDK alone, same calls",
            wall=f"{floor:.2f} s",
            calls=f"{calls:,}",
            bound=f"{bound:.2f} s",
            ratio=f"{floor / bound:.2f}x",
            result="(floor)",
        )
    )
    rows.append(complete_row(cold.results, n))
    # 2. 20% faults
    total = faulted.usage["total"]
    attempts = total["calls"] + total["retries"]
    fault_bound = attempts * latency / concurrency
    rows.append(
        cells(
            "20% faults (429 Retry-After / 500 / garbage)",
            wall=f"{faulted.wall:.2f} s",
            calls=f"{attempts:,}",
            bound=f"{fault_bound:.2f} s",
            ratio=f"{faulted.wall / fault_bound:.2f}x",
            peak=f"{fault_seen['peak']} / {faulted.usage['peak_concurrency']}",
        )
    )
    rows.append(
        cells(
            "  replies / re-asks / retried / failed",
            result=f"{total['calls']:,} / {len(reasks.prompts)} / {total['retries']} / "
            f"{total['failures']}",
        )
    )
    rows.append(complete_row(faulted.results, n))
    diff = differing(cold.results, faulted.results)
    rows.append(equal_row("  equal to the fault-free values", diff))
    questions, answers = reasks.texts("question"), reasks.texts("answer")
    unexplained = [
        i
        for i in diff
        if cold.results[i]["question_text"] not in questions
        and cold.results[i]["actual_answer"] not in answers
    ]
    rows.append(
        cells(
            "  mismatches not after a re-ask",
            result=f"{len(unexplained)} of {len(diff)}",
            target="0",
            ok=verdict(not unexplained),
        )
    )
    # 3. warm cache rerun
    chat = after["chat"] - before["chat"]
    embeddings = after["requests"] - before["requests"] - chat
    rows.append(
        cells(
            "warm cache rerun",
            wall=f"{warm.wall:.2f} s",
            calls=f"{chat} chat",
            result=f"{warm.usage['total']['cached']:,} cached",
            target="< 2 s, 0 chat calls",
            ok=verdict(warm.wall < 2 and chat == 0),
        )
    )
    rows.append(
        cells(
            "  embedding requests made",
            calls=f"{embeddings:,}",
            result=f"CPU {warm.cpu:.1f} s",
        )
    )
    changed = differing(cold.results, warm.results)
    rows.append(equal_row("  equal to the cold run's values", changed))
    if overflows is not None:
        rows.append(cells("  listen-queue overflows (all runs)", result=f"{overflows:,}"))
    # 4. calls and prompt tokens per question
    metric = cold.usage["per_metric"]
    correctness = metric.get("answer_correctness", {}).get("prompt_tokens", 0) / n
    relevance = metric.get("answer_relevance", {}).get("prompt_tokens", 0) / n
    rows.append(
        cells(
            "calls and prompt tokens per question",
            calls=f"{calls / n:.2f}",
            result=f"{correctness + relevance:.0f} = {correctness:.0f} + {relevance:.0f}",
            target="correctness + relevance",
        )
    )
    ragas = sum(len(ragas_style_prompt(r["actual_answer"])) for r in data[1]) / 4 / n
    rows.append(
        cells(
            "  estimated original: relevance as ragas",
            calls="4 (est.)",
            result=f"relevance 3 x {ragas:.0f} = {3 * ragas:.0f}",
            target="estimate (chars/4)",
        )
    )
    rows.append(cells("  graphrag-eval, measured", result=original_measured()))
    print(format_table(["benchmark", *COLUMNS[:-1], ""], rows))
    schema_tokens = {
        name: len(json.dumps(model.model_json_schema())) // 4
        for name, model in (("correctness", CorrectnessReply), ("relevance", RelevanceReply))
    }
    print(
        f"""
bound: calls x latency / concurrency, the wall time with {concurrency} calls always in flight
  (fault row: replies + retried attempts; a 429 comes back at once, so that bound is generous).
peak: requests in flight at the server (chat + embeddings) / chat calls in flight in the judge.
  Embedding requests share llm.concurrency with the chat calls.
re-asks: calls repeated with the validation error after a reply that is not usable JSON (the
  garbage fault, a different text each time); a re-ask that brings back no JSON again is asked
  again, up to max_attempts (never the same exchange twice); the oracle answers from the prompt
  as first asked, so a re-ask gets the value the first call would.
tokens: the stub counts prompt tokens as chars/4 of the messages. Not counted: qa-eval's
  json_schema response_format (about {schema_tokens["correctness"]} tokens for correctness, \
{schema_tokens["relevance"]} for relevance, chars/4).
  The ragas-style prompt (instruction, JSON schema, its 2 few-shot examples, the answer) is
  written here with the same parts; graphrag-eval's correctness prompt is not estimated.
  graphrag-eval's LLM path needs Python 3.12 and pinned litellm/ragas (../shared/bench/README.md).
openai SDK import ({sdk_import:.2f} s) is done before the timed runs."""
    )


if __name__ == "__main__":
    main()
