"""A team's own questions asked of its own kb (`kbkit eval`): kbkit's search beside plain FTS5 over
the same files, the thresholds the file sets, and which questions moved since the last run.

The last run's ranks are kept in `.kbkit/eval-last.json` (the member's machine, not the repository),
so a docs reorganisation that moves an answer out of reach is named the next time anyone runs it.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from kbkit.errors import KbkitError
from kbkit.fsutil import atomic_write_text, private_folder, read_text_file
from kbkit.kb.base import KnowledgeBase
from kbkit.kb.evaluation.baselines import TRIGRAM, UNICODE61, Fts5Baseline
from kbkit.kb.evaluation.metrics import Asked, Scores, score, unmet
from kbkit.kb.evaluation.questions import QuestionSet
from kbkit.kb.evaluation.runs import ask_baseline, ask_kbkit, check_answers, pages_of

HISTORY_FILE = "eval-last.json"
BASELINES = (UNICODE61, TRIGRAM)


@dataclass(frozen=True)
class Moved:
    """A question whose answer kbkit ranks elsewhere than at the last run (None: not in the top 10)."""

    text: str
    answer: str
    before: int | None
    now: int | None


@dataclass(frozen=True)
class Evaluation:
    name: str
    kbkit: Scores
    baselines: dict[str, Scores]
    unmet: list[str]
    """Each threshold of the file that kbkit's figures fall below (empty: all met)."""
    asked: list[Asked] = field(repr=False)
    moved: list[Moved]
    first_run: bool
    words_alone: Scores | None = None
    """With hybrid search on: kbkit's figures with it off, over the same index (what the vectors
    add or cost on this kb: docs/adr/0078); None when hybrid search is off."""
    hybrid_moved: list[Moved] = field(default_factory=list)
    """With hybrid search on: the questions whose answer it ranks elsewhere than the words alone
    do (`before`: the words' rank, `now`: hybrid's)."""

    def to_dict(self) -> dict[str, Any]:
        return {
            "questions": self.name,
            "kbkit": asdict(self.kbkit),
            "baselines": {name: asdict(scores) for name, scores in self.baselines.items()},
            "unmet": self.unmet,
            "moved": [asdict(item) for item in self.moved],
            "words_alone": None if self.words_alone is None else asdict(self.words_alone),
            "hybrid_moved": [asdict(item) for item in self.hybrid_moved],
            "missed": [
                {"text": item.question.text, "answer": item.question.answer, "first": item.first}
                for item in self.asked
                if item.rank is None
            ],
        }


def evaluate(kb: KnowledgeBase, questions: QuestionSet) -> Evaluation:
    """Ask every question of kbkit and of each baseline, and with hybrid search on of kbkit's words
    alone too; compare kbkit's ranks with the last run's, then keep these as the last run."""
    pages = list(pages_of(kb))
    check_answers(questions, {item.path for item in pages})
    asked = ask_kbkit(kb, questions)
    baselines = {}
    for tokenizer in BASELINES:
        baseline = Fts5Baseline(pages, tokenizer)
        try:
            baselines[tokenizer] = score(ask_baseline(baseline, questions))
        finally:
            baseline.close()
    figures = score(asked)
    history = kb.settings.state_dir / HISTORY_FILE
    before = _last_ranks(history)
    now = {_key(item): item.rank for item in asked}
    moved = [
        Moved(item.question.text, item.question.answer, before[_key(item)], item.rank)
        for item in asked
        if _key(item) in before and before[_key(item)] != item.rank
    ]
    private_folder(history.parent)
    atomic_write_text(history, json.dumps({"ranks": now}, ensure_ascii=False, indent=1) + "\n")
    words: Scores | None = None
    hybrid_moved: list[Moved] = []
    if kb.dense_ranker() is not None:
        alone = ask_kbkit(kb, questions, words_alone=True)
        words = score(alone)
        hybrid_moved = [
            Moved(item.question.text, item.question.answer, other.rank, item.rank)
            for item, other in zip(asked, alone, strict=True)
            if item.rank != other.rank
        ]
    return Evaluation(
        questions.name,
        figures,
        baselines,
        unmet(figures, questions.thresholds),
        asked,
        moved,
        not before,
        words,
        hybrid_moved,
    )


def _key(item: Asked) -> str:
    return f"{item.question.text}\t{item.question.answer}"


def _last_ranks(path: Path) -> dict[str, int | None]:
    """The last run's ranks; none when there was no run (or its file is not one kbkit wrote)."""
    try:
        text = read_text_file(path)
        data = json.loads(text) if text else {}
    except (ValueError, KbkitError):
        return {}
    ranks = data.get("ranks") if isinstance(data, dict) else None
    if not isinstance(ranks, dict):
        return {}
    return {str(k): v if isinstance(v, int) else None for k, v in ranks.items()}
