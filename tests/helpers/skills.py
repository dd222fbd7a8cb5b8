"""Shared by the skills tests: skill folders, real git repositories, a GitHub made of local bare
repositories (git's own `url.<base>.insteadOf`, set through the environment), and the real
`skills` CLI from npm (`npx skills`) run by the Node it needs."""

from __future__ import annotations

import os
import shutil
import subprocess
from collections.abc import Mapping
from pathlib import Path

import pytest

from tests.helpers.paths import REPO
from tests.helpers.project import make_project
from tests.peers.node import SKILLS_CLI, require

SKILL = "---\nname: {name}\ndescription: {description}\n---\n# {name}\n\nDo the thing.\n"
REPO_ROOT = REPO
GIT_ID = ["-c", "user.email=t@example.test", "-c", "user.name=t", "-c", "commit.gpgsign=false"]


def write_skill(
    folder: Path, name: str | None = None, description: str = "Use when testing.", extra: str = ""
) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    text = SKILL.format(name=name or folder.name, description=description)
    if extra:
        text = text.replace("---\n#", extra + "---\n#", 1)
    (folder / "SKILL.md").write_text(text)
    (folder / "references").mkdir(exist_ok=True)
    (folder / "references" / "notes.md").write_text(f"# Notes for {folder.name}\n")
    return folder


def git(*args: str, cwd: Path, env: Mapping[str, str] | None = None) -> str:
    return subprocess.run(
        ["git", *args], cwd=cwd, check=True, capture_output=True, text=True, env=env
    ).stdout.strip()


def commit_all(repo: Path, message: str = "change") -> str:
    git("add", "-A", cwd=repo)
    git(*GIT_ID, "commit", "-q", "-m", message, cwd=repo)
    return git("rev-parse", "HEAD", cwd=repo)


def new_project(tmp_path: Path, agents: str = '["claude-code"]', mode: str = "symlink") -> Path:
    root = make_project(
        tmp_path / "repo", config=f'[kb]\npath = "docs"\n[skills]\nagents = {agents}\nmode = "{mode}"\n'
    )
    git("init", "-q", cwd=root)
    return root


class FakeGitHub:
    """github.com/<owner>/<repo> served from local bare repositories, for every git in this process
    and its children: `https://github.com/` is rewritten by git's `url.<base>.insteadOf`, set with
    GIT_CONFIG_COUNT/KEY/VALUE in the environment (the user's git config is not touched)."""

    def __init__(self, base: Path, monkeypatch: pytest.MonkeyPatch) -> None:
        self.base = base
        base.mkdir(parents=True, exist_ok=True)
        self.env = {
            "GIT_CONFIG_COUNT": "1",
            "GIT_CONFIG_KEY_0": f"url.{base.as_uri()}/.insteadOf",
            "GIT_CONFIG_VALUE_0": "https://github.com/",
        }
        for key, value in self.env.items():
            monkeypatch.setenv(key, value)

    def repo(self, owner_repo: str, skills: Mapping[str, str]) -> Path:
        """A work tree with `skills` (folder -> name; '' is the root) pushed to github.com/<owner_repo>."""
        work = self.base.parent / "work" / owner_repo
        for folder, name in skills.items():
            write_skill(work / folder if folder else work, name=name)
        git("init", "-q", "-b", "main", cwd=work)
        commit_all(work, "one")
        git("tag", "v1", cwd=work)
        bare = self.base / f"{owner_repo}.git"
        bare.parent.mkdir(parents=True, exist_ok=True)
        git("clone", "-q", "--bare", str(work), str(bare), cwd=work)
        git("remote", "add", "origin", str(bare), cwd=work)
        return work

    def push(self, work: Path, *refs: str) -> None:
        git("push", "-q", "--force", "origin", *(refs or ("main",)), cwd=work)


def require_skills_cli() -> tuple[str, str]:
    """(node, cli.mjs) of the pinned `skills` package (tests/peers/npm), or the test skips/fails."""
    return require(SKILLS_CLI, "the skills CLI (npm package skills)")


def require_node() -> str:
    return require_skills_cli()[0]


def npx_skills(cwd: Path, *args: str, home: Path) -> subprocess.CompletedProcess[str]:
    """`npx skills ARGS` as a user runs it in `cwd`: its own HOME, no telemetry, no prompts."""
    node, cli = require_skills_cli()
    env = {
        **os.environ,
        "HOME": str(home),
        "XDG_CONFIG_HOME": str(home / ".config"),
        "XDG_STATE_HOME": str(home / ".local/state"),
        "DISABLE_TELEMETRY": "1",
        "DO_NOT_TRACK": "1",
        "CI": "1",
        "NO_COLOR": "1",
    }
    env.pop("GITHUB_TOKEN", None)
    env.pop("GH_TOKEN", None)
    home.mkdir(parents=True, exist_ok=True)
    return subprocess.run(
        [node, cli, *args],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        stdin=subprocess.DEVNULL,
        timeout=300,
    )


def copy_tree(src: Path, dst: Path) -> Path:
    shutil.copytree(src, dst, symlinks=True)
    return dst
