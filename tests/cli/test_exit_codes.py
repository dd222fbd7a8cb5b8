"""The exit code says whose problem it is (docs/adr/0013, 0050), through the command as a user runs
it: a missing git or a model that cannot load is the machine (3), a source that cannot be
fetched is the remote (4), a source that changed since it was locked is the input (2)."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from kbkit.errors import ExitCode
from tests.helpers.project import make_project
from tests.helpers.serve import kbkit_in_process
from tests.helpers.skills import FakeGitHub, new_project
from tests.helpers.trust import trust_project
from tests.peers.required import require_modules


def error_line(result: subprocess.CompletedProcess[str]) -> str:
    """The one error line a failed command prints last on stderr (after any progress), no traceback."""
    errors = [line for line in result.stderr.splitlines() if line.startswith("kbkit: error: ")]
    assert len(errors) == 1 and result.stderr.strip().endswith(errors[0]), result.stderr
    assert "Traceback" not in result.stderr
    return errors[0]


@pytest.mark.git
def test_a_missing_git_exits_3_with_the_fix(tmp_path: Path) -> None:
    root = new_project(tmp_path)
    no_git = tmp_path / "bin"
    no_git.mkdir()
    result = kbkit_in_process("skills", "add", "acme/skills", "--root", str(root), env={"PATH": str(no_git)})
    assert result.returncode == ExitCode.ENVIRONMENT
    assert error_line(result) == (
        "kbkit: error: git is not installed; git and GitHub skill sources need it; "
        "install git (or add a local folder as the source)"
    )
    assert not (root / "skills-lock.json").exists()


def locked_project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[FakeGitHub, Path]:
    """A project that locked the skill lint-rules from github.com/acme/skills (served locally)."""
    github = FakeGitHub(tmp_path / "github", monkeypatch)
    github.repo("acme/skills", {"skills/lint-rules": "lint-rules"})
    root = new_project(tmp_path)
    added = kbkit_in_process("skills", "add", "acme/skills", "--root", str(root))
    assert added.returncode == 0, added.stderr
    return github, root


@pytest.mark.git
def test_a_locked_source_that_cannot_be_fetched_exits_4(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    github, root = locked_project(tmp_path, monkeypatch)
    shutil.rmtree(github.base / "acme" / "skills.git")  # the repository is gone
    gone = kbkit_in_process("skills", "install", "--root", str(root))
    assert gone.returncode == ExitCode.REMOTE
    (line,) = gone.stderr.splitlines()
    assert line.startswith("problem: lint-rules: acme/skills@") and ": cannot fetch " in line


@pytest.mark.git
def test_a_locked_source_that_changed_is_refused_with_exit_2(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _, root = locked_project(tmp_path, monkeypatch)
    lock = root / "skills-lock.json"
    entry_hash = lock.read_text().split('"computedHash": "')[1].split('"')[0]
    lock.write_text(lock.read_text().replace(entry_hash, "0" * len(entry_hash)))
    refused = kbkit_in_process("skills", "install", "--root", str(root))
    assert refused.returncode == ExitCode.BAD_INPUT
    assert "refused: lint-rules: the source does not match skills-lock.json" in refused.stderr


def test_a_model_that_cannot_be_loaded_exits_3(tmp_path: Path) -> None:
    require_modules("numpy", "onnxruntime", "tokenizers", what="the semantic extra")
    config = '[kb]\npath = "docs"\n\n[search]\nsemantic = true\nmodel = "models/broken"\n'
    root = make_project(tmp_path / "p", {"guide.md": "# Guide\n\nHow we work.\n"}, config=config)
    model = root / "models" / "broken"
    model.mkdir(parents=True)
    (model / "model.onnx").write_bytes(b"not a model")
    (model / "vocab.txt").write_text("[PAD]\n[UNK]\n[CLS]\n[SEP]\nguide\n")
    trust_project(root)  # the member reviewed the model the team names
    result = kbkit_in_process("index", "--root", str(root))
    assert result.returncode == ExitCode.ENVIRONMENT
    assert f"the model {model / 'model.onnx'} cannot be loaded" in error_line(result)
