"""`kbkit skills add/remove/list/check --global` beside the real `npx skills ... -g` (1.7.4): the
user's own skill folders and the user's lock, in a home folder of its own, driven through kbkit
in a process of its own (forked on real pipes: tests/peers/launch.py) from a working folder that is
no project, as a user runs it."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest

from kbkit.skills.files import read_tree
from tests.helpers.skills import FakeGitHub, git, new_project, npx_skills, require_skills_cli, write_skill
from tests.peers.launch import forked_kbkit

pytestmark = pytest.mark.usefixtures("skills_cli")


@pytest.fixture
def skills_cli() -> tuple[str, str]:
    return require_skills_cli()


@pytest.fixture
def home(tmp_path: Path) -> Path:
    folder = tmp_path / "home"
    folder.mkdir()
    return folder


@pytest.fixture
def work(tmp_path: Path) -> Path:
    folder = tmp_path / "here"
    folder.mkdir()
    return folder


def user_lock(home: Path) -> Path:
    return home / ".local/state/skills/.skill-lock.json"  # XDG_STATE_HOME, as npx_skills sets it


def kbkit(*args: str, cwd: Path, home: Path) -> subprocess.CompletedProcess[str]:
    """The installed `kbkit` as a user runs it: their own HOME and XDG folders, their working folder."""
    env = {
        **os.environ,
        "HOME": str(home),
        "XDG_CONFIG_HOME": str(home / ".config"),
        "XDG_STATE_HOME": str(home / ".local/state"),
    }
    env.pop("CLAUDE_CONFIG_DIR", None)
    return subprocess.run(
        [*forked_kbkit(), *args], cwd=cwd, env=env, capture_output=True, text=True, timeout=300
    )


def npx_list(home: Path, cwd: Path) -> dict[str, dict[str, object]]:
    result = npx_skills(cwd, "list", "-g", "--json", home=home)
    assert result.returncode == 0, result.stdout + result.stderr
    return {row["name"]: row for row in json.loads(result.stdout)}


def kbkit_list(home: Path, cwd: Path) -> dict[str, dict[str, object]]:
    result = kbkit("skills", "list", "--global", "--json", cwd=cwd, home=home)
    assert result.returncode == 0, result.stderr
    return {row["name"]: row for row in json.loads(result.stdout)["skills"]}


@pytest.mark.npm
def test_kbkit_add_global_of_a_local_skill_is_what_npx_lists_and_removes(home: Path, work: Path) -> None:
    write_skill(work / "src" / "greet")
    added = kbkit("skills", "add", "./src/greet", "--global", cwd=work, home=home)
    assert added.returncode == 0, added.stderr
    assert (home / ".agents/skills/greet/references/notes.md").is_file()
    assert os.readlink(home / ".claude/skills/greet") == "../../.agents/skills/greet"
    lock = json.loads(user_lock(home).read_text())
    entry = lock["skills"]["greet"]
    assert list(entry) == [
        "source", "sourceType", "sourceUrl", "skillFolderHash", "installedAt", "updatedAt"
    ]  # fmt: skip
    assert entry["source"] == entry["sourceUrl"] == str(work / "src" / "greet")  # absolute, as npx
    assert entry["skillFolderHash"] == read_tree(work / "src" / "greet").hash()
    assert lock["version"] == 3 and lock["dismissed"] == {}
    assert not user_lock(home).read_text().endswith("\n")  # JSON.stringify(lock, null, 2)

    seen = npx_list(home, work)["greet"]
    assert seen["source"] == str(work / "src" / "greet") and seen["agents"] == ["Claude Code"]
    assert kbkit_list(home, work)["greet"]["state"] == "installed and verified"
    assert kbkit("skills", "check", "--global", cwd=work, home=home).returncode == 0

    removed = npx_skills(work, "remove", "greet", "-g", "-y", home=home)
    assert removed.returncode == 0, removed.stdout + removed.stderr
    assert json.loads(user_lock(home).read_text())["skills"] == {}
    assert not (home / ".agents/skills/greet").exists()
    assert list(os.scandir(work)) and not (work / "skills-lock.json").exists()


@pytest.mark.npm
def test_kbkit_add_global_of_a_github_skill_records_the_tree_id_npx_compares(
    home: Path, work: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    github = FakeGitHub(tmp_path / "github", monkeypatch)
    repo = github.repo("acme/skills", {"skills/lint-rules": "lint-rules", "skills/deploy": "deploy"})
    (repo / "skills/lint-rules/run.sh").write_text("#!/bin/sh\necho lint\n")
    (repo / "skills/lint-rules/run.sh").chmod(0o755)
    git("add", "-A", cwd=repo)
    git("-c", "user.email=t@example.test", "-c", "user.name=t", "commit", "-qm", "x", cwd=repo)
    git("tag", "-f", "v1", cwd=repo)
    github.push(repo, "main", "--tags")

    offered = kbkit("skills", "add", "acme/skills", "--global", "--list", cwd=work, home=home)
    assert offered.returncode == 0 and "deploy" in offered.stdout and not home.joinpath(".agents").exists()
    added = kbkit(
        "skills", "add", "acme/skills", "--ref", "v1", "--skill", "lint-rules", "-g", cwd=work, home=home
    )
    assert added.returncode == 0, added.stderr
    entry = json.loads(user_lock(home).read_text())["skills"]["lint-rules"]
    assert entry["source"] == "acme/skills" and entry["sourceType"] == "github"
    assert entry["sourceUrl"] == "https://github.com/acme/skills.git" and entry["ref"] == "v1"
    assert entry["skillPath"] == "skills/lint-rules/SKILL.md"
    assert entry["skillFolderHash"] == git("rev-parse", "v1:skills/lint-rules", cwd=repo)  # git's tree id
    assert kbkit_list(home, work)["lint-rules"]["state"] == "installed and verified"
    assert npx_list(home, work)["lint-rules"]["source"] == "acme/skills"

    before = user_lock(home).read_text()
    checked = npx_skills(work, "update", "-g", "-y", home=home)  # offline: checks by cloning
    assert checked.returncode == 0, checked.stdout + checked.stderr
    assert "up to date" in checked.stdout and user_lock(home).read_text() == before


@pytest.mark.npm
def test_npx_add_global_is_listed_checked_and_removed_by_kbkit(
    home: Path, work: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    github = FakeGitHub(tmp_path / "github", monkeypatch)
    github.repo("acme/skills", {"skills/lint-rules": "lint-rules"})
    write_skill(work / "src" / "greet")
    for source, extra in (("./src/greet", ()), ("acme/skills", ("--skill", "lint-rules"))):
        result = npx_skills(work, "add", source, *extra, "-g", "-y", "--agent", "claude-code", home=home)
        assert result.returncode == 0, result.stdout + result.stderr
    lock = json.loads(user_lock(home).read_text())
    lock["dismissed"] = {"findSkillsPrompt": True}
    lock["skills"]["greet"]["pluginName"] = "mine"  # a key kbkit does not write
    user_lock(home).write_text(json.dumps(lock, indent=2))
    # one agent only: npx copies straight into ~/.claude/skills, with no ~/.agents/skills copy
    assert (home / ".claude/skills/greet").is_dir() and not (home / ".agents/skills/greet").exists()

    listed = kbkit_list(home, work)
    assert listed["greet"]["state"] == listed["lint-rules"]["state"] == "installed and verified"
    assert listed["lint-rules"]["source"] == "acme/skills"
    assert kbkit("skills", "check", "--global", cwd=work, home=home).returncode == 0

    changed = home / ".claude/skills/lint-rules/SKILL.md"
    changed.write_text(changed.read_text() + "\nMy own note.\n")
    check = kbkit("skills", "check", "-g", cwd=work, home=home)
    assert check.returncode == 1 and "lint-rules: the installed copy at" in check.stderr
    refused = kbkit("skills", "remove", "lint-rules", "--global", cwd=work, home=home)
    assert refused.returncode == 2 and "nothing was removed" in refused.stderr
    assert "My own note." in changed.read_text()
    assert "lint-rules" in json.loads(user_lock(home).read_text())["skills"]

    npx_entry = json.loads(user_lock(home).read_text())["skills"]["greet"]
    again = kbkit("skills", "add", "./src/greet", "--global", cwd=work, home=home)
    assert again.returncode == 0, again.stderr
    entry = json.loads(user_lock(home).read_text())["skills"]["greet"]
    assert entry["pluginName"] == "mine" and entry["installedAt"] == npx_entry["installedAt"]
    assert {k: v for k, v in entry.items() if k != "updatedAt"} == {
        k: v for k, v in npx_entry.items() if k != "updatedAt"
    }  # the same entry npx wrote, its key kept
    assert os.readlink(home / ".claude/skills/greet") == "../../.agents/skills/greet"

    removed = kbkit("skills", "remove", "greet", "--global", cwd=work, home=home)
    assert removed.returncode == 0, removed.stderr
    assert not (home / ".claude/skills/greet").exists() and "greet" not in npx_list(home, work)
    after = json.loads(user_lock(home).read_text())
    assert list(after["skills"]) == ["lint-rules"] and after["dismissed"] == {"findSkillsPrompt": True}
    assert (work / "src/greet/SKILL.md").is_file()  # the source is not the installed copy


@pytest.mark.processes
def test_global_leaves_the_project_alone(home: Path, tmp_path: Path) -> None:
    root = new_project(tmp_path)
    write_skill(root / "skill-sources" / "greet")
    before = sorted(p.relative_to(root).as_posix() for p in root.rglob("*") if ".git/" not in p.as_posix())
    added = kbkit("skills", "add", "./skill-sources/greet", "-g", cwd=root, home=home)
    assert added.returncode == 0, added.stderr
    after = sorted(p.relative_to(root).as_posix() for p in root.rglob("*") if ".git/" not in p.as_posix())
    assert after == before and (home / ".agents/skills/greet/SKILL.md").is_file()
    assert kbkit("skills", "remove", "greet", "-g", cwd=root, home=home).returncode == 0
    assert not (home / ".agents/skills/greet").exists() and (root / "skill-sources/greet").is_dir()


@pytest.mark.processes
def test_bad_input_in_global_scope_is_one_line_and_writes_nothing(home: Path, work: Path) -> None:
    write_skill(work / "src" / "greet")
    user_lock(home).parent.mkdir(parents=True)
    for text in ("{not json", '{"version": 2, "skills": {}}', '{"version": 3}'):
        user_lock(home).write_text(text)
        result = kbkit("skills", "add", "./src/greet", "-g", cwd=work, home=home)
        assert result.returncode == 2 and len(result.stderr.strip().splitlines()) == 1, result.stderr
        assert "move" in result.stderr and "Traceback" not in result.stderr
        assert user_lock(home).read_text() == text and not (home / ".agents").exists()
    user_lock(home).unlink()

    mine = home / ".agents/skills/greet"
    write_skill(mine, description="Use when it is my own.")
    refused = kbkit("skills", "add", "./src/greet", "-g", cwd=work, home=home)
    assert refused.returncode == 2 and "move it out of the way" in refused.stderr
    assert "my own" in (mine / "SKILL.md").read_text() and not (home / ".claude").exists()
    assert json.loads(user_lock(home).read_text())["skills"] == {}

    for name in ("../greet", "greet", "nothing-here"):
        result = kbkit("skills", "remove", name, "-g", cwd=work, home=home)
        assert result.returncode == 2 and len(result.stderr.strip().splitlines()) == 1, result.stderr
    assert (mine / "SKILL.md").is_file()
    listed = kbkit_list(home, work)
    assert listed["greet"]["source"] is None and "not in" in str(listed["greet"]["state"])


@pytest.mark.npm
def test_a_user_lock_kept_as_a_dotfiles_link_is_written_through_and_stays_a_link(
    home: Path, work: Path
) -> None:
    dotfiles = home / "dotfiles" / "skill-lock.json"
    dotfiles.parent.mkdir()
    dotfiles.write_text('{\n  "version": 3,\n  "skills": {},\n  "dismissed": {}\n}')
    user_lock(home).parent.mkdir(parents=True)
    user_lock(home).symlink_to(dotfiles)
    write_skill(work / "src" / "greet")
    added = kbkit("skills", "add", "./src/greet", "--global", cwd=work, home=home)
    assert added.returncode == 0, added.stderr
    assert user_lock(home).is_symlink()
    assert "greet" in json.loads(dotfiles.read_text())["skills"]
    assert "greet" in npx_list(home, work)
