"""docs/ci.md's plain shell recipe, run as written in a fresh checkout of a team's repository, with
the installed `kbkit` on PATH: it passes on a healthy kb and fails when a page a question names
moves away."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from tests.helpers.paths import REPO
from tests.helpers.project import make_project

QUESTIONS = '[[question]]\ntext = "blue green rollout"\nanswer = "runbooks/deploy.rst"\n'


def recipe() -> str:
    text = (REPO / "docs" / "ci.md").read_text(encoding="utf-8")
    (script,) = re.findall(r"```sh\n(.*?)```", text, re.S)
    return script


def run_recipe(root: Path) -> subprocess.CompletedProcess[str]:
    (root / "kb-checks.sh").write_text(recipe(), encoding="utf-8")
    env = {
        "PATH": f"{Path(sys.executable).parent}{os.pathsep}/usr/bin:/bin",
        "HOME": str(root.parent / "home"),
        "LANG": "C.UTF-8",
    }
    return subprocess.run(
        ["bash", "kb-checks.sh"], cwd=root, env=env, capture_output=True, text=True, timeout=300
    )


@pytest.mark.processes
def test_the_documented_ci_recipe_passes_on_a_healthy_kb_and_fails_when_an_answer_moves(
    tmp_path: Path,
) -> None:
    root = make_project(tmp_path / "repo", trusted=False)  # CI trusts nothing beforehand
    (root / "kb-questions.toml").write_text(QUESTIONS, encoding="utf-8")
    done = run_recipe(root)
    assert done.returncode == 0, done.stdout + done.stderr
    assert re.search(r"claude-code\s+ok 2 tools", done.stdout), done.stdout
    (root / "docs" / "runbooks" / "deploy.rst").rename(root / "docs" / "runbooks" / "rollout.rst")
    moved = run_recipe(root)
    assert moved.returncode == 2 and "is not a file the kb serves" in moved.stderr
