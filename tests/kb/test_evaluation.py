"""Measuring search on a team's questions (kbkit/kb/evaluation): the questions file refuses each
mistake in one line, the metrics are right on a ranking worked out by hand, and the plain FTS5
baselines and kbkit's own search rank a handful of hand-written pages."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from kbkit.config import load_settings
from kbkit.errors import InputError
from kbkit.kb.base import KnowledgeBase
from kbkit.kb.evaluation import (
    PORTER,
    TRIGRAM,
    UNICODE61,
    Asked,
    Fts5Baseline,
    Question,
    QuestionSet,
    Thresholds,
    ask_baseline,
    ask_kbkit,
    check_answers,
    load_questions,
    page,
    pages_of,
    parse_questions,
    safe_query,
    score,
)
from kbkit.kb.evaluation.metrics import unmet
from tests.helpers.project import make_project

PAGES = {
    "guide/install.md": "---\ntitle: Installing the agent\n---\n\nDownload the agent and run `setup.sh`.\n",
    "guide/keys.md": "# Rotating signing keys\n\nRotate the signing key every 90 days with `keyctl rotate`.\n\n"
    "## Revocation\n\nRevoke a leaked key at once.\n",
    "reference/env.rst": "Environment variables\n=====================\n\n``APP_TIMEOUT`` sets the request timeout.\n",
    "zh/guide/keys.md": "# 轮换签名密钥\n\n每九十天轮换一次签名密钥。\n",
    "notes.md": "Meeting notes: nothing about keys or timeouts here, only lunch.\n",
}
QUESTIONS = """
[thresholds]
success_at_5 = 0.9
mrr_at_10 = 0.5

[[question]]
text = "rotate signing key"
answer = "guide/keys.md"

[[question]]
text = "revoke leaked key"
answer = "guide/keys.md"
section = "Revocation"

[[question]]
text = "APP_TIMEOUT"
answer = "reference/env.rst"

[[question]]
text = "install the agent"
answer = "guide/install.md"

[[question]]
text = "签名密钥"
answer = "zh/guide/keys.md"
"""


def asked(answer: str, *ranked: str) -> Asked:
    return Asked(Question("q", answer), tuple((path,) for path in ranked))


def test_metrics_on_a_ranking_worked_out_by_hand() -> None:
    items = [
        asked("a", "a", "b"),  # rank 1
        asked("a", "b", "c", "a"),  # rank 3
        asked("a", *"bcdefg", "a"),  # rank 7
        asked("a", *"bcdefghijk", "a"),  # rank 11: past the depth, a miss
        asked("a"),  # nothing returned
    ]
    assert [item.rank for item in items] == [1, 3, 7, None, None]
    scores = score(items)
    assert scores.questions == 5
    assert (scores.success_at_1, scores.success_at_5, scores.success_at_10) == (0.2, 0.4, 0.6)
    assert scores.mrr_at_10 == pytest.approx((1 + 1 / 3 + 1 / 7) / 5)
    assert unmet(scores, Thresholds(success_at_5=0.4, mrr_at_10=0.5)) == ["mrr_at_10: 0.30 < 0.50"]


def test_a_folded_copy_counts_where_its_hit_is_shown() -> None:
    item = Asked(Question("q", "b/page.md"), (("x.md",), ("a/page.md", "b/page.md")))
    assert item.rank == 2
    assert item.first == "x.md"


def test_an_empty_set_scores_zero() -> None:
    assert score([]).mrr_at_10 == 0.0


def test_a_questions_file_is_read_with_its_thresholds(tmp_path: Path) -> None:
    path = tmp_path / "questions.toml"
    path.write_text(QUESTIONS, encoding="utf-8")
    questions = load_questions(path)
    assert len(questions.questions) == 5
    assert questions.questions[1] == Question("revoke leaked key", "guide/keys.md", "Revocation")
    assert questions.thresholds == Thresholds(success_at_5=0.9, mrr_at_10=0.5)


@pytest.mark.parametrize(
    ("text", "says"),
    [
        ("[[question]\n", "not valid TOML"),
        ("", "no [[question]] table"),
        ('questions = 1\n[[question]]\ntext = "a"\nanswer = "b.md"\n', "unknown key 'questions'"),
        ('[[question]]\nanswer = "b.md"\n', "question 1: `text` is missing or empty"),
        (
            '[[question]]\ntext = "a"\nanswer = "b.md"\n[[question]]\ntext = "a"\nanswer = "  "\n',
            "question 2: `answer`",
        ),
        ('[[question]]\ntext = "a"\nanswer = "../b.md"\n', "is not a path inside the kb folder"),
        ('[[question]]\ntext = "a"\nanswer = "/etc/b.md"\n', "is not a path inside the kb folder"),
        ('[[question]]\ntext = "a"\nanswer = "b.md"\npage = "c"\n', "question 1: unknown key 'page'"),
        ('[[question]]\ntext = "a"\nanswer = "b.md"\nsection = 3\n', "`section` is not a string"),
        (
            '[thresholds]\nrecall = 0.5\n[[question]]\ntext = "a"\nanswer = "b.md"\n',
            "unknown threshold 'recall'",
        ),
        ('[thresholds]\nmrr_at_10 = 2\n[[question]]\ntext = "a"\nanswer = "b.md"\n', "is not a share"),
    ],
)
def test_each_mistake_in_a_questions_file_is_one_line(text: str, says: str) -> None:
    with pytest.raises(InputError) as refused:
        parse_questions(text, "q.toml")
    message = str(refused.value)
    assert says in message
    assert message.startswith("q.toml: ")
    assert "\n" not in message


def test_a_missing_questions_file_is_one_line(tmp_path: Path) -> None:
    with pytest.raises(InputError, match="no such questions file"):
        load_questions(tmp_path / "absent.toml")


def test_a_row_takes_its_title_from_front_matter_then_heading_then_file_name() -> None:
    assert page("a.md", "---\ntitle: 'From front matter'\n---\n# Heading\n").title == "From front matter"
    assert page("a.md", "---\nweight: 3\n---\n\n## A heading\n").title == "A heading"
    assert page("a.rst", ".. _x:\n\nRST title\n=========\n\nText.\n").title == "RST title"
    assert page("dir/name.md", "No heading at all.\n").title == "name"
    assert "weight" not in page("a.md", "---\nweight: 3\n---\nbody\n").body


def test_a_query_is_words_quoted_and_or_joined() -> None:
    assert safe_query('rotate "key" NOT -x') == '"rotate" OR """key""" OR "NOT" OR "-x"'
    assert safe_query("a bc def", shortest=3) == '"def"'
    assert safe_query("  ") is None


@pytest.fixture
def kb(tmp_path: Path) -> Iterator[KnowledgeBase]:
    root = make_project(tmp_path / "project", PAGES)
    kb = KnowledgeBase.open(load_settings(root))
    kb.scan()
    yield kb
    kb.close()


def test_baselines_and_kbkit_rank_the_same_files(kb: KnowledgeBase) -> None:
    questions = parse_questions(QUESTIONS, "q.toml")
    pages = list(pages_of(kb))
    assert sorted(p.path for p in pages) == sorted(PAGES)
    check_answers(questions, {p.path for p in pages})
    ranks = {}
    for tokenizer in (UNICODE61, PORTER, TRIGRAM):
        baseline = Fts5Baseline(pages, tokenizer)
        try:
            ranks[tokenizer] = [item.rank for item in ask_baseline(baseline, questions)]
        finally:
            baseline.close()
    ranks["kbkit"] = [item.rank for item in ask_kbkit(kb, questions)]
    assert ranks[UNICODE61][:4] == [1, 1, 1, 1]
    assert ranks[UNICODE61][4] is None  # unicode61 keeps the run of Han, 轮换签名密钥, one token
    assert ranks[PORTER][:4] == [1, 1, 1, 1]
    assert ranks[TRIGRAM][4] == 1  # trigrams find it inside the heading's run
    assert ranks["kbkit"] == [1, 1, 1, 1, 1]


def test_an_answer_the_kb_does_not_serve_is_refused(kb: KnowledgeBase) -> None:
    questions = QuestionSet("q.toml", (Question("keys", "guide/key.md"),))
    with pytest.raises(
        InputError, match=r"question 1 \('keys'\): 'guide/key.md' is not a file the kb serves"
    ):
        check_answers(questions, {p.path for p in pages_of(kb)})
