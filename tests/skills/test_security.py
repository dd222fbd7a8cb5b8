"""Attacks on the skills kit: a hostile skills-lock.json, hostile skill sources, and links planted in
the project. Each test performs the attack and checks that nothing outside the project is read,
written or deleted, and that nothing reaches .gitignore that kbkit did not mean to write."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from kbkit.config import load_settings
from kbkit.errors import SkillError, SyncRefused
from kbkit.skills.files import folder_hash
from kbkit.skills.install import add, install
from kbkit.skills.lock import read_lock
from kbkit.sync.gitignore import escape_line, render_block
from tests.helpers.skills import commit_all, git, new_project, project_with_skill, run_kbkit, write_skill

INJECTED = "good\n!.env.local\n!/.kbkit/"


@pytest.mark.processes
def test_a_skill_name_in_the_lock_cannot_unignore_secrets_through_kbkit_sync(tmp_path: Path) -> None:
    root = new_project(tmp_path, sync_clients='["claude-code"]')
    write_skill(root / "skill-sources" / "good")
    lock = {
        "version": 1,
        "skills": {
            INJECTED: {"source": "./skill-sources/good", "sourceType": "local", "computedHash": "0" * 64},
            "../../escape": {
                "source": "./skill-sources/good",
                "sourceType": "local",
                "computedHash": "0" * 64,
            },
        },
    }
    (root / "skills-lock.json").write_text(json.dumps(lock))
    (root / ".env.local").write_text("MCP_TOKEN=secret-value-0123456789\n")
    (root / ".kbkit").mkdir()
    (root / ".kbkit" / "state").write_text("x")
    result = run_kbkit("sync", root=root)
    assert result.returncode == 0, result.stderr
    ignore = (root / ".gitignore").read_text()
    assert "!" not in ignore and "escape" not in ignore
    status = git("status", "--porcelain", "--untracked-files=all", cwd=root)
    assert ".env.local" not in status and ".kbkit" not in status
    installed = run_kbkit("skills", "install", root=root)
    assert "not a valid skill name" in installed.stderr and not (root / ".agents/skills").exists()


@pytest.mark.git
def test_every_line_written_into_gitignore_matches_only_its_literal_path(tmp_path: Path) -> None:
    hostile = ["!keep.txt", "#comment", "star*", "q?", "[ab]", "back\\slash", "space "]
    block = render_block(hostile)
    for name in hostile + ["keep.txt", "starX", "qq", "a", "b"]:
        (tmp_path / name).write_text("x")
    (tmp_path / ".gitignore").write_text(block)
    git("init", "-q", cwd=tmp_path)
    ignored = set(git("status", "--porcelain", "--ignored", cwd=tmp_path).splitlines())
    assert {line[3:].strip('"') for line in ignored if line.startswith("!!")} == {
        "!keep.txt", "#comment", "star*", "q?", "[ab]", "back\\\\slash", "space ",
    }  # fmt: skip
    for bad in ("a\nb", "a\rb", "tab\there", "\x00", " "):
        with pytest.raises(SyncRefused, match="one line of printable characters"):
            escape_line(bad)


@pytest.mark.git
def test_a_link_inside_a_skill_source_is_not_followed_installed_or_hashed(tmp_path: Path) -> None:
    secret = tmp_path / "home" / ".ssh" / "id_ed25519"
    secret.parent.mkdir(parents=True)
    secret.write_text("-----BEGIN OPENSSH PRIVATE KEY-----\n")
    source = tmp_path / "evil-source"
    write_skill(source / "skills" / "helper")
    (source / "skills/helper/references/key.md").symlink_to(secret)
    (source / "skills/helper/docs").symlink_to(secret.parent, target_is_directory=True)
    git("init", "-q", "-b", "main", cwd=source)
    commit_all(source)  # git stores the links as links, as a hostile repository would
    root = new_project(tmp_path)
    report = add(load_settings(root), str(source), skills=["helper"], ref="main")
    installed = root / ".agents/skills/helper"
    assert sorted(p.relative_to(installed).as_posix() for p in installed.rglob("*")) == [
        "SKILL.md", "references", "references/notes.md",
    ]  # fmt: skip
    assert not any(p.is_symlink() for p in installed.rglob("*"))
    assert any(
        "references/key.md: a symbolic link (not followed, not installed)" in w for w in report.warnings
    )
    assert read_lock(root).entries()["helper"].computed_hash == folder_hash(installed)
    assert "PRIVATE KEY" not in "".join(p.read_text() for p in installed.rglob("*.md"))


@pytest.mark.git
def test_a_skill_md_that_is_a_link_is_refused(tmp_path: Path) -> None:
    root = new_project(tmp_path)
    outside = write_skill(tmp_path / "outside" / "decoy", name="decoy")
    folder = root / "skill-sources" / "decoy"
    folder.mkdir(parents=True)
    (folder / "SKILL.md").symlink_to(outside / "SKILL.md")
    with pytest.raises(SkillError, match="SKILL.md is not a regular file"):
        add(load_settings(root), "skill-sources/decoy")
    assert not (root / "skills-lock.json").exists()


@pytest.mark.git
def test_a_local_source_reached_through_a_link_in_the_project_is_refused(tmp_path: Path) -> None:
    root = new_project(tmp_path)
    write_skill(tmp_path / "elsewhere" / "demo")
    (root / "skill-sources").symlink_to(tmp_path / "elsewhere", target_is_directory=True)
    with pytest.raises(SkillError, match="skill-sources is a symbolic link"):
        add(load_settings(root), "./skill-sources/demo")


@pytest.mark.processes
@pytest.mark.parametrize("linked", [".claude", ".claude/skills", ".agents", ".agents/skills"])
def test_a_linked_agent_folder_never_makes_install_write_or_delete_outside_the_project(
    tmp_path: Path, linked: str
) -> None:
    root = new_project(tmp_path, mode="copy")
    write_skill(root / "skill-sources" / "demo")
    outside = tmp_path / "outside"
    victim = write_skill(
        outside / "demo", name="demo", description="The user's own file, outside the project."
    )
    before = {p: p.read_bytes() for p in outside.rglob("*") if p.is_file()}
    (root / linked).parent.mkdir(parents=True, exist_ok=True)
    (root / linked).symlink_to(outside, target_is_directory=True)
    result = run_kbkit("skills", "add", "./skill-sources/demo", root=root)
    assert result.returncode == 2
    assert f"{linked} is a symbolic link; kbkit writes skills only inside the project" in result.stderr
    assert "Traceback" not in result.stderr
    assert {p: p.read_bytes() for p in outside.rglob("*") if p.is_file()} == before
    assert (victim / "SKILL.md").exists()
    for command in (["skills", "install"], ["skills", "install", "--prune"], ["skills", "remove", "demo"]):
        run_kbkit(*command, root=root)
        assert {p: p.read_bytes() for p in outside.rglob("*") if p.is_file()} == before


@pytest.mark.git
def test_an_installed_skill_replaced_by_a_link_is_unlinked_not_followed(tmp_path: Path) -> None:
    root, settings = project_with_skill(tmp_path, "demo")
    outside = write_skill(tmp_path / "outside" / "demo", name="demo")
    target = root / ".agents/skills/demo"
    os.rename(target, tmp_path / "moved")
    target.symlink_to(outside, target_is_directory=True)
    report = install(settings)
    assert report.installed == ["demo"] and not target.is_symlink()
    assert (outside / "SKILL.md").exists() and (outside / "references/notes.md").exists()


def locked_git_skill(root: Path, source: str, ref: str, **extra: str) -> None:
    entry = {"source": source, "ref": ref, "sourceType": "git", "computedHash": "0" * 64, **extra}
    (root / "skills-lock.json").write_text(json.dumps({"version": 1, "skills": {"evil": entry}}))


@pytest.mark.git
@pytest.mark.parametrize(
    ("source", "ref", "extra"),
    [
        ("https://example.invalid/skills.git", "--upload-pack=touch {marker}", {}),
        ("https://example.invalid/skills.git", "main", {"sourceUrl": "--upload-pack=touch {marker}"}),
        ("--upload-pack=touch {marker}", "main", {}),
    ],
)
def test_a_lock_whose_ref_or_source_is_a_git_option_runs_nothing(
    tmp_path: Path, source: str, ref: str, extra: dict[str, str]
) -> None:
    marker = tmp_path / "ran"
    root = new_project(tmp_path)
    shaped = {key: value.format(marker=marker) for key, value in extra.items()}
    locked_git_skill(root, source.format(marker=marker), ref.format(marker=marker), **shaped)
    commit_all(root, "a teammate's lock")
    from tests.helpers.trust import trust_project

    trust_project(root)  # even a member who trusted the lock's sources
    report = install(load_settings(root))
    assert not marker.exists()
    assert "evil" not in report.installed
    assert any("'-'" in line or "option" in line for line in report.skipped), report.skipped


@pytest.mark.git
def test_a_skill_source_a_commit_adds_is_not_fetched_until_the_member_trusts_it(tmp_path: Path) -> None:
    root, _ = project_with_skill(tmp_path)  # the member's own skill: a folder in the project
    other = tmp_path / "elsewhere"
    write_skill(other / "evil", name="evil")
    git("init", "-q", cwd=other)
    commit_all(other, "one")
    lock = json.loads((root / "skills-lock.json").read_text())
    lock["skills"]["evil"] = {"source": str(other), "sourceType": "git", "computedHash": "0" * 64}
    (root / "skills-lock.json").write_text(json.dumps(lock))
    commit_all(root, "a teammate adds a source")
    report = install(load_settings(root))
    assert "kb-usage" in report.installed and "evil" not in report.installed
    (refusal,) = [line for line in report.problems if "evil" in line]
    assert "not trusted on this machine yet" in refusal and "kbkit trust skills" in refusal
