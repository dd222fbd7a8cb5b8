"""success@k and MRR@10 over a question set: the known-item measures, one right file a question.

A ranking is what one way of searching returned for a question, best first, each position the
paths it stands for (a kbkit hit and the near-copies folded into it; a baseline's one file), so a
copy kbkit folded away still counts as found where it is shown.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from kbkit.kb.evaluation.questions import THRESHOLD_KEYS, Question, Thresholds

DEPTH = 10
"""How deep a ranking is read: MRR@10 and success@10."""


@dataclass(frozen=True)
class Asked:
    """One question and what one way of searching returned for it."""

    question: Question
    ranking: tuple[tuple[str, ...], ...]

    @property
    def rank(self) -> int | None:
        """1-based position of the answer in the top DEPTH, or None."""
        for index, paths in enumerate(self.ranking[:DEPTH]):
            if self.question.answer in paths:
                return index + 1
        return None

    @property
    def first(self) -> str | None:
        """What ranked first (None: nothing matched)."""
        return self.ranking[0][0] if self.ranking else None


@dataclass(frozen=True)
class Scores:
    questions: int
    success_at_1: float
    success_at_5: float
    success_at_10: float
    mrr_at_10: float


def score(asked: Sequence[Asked]) -> Scores:
    """The shares of questions answered within 1, 5 and 10, and the mean reciprocal rank (0 past 10)."""
    ranks = [item.rank for item in asked]
    count = len(ranks)

    def within(k: int) -> float:
        return sum(rank is not None and rank <= k for rank in ranks) / count if count else 0.0

    mrr = sum(1 / rank for rank in ranks if rank is not None) / count if count else 0.0
    return Scores(count, within(1), within(5), within(10), mrr)


def unmet(scores: Scores, thresholds: Thresholds) -> list[str]:
    """Each threshold the scores fall below, as `name: got < wanted` (empty: all met)."""
    out = []
    for key in THRESHOLD_KEYS:
        wanted = getattr(thresholds, key)
        got = getattr(scores, key)
        if wanted is not None and got < wanted:
            out.append(f"{key}: {got:.2f} < {wanted:.2f}")
    return out
