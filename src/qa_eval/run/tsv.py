"""Answer correctness of a TSV file, as graphrag-eval's ``answer-correctness`` command does it.

Input: a tab-separated file with the columns ``Question``, ``Reference answer`` and ``Actual
answer`` (others are ignored). Output: one row per input row, in input order, with the columns
``#Reference``, ``#PTarget``, ``#Matching``, ``Reasoning`` and ``Error`` (counts empty and the
message in ``Error`` when a row could not be judged). Rows are judged concurrently and written as
soon as every row before them is done, so an interrupted run keeps what it finished.

A library: :func:`run_tsv` reads, judges and writes; the ``answer-correctness`` command's options
are in ``qa_eval.cli.parser`` and its handler in ``qa_eval.cli.commands``.
"""

from __future__ import annotations

import asyncio
import csv
import os
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..errors import InputError, QaEvalError

if TYPE_CHECKING:  # the judge side (SDK, pydantic) is imported when the command runs, not
    # when the CLI's parser is built for every other command
    from ..config import EvalConfig
    from ..judge.calls import Judge
    from ..prompts import Example

__all__ = ["COLUMNS", "OUTPUT_COLUMNS", "evaluate_tsv", "read_rows", "run_tsv"]

COLUMNS = ("Question", "Reference answer", "Actual answer")
OUTPUT_COLUMNS = ("#Reference", "#PTarget", "#Matching", "Reasoning", "Error")


def read_rows(path: str | os.PathLike[str]) -> list[dict[str, str]]:
    """The rows of a TSV file that has the three input columns; errors name the file and line."""
    file = Path(path)
    try:
        text = file.read_text(encoding="utf-8-sig")
    except FileNotFoundError:
        raise InputError("no such file", source=str(file)) from None
    except UnicodeDecodeError as e:
        raise InputError(f"not UTF-8 text ({e.reason})", source=str(file)) from None
    reader = csv.DictReader(text.splitlines(), delimiter="\t")
    missing = [c for c in COLUMNS if c not in (reader.fieldnames or [])]
    if missing:
        raise InputError(
            f"missing column(s) {', '.join(repr(c) for c in missing)} "
            f"(found: {', '.join(reader.fieldnames or []) or 'none'})",
            source=str(file),
            record="line 1",
        )
    rows = []
    for number, row in enumerate(reader, start=2):
        if any(row.get(c) is None for c in COLUMNS):
            raise InputError("fewer fields than columns", source=str(file), record=f"line {number}")
        rows.append(row)
    return rows


async def evaluate_tsv(
    rows: Sequence[dict[str, str]],
    judge: Judge,
    write: Callable[[list[Any]], None],
    template: str | None = None,
    progress: Callable[[int, int], None] | None = None,
    examples: Sequence[Example] = (),
) -> None:
    """Judge every row concurrently; ``write`` gets the output rows in input order
    (``examples``: the config's few-shot examples of ``answer_correctness``)."""
    from ..metrics.answer.correctness import answer_correctness

    done: dict[int, list[Any]] = {}
    next_row = 0
    finished = 0

    async def one(index: int, row: dict[str, str]) -> None:
        nonlocal next_row, finished
        keys = await answer_correctness(
            judge,
            row["Question"],
            row["Reference answer"],
            row["Actual answer"],
            template,
            examples,
        )
        if "answer_correctness_error" in keys:
            done[index] = ["", "", "", "", keys["answer_correctness_error"]]
        else:
            done[index] = [
                keys.get("answer_reference_claims_count", ""),
                keys["answer_actual_claims_count"],
                keys["answer_matching_claims_count"],
                keys["answer_correctness_reason"],
                "",
            ]
        finished += 1
        while next_row in done:
            write(done.pop(next_row))
            next_row += 1
        if progress is not None:
            progress(finished, len(rows))

    await asyncio.gather(*(one(i, r) for i, r in enumerate(rows)))


def run_tsv(
    input_path: str | os.PathLike[str],
    output_path: str | os.PathLike[str],
    config: EvalConfig,
    *,
    cache: str | bool = True,
    progress: Callable[[int, int], None] | None = None,
) -> Judge:
    """Read the TSV file ``input_path``, judge every row with ``config``'s judge (``cache``: the
    reply cache, as in ``run_evaluation``; ``progress(done, total)``) and write the output TSV
    ``output_path``; returns the judge (for its usage)."""
    rows = read_rows(input_path)
    if config.generation is None:
        raise QaEvalError(
            "answer correctness needs a judge: pass a config with llm.generation "
            "(-c FILE) or set OPENAI_API_KEY"
        )
    if not config.enabled("answer_correctness"):
        raise QaEvalError("answer_correctness is disabled in the config")
    out = Path(output_path)
    out.parent.mkdir(parents=True, exist_ok=True)
    from ..judge.cache.store import open_cache
    from ..judge.calls import Judge

    store = open_cache(cache)
    judge = Judge(config, cache=store)
    try:
        with out.open("w", encoding="utf-8", newline="") as f:
            writer = csv.writer(f, delimiter="\t", lineterminator="\n")
            writer.writerow(OUTPUT_COLUMNS)

            def write(row: list[Any]) -> None:
                writer.writerow(row)
                f.flush()

            asyncio.run(
                evaluate_tsv(
                    rows,
                    judge,
                    write,
                    config.answer_correctness_prompt,
                    progress,
                    config.examples.get("answer_correctness", ()),
                )
            )
    finally:
        if store is not None:
            store.close()
    return judge
