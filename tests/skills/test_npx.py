"""Round trips with the real `skills` CLI from npm (`npx skills` 1.7.4, run by the Node 24 it needs):
each tool reads, writes and verifies what the other wrote, in the same project, offline (GitHub
sources come from local bare repositories through git's `url.<base>.insteadOf`)."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from kbkit.config import load_settings
from kbkit.skills.files import folder_hash
from kbkit.skills.install import add, check, install
from kbkit.skills.lock import read_lock
from tests.helpers.skills import (
    FakeGitHub,
    commit_all,
    git,
    new_project,
    npx_skills,
    require_skills_cli,
    write_skill,
)
from tests.peers.launch import forked_kbkit

pytestmark = [pytest.mark.usefixtures("skills_cli"), pytest.mark.npm]


@pytest.fixture
def skills_cli() -> tuple[str, str]:
    return require_skills_cli()


@pytest.fixture
def github(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> FakeGitHub:
    return FakeGitHub(tmp_path / "github", monkeypatch)


def kbkit(*args: str, root: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*forked_kbkit(), *args, "--root", str(root)], capture_output=True, text=True)


def odd_tree(folder: Path, name: str) -> Path:
    """A skill whose paths the two old orders disagreed on: subfolders, case, punctuation, non-ASCII."""
    write_skill(folder, name=name)
    for rel in (
        "scripts/run.sh", "assets/Logo.txt", "assets/logo.txt", "B.md", "a.md", "Z-upper.md", "a-b.md",
        "a_b.md", "ab.md", "notes-extra.md", "notes/x.md", "é.md", "f.md", "ä.md", "z.md", "Ωmega.md",
        "日本.md", "10.md", "9.md",
    ):  # fmt: skip
        (folder / rel).parent.mkdir(parents=True, exist_ok=True)
        (folder / rel).write_text(f"content of {rel}\n")
    return folder


def test_npx_add_of_a_local_skill_is_installed_and_verified_by_kbkit(tmp_path: Path) -> None:
    root = new_project(tmp_path)
    odd_tree(root / "skill-sources" / "odd-skill", "odd-skill")
    result = npx_skills(
        root, "add", "./skill-sources/odd-skill", "-y", "--agent", "claude-code", home=tmp_path / "h"
    )
    assert result.returncode == 0, result.stdout + result.stderr
    written = (root / "skills-lock.json").read_text()
    npx_hash = json.loads(written)["skills"]["odd-skill"]["computedHash"]
    assert npx_hash == folder_hash(root / "skill-sources/odd-skill")  # one hash, bit for bit
    assert kbkit("skills", "install", root=root).returncode == 0
    assert kbkit("skills", "check", root=root).returncode == 0
    assert (root / "skills-lock.json").read_text() == written  # kbkit rewrote nothing


def test_kbkit_add_then_npx_experimental_install_then_kbkit_check(tmp_path: Path, github: FakeGitHub) -> None:
    work = github.repo("acme/skills", {"skills/lint-rules": "lint-rules", "skills/deploy": "deploy"})
    odd_tree(work / "skills" / "lint-rules", "lint-rules")
    commit_all(work, "odd")
    git("tag", "-f", "v1", cwd=work)
    github.push(work, "main", "--tags")
    root = new_project(tmp_path)
    odd_tree(root / "skill-sources" / "kb-usage", "kb-usage")
    settings = load_settings(root)
    add(settings, "./skill-sources/kb-usage")
    add(settings, "acme/skills@v1", skills=["lint-rules"])
    before = (root / "skills-lock.json").read_bytes()
    assert json.loads(before)["skills"]["lint-rules"]["ref"] == git("rev-parse", "v1", cwd=work)
    for name in ("kb-usage", "lint-rules"):
        (root / ".agents/skills" / name / "SKILL.md").unlink()  # as after a fresh clone: nothing installed
    result = npx_skills(root, "experimental_install", "-y", home=tmp_path / "h")
    assert result.returncode == 0, result.stdout + result.stderr
    assert (root / "skills-lock.json").read_bytes() == before  # npx rewrote it to the same bytes
    assert check(load_settings(root)).problems == []
    assert kbkit("skills", "check", root=root).returncode == 0


def test_npx_add_of_a_github_skill_then_kbkit_install_and_check(tmp_path: Path, github: FakeGitHub) -> None:
    work = github.repo("acme/skills", {"skills/lint-rules": "lint-rules"})
    root = new_project(tmp_path)
    result = npx_skills(
        root,
        "add",
        "acme/skills",
        "--skill",
        "lint-rules",
        "-y",
        "--agent",
        "claude-code",
        home=tmp_path / "h",
    )
    assert result.returncode == 0, result.stdout + result.stderr
    entry = read_lock(root).entries()["lint-rules"]
    assert entry.source_type == "github" and entry.ref is None  # npx pins no commit
    assert entry.computed_hash == folder_hash(work / "skills/lint-rules")
    assert install(load_settings(root)).installed == ["lint-rules"]
    assert check(load_settings(root)).problems == []


def test_unknown_source_types_are_reported_per_entry_while_the_rest_installs(tmp_path: Path) -> None:
    root = new_project(tmp_path)
    write_skill(root / "skill-sources" / "kb-usage")
    npx_skills(root, "add", "./skill-sources/kb-usage", "-y", "--agent", "claude-code", home=tmp_path / "h")
    lock = json.loads((root / "skills-lock.json").read_text())
    lock["skills"]["from-npm"] = {
        "source": "some-pkg",
        "sourceType": "node_modules",
        "computedHash": "ab" * 32,
    }
    (root / "skills-lock.json").write_text(json.dumps(lock, indent=2) + "\n")
    result = kbkit("skills", "install", root=root)
    assert result.returncode == 0, result.stderr
    assert "installed kb-usage" in result.stdout
    assert "skipped 'from-npm': sourceType 'node_modules' is not one kbkit restores" in result.stderr


def test_npx_remove_no_longer_deletes_kbkit_skill_sources(tmp_path: Path) -> None:
    root = new_project(tmp_path)
    write_skill(root / "skill-sources" / "kb-usage")
    add(load_settings(root), "./skill-sources/kb-usage")
    result = npx_skills(root, "remove", "kb-usage", "-y", home=tmp_path / "h")
    assert result.returncode == 0, result.stdout + result.stderr
    assert (root / "skill-sources/kb-usage/SKILL.md").exists()  # sources are not in any agent's folder
    assert "kb-usage" not in json.loads((root / "skills-lock.json").read_text())["skills"]


def test_in_skills_folder_npx_remove_deletes_the_source_which_is_why_kbkit_moved_it(tmp_path: Path) -> None:
    root = new_project(tmp_path)
    write_skill(root / "skills" / "kb-usage")
    add(load_settings(root), "./skills/kb-usage")
    npx_skills(root, "remove", "kb-usage", "-y", home=tmp_path / "h")
    assert not (root / "skills/kb-usage").exists()  # OpenClaw's folder: npx deletes it


def test_a_git_url_source_round_trips_through_npx_experimental_install(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    hosting = FakeGitHub(tmp_path / "githost", monkeypatch)
    monkeypatch.setenv("GIT_CONFIG_VALUE_0", "https://git.example.test/")  # another host than GitHub
    work = hosting.repo("team/skills", {"skills/lint-rules": "lint-rules", "skills/deploy": "deploy"})
    root = new_project(tmp_path)
    add(load_settings(root), "https://git.example.test/team/skills.git", skills=["deploy"])
    before = json.loads((root / "skills-lock.json").read_text())
    assert before["skills"]["deploy"]["sourceUrl"] == "https://git.example.test/team/skills.git"
    assert before["skills"]["deploy"]["ref"] == git("rev-parse", "HEAD", cwd=work)
    (root / ".agents/skills/deploy/SKILL.md").unlink()
    result = npx_skills(root, "experimental_install", "-y", home=tmp_path / "h")
    assert result.returncode == 0, result.stdout + result.stderr
    assert json.loads((root / "skills-lock.json").read_text()) == before
    assert check(load_settings(root)).problems == []


def test_npx_update_check_and_list_read_kbkit_entries_and_change_nothing(
    tmp_path: Path, github: FakeGitHub
) -> None:
    github.repo("acme/skills", {"skills/lint-rules": "lint-rules"})
    root = new_project(tmp_path)
    add(load_settings(root), "acme/skills@v1", skills=["lint-rules"])
    before = (root / "skills-lock.json").read_text()
    for command in ("update", "check"):
        result = npx_skills(root, command, "-y", home=tmp_path / "h")
        assert result.returncode == 0 and "All project skills are up to date" in result.stdout, result.stdout
    listed = npx_skills(root, "list", home=tmp_path / "h")
    assert "lint-rules" in listed.stdout and "acme/skills" in listed.stdout
    assert (root / "skills-lock.json").read_text() == before


def test_npx_add_at_a_tag_then_kbkit_install_leaves_the_lock_byte_for_byte(
    tmp_path: Path, github: FakeGitHub
) -> None:
    github.repo("acme/skills", {"skills/lint-rules": "lint-rules", "skills/deploy": "deploy"})
    root = new_project(tmp_path)
    write_skill(root / "skill-sources" / "kb-usage")
    for source in ("acme/skills#v1", "./skill-sources/kb-usage"):
        result = npx_skills(
            root, "add", source, "--skill", "*", "-y", "--agent", "claude-code", home=tmp_path / "h"
        )
        assert result.returncode == 0, result.stdout + result.stderr
    written = (root / "skills-lock.json").read_bytes()
    assert json.loads(written)["skills"]["lint-rules"]["ref"] == "v1"
    result = kbkit("skills", "install", root=root)
    assert result.returncode == 0, result.stderr
    assert (root / "skills-lock.json").read_bytes() == written
    assert kbkit("skills", "check", root=root).returncode == 0


def test_after_npx_rewrites_the_lock_kbkit_update_still_follows_the_tag_that_was_asked_for(
    tmp_path: Path, github: FakeGitHub
) -> None:
    work = github.repo("acme/skills", {"skills/lint-rules": "lint-rules"})
    tagged = git("rev-parse", "v1", cwd=work)
    root = new_project(tmp_path)
    add(load_settings(root), "acme/skills@v1", skills=["lint-rules"])
    (root / ".agents/skills/lint-rules/SKILL.md").unlink()
    result = npx_skills(root, "experimental_install", "-y", home=tmp_path / "h")
    assert result.returncode == 0, result.stdout + result.stderr
    (work / "skills/lint-rules/references/notes.md").write_text("# Newer notes on main\n")
    commit_all(work, "main moves on")
    github.push(work, "main")
    assert kbkit("skills", "update", root=root).returncode == 0
    assert read_lock(root).entries()["lint-rules"].commit == tagged  # still v1, not main
    git("tag", "-f", "v1", cwd=work)
    github.push(work, "main", "--tags")
    assert kbkit("skills", "update", root=root).returncode == 0
    assert read_lock(root).entries()["lint-rules"].commit == git("rev-parse", "HEAD", cwd=work)
