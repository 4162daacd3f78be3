"""What qa-eval and ragas 0.4 send a judge for the same metrics on the same questions: calls and
prompt tokens, measured at a scripted OpenAI-compatible server.

    python benchmarks/ragas_tokens.py [--venv /tmp/ragas-venv] [--chunks 3 5 10]

The metric set: faithfulness, answer relevance (3 generated questions), context precision (with
a reference) and context recall. qa-eval runs in this process (``PYTHONPATH=src``); ragas runs in
its own virtual environment (it needs an openai SDK < 2, qa-eval >= 3.40), made with::

    python3 -m venv /tmp/ragas-venv
    /tmp/ragas-venv/bin/pip install 'ragas==0.4.3' 'langchain-community==0.4.1' bpe-openai

Both sides talk to one ``tests/openai_stub.StubServer`` whose script recognises each prompt (ours
by its ``[qa-eval:...]`` marker, ragas' by its instruction text, as
tests/integration/test_ragas_parity.py
does) and answers the same verdicts in each side's reply format: every statement supported,
every chunk useful, every reference statement attributed. Every chat request is recorded as it
arrives. Prompt tokens are counted with OpenAI's o200k_base encoding (``bpe-openai``, in the ragas
environment; characters / 4 where it is missing, and the table says so): the text of every
message plus 3 tokens a message (OpenAI's chat framing), and separately the reply schema a
request carries (``response_format``), which OpenAI also bills as prompt tokens. ragas' schema
travels inside its prompt text (instructor's JSON mode), so it is in its message tokens already.

Our side runs twice: ``qa-eval`` as ``scoring.py`` schedules the metrics by default (context
precision and recall in one combined call when both run), ``separate`` with ``combined: false``
(one call each). Nothing is estimated: the numbers are the requests each side made.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import re
import subprocess
import sys
import tempfile
import threading
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent

QUESTIONS = [
    {
        "question": "Where and when was Albert Einstein born?",
        "answer": "Albert Einstein was born in Ulm in 1879. He later won the Nobel Prize in "
        "Physics. He developed the theory of relativity.",
        "reference": "Albert Einstein was born in Ulm, Germany, on 14 March 1879.",
    },
    {
        "question": "Which transformers are installed at substation Oslo?",
        "answer": "Substation Oslo has three transformers: T1, T2 and T3. T1 and T2 are rated "
        "1000 MVA. T3 was commissioned in 2016.",
        "reference": "Transformers OSLO T1, OSLO T2 and OSLO T3 are installed at substation Oslo.",
    },
    {
        "question": "What does the Danube flow through?",
        "answer": "The Danube flows through ten countries, including Austria and Hungary. It "
        "passes through Vienna and Budapest.",
        "reference": "The Danube flows through ten countries and four capital cities: Vienna, "
        "Bratislava, Budapest and Belgrade.",
    },
    {
        "question": "How many legs does a spider have?",
        "answer": "A spider has eight legs.",
        "reference": "Spiders have eight legs.",
    },
]
CHUNK_POOL = [
    "Albert Einstein (born 14 March 1879 in Ulm, Kingdom of Wuerttemberg) was a theoretical "
    "physicist who developed the theory of relativity.",
    "Einstein received the 1921 Nobel Prize in Physics for his services to theoretical physics.",
    "Ulm is a city on the river Danube in the German state of Baden-Wuerttemberg.",
    "Transformer OSLO T1 (1000 MVA, commissioned 1987) is installed at substation OSLO.",
    "Transformer OSLO T2 (1000 MVA, commissioned 1994) is installed at substation OSLO.",
    "Transformer OSLO T3 (450.5 MVA, commissioned 2016) is installed at substation OSLO.",
    "The Danube is Europe's second-longest river; it flows through ten countries.",
    "Vienna, Bratislava, Budapest and Belgrade lie on the Danube.",
    "Spiders are arachnids: they have eight legs, two body segments and no antennae.",
    "Bergen is a city on the west coast of Norway, surrounded by seven mountains.",
]

OUR_MARKERS = {
    "[qa-eval:faithfulness-statements]": "faithfulness statements",
    "[qa-eval:faithfulness-verdicts]": "faithfulness verdicts",
    "[qa-eval:answer-relevance]": "answer relevance",
    "[qa-eval:context-relevance]": "context precision",
    "[qa-eval:statements-attribution]": "context recall",
    "[qa-eval:context-quality]": "context precision+recall",
}
RAGAS_INSTRUCTIONS = {
    "analyze the complexity of each sentence in the answer": "faithfulness statements",
    "judge the faithfulness of a series of statements": "faithfulness verdicts",
    "Generate a question for the given answer and identify if the answer is noncommittal": (
        "answer relevance"
    ),
    "verify if the context was useful in arriving at the given answer": "context precision",
    "classify if the statement can be attributed to the given context": "context recall",
}
RAGAS_INPUT = "Now perform the same with the following input\ninput: "


def sentences(text: str) -> list[str]:
    return [s for s in re.split(r"(?<=[.!?])\s+", text.strip()) if s]


def contexts_for(item: dict[str, str], k: int) -> list[str]:
    """k chunks: the ones sharing a word with the reference first, then the others, in order."""
    words = set(re.findall(r"\w{4,}", item["reference"].lower()))
    ranked = sorted(CHUNK_POOL, key=lambda c: -len(words & set(re.findall(r"\w{4,}", c.lower()))))
    return ranked[:k]


# --- the scripted judge (main process) ----------------------------------------------------------


class Recorder:
    """A StubServer script: answers both sides' prompts and records every chat request."""

    def __init__(self) -> None:
        self.requests: list[dict[str, Any]] = []
        self.lock = threading.Lock()
        self.ours_label = "qa-eval"
        """The name of our side in the table (set before each of our runs)."""

    def __call__(self, request: dict[str, Any], number: int) -> Any:
        from openai_stub import completion, error

        try:
            side, kind, reply = self.answer(request.get("messages") or [])
        except Exception as e:  # a prompt this script does not know: visible in the table
            side, kind, reply = "unknown", f"{type(e).__name__}: {e}", None
        with self.lock:
            self.requests.append({"side": side, "kind": kind, "request": request})
        if reply is None:
            return error(400, "unrecognised prompt")
        return completion(json.dumps(reply))

    def answer(self, messages: list[dict[str, Any]]) -> tuple[str, str, dict[str, Any]]:
        asked = []
        for m in messages:
            if m.get("role") == "assistant":
                break
            asked.append(str(m.get("content", "")))
        text = "\n".join(asked)
        for marker, kind in OUR_MARKERS.items():
            if marker in text:
                return self.ours_label, kind, self.ours(kind, text)
        user = [str(m.get("content", "")) for m in messages if m.get("role") == "user"]
        prompt = user[-1] if user else ""
        for instruction, kind in RAGAS_INSTRUCTIONS.items():
            if instruction in prompt.split("\n", 1)[0]:
                data = json.loads(prompt.rpartition(RAGAS_INPUT)[2].rsplit("\nOutput:", 1)[0])
                return "ragas", kind, self.ragas(kind, data)
        raise ValueError(f"unrecognised prompt: {prompt[:80]!r}")

    @staticmethod
    def ours(kind: str, text: str) -> dict[str, Any]:
        def tagged(tag: str) -> str:
            found = re.search(rf"<{tag}>\n(.*?)\n</{tag}>", text, re.S)
            return found.group(1) if found else ""

        if kind == "faithfulness statements":
            return {"statements": sentences(tagged("answer"))}
        if kind == "faithfulness verdicts":
            ids = re.findall(r'<statement id="(\d+)">', text)
            return {"verdicts": [{"statement": int(i), "reason": "r", "verdict": 1} for i in ids]}
        if kind == "answer relevance":
            count = int(re.search(r"exactly (\d+) questions", text).group(1))  # type: ignore[union-attr]
            return {
                "questions": [
                    {"question": f"What is asked {i}?", "noncommittal": 0} for i in range(count)
                ]
            }
        ids = re.findall(r'<chunk id="(\d+)">', text)
        verdicts = [{"chunk": int(i), "relevant": True, "reason": "r"} for i in ids]
        if kind == "context precision":
            return {"verdicts": verdicts}
        statements = [
            {"statement": s, "attributed": True, "reason": "r"}
            for s in sentences(tagged("reference"))
        ]
        if kind == "context precision+recall":
            return {"verdicts": verdicts, "statements": statements, "reason": "all attributed"}
        return {"statements": statements, "reason": "all attributed"}

    @staticmethod
    def ragas(kind: str, data: dict[str, Any]) -> dict[str, Any]:
        if kind == "faithfulness statements":
            return {"statements": sentences(data["answer"])}
        if kind == "faithfulness verdicts":
            return {
                "statements": [
                    {"statement": s, "reason": "r", "verdict": 1} for s in data["statements"]
                ]
            }
        if kind == "answer relevance":
            return {"question": "What is asked?", "noncommittal": 0}
        if kind == "context precision":
            return {"reason": "r", "verdict": 1}
        return {
            "classifications": [
                {"statement": s, "reason": "r", "attributed": 1} for s in sentences(data["answer"])
            ]
        }


async def run_ours(url: str, k: int, combined: bool = True) -> None:
    """Our four metrics on every question, scheduled as ``scoring.py`` does: context precision
    and recall share one call unless ``combined`` is false (``combined: false``)."""
    from qa_eval.config import parse_config
    from qa_eval.judge.calls import Judge
    from qa_eval.judge.embeddings import OpenAIEmbedder
    from qa_eval.judge.settings import EmbeddingConfig
    from qa_eval.metrics.answer.relevance import answer_relevance
    from qa_eval.metrics.retrieval.faithfulness import faithfulness
    from qa_eval.metrics.retrieval.flat_context import (
        context_judgement,
        context_precision,
        context_recall_metric,
    )

    config = parse_config(
        {"llm": {"generation": {"provider": "openai", "base_url": url, "api_key": "x"}}}
    )
    judge = Judge(config)
    embedder = OpenAIEmbedder(
        EmbeddingConfig(
            provider="openai", model="text-embedding-3-small", base_url=url, api_key="x"
        )
    )
    for item in QUESTIONS:
        contexts = contexts_for(item, k)
        q, a, ref = item["question"], item["answer"], item["reference"]
        options = {} if combined else {"context_recall": {"combined": False}}
        shared = context_judgement(
            judge, q, contexts, ref, precision=True, recall=True, options=options
        )
        outs = [
            await faithfulness(judge, q, a, contexts),
            await answer_relevance(judge, embedder, q, a, 3),
            *await asyncio.gather(
                context_precision(judge, q, contexts, reference=ref, shared=shared),
                context_recall_metric(judge, q, ref, contexts, shared=shared),
            ),
        ]
        errors = [v for out in outs for key, v in out.items() if key.endswith("_error")]
        if errors:
            raise SystemExit(f"qa-eval side failed: {errors}")
    # closed in this event loop: left to the garbage collector, they would close in a later one
    for sdk in (judge.client, getattr(embedder, "_client", None)):
        if sdk is not None:
            await sdk.close()


RAGAS_SIDE = """
import asyncio, json, os, sys
os.environ.setdefault("RAGAS_DO_NOT_TRACK", "true")
from openai import AsyncOpenAI
from ragas.embeddings.base import embedding_factory
from ragas.llms import llm_factory
from ragas.metrics.collections import AnswerRelevancy, ContextPrecision, ContextRecall, Faithfulness

async def main(url, cases):
    client = AsyncOpenAI(base_url=url, api_key="x", max_retries=0)
    llm = llm_factory("gpt-4o-mini", client=client)
    emb = embedding_factory("openai", model="text-embedding-3-small", client=client)
    for c in cases:
        q, a, ref, ctx = c["question"], c["answer"], c["reference"], c["contexts"]
        await Faithfulness(llm=llm).ascore(user_input=q, response=a, retrieved_contexts=ctx)
        relevancy = AnswerRelevancy(llm=llm, embeddings=emb, strictness=3)
        await relevancy.ascore(user_input=q, response=a)
        await ContextPrecision(llm=llm).ascore(user_input=q, reference=ref, retrieved_contexts=ctx)
        await ContextRecall(llm=llm).ascore(user_input=q, retrieved_contexts=ctx, reference=ref)

asyncio.run(main(sys.argv[1], json.loads(open(sys.argv[2]).read())))
"""

COUNT_SIDE = """
import json, sys
try:
    import bpe_openai
    enc = bpe_openai.get_encoding("o200k_base")
    count, how = (lambda t: len(enc.encode(t))), "o200k_base tokens (bpe-openai)"
except ImportError:
    count, how = (lambda t: len(t) // 4), "characters / 4 (bpe-openai not installed)"
out = []
for r in json.loads(open(sys.argv[1]).read()):
    messages = r["request"].get("messages") or []
    text = sum(count(str(m.get("content", ""))) + 3 for m in messages) + 3
    schema = r["request"].get("response_format")
    out.append({"messages": text, "schema": count(json.dumps(schema)) if schema else 0})
print(json.dumps({"how": how, "counts": out}))
"""


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--venv", default="/tmp/ragas-venv", help="ragas' virtual environment")
    parser.add_argument("--chunks", type=int, nargs="+", default=[3, 5, 10])
    args = parser.parse_args()
    sys.path[:0] = [str(ROOT / "tests"), str(ROOT / "src")]
    from openai_stub import StubServer

    python = Path(args.venv) / "bin" / "python"
    if not python.exists():
        raise SystemExit(f"no ragas environment at {args.venv}: see this file's docstring")
    env = {**os.environ, "XDG_DATA_HOME": tempfile.mkdtemp(), "RAGAS_DO_NOT_TRACK": "true"}
    n = len(QUESTIONS)
    print(
        f"{n} questions; faithfulness, answer relevance (3 questions), context precision "
        "(with a reference), context recall; per question:\n"
    )
    header = (
        f"{'chunks':>6} {'side':<8} {'calls':>6} {'message tok':>12} {'+ schema':>9} "
        f"{'total':>7}   calls by metric"
    )
    print(header)
    for k in args.chunks:
        recorder = Recorder()
        with StubServer(recorder) as server, tempfile.TemporaryDirectory() as tmp:
            asyncio.run(run_ours(server.url, k))
            recorder.ours_label = "separate"
            asyncio.run(run_ours(server.url, k, combined=False))
            cases = [{**item, "contexts": contexts_for(item, k)} for item in QUESTIONS]
            (Path(tmp) / "cases.json").write_text(json.dumps(cases))
            subprocess.run(
                [str(python), "-c", RAGAS_SIDE, server.url, str(Path(tmp) / "cases.json")],
                check=True,
                env=env,
            )
            (Path(tmp) / "requests.json").write_text(json.dumps(recorder.requests))
            counted = json.loads(
                subprocess.run(
                    [str(python), "-c", COUNT_SIDE, str(Path(tmp) / "requests.json")],
                    check=True,
                    capture_output=True,
                    text=True,
                ).stdout
            )
        unknown = [r["kind"] for r in recorder.requests if r["side"] == "unknown"]
        if unknown:
            raise SystemExit(f"prompts the script did not recognise: {unknown}")
        sides: dict[str, dict[str, Any]] = {}
        for r, c in zip(recorder.requests, counted["counts"]):
            side = sides.setdefault(r["side"], {"calls": 0, "messages": 0, "schema": 0, "by": {}})
            side["calls"] += 1
            side["messages"] += c["messages"]
            side["schema"] += c["schema"]
            side["by"][r["kind"]] = side["by"].get(r["kind"], 0) + 1
        for name in ("qa-eval", "separate", "ragas"):
            s = sides[name]
            by = ", ".join(f"{kind} {count / n:g}" for kind, count in s["by"].items())
            print(
                f"{k:>6} {name:<8} {s['calls'] / n:>6.2f} {s['messages'] / n:>12.0f} "
                f"{s['schema'] / n:>9.0f} {(s['messages'] + s['schema']) / n:>7.0f}   {by}"
            )
        theirs = sides["ragas"]
        for name in ("qa-eval", "separate"):
            ours = sides[name]
            total = (ours["messages"] + ours["schema"]) / (theirs["messages"] + theirs["schema"])
            print(
                f"{k:>6} {'ratio':<8} {ours['calls'] / theirs['calls']:>6.2f} "
                f"{ours['messages'] / theirs['messages']:>12.2f} {'':>9} {total:>7.2f}"
                f"   {name} / ragas"
            )
    print(f"\ntokens: {counted['how']}; a message adds 3 tokens, a request 3 (OpenAI's framing)")


if __name__ == "__main__":
    main()
