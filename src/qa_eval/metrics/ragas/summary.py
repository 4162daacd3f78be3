"""Summary score: ragas 0.4.3's ``SummaryScore`` (``ragas.metrics.collections.summary_score``).
From the texts that were summarised (joined by newlines) the judge lists keyphrases (people,
organisations, places, dates, money, percentages), then writes closed questions about them whose
answer in the text is yes; then it judges, for each question, whether the summary holds enough to
answer it (1) or not (0). With ``length_penalty`` a conciseness term is mixed in:

    qa_score     = questions the summary answers / questions
    conciseness  = 1 - min(len(summary), len(text)) / (len(text) + 1e-10)     (characters)
    summary_score = qa_score · (1 - coeff) + conciseness · coeff     (qa_score alone without it)

Policy: when no questions can be generated, ragas divides by zero (ZeroDivisionError); qa-eval
leaves the score undefined: ``None`` with a reason, and no third call.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from pydantic import BaseModel, Field

from ...prompts import delimit, numbered_blocks, render
from ..retrieval.step_context import numbered_schema

__all__ = [
    "AnswersVerdict",
    "KeyphrasesReply",
    "QuestionsReply",
    "SummaryJudgement",
    "conciseness",
    "summary_judgement",
    "summary_score",
]

METRIC = "summary_score"


class KeyphrasesReply(BaseModel):
    """The keyphrases of the text."""

    keyphrases: list[str]


class QuestionsReply(BaseModel):
    """Closed questions the text answers with yes."""

    questions: list[str]


class AnswersVerdict(BaseModel):
    """Whether the summary answers one numbered question."""

    question: int
    verdict: int = Field(ge=0, le=1)


@dataclass(frozen=True)
class SummaryJudgement:
    """What the judge found: keyphrases, questions and, per question, whether the summary
    answers it."""

    keyphrases: tuple[str, ...]
    questions: tuple[str, ...]
    answered: tuple[bool, ...]


def conciseness(text: str, summary: str) -> float:
    """ragas' conciseness: 1 - min(len(summary), len(text)) / (len(text) + 1e-10)."""
    return 1 - min(len(summary), len(text)) / (len(text) + 1e-10)


def summary_score(
    answered: Sequence[bool],
    text: str,
    summary: str,
    length_penalty: bool = True,
    coeff: float = 0.5,
) -> float | None:
    """The summary score (see the module docstring); ``None`` without questions."""
    if not answered:
        return None
    qa = sum(1 for a in answered if a) / len(answered)
    if not length_penalty:
        return qa
    return qa * (1 - coeff) + conciseness(text, summary) * coeff


async def summary_judgement(judge: Any, text: str, summary: str) -> SummaryJudgement:
    """Keyphrases and questions from ``text``, and the summary's answers (three calls, one
    after the other; two when no questions come)."""
    content = render("summary_keyphrases", text=text)
    phrases_reply = await judge.ask(METRIC, [{"role": "user", "content": content}], KeyphrasesReply)
    keyphrases = [k.strip() for k in phrases_reply.value.keyphrases if k.strip()]
    listed = "\n".join(f"- {delimit(k)}" for k in keyphrases)
    content = render("summary_questions", {"keyphrases": listed}, text=text)
    questions_reply = await judge.ask(
        METRIC, [{"role": "user", "content": content}], QuestionsReply
    )
    questions = [q.strip() for q in questions_reply.value.questions if q.strip()]
    if not questions:
        return SummaryJudgement(tuple(keyphrases), (), ())
    trusted = {"questions": numbered_blocks(questions, "question")}
    content = render("summary_answers", trusted, summary=summary)
    schema = numbered_schema("SummaryAnswers", AnswersVerdict, "question", len(questions))
    answers = await judge.ask(METRIC, [{"role": "user", "content": content}], schema)
    ordered = sorted(answers.value.verdicts, key=lambda v: v.question)  # type: ignore[attr-defined]
    return SummaryJudgement(
        tuple(keyphrases), tuple(questions), tuple(v.verdict == 1 for v in ordered)
    )
