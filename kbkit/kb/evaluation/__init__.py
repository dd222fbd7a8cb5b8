"""Measuring search on a team's own questions: a questions file, the metrics, and two baselines.

A questions file names, for each question typed as people type it, the one file that answers it
(`questions`). Each way of searching ranks the kb's files for every question (`runs`): kbkit's own
search through `KnowledgeBase`, and plain SQLite FTS5 over the same files (`baselines`), the
twenty lines anyone can write, which kbkit's ranking has to beat to be worth its rules. `metrics`
turns the rankings into success@k and MRR@10; `team` runs a team's own file (`kbkit eval`) and
remembers its last ranks. Nothing here prints: `bench.real_sites` and `kbkit eval` report.
"""

from kbkit.kb.evaluation.baselines import PORTER, TRIGRAM, UNICODE61, Fts5Baseline, Page, page, safe_query
from kbkit.kb.evaluation.metrics import DEPTH, Asked, Scores, score
from kbkit.kb.evaluation.questions import Question, QuestionSet, Thresholds, load_questions, parse_questions
from kbkit.kb.evaluation.runs import ask_baseline, ask_kbkit, check_answers, pages_of
from kbkit.kb.evaluation.team import Evaluation, Moved, evaluate

__all__ = [
    "DEPTH",
    "Evaluation",
    "Moved",
    "PORTER",
    "TRIGRAM",
    "UNICODE61",
    "Asked",
    "Fts5Baseline",
    "Page",
    "Question",
    "QuestionSet",
    "Scores",
    "Thresholds",
    "ask_baseline",
    "ask_kbkit",
    "check_answers",
    "evaluate",
    "load_questions",
    "page",
    "pages_of",
    "parse_questions",
    "safe_query",
    "score",
]
