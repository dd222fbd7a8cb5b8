"""`kbkit eval`: a team's own questions asked of its kb, beside plain FTS5, with the questions that
moved since the last run, and an exit code CI can rely on."""

from __future__ import annotations

import json
from pathlib import Path

from tests.helpers.project import make_project
from tests.helpers.serve import kbkit_in_process

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
