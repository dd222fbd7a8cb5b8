"""Asking every question of a set one way: kbkit's own search, or a baseline over the same files."""

from __future__ import annotations

from collections.abc import Collection, Iterable

from kbkit.errors import InputError, QueryError, UnreadableFile
from kbkit.fsutil import read_text_file
from kbkit.kb.base import KnowledgeBase
from kbkit.kb.evaluation.baselines import Fts5Baseline, Page, page
from kbkit.kb.evaluation.metrics import DEPTH, Asked
from kbkit.kb.evaluation.questions import QuestionSet
from kbkit.kb.search import search


def ask_kbkit(kb: KnowledgeBase, questions: QuestionSet, *, words_alone: bool = False) -> list[Asked]:
    """kbkit's search as the server runs it (hybrid when the kb's settings turn it on), read to
    DEPTH without a token budget, so a budget never hides a rank. `words_alone`: as with hybrid
    search off, over the same index."""
    asked = []
    for question in questions.questions:
        try:
            if words_alone:
                hits = search(kb.store, kb.registry, question.text, limit=DEPTH, max_tokens=None).results
            else:
                hits = kb.search(question.text, limit=DEPTH, max_tokens=None).results
        except QueryError:  # nothing searchable in it: no answer, as for a baseline
            hits = []
        asked.append(Asked(question, tuple((hit.path, *hit.folded) for hit in hits)))
    return asked


def ask_baseline(baseline: Fts5Baseline, questions: QuestionSet) -> list[Asked]:
    return [
        Asked(question, tuple((path,) for path in baseline.rank(question.text, DEPTH)))
        for question in questions.questions
    ]


def pages_of(kb: KnowledgeBase) -> Iterable[Page]:
    """Every file kbkit serves, as a plain script reads it: the file's own text; a file that is not
    UTF-8 text (an office document, a PDF) as kbkit extracts it, which no plain script could."""
    for row in kb.list_servable():
        try:
            text = read_text_file(kb.settings.kb_path / row.path)
        except UnreadableFile:
            text = None
        if text is None:
            text = kb.load(row.path).text
        yield page(row.path, text.removeprefix("\ufeff"))


def check_answers(questions: QuestionSet, paths: Collection[str]) -> None:
    """Refuse a set whose answer is not a file the kb serves: a typo would read as a search miss."""
    for number, question in enumerate(questions.questions, 1):
        if question.answer not in paths:
            raise InputError(
                f"{questions.name}: question {number} ({question.text!r}): "
                f"{question.answer!r} is not a file the kb serves",
                fix="write the answer's path relative to the kb folder, as kbkit lists it",
            )
